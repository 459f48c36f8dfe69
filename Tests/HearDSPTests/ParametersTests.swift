import HearDSP
import Testing

@Suite struct ParametersTests {
    @Test func keysAreUniqueLowercaseAndDotted() {
        let keys = Parameter.allCases.map(\.key)
        #expect(Set(keys).count == keys.count)
        for key in keys {
            #expect(key.allSatisfy { $0.isLowercase || $0.isNumber || $0 == "." }, "\(key)")
            #expect(!key.hasPrefix(".") && !key.hasSuffix(".") && !key.contains(".."), "\(key)")
            #expect(Parameter(key: key)?.key == key)
        }
        #expect(Parameter(key: "nope") == nil)
    }

    @Test func everyParameterHasARangeADefaultInsideItAndHelp() {
        for parameter in Parameter.allCases {
            let spec = parameter.spec
            #expect(spec.minimum < spec.maximum, "\(spec.key)")
            #expect(spec.defaultValue >= spec.minimum && spec.defaultValue <= spec.maximum, "\(spec.key)")
            #expect(!spec.help.isEmpty, "\(spec.key)")
            if spec.scale == .logarithmic { #expect(spec.minimum > 0, "\(spec.key)") }
            if spec.scale == .toggle { #expect(spec.minimum == 0 && spec.maximum == 1, "\(spec.key)") }
        }
    }

    @Test func countMatchesTheCasesAndFitsTheStorage() {
        #expect(Parameter.count == Parameter.allCases.count)
        #expect(Parameter.count <= ParameterValues.capacity)
        #expect(Parameter.allCases.map(\.rawValue) == Array(0..<Parameter.count))
    }

    @Test func theSchemaHasTheParametersTheChainNeeds() {
        for key in ["gain", "bypass", "ns.enable", "ns.reduction", "eq.enable", "comp.threshold", "comp.ratio",
                    "comp.knee", "comp.attack", "comp.release", "comp.makeup", "limit.ceiling"] {
            #expect(Parameter(key: key) != nil, "\(key)")
        }
        #expect(Parameter.gain.spec.unit == "dB")
        #expect(Parameter.limitCeiling.spec.defaultValue == -1)
    }

    @Test func clampHoldsValuesInRangeAndReplacesNaN() {
        let bounds = ParameterBounds()
        #expect(bounds.clamp(.nan, .gain) == 0)
        #expect(bounds.clamp(-.nan, .compRatio) == 4)
        #expect(bounds.clamp(1e9, .gain) == 24)
        #expect(bounds.clamp(-.infinity, .gain) == -24)
        #expect(bounds.clamp(6, .gain) == 6)
        #expect(bounds.clamp(0.7, .bypass) == 1)
        #expect(bounds.clamp(0.2, .bypass) == 0)
        #expect(bounds.clamp(1000, .eqHighPassFrequency) == 320)
        #expect(bounds.clamp(100, .eqHighPassFrequency) == 100)
    }
}
