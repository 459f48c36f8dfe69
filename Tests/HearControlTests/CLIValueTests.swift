// What hearctl shows and accepts: values rounded to their parameter's precision, units on input
// checked against the schema unit, and reset to configured values (the drop-ins that configure
// them: HearctlCoreTests/DropInTests).

import Foundation
import HearControl
import HearDSP
import Testing

@Suite struct PrecisionTests {
    @Test func valuesAreRoundedToTheirParametersPrecision() {
        #expect(ParameterValue.text(200.00002, for: .eqLowShelfFrequency) == "200")
        #expect(ParameterValue.text(Float(1234.56), for: .eqPeak2Frequency) == "1234.6")
        #expect(ParameterValue.text(0.1, for: .gain) == "0.1")
        #expect(ParameterValue.text(-2.5, for: .gain) == "-2.5")
        #expect(ParameterValue.text(-0.001, for: .gain) == "0")
        #expect(ParameterValue.text(0.25, for: .eqPeak1Q) == "0.25")
        #expect(ParameterValue.text(2.5, for: .compRatio) == "2.5")
        #expect(ParameterValue.text(0.9999, for: .bypass) == "1")
        #expect(ParameterValue.describe(200.00002, for: .eqLowShelfFrequency) == "200 Hz")
        #expect(ParameterValue.describe(3.0000002, for: .compRatio) == "3:1")
        // For JSON: the Double nearest the decimal, not the Float widened (0.10000000149011612).
        #expect(ParameterValue.rounded(0.1, for: .gain) == 0.1)
        #expect(Double(Float(0.1)) != 0.1)
        #expect(ParameterValue.rounded(-34.1, for: .compThreshold) == -34.1)
        let data = try? JSONSerialization.data(withJSONObject: ["gain": ParameterValue.rounded(0.1, for: .gain)])
        #expect(String(decoding: data ?? Data(), as: UTF8.self) == #"{"gain":0.1}"#)
    }

    @Test func everyParameterHasAPrecisionThatKeepsItsDefault() {
        for parameter in Parameter.allCases {
            let spec = parameter.spec
            #expect(ParameterValue.rounded(spec.defaultValue, for: parameter) == Double(spec.defaultValue), "\(spec.key)")
            #expect(ParameterValue.decimals(for: parameter) == (spec.scale == .toggle ? 0 : ["Hz", "ms", "%"].contains(spec.unit) ? 1 : 2))
        }
    }
}

@Suite struct UnitInputTests {
    @Test func unitsOfTheParametersKindAreAccepted() {
        #expect(ParameterValue.parse("1k", for: .eqPeak2Frequency) == .success(1000))
        #expect(ParameterValue.parse("1kHz", for: .eqPeak2Frequency) == .success(1000))
        #expect(ParameterValue.parse("2.5 kHz", for: .eqPeak2Frequency) == .success(2500))
        #expect(ParameterValue.parse("440hz", for: .eqPeak1Frequency) == .success(440))
        #expect(ParameterValue.parse("100ms", for: .compRelease) == .success(100))
        #expect(ParameterValue.parse("0.1s", for: .compRelease) == .success(100))
        #expect(ParameterValue.parse("-3dB", for: .gain) == .success(-3))
        #expect(ParameterValue.parse("60%", for: .nsSensitivity) == .success(60))
        #expect(ParameterValue.parse("3:1", for: .compRatio) == .success(3))
        #expect(ParameterValue.parse("1e3", for: .eqPeak2Frequency) == .success(1000))
    }

    @Test func aUnitOfAnotherKindIsAClearError() {
        func message(_ text: String, _ parameter: Parameter) -> String? {
            if case .failure(let error) = ParameterValue.parse(text, for: parameter) {
                #expect(error.code == .badValue, "\(text)")
                return error.message
            }
            return nil
        }
        #expect(message("1kHz", .gain) == "gain takes a level in dB, and '1kHz' is a frequency (Hz, kHz, k)")
        #expect(message("1k", .gain)?.contains("frequency") == true)
        #expect(message("10ms", .eqPeak1Frequency) == "eq.peak1.freq takes a frequency (Hz, kHz, k), and '10ms' is a time (ms, s)")
        #expect(message("3dB", .compRatio)?.contains("a ratio (N:1)") == true)
        #expect(message("2Hz", .eqPeak1Q)?.contains("a plain number") == true)
        #expect(message("6dBFS", .gain)?.contains("not a unit hear knows") == true)
        // Out of range after conversion: 2 s is 2000 ms.
        if case .failure(let error) = ParameterValue.parse("2s", for: .compRelease) { #expect(error.code == .outOfRange) }
        else { Issue.record("2s accepted for comp.release") }
    }
}

@Suite struct ResetRequestTests {
    @Test func resetCarriesTheValuesToGoBackTo() {
        let request = Request.reset(chain: 1, parameters: [.gain, .compRatio, .eqHighPassFrequency],
                                    values: [Assignment(.compRatio, 3), Assignment(.eqHighPassFrequency, 100)])
        #expect(request.line == "reset chain=1 gain comp.ratio=3 eq.hp.freq=100")
        #expect(Request.parse(Array(request.line.utf8)) == .success(request))
        if case .failure(let error) = Request.parse(Array("reset gain=99".utf8)) { #expect(error.code == .outOfRange) }
        else { Issue.record("reset gain=99 accepted") }
        if case .failure(let error) = Request.parse(Array("get gain=1".utf8)) { #expect(error.code == .unknownParameter) }
        else { Issue.record("get gain=1 accepted") }
    }
}
