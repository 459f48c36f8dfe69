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
