// The hearing test's procedure (HearctlCore/HearingTest.swift) taken by simulated listeners with known
// thresholds, and the conversion to estimated dB HL (HearingCalibration).

import HearctlCore
import TestSupport
import Testing

/// A listener who hears a tone at or above their threshold, misses one now and then, and answers
/// "heard" to some silent presentations.
struct SimulatedListener {
    let thresholds: [Ear: [Double: Double]]
    var miss = 0.03
    var falseAlarm = 0.03
    var random: SeededRandom

    init(_ thresholds: [Ear: [Double: Double]], miss: Double = 0.03, falseAlarm: Double = 0.03, seed: UInt64 = 11) {
        self.thresholds = thresholds
        self.miss = miss
        self.falseAlarm = falseAlarm
        random = SeededRandom(seed: seed)
    }

    mutating func answer(_ presentation: HearingTest.Presentation) -> Bool {
        guard let level = presentation.level else { return random.unit() < falseAlarm }
        guard level >= thresholds[presentation.ear]![presentation.frequency]! else { return random.unit() < falseAlarm }
        return random.unit() >= miss
    }
}

@Suite struct HearingTestTests {
    static let normal: [Double: Double] = [250: -78, 500: -85, 1000: -88, 2000: -86, 3000: -84, 4000: -83, 6000: -76, 8000: -74]
    /// Age-related: 10 dB down at 2 kHz, 40 at 8 kHz.
    static let sloping: [Double: Double] = [250: -78, 500: -83, 1000: -84, 2000: -76, 3000: -66, 4000: -58, 6000: -46, 8000: -34]
    /// Noise-induced: a 35 dB notch at 4 kHz, recovering at 8 kHz.
    static let notch: [Double: Double] = [250: -78, 500: -85, 1000: -87, 2000: -80, 3000: -62, 4000: -51, 6000: -63, 8000: -72]

    /// Runs a whole test; returns the result and the seconds a listener would sit through it.
    static func take(_ listener: inout SimulatedListener, seed: UInt64 = 1) -> (HearingTest.Result, Double) {
        var settings = HearingTest.Settings()
        settings.seed = seed
        var test = HearingTest(settings: settings)
        var seconds = 0.0
        while let presentation = test.next() {
            let heard = listener.answer(presentation)
            // The command's clock (TestTiming): a pause of 0.6 s on average, then 0.5 s to answer a
            // tone heard, else the tone (0.65 s) and the whole answer window (0.9 s).
            seconds += 0.6 + (heard ? 0.5 : 1.55)
            test.answer(heard: heard)
        }
        return (test.result, seconds)
    }

    @Test(arguments: [("normal", normal), ("sloping", sloping), ("notch at 4 kHz", notch)])
    func thresholdsAreRecoveredWithin5dB(profile: String, thresholds: [Double: Double]) {
        // Slightly different ears, so an ear mix-up would show.
        let right = thresholds, left = thresholds.mapValues { $0 + 3 }
        var listener = SimulatedListener([.left: left, .right: right])
        let (result, seconds) = Self.take(&listener)
        var worst = 0.0
        for (ear, truth) in [(Ear.left, left), (.right, right)] {
            for frequency in HearingTest.frequencies {
                let found = result.level(ear, frequency)
                #expect(found != nil, "\(profile) \(ear) \(frequency) Hz: no threshold")
                guard let found else { continue }
                worst = max(worst, abs(found - truth[frequency]!))
                #expect(abs(found - truth[frequency]!) <= 5, "\(profile) \(ear) \(frequency) Hz: \(found) dBFS for \(truth[frequency]!)")
            }
        }
        print("\(profile): every threshold within \(worst) dB; \(result.presentations) presentations, \(Int(seconds)) s for both ears; "
              + "retest \(result.retestDifference), false alarms \(result.falseAlarms) of \(result.catchTrials)")
        #expect(seconds < 300, "\(profile): \(seconds) s")
        #expect(result.doubts.isEmpty, "\(result.doubts)")
    }

    /// A listener who answers "heard" to many silent presentations is flagged: the false-alarm
    /// rate is reported and the result doubted; an honest one is not.
    @Test func guessingRaisesTheReportedUnreliability() {
        var honest = SimulatedListener([.left: Self.normal, .right: Self.normal], falseAlarm: 0.02)
        var guesser = SimulatedListener([.left: Self.normal, .right: Self.normal], falseAlarm: 0.4)
        let (clean, _) = Self.take(&honest), (guessed, _) = Self.take(&guesser)
        print("false alarms: honest \(clean.falseAlarms) of \(clean.catchTrials), guessing \(guessed.falseAlarms) of \(guessed.catchTrials)")
        #expect(clean.catchTrials >= 10 && guessed.catchTrials >= 10)
        #expect(clean.falseAlarmRate < 0.2 && clean.doubts.isEmpty)
        #expect(guessed.falseAlarmRate > 0.25 && guessed.doubts.contains { $0.contains("silent presentations") }, "\(guessed.doubts)")
    }

    /// The progress figure moves within the first search (it stayed at 0 % through it), never
    /// reaches 100 % before the end, and never goes back.
    @Test func progressMovesWithinTheFirstSearch() {
        var test = HearingTest(settings: HearingTest.Settings())
        var figures: [Int] = []
        while let presentation = test.next() {
            if let progress = test.progress { figures.append(progress.done * 100 / progress.total) }
            test.answer(heard: presentation.level.map { $0 >= -60 } ?? false)
        }
        let firstSearch = figures.prefix(4)
        #expect(firstSearch.last ?? 0 > 0, "\(Array(firstSearch))")
        #expect(zip(figures, figures.dropFirst()).allSatisfy { $0 <= $1 } && (figures.max() ?? 100) < 100, "\(figures)")
    }

    /// A tone not heard at the loudest level has no threshold, and the test goes on.
    @Test func aDeadRegionHasNoThreshold() {
        var deaf = Self.sloping
        deaf[8000] = 0  // above the loudest level played
        var listener = SimulatedListener([.left: deaf, .right: deaf], miss: 0, falseAlarm: 0)
        let (result, _) = Self.take(&listener)
        #expect(result.level(.left, 8000) == nil && result.level(.right, 8000) == nil)
        #expect(result.thresholds["left"]?.first { $0.frequency == 8000 }?.outcome == "not heard at the loudest level")
        #expect(result.level(.left, 6000) != nil && result.level(.left, 250) != nil)
    }

    /// Without a calibration, the best threshold at 500-1000 Hz is 0 dB HL and the rest follows
    /// the earphones' normal curve; with one, each level is read against the file's.
    @Test func dBFSBecomesEstimatedHearingLevel() throws {
        var listener = SimulatedListener([.left: Self.sloping, .right: Self.sloping], miss: 0, falseAlarm: 0)
        let (result, _) = Self.take(&listener)
        let assumed = HearingCalibration.assumed.hearingLevels(result)
        let best1k = try #require(result.level(.right, 1000)), at8k = try #require(result.level(.right, 8000))
        // 1 kHz is the reference (0 dB HL, within the 500 Hz point's 4.5 dB curve offset); 8 kHz is
        // its dBFS distance minus the curve's 6 dB.
        #expect(abs(assumed[.right]![1000]!) <= 5)
        #expect(abs(assumed[.right]![8000]! - (assumed[.right]![1000]! + at8k - best1k - 6)) < 1e-9)
        let file = "# my headset\n250 -100\n500 -105\n1000 -110\n2000 -108 -107\n3000 -106\n4000 -106\n6000 -100\n8000 -102\n"
        let measured = try HearingCalibration.parse(file)
        let levels = measured.hearingLevels(result)
        #expect(levels[.right]![2000]! == result.level(.right, 2000)! + 107)
        #expect(levels[.left]![2000]! == result.level(.left, 2000)! + 108)
        #expect(throws: HearingCalibration.ParseError.missing([8000])) { try HearingCalibration.parse("250 -1\n500 -1\n1000 -1\n2000 -1\n3000 -1\n4000 -1\n6000 -1\n") }
        #expect(throws: HearingCalibration.ParseError.line(1, "1000 loud")) { try HearingCalibration.parse("1000 loud\n") }
    }
}
