// From the hearing test's thresholds in dBFS to estimated dB HL. A threshold in dBFS depends on
// the headset and the volume setting as much as on the ear, so the conversion needs a reference:
//   - a calibration file, for a headset whose output was measured: per frequency, the dBFS level
//     that is 0 dB HL on it (per ear, or one value for both), lines "FREQUENCY LEFT RIGHT" or
//     "FREQUENCY BOTH", # comments;
//   - without one, a stated assumption: the listener's best threshold at 500 or 1000 Hz is taken
//     as normal hearing (0 dB HL there), and the other frequencies follow the normal threshold
//     curve of supra-aural earphones (the reference equivalent threshold sound pressure levels of
//     ISO 389-1 for TDH 39, relative to 1 kHz). A listener whose hearing is not normal at 500-1000
//     Hz gets thresholds that are too good by that much; the result says so, and is "estimated".

public enum HearingCalibration: Sendable, Equatable {
    /// dBFS at 0 dB HL, per ear and frequency.
    case measured([Ear: [Double: Double]])
    /// The listener's best threshold at 500-1000 Hz taken as 0 dB HL.
    case assumed

    /// ISO 389-1 RETSPL for TDH 39 earphones (dB SPL at 0 dB HL).
    static let referenceSPL: [Double: Double] = [250: 25.5, 500: 11.5, 1000: 7.0, 2000: 9.0, 3000: 10.0, 4000: 9.5, 6000: 15.5, 8000: 13.0]

    public enum ParseError: Error, CustomStringConvertible, Equatable {
        case line(Int, String)
        case missing([Double])

        public var description: String {
            switch self {
            case .line(let number, let text): return "line \(number): '\(text)' is not FREQUENCY LEFT RIGHT or FREQUENCY BOTH (dBFS at 0 dB HL)"
            case .missing(let frequencies):
                return "no level for " + frequencies.map { "\(Int($0)) Hz" }.joined(separator: ", ") + " (every test frequency needs one)"
            }
        }
    }

    /// Reads a calibration file's text.
    public static func parse(_ text: String) throws(ParseError) -> HearingCalibration {
        var table: [Ear: [Double: Double]] = [.left: [:], .right: [:]]
        for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
            if fields.isEmpty { continue }
            let numbers = fields.compactMap(Double.init)
            guard numbers.count == fields.count, numbers.count == 2 || numbers.count == 3, numbers.allSatisfy(\.isFinite),
                  HearingTest.frequencies.contains(numbers[0]), numbers.dropFirst().allSatisfy({ $0 <= 0 && $0 >= -150 }) else {
                throw .line(index + 1, String(raw))
            }
            table[.left]![numbers[0]] = numbers[1]
            table[.right]![numbers[0]] = numbers.count == 3 ? numbers[2] : numbers[1]
        }
        let missing = HearingTest.frequencies.filter { table[.left]![$0] == nil }
        guard missing.isEmpty else { throw .missing(missing) }
        return .measured(table)
    }

    /// The frequency and dBFS level taken as normal hearing under `.assumed`: the lowest threshold
    /// at 500 or 1000 Hz of either ear, moved to what it means at 1 kHz. Nil without one.
    static func assumedReference(_ result: HearingTest.Result) -> Double? {
        var best: Double?
        for ear in Ear.allCases {
            for frequency in [500.0, 1000] {
                guard let level = result.level(ear, frequency) else { continue }
                let atOneKilohertz = level - (referenceSPL[frequency]! - referenceSPL[1000]!)
                best = min(best ?? atOneKilohertz, atOneKilohertz)
            }
        }
        return best
    }

    /// Estimated dB HL per ear at the test frequencies (nil where the test found no threshold).
    public func hearingLevels(_ result: HearingTest.Result) -> [Ear: [Double: Double]] {
        var levels: [Ear: [Double: Double]] = [:]
        let reference = Self.assumedReference(result)
        for ear in Ear.allCases {
            for frequency in HearingTest.frequencies {
                guard let level = result.level(ear, frequency) else { continue }
                switch self {
                case .measured(let table):
                    guard let zero = table[ear]?[frequency] else { continue }
                    levels[ear, default: [:]][frequency] = level - zero
                case .assumed:
                    guard let reference else { continue }
                    levels[ear, default: [:]][frequency] = level - reference - (Self.referenceSPL[frequency]! - Self.referenceSPL[1000]!)
                }
            }
        }
        return levels
    }

    /// What the dB HL figures rest on, for the report.
    public var basis: String {
        switch self {
        case .measured: return "estimated dB HL from the calibration file's levels"
        case .assumed:
            return "estimated dB HL, assuming your best threshold at 500-1000 Hz is normal hearing (0 dB HL) and an earphone's "
                + "normal threshold curve (ISO 389-1); with a measured headset, --calibration FILE replaces the assumption"
        }
    }
}
