// Echo cancellation under PulseAudio: hear.pa's two chains are module-ladspa-sink instances in the
// pulseaudio process, so the speaker chain's output reaches the microphone chain's canceller
// through the reference tap as in PipeWire. What holds: both chains run at 48 kHz, so the
// canceller gets its reference (at PulseAudio's default 44.1 kHz for the microphone's sink it got
// none). What does not, and is printed rather than bounded: each chain runs on its own sink's
// thread, in blocks of its own, and the speaker chain renders ahead of what its sink plays by
// however much that sink buffers, so the reference neither arrives one block per cycle (the tap's
// reader realigned 5-15 times between two readings of the meters) nor stays ahead of its echo by
// a fixed delay; the canceller took out 0.6-3.6 dB. README says so, and names PulseAudio's own module-echo-cancel.
// The stand-in speakers' monitor is the microphone that hear.pa's loopback records.

import Foundation
import Testing
import TestSupport

@Suite(.serialized, .enabled(if: EchoRoom.available, "needs pocketsphinx-testdata and sox (make deps-test)"))
struct PulseAudioEchoTests {
    static func echoMeters(_ session: PulseAudioSession) throws -> (erle: Double?, realignments: Double?, delay: Double?) {
        try EchoTests.echoMeters(status: session.hearctl("status", "--chain", "mic", "--json"))
    }

    @Test func theMicrophoneChainGetsTheSpeakerChainsOutputAsItsReference() throws {
        let session = try PulseAudioSession(name: "pulse-echo", microphone: "hear_test_out.monitor")
        defer { session.stop() }
        let far = session.file("far.wav")
        try WAVFile.write([EchoRoom.speech(EchoRoom.farEndFiles, rate: 48000, seconds: 30, levelDB: -26)], rate: 48000, to: far)
        var readings: [(erle: Double?, realignments: Double?, delay: Double?)] = []
        let player = try session.processes.start("paplay", ["-d", "hear_speaker", far.path], log: "play")
        for _ in 0..<6 {
            Thread.sleep(forTimeInterval: 4)
            readings.append(try Self.echoMeters(session))
        }
        _ = player.wait(timeout: 30)
        print("PulseAudio echo meters every 4 s:", readings)
        #expect(readings.allSatisfy { $0.erle != nil }, "the canceller had no reference: \(readings)")
    }
}
