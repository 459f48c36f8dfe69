// Running a chain over whole signals in blocks, as a host does: the DSP tests and the fitting
// tests (HearctlCoreTests) measure what the chain delivers.

import HearDSP

/// Runs `left` (and `right`) through `chain` in the given block sizes; returns the outputs.
public func process(_ chain: inout Chain, _ left: [Float], _ right: [Float]? = nil, blocks: [Int]? = nil) -> ([Float], [Float]) {
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
