// `hearctl hearing-test` through its pipe interface, with this test as the simulated listener (it
// answers each `tone` line from known thresholds), then `hearctl fit --from-test` on the result.

import Foundation
import Glibc
import Testing
import TestSupport

@Suite struct HearingTestCommandTests {
    init() throws { try Built.require() }

    /// Thresholds (dBFS) of a sloping loss, the same in both ears.
    static let thresholds: [Int: Double] = [250: -78, 500: -83, 1000: -84, 2000: -76, 3000: -66, 4000: -58, 6000: -46, 8000: -34]

    @Test func aSimulatedListenerThroughThePipeGetsItsThresholdsAndAFit() throws {
        let sandbox = try Sandbox()
        let resultPath = sandbox.base + "/test.json"
        let conversation = try Conversation(Built.hearctl, ["hearing-test", "--no-sound", "--output", resultPath],
                                            environment: sandbox.environment)
        var presentations = 0, silent = 0
        while let text = conversation.readLine() {
            #expect(text.hasPrefix("tone ear="), "\(text)")
            let fields = Dictionary(uniqueKeysWithValues: text.split(separator: " ").dropFirst().compactMap { field -> (String, String)? in
                let parts = field.split(separator: "=", maxSplits: 1)
                return parts.count == 2 ? (String(parts[0]), String(parts[1])) : nil
            })
            presentations += 1
            let frequency = Int(fields["frequency"] ?? "") ?? 0
            let heard: Bool
            if fields["level"] == "none" {
                silent += 1
                heard = false
            } else {
                let level = try #require(Double(fields["level"] ?? ""), "\(text)")
                heard = level >= (Self.thresholds[frequency] ?? 0)
            }
            conversation.send(heard ? "heard" : "no")
        }
        let (status, report) = conversation.finish()
        #expect(status == 0, "\(report)")
        print("hearing-test through a pipe: \(presentations) presentations (\(silent) silent); its report:\n\(report)")
        #expect(report.contains("not a medical device") && report.contains("estimated dB HL") && report.contains("the test's own clock"))
        let minutes = try #require(report.firstMatch(of: /in (\d+) min (\d+) s/))
        #expect(Int(minutes.1)! * 60 + Int(minutes.2)! < 300, "\(report)")

        let saved = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: resultPath))) as? [String: Any])
        let right = try #require((saved["ears"] as? [String: Any])?["right"] as? [[String: Any]])
        for entry in right {
            let frequency = Int(entry["frequency"] as? Double ?? 0)
            let found = try #require(entry["dBFS"] as? Double, "\(entry)")
            #expect(found >= Self.thresholds[frequency]! && found < Self.thresholds[frequency]! + 5, "\(frequency) Hz: \(found)")
        }
        #expect(saved["catchTrials"] as? Int == silent && saved["falseAlarms"] as? Int == 0)

        // The fit reads it, says the thresholds are estimates and how reliable the test was.
        let svg = sandbox.base + "/fit.svg"
        let fit = try sandbox.hearctl("fit", "--dry-run", "--from-test", resultPath, "--svg", svg)
        #expect(try String(contentsOfFile: svg, encoding: .utf8).contains("estimated thresholds (hearing-test of"))
        #expect(fit.status == 0, "\(fit.stderr)")
        #expect(fit.stdout.contains("audiogram from the hearing test of") && fit.stdout.contains("estimated thresholds")
                && fit.stdout.contains("reliability: 1 kHz retest"), "\(fit.stdout)")
        let mixed = try sandbox.hearctl("fit", "--dry-run", "--from-test", resultPath, "--left", "500:30")
        #expect(mixed.status == 2 && mixed.stderr.contains("leave out --left and --right"), "\(mixed.stderr)")
        let none = try sandbox.hearctl("fit", "--dry-run", "--from-test")
        #expect(none.status == 2 && none.stderr.contains("hearctl hearing-test` makes one"), "\(none.stderr)")
    }

    /// A result its own answers put in doubt (8 of 25 silent presentations answered, a 1 kHz retest
    /// 10 dB off) is fitted only with --force, and then with a warning; nothing changes without it.
    /// A retest 5 dB off (one step of the search) is no doubt.
    @Test func aDoubtfulTestIsFittedOnlyWithForce() throws {
        let sandbox = try Sandbox()
        func result(retest: Double, falseAlarms: Int) throws -> String {
            let ear = [250, 500, 1000, 2000, 3000, 4000, 6000, 8000].map { frequency in
                ["frequency": Double(frequency), "dBFS": -70.0, "estimatedHL": 40.0, "outcome": "found"] as [String: Any]
            }
            let object: [String: Any] = ["date": "2026-11-28T05:00:00Z", "basis": "assumed reference", "seconds": 200.0,
                                         "ears": ["left": ear, "right": ear], "retestDifference": ["left": retest, "right": 0.0],
                                         "catchTrials": 25, "falseAlarms": falseAlarms, "doubts": [String]()]
            let path = sandbox.base + "/result-\(Int(retest))-\(falseAlarms).json"
            try JSONSerialization.data(withJSONObject: object).write(to: URL(fileURLWithPath: path))
            return path
        }
        let host = try sandbox.startHost(chain: 2)
        let preset = sandbox.config + "/hear/presets/hearing.conf"
        let doubtful = try result(retest: 10, falseAlarms: 8)
        let refused = try sandbox.hearctl("fit", "--from-test", doubtful)
        #expect(refused.status == 1 && refused.stderr.contains("put it in doubt") && refused.stderr.contains("left ear's 1 kHz retest is 10 dB")
                && refused.stderr.contains("8 of 25 silent presentations") && refused.stderr.contains("--force"), "\(refused.stderr)")
        #expect(!FileManager.default.fileExists(atPath: preset), "a refused fit saved its preset")
        let forced = try sandbox.hearctl("fit", "--from-test", doubtful, "--force")
        #expect(forced.status == 0 && forced.stderr.contains("warning: fitting a doubtful hearing test (--force)"), "\(forced.stderr)")
        #expect(FileManager.default.fileExists(atPath: preset))
        // Fitted from a result named by a relative path, with a plot: the preset's comment names the
        // file by its absolute path, its values are rounded to their precision, and the plot labels
        // its axis and says the dB HL rest on an assumed reference.
        let good = try result(retest: 5, falseAlarms: 1)
        let name = (good as NSString).lastPathComponent
        let fine = try Command.run("/bin/sh", ["-c", "cd \"$0\" && \"$1\" fit --from-test \"$2\" --svg plot.svg", sandbox.base, Built.hearctl, name],
                                   environment: sandbox.environment)
        #expect(fine.status == 0 && !fine.stderr.contains("doubt"), "\(fine.stderr)")
        let saved = try String(contentsOfFile: preset, encoding: .utf8)
        #expect(saved.contains("--from-test \(sandbox.base)/\(name)"), "\(saved)")
        for line in saved.split(separator: "\n") where !line.hasPrefix("#") {
            let value = line.split(separator: "=").last.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
            #expect((value.split(separator: ".").dropFirst().first?.count ?? 0) <= 2, "unrounded: \(line)")
        }
        let plot = try String(contentsOfFile: sandbox.base + "/plot.svg", encoding: .utf8)
        #expect(plot.contains("frequency (Hz)") && plot.contains("dB HL by an assumed reference, not a calibration"))
        _ = try host.stop()
    }

    /// Result files that are not what a test writes: each refused with what is wrong and where,
    /// nothing fitted; text from the file reaches the terminal without its control characters.
    @Test func hostileResultFilesAreRefusedWithTheirReason() throws {
        let sandbox = try Sandbox()
        func write(_ name: String, _ ears: String, date: String = "2026-11-28") throws -> String {
            let path = sandbox.base + "/" + name
            try Data(("{\"date\": \"\(date)\", \"basis\": \"assumed\", \"seconds\": 1, \"ears\": \(ears), "
                      + "\"retestDifference\": {}, \"catchTrials\": 0, \"falseAlarms\": 0, \"doubts\": []}").utf8)
                .write(to: URL(fileURLWithPath: path))
            return path
        }
        func ear(_ points: [(Double, Double)]) -> String {
            "[" + points.map { "{\"frequency\": \($0.0), \"estimatedHL\": \($0.1), \"outcome\": \"found\"}" }.joined(separator: ",") + "]"
        }
        let good = ear([(500, 30), (1000, 40), (2000, 50)])
        // A million points (46 MB): refused by its size, unread.
        let million = sandbox.base + "/million.json"
        let point = "{\"frequency\": 1000, \"estimatedHL\": 40, \"outcome\": \"found\"},"
        var text = "{\"date\": \"d\", \"basis\": \"b\", \"seconds\": 1, \"retestDifference\": {}, \"catchTrials\": 0, \"falseAlarms\": 0, \"doubts\": [], \"ears\": {\"left\": ["
        text += String(repeating: point, count: 1_000_000)
        text += point.dropLast() + "], \"right\": []}}"
        try Data(text.utf8).write(to: URL(fileURLWithPath: million))
        let started = Date()
        let huge = try sandbox.hearctl("fit", "--dry-run", "--from-test", million)
        print("a result file of a million points refused in \(String(format: "%.3f", Date().timeIntervalSince(started))) s")
        #expect(huge.status == 2 && huge.stderr.contains("more than the 1048576 allowed: a hearing test result is a few KB"), "\(huge.stderr)")

        for (name, ears, message) in [
            ("twice.json", "{\"left\": \(ear([(1000, 30), (1000, 35)])), \"right\": \(good)}", "the left ear's thresholds: 1000.0 Hz is given twice"),
            ("high.json", "{\"left\": \(good), \"right\": \(ear([(9000, 30)]))}", "the right ear's thresholds: 9000.0 Hz is outside 125-8000 Hz"),
            ("type.json", "{\"left\": [{\"frequency\": \"loud\", \"outcome\": \"found\"}], \"right\": []}", "ears.left[0].frequency is not a number"),
            ("missing.json", "{\"left\": [{\"frequency\": 500}], \"right\": []}", "ears.left[0].outcome is missing"),
        ] {
            let result = try sandbox.hearctl("fit", "--dry-run", "--from-test", try write(name, ears))
            #expect(result.status == 2 && result.stderr.contains(message), "\(name): \(result.status) \(result.stderr)")
        }
        let escape = try sandbox.hearctl("fit", "--dry-run", "--from-test",
                                         try write("escape.json", "{\"left\": \(good), \"right\": \(good)}", date: "\\u001b[2Jtoday"))
        #expect(escape.status == 0 && escape.stdout.contains("hearing test of ?[2Jtoday") && !escape.stdout.contains("\u{1B}"), "\(escape.stdout)")
    }

    /// The answers ending early (the listener gone) save nothing and say so.
    @Test func answersEndingEarlySaveNothing() throws {
        let sandbox = try Sandbox()
        let resultPath = sandbox.base + "/test.json"
        let result = try Command.run("/bin/sh", ["-c", "printf 'heard\\nno\\nheard\\n' | \"$0\" hearing-test --no-sound --output \"$1\"",
                                                 Built.hearctl, resultPath], environment: sandbox.environment)
        #expect(result.status == 1 && result.stderr.contains("the answers ended before the test did; nothing saved"), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: resultPath))
    }
}
