// `hearctl hearing-test` in a private PipeWire session: the tones it plays on the output device,
// recorded from that device's monitor, have the level and frequency the test says (±1 dB, ±1 %),
// in the ear it says, and nothing in the other; each plays whole, its last fade-out included (no
// click); and the tone files live in a private directory that is gone when the test ends.

import Foundation
import Testing
import TestSupport

@Suite(.serialized) struct HearingTestPipeWireTests {
    @Test func theTonesPlayedHaveTheirStatedLevelFrequencyAndEar() throws {
        let session = try PipeWireSession(name: "hearing-test")
        defer { session.stop() }
        let processes = session.processes
        let recording = session.file("tones.wav")
        let recorder = try processes.start("pw-record", ["--target", "hear_test_speaker", "-P", "{ stream.capture.sink = true node.name = hear_test_tone_recorder }",
                                                         "--format", "f32", "--rate", "48000", "--channels", "2", recording.path], log: "record")
        try waitFor("the recorder to be linked") { try session.links().contains { $0.input.hasPrefix("hear_test_tone_recorder:") } }
        // Two presentations answered "not heard", then q: the first tones of the right ear at 1 kHz.
        let hearctl = Repository.url(".build/release/hearctl").path
        let started = Date()
        let run = try processes.run("/bin/sh", ["-c", "printf 'no\\nno\\nq\\n' | \"$0\" hearing-test --device hear_test_speaker --output \"$1\"",
                                                hearctl, session.file("result.json").path], timeout: 60, check: false)
        #expect(run.status == 1 && run.output.contains("stopped (q); nothing saved"), "\(run.output)")
        usleep(1_500_000)  // the last tone's tail through the graph
        recorder.stop(signal: SIGINT)
        let levels = run.output.split(separator: "\n").filter { $0.hasPrefix("tone ") }.compactMap { line -> Double? in
            line.split(separator: " ").first { $0.hasPrefix("level=") }.flatMap { Double($0.dropFirst(6)) }
        }
        let first = try #require(levels.first, "no tone was played: \(run.output)")
        let audio = try WAVFile.read(recording)
        let right = audio.channel(1), left = audio.channel(0)
        // The first pulse: from where the right channel rises, its middle 100 ms (past the 20 ms ramps).
        let onset = try #require(right.firstIndex { abs($0) > Float(pow(10, (first - 12) / 20)) }, "no tone in the recording")
        let middle = Array(right[(onset + 1_440)..<(onset + 1_440 + 4_800)])
        let rms = (middle.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(middle.count)).squareRoot()
        let peak = 20 * log10(rms * 2.0.squareRoot())
        var crossings = 0
        for index in 1..<middle.count where (middle[index - 1] < 0) != (middle[index] < 0) { crossings += 1 }
        let frequency = Double(crossings) / 2 / (Double(middle.count) / 48_000)
        let leftPeak = 20 * log10(Double(left.map(abs).max() ?? 0) + 1e-12)
        print("first tone: stated \(first) dBFS at 1000 Hz, right ear; recorded \(String(format: "%.2f", peak)) dBFS at \(String(format: "%.1f", frequency)) Hz, left ear peak \(String(format: "%.1f", leftPeak)) dBFS")
        #expect(abs(peak - first) <= 1, "\(peak) dBFS for \(first)")
        #expect(abs(frequency - 1000) <= 10, "\(frequency) Hz")
        #expect(leftPeak < -80, "the left ear got \(leftPeak) dBFS")

        // The whole first tone, aligned with the tone as the test makes it (3 pulses of 150 ms, 100 ms
        // apart, 20 ms raised-cosine ramps): its last 10 ms are the fade-out's, and no energy spreads
        // above 2 kHz (a pulse cut 10 ms short spreads it 68 dB below the tone; a whole one 122).
        let amplitude = pow(10, first / 20)
        let reference = Self.tone(amplitude: amplitude)
        let start = try #require((max(0, onset - 1_000)...onset).max { lag1, lag2 in
            Self.dot(right, reference, at: lag1) < Self.dot(right, reference, at: lag2)
        })
        #expect(start + reference.count + 2_400 <= right.count, "the recording ends inside the tone")
        let end = start + reference.count
        let tail = Signals.rms(right[(end - 480)..<end]), expectedTail = Signals.rms(reference[(reference.count - 480)...])
        print("the tone's last 10 ms: \(String(format: "%.1f", 20 * log10(tail / expectedTail))) dB against the fade-out's own")
        #expect(abs(20 * log10(tail / expectedTail)) < 1, "last 10 ms at \(20 * log10(tail / expectedTail)) dB of the fade-out's level")
        let lastPulse = right[(end - 7_200 - 2_400)..<(end + 2_400)]
        let spread = stride(from: 2_000.0, through: 8_000, by: 125).map { Signals.amplitude(of: lastPulse, frequency: $0, rate: 48_000) }.max() ?? 0
        let spreadDB = Signals.dB(spread / Signals.amplitude(of: lastPulse, frequency: 1_000, rate: 48_000))
        print("the last pulse: energy above 2 kHz at most \(String(format: "%.1f", spreadDB)) dB below the tone")
        #expect(spreadDB < -90, "the last pulse spreads \(spreadDB) dB above 2 kHz")

        // The tone files' directory: private, and removed when the test ends.
        let runtime = session.root.appendingPathComponent("run").path
        let leftBehind = (try FileManager.default.contentsOfDirectory(atPath: runtime)).filter { $0.hasPrefix("hear-hearing-test") }
        #expect(leftBehind.isEmpty, "left in XDG_RUNTIME_DIR: \(leftBehind)")
        let inTmp = (try FileManager.default.contentsOfDirectory(atPath: "/tmp")).filter { name in
            name.hasPrefix("hear-hearing-test") && name != session.root.lastPathComponent && ((try? FileManager.default.attributesOfItem(atPath: "/tmp/" + name)[.modificationDate] as? Date)
                .map { $0 >= started.addingTimeInterval(-1) } ?? false)
        }
        #expect(inTmp.isEmpty, "left in /tmp: \(inTmp)")
    }

    static func tone(amplitude: Double, rate: Double = 48_000) -> [Float] {
        let pulse = Int(0.15 * rate), gap = Int(0.1 * rate), ramp = Int(0.02 * rate)
        var samples: [Float] = []
        for index in 0..<3 {
            for n in 0..<pulse {
                let edge = min(n, pulse - 1 - n)
                let envelope = edge >= ramp ? 1 : 0.5 - 0.5 * cos(Double.pi * Double(edge) / Double(ramp))
                samples.append(Float(amplitude * envelope * sin(2 * Double.pi * 1000 * Double(n) / rate)))
            }
            if index < 2 { samples += [Float](repeating: 0, count: gap) }
        }
        return samples
    }

    static func dot(_ signal: [Float], _ reference: [Float], at lag: Int) -> Double {
        var sum = 0.0
        for index in reference.indices where lag + index < signal.count { sum += Double(signal[lag + index]) * Double(reference[index]) }
        return sum
    }

}
