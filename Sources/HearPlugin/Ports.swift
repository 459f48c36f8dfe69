// The port layout both labels share, derived from the parameter schema:
//   audio inputs, audio outputs, one control input per schema parameter (named by its key),
//   the `chain` control input (an integer that groups instances for hearctl; not a DSP parameter),
//   then the `latency` control output (samples), which LADSPA hosts such as Ardour read.

import CLADSPA
import Glibc
import HearControl
import HearDSP

struct PortLayout {
    let channels: Int

    // channels is 1 or 2 (instantiate refuses anything else), so these are small: no checks, and
    // no trap on the audio thread.
    var audioInputs: Range<Int> { Range(uncheckedBounds: (0, channels)) }
    var audioOutputs: Range<Int> { Range(uncheckedBounds: (channels, 2 &* channels)) }
    var firstControl: Int { 2 &* channels }
    /// Which chain the instance belongs to (HearControl.ChainName): 0 default, 1 mic, 2 speaker, ...
    var chain: Int { firstControl &+ Parameter.count }
    var latency: Int { chain &+ 1 }
    var count: Int { latency &+ 1 }

    func name(_ port: Int) -> String {
        let sides = channels == 1 ? [""] : [" L", " R"]
        if audioInputs.contains(port) { return "In" + sides[port] }
        if audioOutputs.contains(port) { return "Out" + sides[port - channels] }
        if port == latency { return "latency" }
        if port == chain { return "chain" }
        return Parameter(rawValue: port - firstControl)?.key ?? "?"
    }

    func descriptor(_ port: Int) -> LADSPA_PortDescriptor {
        if audioInputs.contains(port) { return LADSPA_PORT_AUDIO | LADSPA_PORT_INPUT }
        if audioOutputs.contains(port) { return LADSPA_PORT_AUDIO | LADSPA_PORT_OUTPUT }
        if port == latency { return LADSPA_PORT_CONTROL | LADSPA_PORT_OUTPUT }
        return LADSPA_PORT_CONTROL | LADSPA_PORT_INPUT
    }

    func hint(_ port: Int) -> LADSPA_PortRangeHint {
        if port == latency {
            return LADSPA_PortRangeHint(HintDescriptor: LADSPA_HINT_BOUNDED_BELOW | LADSPA_HINT_INTEGER, LowerBound: 0,
                                        UpperBound: 0)
        }
        if port == chain {
            return LADSPA_PortRangeHint(HintDescriptor: LADSPA_HINT_BOUNDED_BELOW | LADSPA_HINT_BOUNDED_ABOVE | LADSPA_HINT_INTEGER
                                            | LADSPA_HINT_DEFAULT_0,
                                        LowerBound: 0, UpperBound: Float(ChainName.maximum))
        }
        guard let parameter = Parameter(rawValue: port - firstControl), port >= firstControl else {
            return LADSPA_PortRangeHint(HintDescriptor: 0, LowerBound: 0, UpperBound: 0)
        }
        return Self.rangeHint(parameter.spec)
    }

    /// Bounds, scale and the LADSPA default point that lands on the schema default.
    static func rangeHint(_ spec: ParameterSpec) -> LADSPA_PortRangeHint {
        var hint = LADSPA_HINT_BOUNDED_BELOW | LADSPA_HINT_BOUNDED_ABOVE
        switch spec.scale {
        case .toggle: hint = LADSPA_HINT_TOGGLED
        case .logarithmic: hint |= LADSPA_HINT_LOGARITHMIC
        case .linear: break
        }
        hint |= defaultHint(spec)
        return LADSPA_PortRangeHint(HintDescriptor: hint, LowerBound: spec.minimum, UpperBound: spec.maximum)
    }

    /// The LADSPA default hint whose value (LADSPA 1.1 rules) is the schema default; tests require an exact match.
    static func defaultHint(_ spec: ParameterSpec) -> Int32 {
        let candidates: [Int32] = spec.scale == .toggle
            ? [LADSPA_HINT_DEFAULT_0, LADSPA_HINT_DEFAULT_1]
            : [LADSPA_HINT_DEFAULT_0, LADSPA_HINT_DEFAULT_1, LADSPA_HINT_DEFAULT_100, LADSPA_HINT_DEFAULT_440,
               LADSPA_HINT_DEFAULT_MINIMUM, LADSPA_HINT_DEFAULT_MAXIMUM, LADSPA_HINT_DEFAULT_MIDDLE,
               LADSPA_HINT_DEFAULT_LOW, LADSPA_HINT_DEFAULT_HIGH]
        var best = candidates[0], bestError = Float.infinity
        for candidate in candidates {
            let value = defaultValue(candidate, spec)
            guard value >= spec.minimum && value <= spec.maximum else { continue }
            let error = abs(value - spec.defaultValue)
            if error < bestError { best = candidate; bestError = error }
        }
        return best
    }

    /// What a LADSPA host computes for a default hint (ladspa.h, LADSPA_HINT_DEFAULT_*).
    static func defaultValue(_ hint: Int32, _ spec: ParameterSpec) -> Float {
        let lo = Double(spec.minimum), hi = Double(spec.maximum)
        let logarithmic = spec.scale == .logarithmic && lo > 0
        func between(_ weight: Double) -> Float {
            Float(logarithmic ? exp(log(lo) * (1 - weight) + log(hi) * weight) : lo * (1 - weight) + hi * weight)
        }
        switch hint {
        case LADSPA_HINT_DEFAULT_0: return 0
        case LADSPA_HINT_DEFAULT_1: return 1
        case LADSPA_HINT_DEFAULT_100: return 100
        case LADSPA_HINT_DEFAULT_440: return 440
        case LADSPA_HINT_DEFAULT_MINIMUM: return spec.minimum
        case LADSPA_HINT_DEFAULT_MAXIMUM: return spec.maximum
        case LADSPA_HINT_DEFAULT_LOW: return between(0.25)
        case LADSPA_HINT_DEFAULT_MIDDLE: return between(0.5)
        case LADSPA_HINT_DEFAULT_HIGH: return between(0.75)
        default: return spec.minimum
        }
    }
}
