// The meters: every level the chain reports, once. A stage measures into `Meters` on the audio
// thread, the plugin's control block carries the window by `Meter.rawValue`, and the status reply
// (HearControl/Reply.swift) and hearctl read it by meter. A new meter is a case and its row in
// `spec` here, and a `record` call in the stage that measures it; the rest follows the table.

/// How a measurement joins what the window already holds.
public enum MeterAccumulation: Sendable {
    /// The largest value (peaks, deepest gain reduction); an empty window holds 0.
    case maximum
    /// The sum (squared samples, read as their mean over the window's samples); an empty window holds 0.
    case sum
    /// The latest value; NaN means not measured (its stage is off), and an empty window holds NaN.
    case latest

    /// What a window holds before anything is measured.
    @inline(__always) public var empty: Double { self == .latest ? .nan : 0 }
}

/// What a window's value is, and so how it reads.
public enum MeterUnit: Sendable {
    /// A sample magnitude, read in dBFS.
    case amplitude
    /// A sum of squared samples, read as the window's mean power in dBFS.
    case squares
    /// A gain reduction in dB (positive), read as it is.
    case reduction
    /// A level in dBFS, read as it is.
    case level
    /// A fraction from 0 to 1, read as it is.
    case fraction
    /// Events counted over the window, read as they are.
    case count
    /// A time in milliseconds, read as it is.
    case milliseconds

    /// The reading of an accumulated value: levels in dBFS, reductions in dB; nil where not measured.
    public func reading(_ value: Double, samples: UInt64) -> Float? {
        if value.isNaN { return nil }
        switch self {
        case .amplitude: return value > 0 ? Float(Decibels.fromGain(value)) : -.infinity
        case .squares: return value > 0 && samples > 0 ? Float(Decibels.fromPower(value / Double(samples))) : -.infinity
        case .reduction, .level, .fraction, .count, .milliseconds: return Float(value)
        }
    }
}

public struct MeterSpec: Sendable {
    /// The field in the control protocol's `instance` line.
    public let key: StaticString
    /// The name in hearctl's JSON; a dot nests (`input.peak` is `"input": {"peak": …}`).
    public let name: StaticString
    public let accumulation: MeterAccumulation
    public let unit: MeterUnit

    @inline(__always) init(_ key: StaticString, _ name: StaticString, _ accumulation: MeterAccumulation, _ unit: MeterUnit) {
        self.key = key
        self.name = name
        self.accumulation = accumulation
        self.unit = unit
    }
}

/// One case per meter; `rawValue` is its index in `Meters` and in the control block.
public enum Meter: Int, CaseIterable, Sendable {
    case inputPeak, inputRMS, outputPeak, outputRMS, compressorReduction, limiterReduction, noiseFloor, speechProbability
    case echoReturnLossEnhancement, referenceRealignments, echoDelay

    /// The table. Trivial values only (StaticString), so the audio thread may read it.
    @inline(__always) public var spec: MeterSpec {
        switch self {
        case .inputPeak: MeterSpec("in.peak", "input.peak", .maximum, .amplitude)
        case .inputRMS: MeterSpec("in.rms", "input.rms", .sum, .squares)
        case .outputPeak: MeterSpec("out.peak", "output.peak", .maximum, .amplitude)
        case .outputRMS: MeterSpec("out.rms", "output.rms", .sum, .squares)
        // The hearing stage compresses too: its deepest band reduction counts as the compressor's.
        case .compressorReduction: MeterSpec("comp.gr", "compressorReduction", .maximum, .reduction)
        case .limiterReduction: MeterSpec("limit.gr", "limiterReduction", .maximum, .reduction)
        // The noise suppressor's estimate (dBFS) and speech presence probability; NaN while it is off.
        case .noiseFloor: MeterSpec("ns.floor", "noiseFloor", .latest, .level)
        case .speechProbability: MeterSpec("ns.speech", "speechProbability", .latest, .fraction)
        // The echo canceller's ERLE while the far end plays (dB); NaN while it is not cancelling.
        case .echoReturnLossEnhancement: MeterSpec("aec.erle", "echo.erle", .latest, .reduction)
        // Times the speaker chain's reference was realigned (a reader that fell behind or ran ahead).
        case .referenceRealignments: MeterSpec("aec.realign", "echo.realignments", .sum, .count)
        // The echo path's delay as the canceller's filter learned it (ms); NaN until it cancels.
        case .echoDelay: MeterSpec("aec.delay", "echo.delay", .latest, .milliseconds)
        }
    }
}

/// What the chain measured since the meters were last cleared, by meter; written only by the audio thread.
public struct Meters: Sendable {
    /// Room for every meter: `Meter.count` <= `capacity` (MeterTableTests), so indexing by a
    /// meter needs no check. The control block carries this many.
    @inlinable public static var capacity: Int { 16 }
    @usableFromInline var storage: InlineArray<16, Double>
    /// Samples measured since the meters were cleared (frames × channels): what `squares` divide by.
    public var samples = 0

    /// An empty window: every meter at its accumulation's empty value.
    @_noLocks public init() {
        storage = InlineArray(repeating: 0)
        for index in upTo(Self.capacity) {
            if let meter = Meter(rawValue: index) { storage[unchecked: index] = meter.spec.accumulation.empty }
        }
    }

    @inlinable public subscript(meter: Meter) -> Double { storage[unchecked: meter.rawValue] }

    /// By `Meter.rawValue`, for the loop that publishes the window. Outside 0 ..< capacity reads 0 (no trap).
    @inlinable public subscript(index: Int) -> Double {
        index >= 0 && index < Self.capacity ? storage[unchecked: index] : 0
    }

    /// Folds one measurement into the window, as the meter's row says.
    @inline(__always) public mutating func record(_ meter: Meter, _ value: Double) {
        let index = meter.rawValue
        switch meter.spec.accumulation {
        case .maximum: storage[unchecked: index] = max(storage[unchecked: index], value)
        case .sum: storage[unchecked: index] += value
        case .latest: storage[unchecked: index] = value
        }
    }
}
