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

let allRates: [Double] = [8000, 16000, 22050, 44100, 48000, 96000, 192000]
