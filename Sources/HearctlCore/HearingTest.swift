// A self-administered pure-tone hearing test: the procedure, apart from how tones are played and
// answers read (hearctl hearing-test does both), so that a simulated listener can take it in tests.
//
// Per ear, the frequencies 1k, 2k, 3k, 4k, 6k, 8k, then 1k again (the retest), 500 and 250 Hz
// (the clinical order: start where hearing is most reliable, and retest there). At each frequency
// the modified Hughson-Westlake procedure (ASHA 2005): after a response the level goes down 10 dB,
// after none up 5 dB (before the first response, up 10 dB); a presentation that follows a step up
// is ascending, and the threshold is the lowest level heard on 2 of at most 3 ascending
// presentations. A frequency starts 10 dB above the threshold found at the one before (the first
// at `startLevel`). Between presentations, at random (seeded), catch trials: a presentation with
// no tone; a response to one is a false alarm, and the false-alarm rate says how far to trust the
// result.
//
// Levels are dBFS of the tone's peak, as played, in 5 dB steps: consumer headphones are not
// calibrated, so the thresholds are kept in dBFS and turned into dB HL only through a stated
// reference (HearingCalibration).

import Glibc

public enum Ear: String, Sendable, CaseIterable, Codable {
    case left, right
}

public struct HearingTest: Sendable {
    public struct Settings: Sendable {
        /// The first frequency's first level (dBFS): clearly audible at a comfortable volume.
        public var startLevel = -40.0
        /// The quietest level played (dBFS); lower is below any consumer device's noise.
        public var minimumLevel = -100.0
        /// The loudest level played (dBFS): a tone not heard here has no threshold on this device.
        public var maximumLevel = -10.0
        /// Chance of a catch trial before each tone.
        public var catchProbability = 0.1
        /// Presentations at one frequency before it is given up as unsettled.
        public var maximumTrials = 24
        public var ears: [Ear] = [.right, .left]
        public var seed: UInt64 = 1

        public init() {}
    }

    /// The frequencies in the order they are tested; the second 1000 is the retest.
    public static let order: [Double] = [1000, 2000, 3000, 4000, 6000, 8000, 1000, 500, 250]
    static let retestIndex = 6
    public static let frequencies: [Double] = [250, 500, 1000, 2000, 3000, 4000, 6000, 8000]

    /// One presentation: a tone (`level`), or a catch trial (`level` nil) at the same ear and frequency.
    public struct Presentation: Equatable, Sendable {
        public let ear: Ear
        public let frequency: Double
        public let level: Double?
        public let number: Int
    }

    /// One ear and frequency's outcome.
    public struct Threshold: Equatable, Sendable, Codable {
        public let frequency: Double
        /// dBFS; nil when none was found (not heard at the loudest level, or not settled).
        public let level: Double?
        /// "found", "not heard at the loudest level" or "not settled".
        public let outcome: String
    }

    public struct Result: Sendable, Codable, Equatable {
        public var thresholds: [String: [Threshold]]
        /// Per ear: the 1 kHz retest minus the first 1 kHz threshold (dB).
        public var retestDifference: [String: Double]
        public var catchTrials: Int
        public var falseAlarms: Int
        public var presentations: Int
        public var falseAlarmRate: Double { catchTrials == 0 ? 0 : Double(falseAlarms) / Double(catchTrials) }

        /// The threshold (dBFS) of `ear` at `frequency`, nil where none was found.
        public func level(_ ear: Ear, _ frequency: Double) -> Double? {
            thresholds[ear.rawValue]?.first { $0.frequency == frequency }?.level
        }

        /// Whether the answers can be trusted, and why not (HearingTest.doubts).
        public var doubts: [String] { HearingTest.doubts(retestDifference: retestDifference, catchTrials: catchTrials, falseAlarms: falseAlarms) }
    }

    /// A retest further than this from the first 1 kHz threshold (dB) puts the result in doubt: a
    /// step of the search is 5 dB, so more than one step apart is not the same threshold.
    public static let retestToleranceDB = 5.0

    /// Whether a test's answers can be trusted, and why not: a 1 kHz retest more than
    /// `retestToleranceDB` off, or a false alarm on more than one catch trial in five.
    public static func doubts(retestDifference: [String: Double], catchTrials: Int, falseAlarms: Int) -> [String] {
        var doubts: [String] = []
        for (ear, difference) in retestDifference.sorted(by: { $0.key < $1.key }) where abs(difference) > retestToleranceDB {
            doubts.append("the \(ear) ear's 1 kHz retest is \(Int(difference.rounded())) dB from its first threshold")
        }
        if catchTrials > 0 && Double(falseAlarms) > 0.2 * Double(catchTrials) {
            doubts.append("\(falseAlarms) of \(catchTrials) silent presentations were answered 'heard'")
        }
        return doubts
    }

    public let settings: Settings
    private var random: SplitMix
    private var earIndex = 0
    private var frequencyIndex = 0
    private var search: ThresholdSearch
    private var pendingCatch = false
    private var found: [Ear: [Threshold]] = [:]
    private var retests: [Ear: Double] = [:]
    private var catchTrials = 0
    private var falseAlarms = 0
    private var presented = 0
    /// Tones answered at the current ear and frequency (for the progress figure).
    private var presentedHere = 0
    /// The presentation waiting for its answer.
    private var current: Presentation?

    public init(settings: Settings = Settings()) {
        self.settings = settings
        random = SplitMix(seed: settings.seed)
        search = ThresholdSearch(frequency: Self.order[0], start: settings.startLevel, settings: settings)
    }

    public var finished: Bool { earIndex >= settings.ears.count }

    /// Where the test stands, for a progress line: ear, frequency, and how far it is, in hundredths
    /// of all the runs: a run counts as done in part by its presentations so far (a search takes
    /// about eight), so the figure moves within the first one too.
    public var progress: (ear: Ear, frequency: Double, done: Int, total: Int)? {
        guard !finished else { return nil }
        let runs = earIndex * Self.order.count + frequencyIndex
        let within = min(Double(presentedHere) / 8, 0.9)
        return (settings.ears[earIndex], Self.order[frequencyIndex], Int(((Double(runs) + within) * 100).rounded(.down)),
                settings.ears.count * Self.order.count * 100)
    }

    /// The next presentation, or nil once every ear and frequency is done.
    public mutating func next() -> Presentation? {
        if let current { return current }
        guard !finished, let level = search.level else { return nil }
        presented += 1
        if random.uniform() < settings.catchProbability {
            pendingCatch = true
            current = Presentation(ear: settings.ears[earIndex], frequency: Self.order[frequencyIndex], level: nil, number: presented)
        } else {
            pendingCatch = false
            current = Presentation(ear: settings.ears[earIndex], frequency: Self.order[frequencyIndex], level: level, number: presented)
        }
        return current
    }

    /// The listener's answer to the presentation `next()` gave.
    public mutating func answer(heard: Bool) {
        guard current != nil else { return }
        current = nil
        if pendingCatch {
            catchTrials += 1
            if heard { falseAlarms += 1 }
            return
        }
        search.record(heard: heard)
        presentedHere += 1
        guard let outcome = search.outcome else { return }
        presentedHere = 0
        let ear = settings.ears[earIndex]
        if frequencyIndex == Self.retestIndex {
            if let first = found[ear]?.first(where: { $0.frequency == 1000 })?.level, let again = outcome.level { retests[ear] = again - first }
        } else {
            found[ear, default: []].append(outcome)
        }
        frequencyIndex += 1
        if frequencyIndex == Self.order.count {
            frequencyIndex = 0
            earIndex += 1
        }
        guard !finished else { return }
        // The next frequency starts 10 dB above this one's threshold (an ear's first, at the start level).
        let previous = frequencyIndex == 0 ? settings.startLevel : (outcome.level.map { $0 + 10 } ?? settings.startLevel)
        search = ThresholdSearch(frequency: Self.order[frequencyIndex], start: min(max(previous, settings.minimumLevel), settings.maximumLevel),
                                 settings: settings)
    }

    public var result: Result {
        Result(thresholds: Dictionary(uniqueKeysWithValues: found.map { ($0.key.rawValue, $0.value.sorted { $0.frequency < $1.frequency }) }),
               retestDifference: Dictionary(uniqueKeysWithValues: retests.map { ($0.key.rawValue, $0.value) }),
               catchTrials: catchTrials, falseAlarms: falseAlarms, presentations: presented)
    }
}

/// One ear and frequency's modified Hughson-Westlake search.
struct ThresholdSearch: Sendable {
    let frequency: Double
    let settings: HearingTest.Settings
    private(set) var level: Double?
    private(set) var outcome: HearingTest.Threshold?
    private var heardOnce = false
    private var ascending = false
    private var trials = 0
    /// Per level (dBFS x 10, rounded): ascending presentations and responses to them.
    private var ascents: [Int: (presented: Int, heard: Int)] = [:]
    private var missesAtMaximum = 0

    init(frequency: Double, start: Double, settings: HearingTest.Settings) {
        self.frequency = frequency
        self.settings = settings
        level = start
    }

    mutating func record(heard: Bool) {
        guard let current = level, outcome == nil else { return }
        trials += 1
        if ascending {
            let key = Int((current * 10).rounded())
            var count = ascents[key] ?? (0, 0)
            count.presented += 1
            if heard { count.heard += 1 }
            ascents[key] = count
            if count.heard >= 2 { return finish(current, "found") }
        }
        if !heard && current >= settings.maximumLevel {
            missesAtMaximum += 1
            if missesAtMaximum >= 2 { return finish(nil, "not heard at the loudest level") }
        }
        if trials >= settings.maximumTrials { return finish(nil, "not settled") }
        if heard {
            heardOnce = true
            ascending = false
            level = max(current - 10, settings.minimumLevel)
        } else {
            ascending = heardOnce
            level = min(current + (heardOnce ? 5 : 10), settings.maximumLevel)
        }
    }

    private mutating func finish(_ found: Double?, _ why: String) {
        outcome = HearingTest.Threshold(frequency: frequency, level: found, outcome: why)
        level = nil
    }
}

/// A small seeded generator (SplitMix64): the same seed gives the same catch trials everywhere.
public struct SplitMix: Sendable {
    private var state: UInt64
    public init(seed: UInt64) { state = seed }
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    /// In [0, 1).
    public mutating func uniform() -> Double { Double(next() >> 11) / Double(1 << 53) }
}
