// Prescriptive fitting: from an audiogram (hearing thresholds in dB HL) to the hearing stage's
// settings for one ear. Off the audio path (arrays, allocation): hearctl and tests call it.
//
// Target insertion gain per band centre (250 ... 8000 Hz) by one of two rules:
//   NAL-R (Byrne & Dillon 1986): X = 0.05 (H500 + H1000 + H2000); gain = X + 0.31 H + k(f), with
//     k = -17, -8, +1, -1, -2, -2, -2 dB at 250, 500, 1000, 2000, 3000, 4000, 6000 Hz (k(8000) is
//     taken as k(6000), -2 dB; NAL-R stops at 6 kHz);
//   half-gain: gain = H / 2.
// Negative gains become 0 (the fit never turns a band down). Compression ratios grow with the
// loss, a rule of thumb for the narrower dynamic range of an ear with recruitment:
//   ratio = 1 + (H - 20) / 40, held in 1 ... 3 (1 at 20 dB HL, 2 at 60, 3 at 100).
// The gain is the band's gain below its kneepoint (soft and medium sounds); above it the ratio
// takes over. Each target is held at the gain cap (mb.maxgain).
//
// The six bands overlap, so a band's gain is not what the filter delivers at its centre when its
// neighbours differ. The band gains are solved from the crossover's designed complex response so
// that the summed response at each band centre is the target.

import Glibc
import HearControl
import HearDSP

/// Hearing thresholds in dB HL at some audiogram frequencies; the rest are interpolated.
public struct Audiogram: Sendable, Equatable {
    /// The frequencies an audiogram reports, and the fit reads.
    public static let frequencies: [Double] = [250, 500, 1000, 2000, 3000, 4000, 6000, 8000]

    /// Measured points, sorted by frequency: (Hz, dB HL).
    public let points: [Point]

    public struct Point: Sendable, Equatable {
        public let frequency: Double
        public let threshold: Double
        public init(frequency: Double, threshold: Double) { self.frequency = frequency; self.threshold = threshold }
    }

    public enum ParseError: Error, Equatable, CustomStringConvertible {
        case empty
        case badPoint(String)
        case frequencyOutOfRange(Double)
        case thresholdOutOfRange(Double)
        case duplicate(Double)

        public var description: String {
            switch self {
            case .empty: return "an audiogram needs at least one point, e.g. 500:30,1000:40"
            case .badPoint(let text): return "'\(text)' is not FREQUENCY:THRESHOLD (e.g. 1000:35)"
            case .frequencyOutOfRange(let f): return "\(f) Hz is outside 125-8000 Hz"
            case .thresholdOutOfRange(let h): return "\(h) dB HL is outside -10 to 120 dB HL"
            case .duplicate(let f): return "\(f) Hz is given twice"
            }
        }
    }

    public init(points: [Point]) throws(ParseError) {
        guard !points.isEmpty else { throw .empty }
        for point in points {
            guard point.frequency >= 125 && point.frequency <= 8000 else { throw .frequencyOutOfRange(point.frequency) }
            guard point.threshold >= -10 && point.threshold <= 120 else { throw .thresholdOutOfRange(point.threshold) }
        }
        let sorted = points.sorted { $0.frequency < $1.frequency }
        // Sorted, a frequency given twice stands beside itself: one pass, however many points.
        for (a, b) in zip(sorted, sorted.dropFirst()) where a.frequency == b.frequency { throw .duplicate(a.frequency) }
        self.points = sorted
    }

    /// From `(frequency, dB HL)` pairs.
    public init(_ pairs: [(Double, Double)]) throws(ParseError) {
        try self.init(points: pairs.map { Point(frequency: $0.0, threshold: $0.1) })
    }

    /// Parses `250:20,500:25,1000:35` (Hz:dB HL, comma separated; spaces allowed).
    public init(parsing text: String) throws(ParseError) {
        var points: [Point] = []
        for item in text.split(separator: ",") {
            let trimmed = item.filter { $0 != " " }
            let parts = trimmed.split(separator: ":")
            guard parts.count == 2, let f = Double(parts[0]), let h = Double(parts[1]), f.isFinite, h.isFinite else {
                throw .badPoint(String(item))
            }
            points.append(Point(frequency: f, threshold: h))
        }
        try self.init(points: points)
    }

    /// The threshold at `frequency`: linear in log frequency between measured points, and the
    /// nearest measured value beyond them.
    public func threshold(at frequency: Double) -> Double {
        guard let first = points.first, let last = points.last else { return 0 }
        if frequency <= first.frequency { return first.threshold }
        if frequency >= last.frequency { return last.threshold }
        for (a, b) in zip(points, points.dropFirst()) where frequency <= b.frequency {
            let t = Glibc.log2(frequency / a.frequency) / Glibc.log2(b.frequency / a.frequency)
            return a.threshold + t * (b.threshold - a.threshold)
        }
        return last.threshold
    }

    /// `250:20,500:25,...` at the standard frequencies, measured or interpolated.
    public var text: String {
        Audiogram.frequencies.map { "\(Int($0)):\(Fitting.format(threshold(at: $0)))" }.joined(separator: ",")
    }
}

public enum FittingRule: String, CaseIterable, Sendable {
    case nalR = "nal-r"
    case halfGain = "half-gain"
}

/// One ear's fit: per band (centres 250, 500, 1000, 2000, 4000, 8000 Hz).
public struct EarFit: Sendable {
    public let audiogram: Audiogram
    public let rule: FittingRule
    /// What the rule prescribes at the band centres (dB).
    public let prescribedDB: [Double]
    /// The prescription held at the gain cap: what the stage should deliver at the band centres.
    public let targetDB: [Double]
    /// The band gains that deliver `targetDB` through the crossover (mb.<ear>.gainN).
    public let bandGainDB: [Double]
    public let ratio: [Double]
    /// Bands whose prescription the gain cap cut.
    public let capped: [Bool]

    public var hitsCap: Bool { capped.contains(true) }
}

public enum Fitting {
    public static var bandCount: Int { Crossover.bandCount }
    public static var bandCentres: [Double] { (0..<bandCount).map(Crossover.centre) }
    /// The kneepoint and expansion kneepoint a fit sets (the schema defaults): soft and medium
    /// speech (band peaks between -65 and -40 dBFS) gets the prescribed gain.
    public static var kneeDB: Double { Double(Parameter.mbKnee1.spec.defaultValue) }

    /// NAL-R's k(f) (Byrne & Dillon 1986), dB; between table points linear in log frequency.
    public static func nalRConstant(_ frequency: Double) -> Double {
        let table: [(Double, Double)] = [(250, -17), (500, -8), (750, -3), (1000, 1), (1500, 1), (2000, -1),
                                          (3000, -2), (4000, -2), (6000, -2), (8000, -2)]
        if frequency <= 250 { return -17 }
        for (a, b) in zip(table, table.dropFirst()) where frequency <= b.0 {
            let t = Glibc.log2(frequency / a.0) / Glibc.log2(b.0 / a.0)
            return a.1 + t * (b.1 - a.1)
        }
        return -2
    }

    /// The rule's insertion gain at `frequency`, before flooring at 0.
    public static func formulaGain(_ rule: FittingRule, _ audiogram: Audiogram, at frequency: Double) -> Double {
        let h = audiogram.threshold(at: frequency)
        switch rule {
        case .halfGain:
            return 0.5 * h
        case .nalR:
            let x = 0.05 * (audiogram.threshold(at: 500) + audiogram.threshold(at: 1000) + audiogram.threshold(at: 2000))
            return x + 0.31 * h + nalRConstant(frequency)
        }
    }

    /// The prescribed gain at `frequency`: the formula, never below 0.
    public static func prescribedGain(_ rule: FittingRule, _ audiogram: Audiogram, at frequency: Double) -> Double {
        max(0, formulaGain(rule, audiogram, at: frequency))
    }

    /// Compression ratio for a threshold of `h` dB HL: 1 + (h - 20) / 40, held in 1 ... 3.
    public static func compressionRatio(thresholdDB h: Double) -> Double {
        min(max(1 + (h - 20) / 40, 1), 3)
    }

    /// The fit of one ear, for a stage running at `sampleRate` with gain cap `maxGainDB`.
    public static func fit(_ audiogram: Audiogram, rule: FittingRule, maxGainDB: Double = 30,
                           sampleRate: Double = 48000) -> EarFit {
        let crossover = Crossover(sampleRate: sampleRate)
        let centres = bandCentres
        let prescribed = centres.map { prescribedGain(rule, audiogram, at: $0) }
        let targets = prescribed.map { min($0, maxGainDB) }
        // The chain holds band gains this far below the cap (the crossover's worst overshoot), and
        // the schema no lower than its minimum: the solution stays inside both.
        let ceiling = maxGainDB - crossover.overshootBoundDB()
        let floor = Double(Parameter.mbLeftGain1.spec.minimum)
        let responses = centres.map { crossover.bandResponses(atFrequency: $0) }
        func delivered(_ gains: [Double]) -> [Double] {
            responses.map { bands in
                var sum = Complex(0, 0)
                for band in 0..<bandCount { sum = sum + Decibels.toGain(gains[band]) * bands[band] }
                return Decibels.fromGain(max(sum.magnitude, 1e-30))
            }
        }
        // Fixed-point iteration: each band moves by its centre's error; the response matrix is
        // dominated by its diagonal, so this settles within a few dozen rounds.
        var gains = targets
        for _ in 0..<60 {
            let now = delivered(gains)
            var moved = 0.0
            for band in 0..<bandCount {
                let next = max(min(gains[band] + (targets[band] - now[band]), ceiling), floor)
                moved = max(moved, abs(next - gains[band]))
                gains[band] = next
            }
            if moved < 1e-4 { break }
        }
        let capped = (0..<bandCount).map { prescribed[$0] > maxGainDB || gains[$0] >= ceiling - 1e-9 && prescribed[$0] > ceiling }
        return EarFit(audiogram: audiogram, rule: rule, prescribedDB: prescribed, targetDB: targets, bandGainDB: gains,
                      ratio: centres.map { compressionRatio(thresholdDB: audiogram.threshold(at: $0)) }, capped: capped)
    }

    /// Writes a two-ear fit into `values`: the hearing stage on, its gains, ratios, kneepoints
    /// and cap; the broadband compressor off, since the fitted multiband one takes its place.
    public static func apply(left: EarFit, right: EarFit, maxGainDB: Double = 30, to values: inout ParameterValues) {
        let bounds = ParameterBounds()
        func set(_ parameter: Parameter, _ value: Double) { values[parameter] = bounds.clamp(Float(value), parameter) }
        set(.mbEnable, 1)
        set(.compEnable, 0)
        // The equalizer's boosts add to the prescription (a drop-in's +9 dB at 3 kHz overshot the
        // target by 4-5 dB at 2-6 kHz): the fit sets it aside, as it sets the compressor aside.
        set(.eqEnable, 0)
        set(.mbMaxGain, maxGainDB)
        for (ear, fit) in [left, right].enumerated() {
            for band in 0..<bandCount {
                set(Parameter.mbGain(ear: ear, band: band), fit.bandGainDB[band])
                set(Parameter.mbRatio(ear: ear, band: band), fit.ratio[band])
            }
        }
        for band in 0..<bandCount { set(Parameter.mbKnee(band: band), kneeDB) }
        set(.mbExpansion, Double(Parameter.mbExpansion.spec.defaultValue))
    }

    /// A number with at most one decimal, for tables and audiogram text.
    public static func format(_ value: Double) -> String {
        let tenths = Int((value * 10).rounded())
        let sign = tenths < 0 ? "-" : ""
        let magnitude = abs(tenths)
        return magnitude % 10 == 0 ? "\(sign)\(magnitude / 10)" : "\(sign)\(magnitude / 10).\(magnitude % 10)"
    }
}

extension Crossover {
    /// The designed magnitude response (dB) of the six bands summed with these gains (dB). Arrays:
    /// for fitting and tests, off the audio path.
    public func responseDB(atFrequency frequency: Double, bandGainsDB: [Double]) -> Double {
        let bands = bandResponses(atFrequency: frequency)
        var sum = Complex(0, 0)
        for band in 0..<Crossover.bandCount { sum = sum + Decibels.toGain(bandGainsDB[band]) * bands[band] }
        return Decibels.fromGain(max(sum.magnitude, 1e-30))
    }
}
