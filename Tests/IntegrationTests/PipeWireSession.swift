// A private, headless PipeWire for one test: its own XDG_RUNTIME_DIR, config, state and HOME, and
// TestSupport's PipeWireDaemons (a session bus, pipewire with scripts/pipewire-session.conf,
// wireplumber). The repository's drop-ins load from $XDG_CONFIG_HOME/pipewire/pipewire.conf.d/,
// exactly as on a desktop.
// Stand-ins for the hardware: "hear_test_mic_input" (play into it) feeds the source
// "hear_test_mic", the default microphone; "hear_test_speaker", the default output, is a null sink.

import Foundation
import TestSupport

final class PipeWireSession: @unchecked Sendable {
    let processes: Processes
    var root: URL { processes.root }

    /// The node that carries each chain's controls (filter-chain puts `Props` on its capture side).
    static let microphoneControls = "capture.hear_microphone"
    static let speakerControls = "hear_speaker"

    /// `installedHome`: use the drop-ins `make install` wrote under this HOME instead of the repository's.
    /// `extraDropIns`: more drop-ins for this test (file name: text), made from the session's folder
    /// before the daemon starts (a test's own stand-ins: a room between speaker and microphone).
    init(name: String, plugin: String = Repository.plugin, installedHome: URL? = nil,
         extraDropIns: ((URL) throws -> [String: String])? = nil) throws {
        processes = try Processes(name: name)
        do { try start(plugin: plugin, installedHome: installedHome, extraDropIns: extraDropIns) } catch {
            let logs = "pipewire: \(processes.log("pipewire"))\nwireplumber: \(processes.log("wireplumber"))"
            processes.stopAll()
            throw TestFailure("\(error)\n\(logs)")
        }
    }

    private func start(plugin: String, installedHome: URL?, extraDropIns: ((URL) throws -> [String: String])?) throws {
        let runtime = try processes.directory("run")
        let home = try installedHome ?? processes.directory("home")
        let config = try installedHome.map { $0.appendingPathComponent(".config") } ?? processes.directory("config")
        try PipeWireDaemons.prepare(processes, runtime: runtime, config: config,
                                    sessionConfig: Repository.text("scripts/pipewire-session.conf"))
        processes.environment["XDG_STATE_HOME"] = try processes.directory("state").path
        processes.environment["HOME"] = home.path
        if installedHome == nil {
            let dropIns = config.appendingPathComponent("pipewire/pipewire.conf.d")
            for name in Repository.dropIns {
                try Repository.configured("conf.d/pipewire/" + name, plugin: plugin)
                    .write(to: dropIns.appendingPathComponent(name), atomically: true, encoding: .utf8)
            }
        }
        if let extraDropIns {
            let dropIns = config.appendingPathComponent("pipewire/pipewire.conf.d")
            try FileManager.default.createDirectory(at: dropIns, withIntermediateDirectories: true)
            for (name, text) in try extraDropIns(root) {
                try text.write(to: dropIns.appendingPathComponent(name), atomically: true, encoding: .utf8)
            }
        }
        try PipeWireDaemons.startBus(processes, runtime: runtime)
        let manager = try PipeWireDaemons.startDaemons(processes, runtime: runtime).wireplumber
        // Ready when both chains exist and wireplumber has linked the filters' streams to the stand-ins.
        try waitFor("wireplumber to link the hear chains", timeout: 60) {
            guard manager.isRunning else { throw TestFailure("wireplumber exited: \(processes.log("wireplumber"))") }
            let links = try self.links()
            return links.contains { $0.input.hasPrefix("capture.hear_microphone:") && $0.output.hasPrefix("hear_test_mic:") }
                && links.contains { $0.output.hasPrefix("playback.hear_speaker:") && $0.input.hasPrefix("hear_test_speaker:") }
        }
    }

    func stop() { processes.stopAll() }

    // MARK: What the daemon reports

    /// Every object, as pw-dump prints it.
    func dump() throws -> [[String: Any]] {
        let output = try processes.run("pw-dump", ["--no-colors"]).output
        guard let objects = try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [[String: Any]] else {
            throw TestFailure("pw-dump printed no list")
        }
        return objects
    }

    /// The properties of every node, by node.name.
    func nodes() throws -> [String: [String: Any]] {
        var nodes: [String: [String: Any]] = [:]
        for object in try dump() where object["type"] as? String == "PipeWire:Interface:Node" {
            guard let info = object["info"] as? [String: Any], let props = info["props"] as? [String: Any],
                  let name = props["node.name"] as? String else { continue }
            var entry = props
            entry["hear.info"] = info
            nodes[name] = entry
        }
        return nodes
    }

    /// Port links as "node:port" pairs (pw-link -l).
    func links() throws -> [(output: String, input: String)] {
        let lines = try processes.run("pw-link", ["-l"]).output.split(separator: "\n").map(String.init)
        var pairs: [(String, String)] = [], current = ""
        for line in lines {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.hasPrefix("|->") { pairs.append((current, String(trimmed.dropFirst(3)).trimmingCharacters(in: .whitespaces))) }
            else if trimmed.hasPrefix("|<-") { pairs.append((String(trimmed.dropFirst(3)).trimmingCharacters(in: .whitespaces), current)) }
            else { current = trimmed }
        }
        return pairs
    }

    // MARK: Controls

    enum Value: CustomStringConvertible {
        case number(Double)
        case toggle(Bool)
        var description: String {
            switch self {
            case .number(let value): return String(format: "%.6f", value)
            case .toggle(let on): return on ? "true" : "false"
            }
        }
    }

    /// Sets filter-chain controls (`hear:KEY`) on a chain's node, and waits until the node reports them.
    func set(_ node: String, _ values: [(String, Value)]) throws {
        let params = values.map { "\"hear:\($0.0)\" \($0.1)" }.joined(separator: " ")
        try processes.run("pw-cli", ["set-param", node, "Props", "{ params = [ \(params) ] }"])
        try waitFor("\(node) to take \(params)", timeout: 10) {
            let reported = try self.controls(node)
            return values.allSatisfy { key, value in
                guard let current = reported[key] else { return false }
                switch value {
                case .number(let number): return abs(current - number) < 1e-4
                case .toggle(let on): return (current >= 0.5) == on
                }
            }
        }
    }

    /// A node's current `hear:` controls, read from `pw-cli enum-params NODE Props`.
    func controls(_ node: String) throws -> [String: Double] {
        let lines = try processes.run("pw-cli", ["enum-params", node, "Props"]).output.split(separator: "\n")
            .map { $0.trimmingCharacters(in: .whitespaces) }
        var values: [String: Double] = [:]
        for (index, line) in lines.enumerated() where line.hasPrefix("String \"hear:") && index + 1 < lines.count {
            let key = String(line.dropFirst("String \"hear:".count).dropLast())
            let next = lines[index + 1]
            if next.hasPrefix("Float ") { values[key] = Double(next.dropFirst(6)) }
            else if next.hasPrefix("Int ") { values[key] = Double(next.dropFirst(4)) }
            else if next.hasPrefix("Bool ") { values[key] = next.hasSuffix("true") ? 1 : 0 }
        }
        return values
    }

    /// Forces the graph's sample rate (0 gives the choice back to the daemon).
    func forceRate(_ rate: Int) throws {
        try processes.run("pw-metadata", ["-n", "settings", "0", "clock.force-rate", "\(rate)"])
    }

    // MARK: Playing and recording

    /// Records from `source` while `file` plays into `sink`; returns what was recorded.
    /// `monitor` records what reaches a sink (its monitor ports) rather than a source.
    /// `before` runs once the recorder is linked (the chain is running), before the file plays;
    /// `during` runs while the graph is still running, after the file has played.
    func record(from source: String, monitor: Bool = false, channels: Int, playing file: URL, into sink: String,
                name: String, before: (() throws -> Void)? = nil, during: (() throws -> Void)? = nil) throws -> WAVAudio {
        let output = root.appendingPathComponent(name + ".wav")
        let recorderName = "hear_test_recorder_\(name)"
        let props = "{ node.name = \(recorderName) \(monitor ? "stream.capture.sink = true" : "") }"
        let recorder = try processes.start(
            "pw-record", ["--target", source, "-P", props, "--format", "f32", "--rate", "48000",
                          "--channels", "\(channels)", output.path], log: "record-\(name)")
        defer { recorder.stop(signal: SIGINT) }
        try waitFor("the recorder to be linked to \(source)") {
            guard recorder.isRunning else { throw TestFailure("pw-record exited: \(processes.log("record-\(name)"))") }
            return try links().contains { $0.input.hasPrefix(recorderName + ":") }
        }
        try before?()
        try processes.run("pw-play", ["--target", sink, file.path], timeout: 120)
        // Let the tail through the graph: wait for another 0.5 s of audio in the file.
        let size = { ((try? FileManager.default.attributesOfItem(atPath: output.path)[.size]) as? Int) ?? 0 }
        let target = size() + 24_000 * channels * 4
        try waitFor("0.5 s more of the recording") { size() >= target }
        try during?()
        recorder.stop(signal: SIGINT)
        return try WAVFile.read(output)
    }

    /// Runs the built hearctl against this session (its control sockets are in $XDG_RUNTIME_DIR/hear).
    @discardableResult
    func hearctl(_ arguments: String...) throws -> String {
        try processes.run(Repository.url(".build/release/hearctl").path, arguments).output
    }

    /// Waits until the plugin's control server reports an instance of `chain` (filter-chain
    /// instantiates the plugin when the node starts running, and drops it when it suspends).
    func waitForInstance(chain: String) throws {
        try waitFor("an instance of chain \(chain) in hearctl status") {
            let result = try processes.run(Repository.url(".build/release/hearctl").path, ["status", "--chain", chain], check: false)
            return result.status == 0
        }
    }

    /// A test file in this session's directory.
    func file(_ name: String) -> URL { root.appendingPathComponent(name) }
}
