// Meters as the control server reports them and hearctl reads them, keyed by HearDSP's `Meter`
// table (HearDSP/Meters.swift): nothing here names a single meter.

import HearDSP

extension Meter {
    /// How many meters there are; off the audio thread only (`allCases` allocates).
    public static var count: Int { allCases.count }

    /// The field in an `instance` line.
    public var key: String { String(describing: spec.key) }

    /// True when every window reads a value (a level or reduction); false for what a stage that is off leaves unmeasured.
    public var measuredAlways: Bool { spec.accumulation != .latest }

    public init?(key: String) {
        guard let meter = Self.allCases.first(where: { $0.key == key }) else { return nil }
        self = meter
    }
}

/// A meter window as read: levels in dBFS, reductions in dB, fractions 0...1; nil where not measured.
public struct MeterReadings: Equatable, Sendable {
    private var values: [Float?]

    /// What an empty window reads: levels -inf, reductions 0, what a stage that is off measures nil.
    public init() {
        values = Meter.allCases.map { $0.spec.unit.reading($0.spec.accumulation.empty, samples: 0) }
    }

    /// The readings of a window's accumulated values (`value(meter)`) over `samples` samples.
    public init(samples: UInt64, _ value: (Meter) -> Double) {
        values = Meter.allCases.map { $0.spec.unit.reading(value($0), samples: samples) }
    }

    /// An empty window but for `readings` (for fakes and tests).
    public init(_ readings: [Meter: Float?]) {
        self.init()
        for (meter, reading) in readings { self[meter] = reading }
    }

    public subscript(meter: Meter) -> Float? {
        get { values[meter.rawValue] }
        set { values[meter.rawValue] = newValue }
    }

    /// Every meter with its reading, in table order.
    public var all: [(meter: Meter, reading: Float?)] { Meter.allCases.map { ($0, values[$0.rawValue]) } }
}
