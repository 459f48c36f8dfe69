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
    /// A switch's two settings by name (`ns.mode`: classical, learned); empty for off/on.
    public let choices: [String]

    public init(key: String, minimum: Float, maximum: Float, defaultValue: Float, unit: String, scale: ParameterScale,
                help: String, choices: [String] = []) {
        self.key = key
        self.minimum = minimum
        self.maximum = maximum
        self.defaultValue = defaultValue
        self.unit = unit
        self.scale = scale
        self.help = help
        self.choices = choices
    }

    /// A switch's value as people write it: "on"/"off", or the setting's name.
    public func switchName(_ value: Float) -> String {
        let on = value >= 0.5
        return choices.count == 2 ? choices[on ? 1 : 0] : (on ? "on" : "off")
    }
}

/// One case per parameter; `rawValue` is its index in `ParameterValues` and its control-port order.
public enum Parameter: Int, CaseIterable, Sendable {
    case gain
    case bypass
    case nsEnable
    case nsReduction
    case nsSensitivity
    case nsMode
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
    // The hearing stage (multiband WDRC): bands are contiguous so the audio path can index them.
    case mbEnable
    case mbLeftGain1, mbLeftGain2, mbLeftGain3, mbLeftGain4, mbLeftGain5, mbLeftGain6
    case mbRightGain1, mbRightGain2, mbRightGain3, mbRightGain4, mbRightGain5, mbRightGain6
    case mbLeftRatio1, mbLeftRatio2, mbLeftRatio3, mbLeftRatio4, mbLeftRatio5, mbLeftRatio6
    case mbRightRatio1, mbRightRatio2, mbRightRatio3, mbRightRatio4, mbRightRatio5, mbRightRatio6
    case mbKnee1, mbKnee2, mbKnee3, mbKnee4, mbKnee5, mbKnee6
    case mbExpansion
    case mbAttack
    case mbRelease
    case mbMPO
    case mbMaxGain
    // The echo canceller, last so that the older ports keep their places.
    case aecEnable
    case aecSuppress
    case aecFilter

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
            return .init(key: "ns.reduction", minimum: 0, maximum: 50, defaultValue: 25, unit: "dB", scale: .linear,
                         help: "How far the noise suppressor lowers noise")
        case .nsSensitivity:
            return .init(key: "ns.sensitivity", minimum: 0, maximum: 100, defaultValue: 50, unit: "%", scale: .linear,
                         help: "How readily the noise suppressor treats sound as noise (50 = neutral)")
        case .nsMode:
            return .init(key: "ns.mode", minimum: 0, maximum: 1, defaultValue: 1, unit: "", scale: .toggle,
                         help: "Noise suppressor: learned (trained gain model with the estimator) or classical (estimator alone)",
                         choices: ["classical", "learned"])
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
        case .mbEnable:
            // Off by default: the chain sounds as before until a hearing profile is applied.
            return .init(key: "mb.enable", minimum: 0, maximum: 1, defaultValue: 0, unit: "", scale: .toggle,
                         help: "Hearing profile (six-band compressor fitted to an audiogram) on/off")
        case .mbExpansion:
            return .init(key: "mb.expansion", minimum: -90, maximum: -40, defaultValue: -65, unit: "dB", scale: .linear,
                         help: "Band level (dBFS) below which gain falls 1 dB per dB, so the noise floor is not raised")
        case .mbAttack:
            return .init(key: "mb.attack", minimum: 0.5, maximum: 50, defaultValue: 5, unit: "ms", scale: .logarithmic,
                         help: "Time constant of the band levels rising (compression setting in)")
        case .mbRelease:
            return .init(key: "mb.release", minimum: 10, maximum: 1000, defaultValue: 100, unit: "ms", scale: .logarithmic,
                         help: "Time constant of the band levels falling (compression letting go)")
        case .mbMPO:
            return .init(key: "mb.mpo", minimum: -30, maximum: -1, defaultValue: -1, unit: "dB", scale: .linear,
                         help: "Maximum output (dBFS sample peak): nothing, not even bypass or limit.enable 0, goes above it")
        case .mbMaxGain:
            return .init(key: "mb.maxgain", minimum: 0, maximum: 40, defaultValue: 30, unit: "dB", scale: .linear,
                         help: "Most gain the whole chain may add at any frequency; settings above it are turned down")
        case .aecEnable:
            // On by default: it acts only where a speaker chain runs in the same process.
            return .init(key: "aec.enable", minimum: 0, maximum: 1, defaultValue: 1, unit: "", scale: .toggle,
                         help: "Echo cancellation on/off: takes what the speaker chain plays out of this chain's input")
        case .aecSuppress:
            // Off by default: on the synthetic room (EchoCancellerTests) it adds 1.7-1.8 dB of
            // ERLE and takes the near end's double talk from 17-21 dB above the echo left to 10-13 dB.
            return .init(key: "aec.suppress", minimum: 0, maximum: 1, defaultValue: 0, unit: "", scale: .toggle,
                         help: "Residual echo suppression after the echo canceller on/off")
        case .aecFilter:
            // 250 ms covers a living room's reverberation and a few quanta of the desktop's
            // buffers; the filter is rebuilt off the audio thread when it changes (EchoFilters).
            return .init(key: "aec.filter", minimum: 125, maximum: 500, defaultValue: 250, unit: "ms", scale: .logarithmic,
                         help: "How long an echo path the echo canceller learns; a change starts it afresh")
        default:
            return bandSpec
        }
    }

    /// Where a per-band parameter sits: its band (0-5) and ear (0 = left, 1 = right, nil = both).
    public var band: (index: Int, ear: Int?)? {
        let gains = Parameter.mbLeftGain1.rawValue, knees = Parameter.mbKnee1.rawValue
        guard rawValue >= gains && rawValue < knees + 6 else { return nil }
        let offset = rawValue - gains
        if rawValue >= knees { return (rawValue - knees, nil) }
        return (offset % 6, (offset / 6) % 2)
    }

    /// The gain (dB below the kneepoint) of `band` (0-5) for `ear` (0 = left, 1 = right).
    public static func mbGain(ear: Int, band: Int) -> Parameter {
        Parameter(rawValue: mbLeftGain1.rawValue + 6 * min(max(ear, 0), 1) + min(max(band, 0), 5)) ?? .mbLeftGain1
    }

    /// The compression ratio of `band` (0-5) for `ear` (0 = left, 1 = right).
    public static func mbRatio(ear: Int, band: Int) -> Parameter {
        Parameter(rawValue: mbLeftRatio1.rawValue + 6 * min(max(ear, 0), 1) + min(max(band, 0), 5)) ?? .mbLeftRatio1
    }

    /// The compression kneepoint of `band` (0-5), both ears.
    public static func mbKnee(band: Int) -> Parameter {
        Parameter(rawValue: mbKnee1.rawValue + min(max(band, 0), 5)) ?? .mbKnee1
    }

    /// The frequencies band `index` covers, for help texts.
    static func bandRange(_ index: Int) -> String {
        switch index {
        case 0: "below 354 Hz"
        case 1: "354-707 Hz"
        case 2: "707-1414 Hz"
        case 3: "1414-2828 Hz"
        case 4: "2828-5657 Hz"
        default: "above 5657 Hz"
        }
    }

    var bandSpec: ParameterSpec {
        guard let (index, ear) = band else {
            return .init(key: "?", minimum: 0, maximum: 1, defaultValue: 0, unit: "", scale: .linear, help: "?")
        }
        let centre = [250, 500, 1000, 2000, 4000, 8000][index]
        let place = "band \(index + 1), \(centre) Hz (\(Parameter.bandRange(index)))"
        guard let ear else {
            return .init(key: "mb.knee\(index + 1)", minimum: -70, maximum: -10, defaultValue: -40, unit: "dB",
                         scale: .linear, help: "Kneepoint (band level, dBFS peak) above which \(place) compresses")
        }
        let side = ear == 0 ? "left" : "right", Side = ear == 0 ? "Left" : "Right"
        if rawValue < Parameter.mbLeftRatio1.rawValue {
            return .init(key: "mb.\(side).gain\(index + 1)", minimum: -20, maximum: 40, defaultValue: 0, unit: "dB",
                         scale: .linear, help: "\(Side) ear gain below the kneepoint, \(place)")
        }
        return .init(key: "mb.\(side).ratio\(index + 1)", minimum: 1, maximum: 10, defaultValue: 1, unit: ":1",
                     scale: .logarithmic, help: "\(Side) ear compression ratio above the kneepoint, \(place)")
    }

    public var key: String { spec.key }

    /// How many parameters there are (`allCases` allocates; this does not).
    public static var count: Int { aecFilter.rawValue + 1 }

    /// The parameter with this schema key, if any.
    public init?(key: String) {
        guard let match = Parameter.allCases.first(where: { $0.spec.key == key }) else { return nil }
        self = match
    }
}

/// One value per parameter, fixed size and inline: safe to copy on the audio thread.
public struct ParameterValues: Equatable, Sendable {
    public static let capacity = 96
    @usableFromInline var storage: InlineArray<96, Float>

    /// Every parameter at its schema default (builds the specs: call off the audio thread).
    public init() {
        storage = InlineArray(repeating: 0)
        for parameter in Parameter.allCases { self[parameter] = parameter.spec.defaultValue }
    }

    /// Every raw value is below `Parameter.count` <= `capacity` (ParametersTests), so no check.
    @inlinable public subscript(parameter: Parameter) -> Float {
        get { storage[unchecked: parameter.rawValue] }
        set { storage[unchecked: parameter.rawValue] = newValue }
    }

    /// By `Parameter.rawValue`, for loops over every parameter on the audio thread. An index
    /// outside 0 ..< capacity reads 0 and is not written (no trap).
    @inlinable public subscript(index: Int) -> Float {
        get { index >= 0 && index < Self.capacity ? storage[unchecked: index] : 0 }
        set { if index >= 0 && index < Self.capacity { storage[unchecked: index] = newValue } }
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
