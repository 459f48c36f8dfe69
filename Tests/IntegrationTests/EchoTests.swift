// Echo cancellation in a real PipeWire: the speaker chain plays into the stand-in speaker (a null
// sink); a room (a filter-chain convolver with EchoRoom's 0.4 s response) takes that sink's monitor
// into the stand-in microphone, which the microphone chain records. Both hear chains run in the
// PipeWire daemon, so the speaker chain's output reaches the microphone chain's canceller through
// the reference tap. 60 s of recorded far-end speech, the quantum forced to 1024 for the first half
// and 256 after.

import Foundation
import Testing
import TestSupport

@Suite(.serialized, .enabled(if: EchoRoom.available, "needs pocketsphinx-testdata and sox (make deps-test)"))
struct EchoTests {
    static func roomDropIn(_ root: URL) throws -> [String: String] {
        let response = root.appendingPathComponent("room.wav")
        try WAVFile.write([EchoRoom.response(rate: 48000)], rate: 48000, to: response)
        return ["test-room.conf": """
        context.modules = [
            {   name = libpipewire-module-filter-chain
                args = {
                    node.description = "Test room"
                    media.name       = "Test room"
                    filter.graph = {
                        nodes = [ { type = builtin  name = room  label = convolver  config = { filename = "\(response.path)" } } ]
                    }
                    audio.channels = 1
                    audio.position = [ MONO ]
                    capture.props = {
                        node.name = "hear_test_room"  stream.capture.sink = true  target.object = "hear_test_speaker"
                        node.passive = true
                    }
                    playback.props = { node.name = "playback.hear_test_room"  target.object = "hear_test_mic_input"  node.passive = true }
                }
            }
        ]
        """]
    }

    /// The microphone chain's echo meters as `hearctl status` reads them (since its last reading).
    static func echoMeters(_ session: PipeWireSession) throws -> (erle: Double?, realignments: Double?, delay: Double?) {
        try echoMeters(status: session.hearctl("status", "--chain", "mic", "--json"))
    }

    /// The echo meters in `hearctl status --chain mic --json`'s output.
    static func echoMeters(status output: String) throws -> (erle: Double?, realignments: Double?, delay: Double?) {
        guard let json = try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any],
              let instance = (json["instances"] as? [[String: Any]])?.first,
              let echo = (instance["meters"] as? [String: Any])?["echo"] as? [String: Any]
        else { throw TestFailure("no echo meters in \(output)") }
        return (echo["erle"] as? Double, echo["realignments"] as? Double, echo["delay"] as? Double)
    }

    @Test func theMicrophoneChainCancelsTheSpeakerChainsEcho() throws {
        let session = try PipeWireSession(name: "echo", extraDropIns: Self.roomDropIn)
        defer { session.stop() }
        try session.processes.run("pw-metadata", ["-n", "settings", "0", "clock.force-quantum", "1024"])
        let far = session.file("far.wav")
        try WAVFile.write([EchoRoom.speech(EchoRoom.farEndFiles, rate: 48000, seconds: 60, levelDB: -26)], rate: 48000, to: far)
        // What reaches the microphone, and what the microphone chain makes of it.
        var recorders: [(name: String, file: URL, process: ChildProcess)] = []
        for (name, source) in [("mic-in", "hear_test_mic"), ("mic-out", "hear_microphone")] {
            let file = session.file(name + ".wav")
            let process = try session.processes.start(
                "pw-record", ["--target", source, "-P", "{ node.name = hear_test_recorder_\(name) }", "--format", "f32",
                              "--rate", "48000", "--channels", "1", file.path], log: "record-\(name)")
            recorders.append((name, file, process))
        }
        defer { for recorder in recorders { recorder.process.stop(signal: SIGINT) } }
        try waitFor("both recorders linked") {
            let links = try session.links()
            return recorders.allSatisfy { recorder in links.contains { $0.input.hasPrefix("hear_test_recorder_\(recorder.name):") } }
        }
        try session.waitForInstance(chain: "mic")
        let player = try session.processes.start("pw-play", ["--target", "hear_speaker", far.path], log: "play")
        try waitFor("the speaker chain", timeout: 10) { (try? session.hearctl("status", "--chain", "speaker")) != nil }
        Thread.sleep(forTimeInterval: 29)
        let steady = try Self.echoMeters(session)
        let status = try session.hearctl("status", "--chain", "mic")
        #expect(status.contains("echo canceller of mic") && status.contains("cancelling what the speaker chain plays")
                && status.contains("  converged: ERLE"), "\(status)")
        try session.processes.run("pw-metadata", ["-n", "settings", "0", "clock.force-quantum", "256"])
        #expect(player.wait(timeout: 45), "pw-play did not finish")
        let changed = try Self.echoMeters(session)
        for recorder in recorders { recorder.process.stop(signal: SIGINT) }
        let input = try WAVFile.read(recorders[0].file).samples, output = try WAVFile.read(recorders[1].file).samples
        // Both recordings from the first sound on; ERLE over whole windows of the far end's speech.
        guard let first = input.firstIndex(where: { abs($0) > 1e-4 }),
              let firstOut = output.firstIndex(where: { abs($0) > 1e-6 }) else { throw TestFailure("silent recordings") }
        func erle(from: Double, to: Double) -> Double {
            let a = input[min(first + Int(from * 48000), input.count)..<min(first + Int(to * 48000), input.count)]
            let b = output[min(firstOut + Int(from * 48000), output.count)..<min(firstOut + Int(to * 48000), output.count)]
            let energy = { (x: ArraySlice<Float>) in x.reduce(0.0) { $0 + Double($1) * Double($1) } }
            return 10 * log10(energy(a) / max(energy(b), 1e-20))
        }
        // speexdsp's filter converges over the first seconds of far-end speech (faster on a quiet
        // machine: 26 dB over 2-28 s alone, 12-16 dB while `make eval` ran beside it); from 10 s on
        // it has. The quantum changes about 29.5 s in; from 2 s after it, it has adapted to the new delays.
        let whole = erle(from: 10, to: 58), before = erle(from: 10, to: 28), after = erle(from: 32, to: 58)
        print("ERLE per second:", stride(from: 0.0, to: 58, by: 1).map { Int(erle(from: $0, to: $0 + 1).rounded()) })
        print("ERLE in PipeWire: \(whole) dB over 10-58 s (\(before) at quantum 1024, \(after) from 2 s after the change to 256); meters: \(steady), \(changed)")
        #expect(whole >= 15 && before >= 15 && after >= 15, "ERLE \(whole) dB, \(before) dB before and \(after) dB after the quantum change")
        #expect(steady.realignments == 0, "realignments at a fixed quantum: \(String(describing: steady.realignments))")
        #expect((changed.realignments ?? 99) <= 1, "realignments across the quantum change: \(String(describing: changed.realignments))")
        // The delay the canceller learned, from the speaker chain's output to the microphone chain's
        // input: the room's 20 ms and the graph's buffers, within the filter's 250 ms.
        for delay in [steady.delay, changed.delay] {
            #expect((delay ?? -1) >= 15 && (delay ?? 999) < 250, "echo delay \(String(describing: delay)) ms")
        }
    }

    @Test func enableMicWithEchoCancelMakesTheSpeakerChainTheDefaultOutput() throws {
        let session = try PipeWireSession(name: "echo-enable")
        defer { session.stop() }
        func configuredDefault() throws -> String {
            try session.processes.run("pw-metadata", ["-n", "default", "0", "default.configured.audio.sink"]).output
        }
        #expect(!(try configuredDefault()).contains("hear_speaker"))
        // The session's drop-ins name the plugin in their comments too (hearctl's do not): the
        // microphone's is replaced (--force), the speaker chain's kept as the user's own, and no
        // restart, since the running chains are the same.
        let reply = try session.hearctl("enable", "mic", "--echo-cancel", "--force", "--no-restart", "--plugin", Repository.plugin, "--json")
        let json = try JSONSerialization.jsonObject(with: Data(reply.utf8)) as? [String: Any]
        #expect(json?["speakerChanged"] as? Bool == false && json?["defaultOutput"] as? Bool == true, "\(reply)")
        #expect(try configuredDefault().contains("hear_speaker"))
        // WirePlumber follows: the speaker chain becomes the default sink that players go to.
        try waitFor("WirePlumber to make hear_speaker the default sink") {
            try session.processes.run("pw-metadata", ["-n", "default", "0", "default.audio.sink"]).output.contains("hear_speaker")
        }
    }
}
