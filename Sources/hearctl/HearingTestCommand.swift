// hearctl hearing-test: the pure-tone test of HearctlCore/HearingTest.swift, played through PipeWire
// to the device the listener uses (never through hear's own chain: the tones go to the device
// itself, so the filter does not shape them), answered with the space bar, or through a pipe:
// each presentation is a line on stdout (`tone ear=right frequency=1000 level=-40` or
// `level=none` for a catch trial) and each answer a line on stdin (`heard`/`y`/`1`, anything
// else not heard, `q` stops). The result (thresholds in dBFS, estimated dB HL, reliability) is
// saved as JSON for `hearctl fit --from-test`.

import ArgumentParser
import Foundation
import Glibc
import HearctlCore
import HearControl
import HearDSP
import HearSystem

/// The test's timing: what a listener sits through, and what a simulated run counts.
enum TestTiming {
    /// Three pulses of 150 ms with 100 ms between (ramps of 20 ms): pulsed tones are easier to
    /// tell from tinnitus than a steady one.
    static let pulses = 3, pulseSeconds = 0.15, gapSeconds = 0.1, rampSeconds = 0.02
    static var toneSeconds: Double { Double(pulses) * pulseSeconds + Double(pulses - 1) * gapSeconds }
    /// Silence after the last pulse in the file pw-play plays: pw-play ends when the file does and
    /// drops the last part of a quantum (10 ms at 480), which cut every tone inside its fade-out
    /// (a click 43 dB below the tone at 4 kHz). What it drops now is silence.
    static let tailSeconds = 0.1
    /// An answer counts until this long after the tone ends.
    static let answerSeconds = 0.9
    /// Between presentations, at random in this range (so the listener cannot answer on rhythm).
    static let pause = 0.4...0.8
    /// A heard tone is answered about this long after it starts (for a simulated run's clock).
    static let reactionSeconds = 0.5
}

/// A test result as saved: what `fit --from-test` reads.
struct SavedHearingTest: Codable {
    struct Ear: Codable {
        let frequency: Double
        let dBFS: Double?
        let estimatedHL: Double?
        let outcome: String
    }

    let date: String
    let device: String?
    let basis: String
    let ears: [String: [Ear]]
    let retestDifference: [String: Double]
    let catchTrials: Int
    let falseAlarms: Int
    let seconds: Double
    let doubts: [String]

    /// Why the answers may not be trusted, from the result's own figures (not the `doubts` it was
    /// saved with: an older hearctl doubted only retests more than 10 dB off).
    var currentDoubts: [String] {
        HearingTest.doubts(retestDifference: retestDifference, catchTrials: catchTrials, falseAlarms: falseAlarms)
    }

    /// How far to trust the result, in one line: the 1 kHz retest and the catch trials.
    var reliability: String {
        let retest = retestDifference.sorted { $0.key < $1.key }.map { "\($0.key) \(String(format: "%+.0f", $0.value)) dB" }
        return "1 kHz retest \(retest.isEmpty ? "-" : retest.joined(separator: ", ")); \(falseAlarms) of \(catchTrials) silent presentations answered"
    }

    static var defaultPath: String? {
        SettingsPath.stateDirectory(environment: Discovery.environment).map { $0 + "/hearing-test.json" }
    }

    /// A result file is a few KB; one far larger is not one, and is not read.
    static let maximumBytes = 1 << 20

    /// The result at `path`, its text fields made safe to print (a file from elsewhere may carry
    /// escape sequences). Errors say what is wrong and where in the file.
    static func read(_ path: String) throws(CLIError) -> SavedHearingTest {
        let found: [UInt8]?
        do throws(SystemError) {
            found = try Syscall.readRegularFile(path, limit: maximumBytes, followingLinks: true)
        } catch where error.code == EFBIG {
            throw CLIError("\(path) \(error.detail ?? "is too large"): a hearing test result is a few KB", code: ExitStatus.usage)
        } catch {
            throw CLIError("cannot read \(path): \(error)", code: ExitStatus.usage)
        }
        guard let bytes = found else {
            throw CLIError("no hearing test result at \(path); `hearctl hearing-test` makes one", code: ExitStatus.usage)
        }
        let saved: SavedHearingTest
        do { saved = try JSONDecoder().decode(SavedHearingTest.self, from: Data(bytes)) } catch {
            throw CLIError("\(path) is not a hearing test result: \(Self.explain(error))", code: ExitStatus.usage)
        }
        return SavedHearingTest(
            date: Sanitize.text(saved.date), device: saved.device.map(Sanitize.text), basis: Sanitize.text(saved.basis),
            ears: saved.ears.mapValues { $0.map { Ear(frequency: $0.frequency, dBFS: $0.dBFS, estimatedHL: $0.estimatedHL,
                                                       outcome: Sanitize.text($0.outcome)) } },
            retestDifference: saved.retestDifference, catchTrials: saved.catchTrials, falseAlarms: saved.falseAlarms,
            seconds: saved.seconds, doubts: saved.doubts.map(Sanitize.text))
    }

    /// A decoding error in words: what was expected, and where ("ears.left[3].frequency").
    static func explain(_ error: Error) -> String {
        func path(_ keys: [CodingKey]) -> String {
            let text = keys.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
            return text.hasPrefix(".") ? String(text.dropFirst()) : (text.isEmpty ? "the top level" : text)
        }
        switch error as? DecodingError {
        case .typeMismatch(let type, let context)?: return "\(Sanitize.text(path(context.codingPath))) is not \(type == String.self ? "text" : type == Double.self || type == Int.self ? "a number" : "\(type)")"
        case .valueNotFound(_, let context)?: return "\(Sanitize.text(path(context.codingPath))) is missing"
        case .keyNotFound(let key, let context)?: return "\(Sanitize.text(path(context.codingPath + [key]))) is missing"
        case .dataCorrupted(let context)?: return context.codingPath.isEmpty ? "not JSON" : "\(Sanitize.text(path(context.codingPath))) is damaged"
        default: return "not JSON"
        }
    }
}

extension Hearctl {
    struct HearingTestCommand: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "hearing-test",
            abstract: "A pure-tone hearing test per ear in the terminal; `hearctl fit --from-test` uses its result.",
            discussion: """
                Not a medical device: it estimates, it does not diagnose. Pulsed tones at 250 Hz to 8 kHz, \
                one ear at a time, through your headphones (hear's own processing is not applied to them). \
                Press space whenever you hear a tone, however faint; q stops. Some presentations are \
                silent, to check the answers. It takes about 5 minutes. Set your volume to a comfortable \
                level when it asks, and leave it there until the end.

                Headphones' levels are not calibrated: thresholds are kept in dBFS and shown as estimated \
                dB HL, assuming your best threshold at 500-1000 Hz is normal hearing, unless --calibration \
                gives a measured headset's levels (lines FREQUENCY LEFT RIGHT, the dBFS level of 0 dB HL).

                Answers may come through a pipe instead of a terminal: each presentation is a line on \
                stdout (tone ear=right frequency=1000 level=-40, level=none for a silent one) and each \
                answer a line on stdin (heard, y or 1 for heard; q stops). Examples:
                  hearctl hearing-test
                  hearctl hearing-test --calibration my-headset.txt
                  hearctl fit --from-test
                """)

        @Option(help: ArgumentHelp("The output device: a name, id or description (default: the one hear's speaker chain plays to, else the default).",
                                   valueName: "device"), completion: Complete.devices)
        var device: String?
        @Option(name: .customLong("first-ear"), help: "The ear tested first (the better one, if you know).") var firstEar: Ear = .right
        @Option(help: ArgumentHelp("A measured headset's dBFS levels at 0 dB HL.", valueName: "file")) var calibration: String?
        @Option(help: ArgumentHelp("Where to save the result (default: $XDG_STATE_HOME/hear/hearing-test.json).", valueName: "file"))
        var output: String?
        @Option(help: ArgumentHelp("Seed of the silent presentations' order.", valueName: "n")) var seed: UInt64 = 1
        @Flag(name: .customLong("no-sound"), help: "Play nothing (answers through a pipe only: a simulated listener).") var noSound = false
        @Flag(name: .customLong("any-device"), help: "Run on a device that is not headphones.") var anyDevice = false
        @OptionGroup var json: JSONOption

        mutating func validate() throws {
            if let calibration { _ = try Self.calibration(calibration) }
            if noSound && isatty(STDIN_FILENO) == 1 { throw ValidationError("--no-sound is for answers through a pipe, not a terminal") }
        }

        static func calibration(_ path: String) throws -> HearingCalibration {
            guard let data = FileManager.default.contents(atPath: path), data.count < 1 << 16 else {
                throw ValidationError("--calibration: cannot read \(path) (or it is over 64 KiB)")
            }
            do { return try HearingCalibration.parse(String(decoding: data, as: UTF8.self)) } catch {
                throw ValidationError("--calibration \(path): \(error.description)")
            }
        }

        func run() throws {
            let terminal = isatty(STDIN_FILENO) == 1
            let calibration = try self.calibration.map(Self.calibration) ?? .assumed
            let player = noSound ? nil : try TonePlayer(device: device, anyDevice: anyDevice)
            let say: (String) -> Void = { text in
                // In pipe mode stdout carries the protocol: messages go to stderr. In a terminal,
                // wrapped at 80 columns, on a line of their own after the progress figure.
                if terminal { print(TuneView.wrap(text, 80).joined(separator: "\n")) } else { FileHandle.standardError.write(Data((text + "\n").utf8)) }
            }
            say("hearctl hearing-test: not a medical device; it estimates your hearing thresholds, it does not diagnose.")
            if let player { for line in player.notes { say(line) } }
            if terminal, let player {
                say("Set your volume: a sample at speech level plays now. Make it comfortable, then leave the volume as it is. "
                    + "Enter starts, p plays the sample again, q quits.")
                try player.playSample()
                while true {
                    guard let answer = TerminalKeys.waitForEnter() else { throw CLIError("stopped before the test began; nothing saved") }
                    if answer { break }
                    try player.playSample()
                }
                say("Press space whenever you hear a tone, however faint. q stops.")
            }

            var settings = HearingTest.Settings()
            settings.seed = seed
            settings.ears = firstEar == .right ? [.right, .left] : [.left, .right]
            var test = HearingTest(settings: settings)
            var random = SplitMix(seed: seed &+ 0x5EED)
            var simulated = 0.0
            let started = Date()
            let keys = terminal ? TerminalKeys() : nil
            defer { keys?.restore() }
            var lastEar: Ear?
            while let presentation = test.next() {
                if presentation.ear != lastEar {
                    lastEar = presentation.ear
                    say("\(presentation.ear.rawValue) ear")
                }
                let pause = TestTiming.pause.lowerBound + random.uniform() * (TestTiming.pause.upperBound - TestTiming.pause.lowerBound)
                let heard: Bool
                if let keys {
                    usleep(UInt32(pause * 1e6))
                    keys.discard()
                    if let level = presentation.level { try player?.play(presentation.frequency, level: level, ear: presentation.ear) }
                    guard let answer = keys.answer(within: TestTiming.toneSeconds + TestTiming.answerSeconds) else {
                        print()  // off the progress figure's line
                        throw CLIError("stopped (q); nothing saved")
                    }
                    heard = answer
                    if let progress = test.progress { FileHandle.standardOutput.write(Data("\r\(progress.done * 100 / progress.total)% ".utf8)) }
                } else {
                    // Unbuffered: the listener at the other end of the pipe answers each line before the next.
                    let level = presentation.level.map { ParameterValue.format(Float($0)) } ?? "none"
                    FileHandle.standardOutput.write(Data("tone ear=\(presentation.ear.rawValue) frequency=\(Int(presentation.frequency)) level=\(level)\n".utf8))
                    if let level = presentation.level { try player?.play(presentation.frequency, level: level, ear: presentation.ear) }
                    guard let line = readLine(strippingNewline: true) else { throw CLIError("the answers ended before the test did; nothing saved") }
                    let word = line.trimmingCharacters(in: .whitespaces).lowercased()
                    if word == "q" { throw CLIError("stopped (q); nothing saved") }
                    heard = ["heard", "y", "yes", "1"].contains(word) || line == " "
                    player?.waitForTone()
                }
                simulated += pause + (heard ? TestTiming.reactionSeconds : TestTiming.toneSeconds + TestTiming.answerSeconds)
                test.answer(heard: heard)
            }
            let seconds = terminal ? Date().timeIntervalSince(started) : simulated
            let result = test.result
            let levels = calibration.hearingLevels(result)
            let saved = SavedHearingTest(
                date: ISO8601DateFormatter().string(from: Date()), device: player?.deviceName, basis: calibration.basis,
                ears: Dictionary(uniqueKeysWithValues: Ear.allCases.map { ear in
                    (ear.rawValue, (result.thresholds[ear.rawValue] ?? []).map { threshold in
                        SavedHearingTest.Ear(frequency: threshold.frequency, dBFS: threshold.level,
                                             estimatedHL: levels[ear]?[threshold.frequency], outcome: threshold.outcome)
                    })
                }),
                retestDifference: result.retestDifference, catchTrials: result.catchTrials, falseAlarms: result.falseAlarms,
                seconds: seconds, doubts: result.doubts)
            guard let path = output ?? SavedHearingTest.defaultPath else {
                throw CLIError("neither XDG_STATE_HOME nor HOME is set: give --output FILE")
            }
            let directory = (path as NSString).deletingLastPathComponent
            try FileManager.default.createDirectory(atPath: directory.isEmpty ? "." : directory, withIntermediateDirectories: true)
            try Syscall.writeOutput(path, bytes: [UInt8](Output.encoded(saved, formatting: [.prettyPrinted, .sortedKeys])), mode: 0o600)
            if json.json {
                // After the last presentation: the result, as saved, is the one JSON document on stdout.
                Output.json(saved)
                return
            }
            let report = Self.report(saved, presentations: result.presentations, simulated: !terminal) + ["saved: \(path); `hearctl fit --from-test` fits hear to it"]
            for line in report { say(line) }
        }

        static func report(_ saved: SavedHearingTest, presentations: Int, simulated: Bool) -> [String] {
            var rows = [["Hz"] + Ear.allCases.flatMap { ["\($0.rawValue.uppercased()) dBFS", "est. dB HL"] }]
            for frequency in HearingTest.frequencies {
                var row = [FitPlot.hertz(frequency)]
                for ear in Ear.allCases {
                    let entry = saved.ears[ear.rawValue]?.first { $0.frequency == frequency }
                    row += [entry?.dBFS.map { FitPlot.decibels($0) } ?? (entry?.outcome ?? "-"), FitPlot.decibels(entry?.estimatedHL)]
                }
                rows.append(row)
            }
            let minutes = Int(saved.seconds) / 60, rest = Int(saved.seconds) % 60
            var lines = [Output.table(rows), saved.basis + "."]
            lines.append("reliability: " + saved.reliability)
            for doubt in saved.currentDoubts { lines.append("doubt: \(doubt): take the test again, in a quiet room") }
            lines.append("\(presentations) presentations in \(minutes) min \(rest) s\(simulated ? " (the test's own clock: answers came through a pipe)" : "")")
            return lines
        }
    }
}

extension Ear: ExpressibleByArgument {}
