// `hearctl hearing-test` in a private PipeWire session: the tones it plays on the output device,
// recorded from that device's monitor, have the level and frequency the test says (±1 dB, ±1 %),
// in the ear it says, and nothing in the other.

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
    }
}
