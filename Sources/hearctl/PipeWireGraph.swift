// What PipeWire says about the hear chains, read through libpipewire (modules/CPipeWire): which
// node hosts each chain, its state, the device it captures from or plays to, and the graph's rate
// and quantum. The plugin's control sockets know the instances; only PipeWire knows the nodes.

import CPipeWire
import Foundation
import HearControl

struct PipeWireGraph {
    struct Node {
        let id: Int
        var props: [String: String] = [:]
        var state: String?
        var controls: [String: Double] = [:]
        var rate: Int?

        var name: String { props["node.name"] ?? "node \(id)" }
        var description: String? { props["node.description"] }
        var mediaClass: String { props["media.class"] ?? "" }
        var isDevice: Bool { mediaClass == "Audio/Source" || mediaClass == "Audio/Sink" }
    }

    /// One filter-chain that runs the plugin, as PipeWire shows it.
    struct Chain {
        let number: Int
        /// The side apps see: "Hear: enhanced microphone" (Audio/Source) or "Hear: clearer voices" (Audio/Sink).
        let node: Node
        /// The node whose Props hold the plugin's controls (filter-chain's capture side).
        let controls: Node
        /// What the chain captures from (a source chain) or plays to (a sink chain), if linked.
        let device: Node?
        /// The filter's stream that faces the device (the one WirePlumber links; `device set` targets it).
        let stream: Node?
        /// Every node of the filter-chain (its link group).
        let members: Set<Int>
        var direction: String { node.mediaClass == "Audio/Source" ? "from" : "to" }
        var state: String { node.state ?? controls.state ?? "?" }
        var rate: Int? { controls.rate ?? node.rate }
    }

    var library = ""
    var server: String?
    var error: String?
    var nodes: [Int: Node] = [:]
    var links: [(output: Int, input: Int)] = []
    var settings: [String: String] = [:]
    /// Subject-0 entries of the "default" metadata (default.audio.sink, default.audio.source, ...).
    var defaults: [String: String] = [:]
    /// Show only this chain (hearctl status --chain).
    var only: Int?
    /// The block sizes the chains' running instances were last called with (hearctl fills them in
    /// from the control sockets): the quantum the driver runs now.
    var runningBlocks: [Int] = []

    var running: Bool { server != nil }

    /// Connects to the PipeWire of this session ($XDG_RUNTIME_DIR/pipewire-0, or $PIPEWIRE_REMOTE).
    static func snapshot(timeoutMilliseconds: Int32 = 3000) -> PipeWireGraph {
        final class Lines { var all: [String] = [] }
        let lines = Lines()
        let context = Unmanaged.passUnretained(lines).toOpaque()
        _ = hear_pw_take_snapshot({ context, line in
            guard let context, let line else { return }
            Unmanaged<Lines>.fromOpaque(context).takeUnretainedValue().all.append(String(cString: line))
        }, context, timeoutMilliseconds)
        return PipeWireGraph(lines: lines.all)
    }

    init(lines: [String]) {
        var linkEnds: [Int: (output: Int?, input: Int?)] = [:]
        var types: [Int: String] = [:]
        for line in lines {
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            guard let kind = fields.first else { continue }
            let id = fields.count > 1 ? Int(fields[1]) : nil
            switch kind {
            case "library": library = fields.count > 1 ? fields[1] : ""
            case "server": server = fields.count > 1 ? fields[1] : "?"
            case "error": error = fields.dropFirst().joined(separator: ": ")
            case "global":
                guard let id, fields.count > 2 else { continue }
                types[id] = fields[2]
                if fields[2] == "PipeWire:Interface:Node" && nodes[id] == nil { nodes[id] = Node(id: id) }
            case "prop":
                guard let id, fields.count > 3 else { continue }
                if types[id] == "PipeWire:Interface:Link" {
                    if fields[2] == "link.output.node" { linkEnds[id, default: (nil, nil)].output = Int(fields[3]) }
                    if fields[2] == "link.input.node" { linkEnds[id, default: (nil, nil)].input = Int(fields[3]) }
                } else if nodes[id] != nil {
                    nodes[id]?.props[fields[2]] = fields[3]
                }
            case "state": if let id, fields.count > 2 { nodes[id]?.state = fields[2] }
            case "control": if let id, fields.count > 3, let value = Double(fields[3]) { nodes[id]?.controls[fields[2]] = value }
            case "format": if let id, fields.count > 2 { nodes[id]?.rate = Int(fields[2]) }
            case "meta":
                if fields.count > 3, fields[1] == "settings" { settings[fields[2]] = fields[3] }
                if fields.count > 3, fields[1] == "default" { defaults[fields[2]] = fields[3] }
            default: continue
            }
        }
        links = linkEnds.values.compactMap { ends in ends.output.flatMap { output in ends.input.map { (output, $0) } } }
    }

    /// The graph's rate: forced, else the default clock rate.
    var rate: Int? { forced("clock.force-rate") ?? settings["clock.rate"].flatMap { Int($0) } }
    var quantum: Int? { forced("clock.force-quantum") ?? settings["clock.quantum"].flatMap { Int($0) } }
    func forced(_ key: String) -> Int? { settings[key].flatMap { Int($0) }.flatMap { $0 > 0 ? $0 : nil } }

    /// Every node whose controls are the plugin's (a `<name>:chain` control beside `<name>:gain`),
    /// with the device-facing node of its filter-chain and what that is linked to.
    var chains: [Chain] {
        var result: [Chain] = []
        for controlNode in nodes.values.sorted(by: { $0.id < $1.id }) {
            guard let key = controlNode.controls.keys.sorted().first(where: {
                $0.hasSuffix(":chain") && controlNode.controls[String($0.dropLast(5)) + "gain"] != nil
            }) else { continue }
            let number = ChainName.number(port: Float(controlNode.controls[key] ?? 0))
            // filter-chain gives its capture and playback nodes one node.link-group.
            let group = controlNode.props["node.link-group"]
            let members = nodes.values.filter { group != nil && $0.props["node.link-group"] == group }
            let node = members.first(where: \.isDevice) ?? controlNode
            let memberIDs = Set(members.map(\.id)).union([controlNode.id])
            let device: Node?
            if node.mediaClass == "Audio/Source" {
                device = links.first { memberIDs.contains($0.input) && !memberIDs.contains($0.output) }.flatMap { nodes[$0.output] }
            } else {
                device = links.first { memberIDs.contains($0.output) && !memberIDs.contains($0.input) }.flatMap { nodes[$0.input] }
            }
            let stream = members.first { $0.mediaClass.hasPrefix("Stream/") && $0.id != node.id }
                ?? members.first { !$0.isDevice && $0.id != node.id && $0.id != controlNode.id }
                ?? (controlNode.id != node.id ? controlNode : nil)
            result.append(Chain(number: number, node: node, controls: controlNode, device: device, stream: stream, members: memberIDs))
        }
        return result.filter { only == nil || $0.number == only }.sorted { ($0.number, $0.node.id) < ($1.number, $1.node.id) }
    }

    // MARK: Output

    var summary: String {
        guard let server else {
            return "PipeWire is not running: configured chains start with it (systemctl --user start pipewire)."
                + (error.map { " (hearctl could not reach it: \($0))" } ?? "")
        }
        // The library only when it differs from the daemon: the line fits 80 columns.
        var text = "PipeWire \(server)" + (library == server ? "" : " (library \(library))")
        if let rate { text += ": graph \(rate) Hz" + (forced("clock.force-rate") != nil ? " (forced)" : "") }
        // The quantum the driver runs now is what the chains' instances are called with; the
        // settings only say what was configured (a client asking for more latency raises it).
        let now = Array(Set(runningBlocks)).sorted()
        let configured = quantum.map { "\($0)" + (forced("clock.force-quantum") != nil ? " (forced)" : "") }
        guard let shown = now.first ?? quantum else { return text }
        var details = rate.map { [String(format: "%.1f ms", Double(shown) * 1000 / Double($0))] } ?? []
        if !now.isEmpty, let quantum, let configured, now != [quantum] { details.append("configured \(configured)") }
        let label = now.isEmpty ? "\(configured ?? "") configured" : now.map(String.init).joined(separator: "/") + " now"
        text += ", quantum \(label)" + (details.isEmpty ? "" : " (" + details.joined(separator: "; ") + ")")
        return text
    }

    /// One row per chain's node; the device (last) is cut to fit.
    var table: String {
        var rows = [["CHAIN", "NODE", "STATE", "RATE", "DEVICE"]]
        for chain in chains {
            let device = chain.device.map { "\(chain.direction) \($0.name)" } ?? "-"
            rows.append(["\(chain.number) (\(ChainName.name(chain.number)))", chain.node.name, chain.state,
                         chain.rate.map { "\($0) Hz" } ?? "-", device])
        }
        return Output.table(rows)
    }

    /// The graph in `status --json`.
    struct Summary: Encodable {
        struct Chain: Encodable {
            let chain: Int
            let name: String
            let node: String
            let nodeID: Int
            let mediaClass: String
            let state: String
            let controlNode: String
            let description: String?
            let rate: Int?
            /// The device a source chain records from, or a sink chain plays to.
            let from: String?
            let to: String?
        }

        let running: Bool
        let library: String
        let version: String?
        let error: String?
        let rate: Int?
        /// The configured quantum (the "settings" metadata).
        let quantum: Int?
        /// The quantum the driver runs now, as the chains' running instances see it (null: none runs).
        let quantumNow: Int?
        let chains: [Chain]
    }

    var jsonSummary: Summary {
        Summary(running: running, library: library, version: server, error: server == nil ? error : nil, rate: rate, quantum: quantum,
                quantumNow: runningBlocks.max(),
                chains: chains.map { chain in
                    let device = chain.device?.name
                    return Summary.Chain(chain: chain.number, name: ChainName.name(chain.number), node: chain.node.name, nodeID: chain.node.id,
                                         mediaClass: chain.node.mediaClass, state: chain.state, controlNode: chain.controls.name,
                                         description: chain.node.description, rate: chain.rate,
                                         from: chain.direction == "from" ? device : nil, to: chain.direction == "to" ? device : nil)
                })
    }
}
