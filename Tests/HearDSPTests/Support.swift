import HearDSP
import TestSupport

/// Parameter sets for tests: the defaults with every stage off, then the given changes.
func values(allOff: Bool = false, _ changes: [Parameter: Float] = [:]) -> ParameterValues {
    var values = ParameterValues()
    if allOff {
        for parameter in [Parameter.nsEnable, .eqEnable, .compEnable, .limitEnable] { values[parameter] = 0 }
    }
    for (parameter, value) in changes { values[parameter] = value }
    return values
}

/// Runs `left` (and `right`) through `chain` in the given block sizes; returns the outputs.
func process(_ chain: inout Chain, _ left: [Float], _ right: [Float]? = nil, blocks: [Int]? = nil) -> ([Float], [Float]) {
    var outLeft = [Float](repeating: 0, count: left.count)
    var outRight = [Float](repeating: 0, count: right?.count ?? 0)
    let inRight = right ?? []
    var offset = 0
    for size in blocks ?? Signals.blocks(total: left.count, size: 256) {
        left.withUnsafeBufferPointer { inL in
            inRight.withUnsafeBufferPointer { inR in
                outLeft.withUnsafeMutableBufferPointer { outL in
                    outRight.withUnsafeMutableBufferPointer { outR in
                        chain.process(inLeft: inL.baseAddress! + offset,
                                      inRight: right == nil ? nil : inR.baseAddress! + offset,
                                      outLeft: outL.baseAddress! + offset,
                                      outRight: right == nil ? nil : outR.baseAddress! + offset,
                                      frames: size)
                    }
                }
            }
        }
        offset += size
    }
    return (outLeft, outRight)
}

/// The largest step between neighbouring samples: a click shows up as a step no smooth signal makes.
func largestStep(_ samples: ArraySlice<Float>) -> Float {
    var top: Float = 0
    var previous = samples.first ?? 0
    for x in samples.dropFirst() {
        top = max(top, abs(x - previous))
        previous = x
    }
    return top
}

let allRates: [Double] = [8000, 16000, 22050, 44100, 48000, 96000, 192000]
