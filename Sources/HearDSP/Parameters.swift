// The parameter schema: every user-facing parameter of the chain, once. LADSPA ports, the README
// table and the control protocol are generated from (or checked against) this file.

/// How a parameter moves between its bounds; hosts and the CLI use it to draw and step controls.
public enum ParameterScale: Sendable {
    case linear
    case logarithmic
    /// 0 = off, 1 = on.
    case toggle
}

public struct ParameterSpec: Sendable {
    public let key: String
    public let minimum: Float
    public let maximum: Float
    public let defaultValue: Float
    /// Printed after values ("dB", "Hz", …); empty for switches and plain numbers.
    public let unit: String
    public let scale: ParameterScale
    public let help: String
}

/// One case per parameter; `rawValue` is its index in `ParameterValues` and its control-port order.
public enum Parameter: Int, CaseIterable, Sendable {
    case gain
    case bypass
    case nsEnable
    case nsReduction
    case eqEnable
    case eqHighPassEnable
    case eqHighPassFrequency
    case eqLowShelfFrequency
    case eqLowShelfGain
    case eqPeak1Frequency
    case eqPeak1Gain
    case eqPeak1Q
    case eqPeak2Frequency
    case eqPeak2Gain
    case eqPeak2Q
    case eqPeak3Frequency
    case eqPeak3Gain
    case eqPeak3Q
    case eqHighShelfFrequency
    case eqHighShelfGain
    case compEnable
    case compThreshold
    case compRatio
    case compKnee
    case compAttack
    case compRelease
    case compMakeup
    case limitEnable
    case limitCeiling
    case limitRelease

    // Ranges are chosen so that each default is one of the points a LADSPA range hint can express
    // (minimum, low, middle, high, maximum, 0, 1): bare LADSPA hosts then start at our defaults.
    public var spec: ParameterSpec {
        switch self {
        case .gain:
            return .init(key: "gain", minimum: -24, maximum: 24, defaultValue: 0, unit: "dB", scale: .linear,
                         help: "Output gain, applied before the limiter")
        case .bypass:
            return .init(key: "bypass", minimum: 0, maximum: 1, defaultValue: 0, unit: "", scale: .toggle,
                         help: "Pass the input through unchanged (click-free crossfade)")
        case .nsEnable:
            return .init(key: "ns.enable", minimum: 0, maximum: 1, defaultValue: 1, unit: "", scale: .toggle,
                         help: "Noise suppression on/off")
        case .nsReduction:
            return .init(key: "ns.reduction", minimum: 0, maximum: 40, defaultValue: 20, unit: "dB", scale: .linear,
                         help: "Most the noise suppressor may attenuate noise")
        case .eqEnable:
            return .init(key: "eq.enable", minimum: 0, maximum: 1, defaultValue: 1, unit: "", scale: .toggle,
                         help: "Equalizer on/off")
        case .eqHighPassEnable:
            return .init(key: "eq.hp.enable", minimum: 0, maximum: 1, defaultValue: 1, unit: "", scale: .toggle,
                         help: "High-pass filter against rumble and handling noise on/off")
        case .eqHighPassFrequency:
            return .init(key: "eq.hp.freq", minimum: 20, maximum: 320, defaultValue: 80, unit: "Hz", scale: .logarithmic,
                         help: "High-pass cutoff (12 dB/octave Butterworth)")
        case .eqLowShelfFrequency:
            return .init(key: "eq.low.freq", minimum: 50, maximum: 800, defaultValue: 200, unit: "Hz", scale: .logarithmic,
                         help: "Low shelf corner frequency")
        case .eqLowShelfGain:
            return .init(key: "eq.low.gain", minimum: -18, maximum: 18, defaultValue: 0, unit: "dB", scale: .linear,
                         help: "Low shelf gain (warmth, boominess)")
        case .eqPeak1Frequency:
            return .init(key: "eq.peak1.freq", minimum: 125, maximum: 2000, defaultValue: 500, unit: "Hz", scale: .logarithmic,
                         help: "Peaking band 1 centre frequency")
        case .eqPeak1Gain:
            return .init(key: "eq.peak1.gain", minimum: -18, maximum: 18, defaultValue: 0, unit: "dB", scale: .linear,
                         help: "Peaking band 1 gain (body, muddiness)")
        case .eqPeak1Q:
            return .init(key: "eq.peak1.q", minimum: 0.25, maximum: 4, defaultValue: 1, unit: "", scale: .logarithmic,
                         help: "Peaking band 1 quality factor (higher is narrower)")
        case .eqPeak2Frequency:
            return .init(key: "eq.peak2.freq", minimum: 375, maximum: 6000, defaultValue: 1500, unit: "Hz", scale: .logarithmic,
                         help: "Peaking band 2 centre frequency")
        case .eqPeak2Gain:
            return .init(key: "eq.peak2.gain", minimum: -18, maximum: 18, defaultValue: 0, unit: "dB", scale: .linear,
                         help: "Peaking band 2 gain (presence)")
        case .eqPeak2Q:
            return .init(key: "eq.peak2.q", minimum: 0.25, maximum: 4, defaultValue: 1, unit: "", scale: .logarithmic,
                         help: "Peaking band 2 quality factor (higher is narrower)")
        case .eqPeak3Frequency:
            return .init(key: "eq.peak3.freq", minimum: 750, maximum: 12000, defaultValue: 3000, unit: "Hz", scale: .logarithmic,
                         help: "Peaking band 3 centre frequency")
        case .eqPeak3Gain:
            return .init(key: "eq.peak3.gain", minimum: -18, maximum: 18, defaultValue: 0, unit: "dB", scale: .linear,
                         help: "Peaking band 3 gain (consonants, intelligibility)")
        case .eqPeak3Q:
            return .init(key: "eq.peak3.q", minimum: 0.25, maximum: 4, defaultValue: 1, unit: "", scale: .logarithmic,
                         help: "Peaking band 3 quality factor (higher is narrower)")
        case .eqHighShelfFrequency:
            return .init(key: "eq.high.freq", minimum: 1500, maximum: 24000, defaultValue: 6000, unit: "Hz", scale: .logarithmic,
                         help: "High shelf corner frequency (capped below the Nyquist frequency)")
        case .eqHighShelfGain:
            return .init(key: "eq.high.gain", minimum: -18, maximum: 18, defaultValue: 0, unit: "dB", scale: .linear,
                         help: "High shelf gain (air, sibilance)")
        case .compEnable:
            return .init(key: "comp.enable", minimum: 0, maximum: 1, defaultValue: 1, unit: "", scale: .toggle,
                         help: "Compressor on/off")
        case .compThreshold:
            return .init(key: "comp.threshold", minimum: -48, maximum: 0, defaultValue: -24, unit: "dB", scale: .linear,
                         help: "Level (dBFS peak) above which the compressor reduces gain")
        case .compRatio:
            return .init(key: "comp.ratio", minimum: 1, maximum: 16, defaultValue: 4, unit: ":1", scale: .logarithmic,
                         help: "Input dB above the threshold per output dB")
        case .compKnee:
            return .init(key: "comp.knee", minimum: 0, maximum: 24, defaultValue: 6, unit: "dB", scale: .linear,
                         help: "Width of the soft knee around the threshold")
        case .compAttack:
            return .init(key: "comp.attack", minimum: 1, maximum: 100, defaultValue: 10, unit: "ms", scale: .logarithmic,
                         help: "Time constant of gain reduction setting in")
        case .compRelease:
            return .init(key: "comp.release", minimum: 10, maximum: 1000, defaultValue: 100, unit: "ms", scale: .logarithmic,
                         help: "Time constant of gain reduction letting go")
        case .compMakeup:
            return .init(key: "comp.makeup", minimum: 0, maximum: 24, defaultValue: 0, unit: "dB", scale: .linear,
                         help: "Gain added after compression")
        case .limitEnable:
            return .init(key: "limit.enable", minimum: 0, maximum: 1, defaultValue: 1, unit: "", scale: .toggle,
                         help: "Output limiter on/off")
        case .limitCeiling:
            // Capped at -1 dBFS: headroom for inter-sample peaks and lossy codecs downstream.
            return .init(key: "limit.ceiling", minimum: -24, maximum: -1, defaultValue: -1, unit: "dB", scale: .linear,
                         help: "Highest output sample level (dBFS) the limiter lets through")
        case .limitRelease:
            return .init(key: "limit.release", minimum: 5, maximum: 500, defaultValue: 50, unit: "ms", scale: .logarithmic,
                         help: "Time constant of the limiter letting go")
        }
    }

    public var key: String { spec.key }

    /// How many parameters there are (`allCases` allocates; this does not).
    public static var count: Int { limitRelease.rawValue + 1 }

    /// The parameter with this schema key, if any.
    public init?(key: String) {
        guard let match = Parameter.allCases.first(where: { $0.spec.key == key }) else { return nil }
        self = match
    }
}

/// One value per parameter, fixed size and inline: safe to copy on the audio thread.
public struct ParameterValues: Equatable, Sendable {
    public static let capacity = 48
    @usableFromInline var storage: InlineArray<48, Float>

    /// Every parameter at its schema default (builds the specs: call off the audio thread).
    public init() {
        storage = InlineArray(repeating: 0)
        for parameter in Parameter.allCases { storage[parameter.rawValue] = parameter.spec.defaultValue }
    }

    @inlinable public subscript(parameter: Parameter) -> Float {
        get { storage[parameter.rawValue] }
        set { storage[parameter.rawValue] = newValue }
    }

    /// By `Parameter.rawValue`, for loops over every parameter on the audio thread.
    @inlinable public subscript(index: Int) -> Float {
        get { storage[index] }
        set { storage[index] = newValue }
    }

    @inlinable public static func == (a: ParameterValues, b: ParameterValues) -> Bool {
        for index in 0..<capacity where a.storage[index].bitPattern != b.storage[index].bitPattern { return false }
        return true
    }
}

/// The schema's bounds in plain numbers, so the audio thread can clamp without touching specs.
public struct ParameterBounds: Sendable {
    public var lower = ParameterValues()
    public var upper = ParameterValues()
    public var defaults = ParameterValues()
    /// 1 where the parameter is a switch.
    public var toggles = ParameterValues()

    public init() {
        for parameter in Parameter.allCases {
            let spec = parameter.spec
            lower[parameter] = spec.minimum
            upper[parameter] = spec.maximum
            toggles[parameter] = spec.scale == .toggle ? 1 : 0
        }
    }

    /// The value the chain will use: NaN becomes the default, anything else is held in range,
    /// and switches snap to 0 or 1.
    @inlinable public func clamp(_ value: Float, _ parameter: Parameter) -> Float {
        clamp(value, index: parameter.rawValue)
    }

    @inlinable public func clamp(_ value: Float, index: Int) -> Float {
        guard value == value else { return defaults[index] }
        let low = lower[index], high = upper[index]
        let held = value < low ? low : (value > high ? high : value)
        if toggles[index] != 0 { return held >= 0.5 ? 1 : 0 }
        return held
    }
}
