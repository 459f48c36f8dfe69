// hearctl device list / device set against a real private PipeWire + WirePlumber (PipeWireSession):
// a second microphone and a second speaker next to the stand-ins, the chains moved to them and
// back to the default, as the graph's links show; the choice kept in the drop-in (target.object
// in the side that faces the device) and removed again, byte for byte; an unknown device changes
// nothing and lists the candidates.

import Foundation
import Testing
import TestSupport

@Suite(.serialized) struct DeviceTests {
    static let hearctl = Repository.url(".build/release/hearctl").path

    /// The device node linked to the chain's stream (`capture.hear_microphone` records from it,
    /// `playback.hear_speaker` plays to it), from pw-link.
    static func linked(_ session: PipeWireSession, _ chain: String) throws -> Set<String> {
        let links = try session.links()
        let device = chain == "mic"
            ? links.filter { $0.input.hasPrefix("capture.hear_microphone:") }.map(\.output)
            : links.filter { $0.output.hasPrefix("playback.hear_speaker:") }.map(\.input)
        return Set(device.map { String($0.split(separator: ":")[0]) })
    }

    static func waitForLink(_ session: PipeWireSession, _ chain: String, to device: String) throws {
        try waitFor("the \(chain) chain to be linked to \(device) alone", timeout: 15) { try linked(session, chain) == [device] }
    }

    @Test func deviceSetMovesTheChainKeepsItInTheDropInAndDefaultUndoesIt() throws {
        let session = try PipeWireSession(name: "device")
        defer { session.stop() }
        let processes = session.processes
        // A second microphone (a virtual source) and a second speaker, below the stand-ins' priority.
        try processes.run("pw-cli", ["create-node", "adapter", """
            { factory.name = support.null-audio-sink node.name = hear_test_mic2 node.description = "Second test microphone"
              media.class = Audio/Source/Virtual audio.position = [ FL FR ] priority.session = 10 object.linger = true }
            """])
        try processes.run("pw-cli", ["create-node", "adapter", """
            { factory.name = support.null-audio-sink node.name = hear_test_speaker2 node.description = "Second test speaker"
              media.class = Audio/Sink audio.position = [ FL FR ] priority.session = 10 object.linger = true }
            """])
        let dropIns = URL(fileURLWithPath: processes.environment["XDG_CONFIG_HOME"]!).appendingPathComponent("pipewire/pipewire.conf.d")
        let microphone = dropIns.appendingPathComponent("hear-microphone.conf")
        let speaker = dropIns.appendingPathComponent("hear-speaker.conf")
        // The drop-ins as `hearctl enable` writes them (the session's differ in their comments only).
        for chain in ["mic", "speaker"] {
            try processes.run(Self.hearctl, ["enable", chain, "--force", "--no-restart", "--plugin", Repository.plugin])
        }
        let original = (mic: try String(contentsOf: microphone, encoding: .utf8), speaker: try String(contentsOf: speaker, encoding: .utf8))

        // The list: both of each kind, the defaults and the links marked, hear's own nodes left out.
        var listed: [[String: Any]] = []
        try waitFor("device list to show both new devices") {
            let output = try processes.run(Self.hearctl, ["device", "list", "--json"]).output
            let object = try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any]
            listed = object?["devices"] as? [[String: Any]] ?? []
            return Set(listed.compactMap { $0["name"] as? String }).isSuperset(of: ["hear_test_mic2", "hear_test_speaker2"])
        }
        func entry(_ name: String) -> [String: Any]? { listed.first { $0["name"] as? String == name } }
        #expect(entry("hear_test_mic")?["kind"] as? String == "mic" && entry("hear_test_mic2")?["kind"] as? String == "mic")
        #expect(entry("hear_test_speaker")?["kind"] as? String == "speaker" && entry("hear_test_speaker2")?["kind"] as? String == "speaker")
        #expect(entry("hear_test_mic2")?["description"] as? String == "Second test microphone")
        #expect(entry("hear_test_mic")?["default"] as? Bool == true && entry("hear_test_mic")?["linked"] as? Bool == true)
        #expect(entry("hear_test_speaker")?["default"] as? Bool == true && entry("hear_test_speaker")?["linked"] as? Bool == true)
        #expect(entry("hear_test_mic2")?["default"] as? Bool == false && entry("hear_test_mic2")?["linked"] as? Bool == false)
        #expect(entry("hear_microphone") == nil && entry("hear_speaker") == nil, "a chain is offered as a device: \(listed)")
        let text = try processes.run(Self.hearctl, ["device", "list"]).output
        #expect(text.contains("hear_test_mic2") && text.contains("default, mic chain"), "\(text)")

        // By description: the mic chain records from the second microphone, at once.
        let set = try processes.run(Self.hearctl, ["device", "set", "mic", "Second test microphone"])
        #expect(set.output.contains("chain 1 (mic) records from hear_test_mic2") && set.output.contains("re-linked"), "\(set.output)")
        try Self.waitForLink(session, "mic", to: "hear_test_mic2")
        let edited = try String(contentsOf: microphone, encoding: .utf8)
        let capture = try #require(edited.firstMatch(of: /capture\.props = \{([^}]*)\}/)?.1)
        #expect(capture.contains("target.object = \"hear_test_mic2\""), "\(edited)")
        #expect(!(edited.firstMatch(of: /playback\.props = \{([^}]*)\}/)?.1.contains("target.object") ?? true))
        // enable knows its own drop-in with a device chosen: nothing to replace, the choice stays.
        let enable = try processes.run(Self.hearctl, ["enable", "mic", "--no-restart", "--plugin", Repository.plugin]).output
        #expect(enable.contains("mic is already enabled"), "\(enable)")
        #expect(try String(contentsOf: microphone, encoding: .utf8) == edited)
        // By name, with --json: the speaker chain plays to the second speaker.
        let json = try processes.run(Self.hearctl, ["device", "set", "speaker", "hear_test_speaker2", "--json"]).output
        let reply = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        #expect(reply["device"] as? String == "hear_test_speaker2" && reply["chain"] as? Int == 2 && reply["applied"] as? Bool == true, "\(reply)")
        try Self.waitForLink(session, "speaker", to: "hear_test_speaker2")
        let playback = try #require(try String(contentsOf: speaker, encoding: .utf8).firstMatch(of: /playback\.props = \{([^}]*)\}/)?.1)
        #expect(playback.contains("target.object = \"hear_test_speaker2\""))

        // status shows the choice.
        let status = try processes.run(Self.hearctl, ["status"]).output
        #expect(status.contains("device of 1 (mic): hear_test_mic2") && status.contains("device of 2 (speaker): hear_test_speaker2"), "\(status)")
        let statusJSON = try JSONSerialization.jsonObject(with: Data(try processes.run(Self.hearctl, ["status", "--json"]).output.utf8)) as? [String: Any]
        let chains = statusJSON?["chains"] as? [[String: Any]] ?? []
        #expect(chains.first { $0["name"] as? String == "mic" }?["device"] as? String == "hear_test_mic2", "\(chains)")

        // An unknown device: usage error, the candidates named, nothing changed.
        let before = try String(contentsOf: microphone, encoding: .utf8)
        let unknown = try processes.run(Self.hearctl, ["device", "set", "mic", "kitchen"], check: false)
        #expect(unknown.status == 2, "\(unknown.output)")
        #expect(unknown.output.contains("no microphone 'kitchen'") && unknown.output.contains("hear_test_mic2") && unknown.output.contains("hear_test_mic ("),
                "\(unknown.output)")
        #expect(!unknown.output.contains("hear_test_speaker"), "a speaker offered as a microphone: \(unknown.output)")
        #expect(try String(contentsOf: microphone, encoding: .utf8) == before)
        #expect(try Self.linked(session, "mic") == ["hear_test_mic2"])
        let ambiguous = try processes.run(Self.hearctl, ["device", "set", "speaker", "speaker"], check: false)
        #expect(ambiguous.status == 2 && ambiguous.output.contains("matches 2 speakers"), "\(ambiguous.output)")

        // default: back to the default devices, the drop-ins exactly as they were.
        try processes.run(Self.hearctl, ["device", "set", "mic", "default"])
        try Self.waitForLink(session, "mic", to: "hear_test_mic")
        #expect(try String(contentsOf: microphone, encoding: .utf8) == original.mic)
        let back = try processes.run(Self.hearctl, ["device", "set", "speaker", "default"]).output
        #expect(back.contains("follows the default speaker (now hear_test_speaker)"), "\(back)")
        try Self.waitForLink(session, "speaker", to: "hear_test_speaker")
        #expect(try String(contentsOf: speaker, encoding: .utf8) == original.speaker)
        #expect(try processes.run(Self.hearctl, ["status"]).output.contains("device of 1 (mic): the default microphone"))

        // hear's own microphone made the system default (so apps record the enhanced voice): it is
        // never "the default device" of a chain; the default marked is the device the chain takes.
        try processes.run("pw-metadata", ["0", "default.configured.audio.source", "{ \"name\": \"hear_microphone\" }", "Spa:String:JSON"])
        try waitFor("hear_microphone to be the default source", timeout: 15) {
            try processes.run("pw-metadata", ["0", "default.audio.source"]).output.contains("hear_microphone")
        }
        let own = try processes.run(Self.hearctl, ["device", "set", "mic", "default"]).output
        #expect(own.contains("follows the default microphone (now hear_test_mic)"), "\(own)")
        let marked = try JSONSerialization.jsonObject(with: Data(try processes.run(Self.hearctl, ["device", "list", "--json"]).output.utf8)) as? [String: Any]
        let rows = marked?["devices"] as? [[String: Any]] ?? []
        #expect(rows.filter { $0["kind"] as? String == "mic" && $0["default"] as? Bool == true }.compactMap { $0["name"] as? String } == ["hear_test_mic"],
                "\(rows)")
        #expect((marked?["defaults"] as? [String: Any])?["mic"] as? String == "hear_test_mic", "\(marked ?? [:])")
    }
}
