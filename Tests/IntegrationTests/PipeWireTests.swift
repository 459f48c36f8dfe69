// The drop-ins in a real PipeWire (private and headless, see PipeWireSession): both chains
// appear as devices, audio played through them comes back processed, the gain control moves the
// level by what it says, and a change of the graph's sample rate re-instantiates the filter.
//
// Levels: a 1 kHz tone at -20 dBFS peak is played with pw-play and recorded with pw-record; the
// reference is the same chain with `bypass` on, so the stand-in devices cancel out.

import Foundation
import Testing
import TestSupport

@Suite(.serialized) struct PipeWireTests {
    static let rate = 48000

    /// A tone file in the session's directory.
    static func tone(_ session: PipeWireSession, frequency: Double, channels: Int, seconds: Double = 3) throws -> URL {
        let url = session.file("tone-\(Int(frequency))-\(channels).wav")
        let samples = Signals.sine(frequency: frequency, rate: Double(rate), seconds: seconds, amplitude: 0.1)
        try WAVFile.write(Array(repeating: samples, count: channels), rate: rate, to: url)
        return url
    }

    /// Everything but the output gain and the limiter off, so a quiet tone sees only `gain`.
    static let onlyGain: [(String, PipeWireSession.Value)] = [
        ("bypass", .toggle(false)), ("ns.enable", .toggle(false)), ("eq.enable", .toggle(false)),
        ("comp.enable", .toggle(false)), ("gain", .number(6)),
    ]

    @Test func bothChainsAppearAsDevicesWithTheirMediaClass() throws {
        let session = try PipeWireSession(name: "nodes")
        defer { session.stop() }
        let nodes = try session.nodes()
        let microphone = try #require(nodes["hear_microphone"], "nodes: \(nodes.keys.sorted())")
        #expect(microphone["media.class"] as? String == "Audio/Source")
        #expect(microphone["node.description"] as? String == "Hear: enhanced microphone")
        let speaker = try #require(nodes["hear_speaker"], "nodes: \(nodes.keys.sorted())")
        #expect(speaker["media.class"] as? String == "Audio/Sink")
        #expect(speaker["node.description"] as? String == "Hear: clearer voices")
        // The sides that face the hardware are passive: the filters sleep until an app uses them.
        #expect(Self.isTrue(nodes["capture.hear_microphone"]?["node.passive"]))
        #expect(Self.isTrue(nodes["playback.hear_speaker"]?["node.passive"]))
        // The configs' controls reached the plugin.
        let controls = try session.controls(PipeWireSession.microphoneControls)
        #expect(controls["comp.threshold"] == -28 && controls["chain"] == 1, "\(controls)")
        let speakerControls = try session.controls(PipeWireSession.speakerControls)
        #expect(speakerControls["eq.peak3.gain"] == 4 && speakerControls["chain"] == 2, "\(speakerControls)")
    }

    /// A test that fails still stops its daemons: `defer { session.stop() }` runs on a thrown error
    /// too, and leaves no process and no directory behind.
    @Test func aFailingTestStillStopsEveryDaemonItStarted() throws {
        var pids: [pid_t] = [], root: URL?
        struct Deliberate: Error {}
        do {
            let session = try PipeWireSession(name: "failing")
            defer { session.stop() }
            pids = session.processes.pids.filter(Command.isAlive)
            root = session.root
            #expect(pids.count == 3, "dbus-daemon, pipewire and wireplumber run")
            throw Deliberate()
        } catch is Deliberate {}
        for pid in pids { #expect(!Command.isAlive(pid), "pid \(pid) still runs") }
        #expect(root.map { !FileManager.default.fileExists(atPath: $0.path) } == true)
    }

    /// Both chains can be the defaults: apps that use the default devices then go through them,
    /// and wireplumber keeps the filters' own sides on the real devices (no loop into themselves).
    @Test func bothChainsCanBeTheDefaultDevices() throws {
        let session = try PipeWireSession(name: "defaults")
        defer { session.stop() }
        let nodes = try session.nodes()
        for name in ["hear_speaker", "hear_microphone"] {
            let id = try #require(nodes[name]?["object.id"] as? Int, "\(name) has no object.id")
            try session.processes.run("wpctl", ["set-default", "\(id)"])
        }
        let tone = try Self.tone(session, frequency: 1000, channels: 2, seconds: 60)
        try session.processes.start("pw-play", ["-P", "{ node.name = hear_test_app_out }", tone.path], log: "play")
        try session.processes.start("pw-record", ["-P", "{ node.name = hear_test_app_in }", session.file("in.wav").path], log: "record")
        try waitFor("the app streams to reach the Hear chains") {
            let links = try session.links()
            return links.contains { $0.output.hasPrefix("hear_test_app_out:") && $0.input.hasPrefix("hear_speaker:") }
                && links.contains { $0.output.hasPrefix("hear_microphone:") && $0.input.hasPrefix("hear_test_app_in:") }
        }
        let links = try session.links()
        #expect(links.contains { $0.output.hasPrefix("playback.hear_speaker:") && $0.input.hasPrefix("hear_test_speaker:") }, "\(links)")
        #expect(links.contains { $0.output.hasPrefix("hear_test_mic:") && $0.input.hasPrefix("capture.hear_microphone:") }, "\(links)")
        #expect(!links.contains { $0.output.hasPrefix("playback.hear_speaker:") && $0.input.hasPrefix("hear_speaker:") })
        #expect(!links.contains { $0.output.hasPrefix("hear_microphone:") && $0.input.hasPrefix("capture.hear_microphone:") })
    }

    @Test func microphoneGainOf6dBRaisesAToneBy6dB() throws {
        let session = try PipeWireSession(name: "mic-gain")
        defer { session.stop() }
        let tone = try Self.tone(session, frequency: 1000, channels: 1)
        let node = PipeWireSession.microphoneControls

        try session.set(node, [("bypass", .toggle(true))])
        let bypassed = try session.record(from: "hear_microphone", channels: 1, playing: tone, into: "hear_test_mic_input",
                                          name: "bypassed")
        try session.set(node, Self.onlyGain)
        let gained = try session.record(from: "hear_microphone", channels: 1, playing: tone, into: "hear_test_mic_input",
                                        name: "gained")
        try bypassed.expectLouder(gained, by: 6, "gain 6")
    }

    @Test func speakerGainOf6dBRaisesAToneBy6dBOnBothChannels() throws {
        let session = try PipeWireSession(name: "speaker-gain")
        defer { session.stop() }
        let tone = try Self.tone(session, frequency: 1000, channels: 2)
        let node = PipeWireSession.speakerControls

        try session.set(node, [("bypass", .toggle(true))])
        let bypassed = try session.record(from: "hear_test_speaker", monitor: true, channels: 2, playing: tone,
                                          into: "hear_speaker", name: "bypassed")
        try session.set(node, Self.onlyGain)
        let gained = try session.record(from: "hear_test_speaker", monitor: true, channels: 2, playing: tone,
                                        into: "hear_speaker", name: "gained")
        try bypassed.expectLouder(gained, by: 6, "gain 6")
    }

    /// hearctl finds the plugin inside the PipeWire daemon by its control socket and tunes the
    /// microphone chain live: `hearctl set gain 6` raises the recorded tone by 6 dB.
    @Test func hearctlSetGain6RaisesTheMicrophoneBy6dB() throws {
        let session = try PipeWireSession(name: "hearctl-gain")
        defer { session.stop() }
        let tone = try Self.tone(session, frequency: 1000, channels: 1)
        let bypassed = try session.record(from: "hear_microphone", channels: 1, playing: tone, into: "hear_test_mic_input",
                                          name: "bypassed", before: {
            try session.waitForInstance(chain: "mic")
            try session.hearctl("set", "--chain", "mic", "bypass", "on")
        })
        let gained = try session.record(from: "hear_microphone", channels: 1, playing: tone, into: "hear_test_mic_input",
                                        name: "gained", before: {
            try session.waitForInstance(chain: "mic")
            try session.hearctl("set", "--chain", "mic", "bypass", "off", "ns.enable", "off", "eq.enable", "off", "comp.enable", "off")
            try session.hearctl("set", "--chain", "mic", "gain", "6")
        })
        #expect(try session.hearctl("get", "--chain", "mic", "gain").contains("6"))
        try bypassed.expectLouder(gained, by: 6, "hearctl set gain 6")
    }

    /// With both chains running, `hearctl status` shows the plugin's instances and, through
    /// libpipewire, the PipeWire node that hosts each chain, its state and its device.
    @Test func hearctlStatusListsBothChainsWithTheirPipeWireNodes() throws {
        let session = try PipeWireSession(name: "hearctl-status")
        defer { session.stop() }
        let idle = try session.hearctl("status")
        #expect(idle.contains("hear_microphone") && idle.contains("hear_speaker") && idle.contains("suspended"), "\(idle)")
        // An app plays into the speaker chain and another records from the microphone chain.
        let tone = try Self.tone(session, frequency: 1000, channels: 2, seconds: 60)
        try session.processes.start("pw-play", ["--target", "hear_speaker", tone.path], log: "play")
        try session.processes.start("pw-record", ["--target", "hear_microphone", session.file("mic.wav").path], log: "record")
        var text = ""
        try waitFor("both chains to run") {
            text = try session.hearctl("status")
            return text.split(separator: "\n").filter { $0.contains("hear_") && $0.contains("running") }.count == 4
        }
        let json = try JSONSerialization.jsonObject(with: Data(session.hearctl("status", "--json").utf8)) as? [String: Any] ?? [:]
        let lines = text.split(separator: "\n").map(String.init)
        #expect(lines.contains { $0.hasPrefix("1 (mic)") && $0.contains("hear_mono") }, "\(text)")
        #expect(lines.contains { $0.hasPrefix("2 (speaker)") && $0.contains("hear_stereo") }, "\(text)")
        // The quantum the driver runs now (what the instances are called with), and the configured one beside it when they differ.
        let instances = json["instances"] as? [[String: Any]] ?? []
        let blocks = Set(instances.compactMap { $0["block"] as? Int })
        let block = try #require(blocks.count == 1 ? blocks.first : nil, "\(instances)")
        #expect(lines.contains { $0.hasPrefix("PipeWire 0.3") && $0.contains("48000 Hz") && $0.contains("quantum \(block) now")
                && $0.contains("configured 1024") == (block != 1024) }, "\(text)")
        #expect((json["pipewire"] as? [String: Any])?["quantumNow"] as? Int == block && (json["pipewire"] as? [String: Any])?["quantum"] as? Int == 1024)
        #expect(lines.contains { $0.hasPrefix("1 (mic)") && $0.contains("hear_microphone") && $0.contains("running")
                && $0.contains("from hear_test_mic") }, "\(text)")
        #expect(lines.contains { $0.hasPrefix("2 (speaker)") && $0.contains("hear_speaker") && $0.contains("running")
                && $0.contains("to hear_test_speaker") }, "\(text)")
        let chains = (json["pipewire"] as? [String: Any])?["chains"] as? [[String: Any]] ?? []
        #expect(chains.map { $0["node"] as? String } == ["hear_microphone", "hear_speaker"], "\(json)")
        #expect(chains.map { $0["rate"] as? Int } == [48000, 48000])
    }

    /// In a real PipeWire, the microphone chain sleeps until an app records
    /// from it (no plugin instance, so no control socket knows it). hearctl shows it suspended,
    /// refuses an unscoped change while two chains exist, keeps a change for it in its state file,
    /// and the chain has the change once an app records; reset goes back to the drop-in's values.
    @Test func aSuspendedChainTakesItsSettingsWhenItStarts() throws {
        let session = try PipeWireSession(name: "hearctl-suspended")
        defer { session.stop() }
        let hearctl = Repository.url(".build/release/hearctl").path
        let status = try session.hearctl("status")
        #expect(status.split(separator: "\n").contains { $0.hasPrefix("1 (mic)") && $0.contains("suspended") }, "\(status)")
        let unscoped = try session.processes.run(hearctl, ["set", "gain", "3"], check: false)
        #expect(unscoped.status == 2 && unscoped.output.contains("--chain mic or --chain speaker"), "\(unscoped.output)")
        let set = try session.hearctl("set", "--chain", "mic", "gain", "5", "comp.ratio", "6")
        #expect(set.hasPrefix("chain 1 (mic) is suspended: gain = 5 dB, comp.ratio = 6:1"), "\(set)")
        #expect(try session.hearctl("meter", "--once", "--chain", "mic").contains("idle"))

        try session.processes.start("pw-record", ["--target", "hear_microphone", session.file("mic.wav").path], log: "record")
        try session.waitForInstance(chain: "mic")
        func value(_ key: String) throws -> Double? {
            let json = try JSONSerialization.jsonObject(with: Data(session.hearctl("get", "--chain", "mic", key, "--json").utf8)) as? [String: Any]
            return ((json?["chains"] as? [[String: Any]])?.first?["values"] as? [String: Any])?[key] as? Double
        }
        #expect(try value("gain") == 5 && value("comp.ratio") == 6)
        // The drop-in (conf.d/pipewire/hear-microphone.conf) sets comp.ratio 3 and no gain.
        #expect(try session.hearctl("reset", "--chain", "mic", "comp.ratio", "gain").contains("chain 1 (mic): comp.ratio = 3:1, gain = 0 dB\n"))
        #expect(try value("comp.ratio") == 3 && value("gain") == 0)
    }

    /// At 44.1 and 96 kHz: a 3 kHz tone through gain 6 and a +6 dB peak at 3 kHz comes out 12 dB
    /// louder. A filter left at 48 kHz coefficients would put the peak at 2.76 or 6 kHz and miss.
    @Test(arguments: [44100, 96000])
    func aNewGraphRateReinstantiatesTheFilter(rate: Int) throws {
        let session = try PipeWireSession(name: "rate-\(rate)")
        defer { session.stop() }
        try session.forceRate(rate)
        let tone = try Self.tone(session, frequency: 3000, channels: 2)
        let node = PipeWireSession.speakerControls

        try session.set(node, [("bypass", .toggle(true))])
        let bypassed = try session.record(from: "hear_test_speaker", monitor: true, channels: 2, playing: tone,
                                          into: "hear_speaker", name: "bypassed")
        try session.set(node, [
            ("bypass", .toggle(false)), ("ns.enable", .toggle(false)), ("comp.enable", .toggle(false)),
            ("eq.enable", .toggle(true)), ("eq.hp.enable", .toggle(false)), ("eq.low.gain", .number(0)),
            ("eq.peak1.gain", .number(0)), ("eq.peak2.gain", .number(0)), ("eq.high.gain", .number(0)),
            ("eq.peak3.freq", .number(3000)), ("eq.peak3.gain", .number(6)), ("eq.peak3.q", .number(1)),
            ("gain", .number(6)),
        ])
        var formatRate: Int?, status = ""
        let shaped = try session.record(from: "hear_test_speaker", monitor: true, channels: 2, playing: tone,
                                        into: "hear_speaker", name: "shaped") {
            formatRate = try Self.formatRate(session, node: "hear_speaker")
            status = try session.hearctl("status", "--chain", "speaker")
        }
        #expect(formatRate == rate, "the filter's input runs at \(formatRate.map(String.init) ?? "?") Hz")
        // The plugin instance itself was made for the new rate (its own report, over the control socket).
        #expect(status.split(separator: "\n").contains { $0.hasPrefix("2 (speaker)") && $0.contains("hear_stereo") && $0.contains("\(rate) Hz") },
                "\(status)")
        try bypassed.expectLouder(shaped, by: 12, "shaped at \(rate) Hz", onChannels: [0])
    }

    /// pw-dump prints a property as a JSON bool or a string.
    static func isTrue(_ value: Any?) -> Bool { (value as? Bool) == true || (value as? String) == "true" }

    /// The sample rate a node's negotiated Format names (pw-dump), while the graph runs.
    static func formatRate(_ session: PipeWireSession, node: String) throws -> Int? {
        for object in try session.dump() where object["type"] as? String == "PipeWire:Interface:Node" {
            guard let info = object["info"] as? [String: Any], let props = info["props"] as? [String: Any],
                  props["node.name"] as? String == node, let params = info["params"] as? [String: Any],
                  let formats = params["Format"] as? [[String: Any]] else { continue }
            return formats.first?["rate"] as? Int
        }
        return nil
    }
}
