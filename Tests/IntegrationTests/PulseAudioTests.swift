// conf.d/pulseaudio/hear.pa in a real PulseAudio daemon that the test starts and stops: the
// chains appear, audio goes through both, and the speaker chain's module line with gain at +6 dB
// plays a tone 6 dB louder than the same line with bypass on.

import Foundation
import Testing
import TestSupport

@Suite(.serialized) struct PulseAudioTests {
    static func tone(_ session: PulseAudioSession, channels: Int) throws -> URL {
        let url = session.file("tone-\(channels).wav")
        let samples = Signals.sine(frequency: 1000, rate: 48000, seconds: 3, amplitude: 0.1)
        try WAVFile.write(Array(repeating: samples, count: channels), rate: 48000, to: url)
        return url
    }

    @Test func hearPALoadsBothChainsAndAudioPassesThroughThem() throws {
        let session = try PulseAudioSession(name: "pulse-chains")
        defer { session.stop() }
        let sinks = try session.names("sinks"), sources = try session.names("sources")
        #expect(sinks.contains("hear_speaker") && sinks.contains("hear_microphone_filter"), "\(sinks)")
        #expect(sources.contains("hear_microphone"), "\(sources)")
        #expect(try session.names("modules").contains("module-loopback"))

        let speaker = try session.record(from: "hear_test_out.monitor", channels: 2, playing: Self.tone(session, channels: 2),
                                         into: "hear_speaker", name: "speaker")
        let speakerLevel = try Level.steady(speaker.channel(0), rate: speaker.rate)
        #expect(speakerLevel > -40 && speakerLevel < -1, "speaker chain: \(speakerLevel) dBFS")
        // The microphone chain: hear_test_mic's monitor -> loopback -> filter -> null sink -> hear_microphone.
        let microphone = try session.record(from: "hear_microphone", channels: 1, playing: Self.tone(session, channels: 1),
                                            into: "hear_test_mic", name: "microphone")
        let microphoneLevel = try Level.steady(microphone.samples, rate: microphone.rate)
        // A steady tone is what a noise suppressor removes: the microphone chain (ns.reduction 25 in
        // hear.pa) passes it up to 25 dB quieter than the speaker chain (12), and, once it has held
        // steady for a while, up to 25 dB further (LearnedGains.steadyDepthDB): how much of the
        // recording falls after that depends on how busy the machine is (-62.9 dBFS seen under
        // load, -41.6 alone). Quieter, but not silenced.
        print("microphone chain: \(microphoneLevel) dBFS, speaker chain: \(speakerLevel) dBFS")
        #expect(microphoneLevel > -80 && microphoneLevel < -1, "microphone chain: \(microphoneLevel) dBFS")

        // hearctl finds the instances inside pulseaudio, and says no PipeWire runs here.
        let status = try session.hearctl("status")
        let lines = status.split(separator: "\n").map(String.init)
        #expect(lines.contains { $0.hasPrefix("1 (mic)") && $0.contains("hear_mono") }, "\(status)")
        #expect(lines.contains { $0.hasPrefix("2 (speaker)") && $0.contains("hear_stereo") }, "\(status)")
        #expect(status.contains("PipeWire is not running"), "\(status)")
    }

    /// The same through hearctl, on the chain hear.pa itself loaded: `hearctl set gain 6`.
    @Test func hearctlSetGain6RaisesTheSpeakerChainBy6dB() throws {
        let session = try PulseAudioSession(name: "pulse-hearctl")
        defer { session.stop() }
        let tone = try Self.tone(session, channels: 2)
        try session.hearctl("set", "--chain", "speaker", "bypass", "on")
        let bypassed = try session.record(from: "hear_test_out.monitor", channels: 2, playing: tone, into: "hear_speaker",
                                          name: "bypassed")
        try session.hearctl("set", "--chain", "speaker", "bypass", "off", "ns.enable", "off", "eq.enable", "off", "comp.enable", "off")
        try session.hearctl("set", "--chain", "speaker", "gain", "6")
        let gained = try session.record(from: "hear_test_out.monitor", channels: 2, playing: tone, into: "hear_speaker",
                                        name: "gained")
        try bypassed.expectLouder(gained, by: 6, "hearctl gain 6")
    }

    @Test func gainOf6dBRaisesAToneBy6dB() throws {
        let session = try PulseAudioSession(name: "pulse-gain")
        defer { session.stop() }
        let speaker = try #require(try PulseLADSPASink.all(in: Repository.configured("conf.d/pulseaudio/hear.pa"))
            .first { $0.sinkName == "hear_speaker" })
        let ports = try PluginPorts.controlInputs(label: speaker.label)
        // hear.pa's own speaker line, loaded twice more with other control values: PulseAudio's
        // module-ladspa-sink has no live controls.
        let variants: [(String, [String: Double])] = [
            ("hear_test_bypassed", ["bypass": 1]),
            ("hear_test_gain", ["ns.enable": 0, "eq.enable": 0, "comp.enable": 0, "gain": 6]),
        ]
        for (name, controls) in variants {
            try session.processes.run("pactl", ["load-module", "module-ladspa-sink",
                                                speaker.arguments(sinkName: name, master: "hear_test_out", controls: controls, ports: ports)])
        }
        let tone = try Self.tone(session, channels: 2)
        let bypassed = try session.record(from: "hear_test_out.monitor", channels: 2, playing: tone, into: "hear_test_bypassed",
                                          name: "bypassed")
        let gained = try session.record(from: "hear_test_out.monitor", channels: 2, playing: tone, into: "hear_test_gain",
                                        name: "gained")
        try bypassed.expectLouder(gained, by: 6, "gain 6")
    }
}
