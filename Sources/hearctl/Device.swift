// hearctl device list / device set mic|speaker DEVICE|default: which microphone the mic chain
// records from and which output the speaker chain plays to. By default a chain follows the
// default device (WirePlumber links the filter's stream to it). A chosen device is kept as
// `target.object = "<node.name>"` in the chain's drop-in (capture.props of the microphone chain,
// playback.props of the speaker chain), which PipeWire gives the stream when it starts, and is
// applied at once by setting target.object on the stream node in PipeWire's "default" metadata
// (as `pw-metadata` or pavucontrol's move do), which makes WirePlumber re-link it; `default`
// removes the line and sets the metadata to -1 (follow the default). A device that does not exist
// is a usage error that lists the candidates and changes nothing.

import ArgumentParser
import CPipeWire
import Foundation
import Glibc
import HearctlCore
import HearControl
import HearSystem

extension DropInChain {
    /// The PipeWire media classes of the devices this chain can use.
    var deviceClasses: [String] { self == .mic ? ["Audio/Source", "Audio/Source/Virtual"] : ["Audio/Sink"] }
    /// The side of the filter-chain that faces the device, in the drop-in.
    var deviceSide: String { self == .mic ? "capture.props" : "playback.props" }
    /// WirePlumber's default for this kind ("default" metadata).
    var defaultKey: String { self == .mic ? "default.audio.source" : "default.audio.sink" }
    var deviceWord: String { self == .mic ? "microphone" : "speaker" }
}

/// The devices PipeWire has for a chain, and the chains as PipeWire shows them.
struct Devices {
    let graph: PipeWireGraph
    let configured: [Int: ConfiguredChain]

    init() {
        graph = PipeWireGraph.snapshot()
        configured = ConfiguredChains.load()
    }

    /// Nodes of any hear chain: never a device for a chain (a chain recording itself would loop).
    var chainNodes: Set<Int> { graph.chains.reduce(into: Set<Int>()) { $0.formUnion($1.members) } }

    func candidates(_ chain: DropInChain) -> [PipeWireGraph.Node] {
        let own = chainNodes
        return graph.nodes.values.filter { chain.deviceClasses.contains($0.mediaClass) && !own.contains($0.id) }.sorted { $0.id < $1.id }
    }

    /// The default device's node.name ("default" metadata: {"name": "..."}).
    func defaultName(_ chain: DropInChain) -> String? {
        struct Default: Decodable { let name: String }
        guard let value = graph.defaults[chain.defaultKey] else { return nil }
        return (try? JSONDecoder().decode(Default.self, from: Data(value.utf8)))?.name
    }

    /// The device a chain that follows the default uses, never a hear chain's own node: the
    /// "default" metadata's device, else (apps are often told to use hear's microphone, which
    /// makes it the system default) WirePlumber's next choice, the candidate of highest
    /// priority.session (the lowest id among equals).
    func effectiveDefault(_ chain: DropInChain) -> String? {
        let candidates = candidates(chain)
        if let name = defaultName(chain), candidates.contains(where: { $0.name == name }) { return name }
        func priority(_ node: PipeWireGraph.Node) -> Int { Int(node.props["priority.session"] ?? "") ?? 0 }
        return candidates.min { priority($0) > priority($1) || (priority($0) == priority($1) && $0.id < $1.id) }?.name
    }

    /// The chain number the drop-in for `chain` configures: the user's file, else any configured
    /// chain of that kind (1 mic, 2 speaker).
    static func number(_ chain: DropInChain, dropIn: String?) -> Int {
        if let dropIn, let found = (try? DropIns.chains(in: dropIn, path: ""))?.first { return found.chain }
        return chain == .mic ? 1 : 2
    }

    /// Whether chain `number` is a microphone or a speaker chain: by its drop-in's file name, else
    /// by its node in PipeWire, else by its number.
    static func kind(_ number: Int, configured: ConfiguredChain?, graph: PipeWireGraph.Chain?) -> DropInChain? {
        if let path = configured?.path, let kind = DropInChain.allCases.first(where: { path.hasSuffix("/" + $0.fileName) }) { return kind }
        if let graph { return graph.node.mediaClass == "Audio/Source" ? .mic : .speaker }
        return number == 1 ? .mic : number == 2 ? .speaker : nil
    }

    /// The device chain `number` is set to in its drop-in (nil: it follows the default).
    static func chosen(_ number: Int, configured: ConfiguredChain?, graph: PipeWireGraph.Chain?) -> String? {
        guard let configured, let kind = kind(number, configured: configured, graph: graph),
              let bytes = try? Syscall.readRegularFile(configured.path, limit: 1 << 20) else { return nil }
        return DeviceDropIn.target(String(decoding: bytes, as: UTF8.self), chain: kind)
    }

    func graphChain(_ number: Int) -> PipeWireGraph.Chain? { graph.chains.first { $0.number == number } }

    /// `name`, a node id or a description (exact, else the one that contains it, ignoring case).
    func resolve(_ text: String, for chain: DropInChain) throws -> PipeWireGraph.Node {
        let candidates = candidates(chain)
        let list = candidates.isEmpty ? "PipeWire has none" : "\(chain.deviceWord)s: " + candidates.map(Self.describe).joined(separator: ", ")
        if let id = Int(text), let node = candidates.first(where: { $0.id == id }) { return node }
        if let node = candidates.first(where: { $0.name == text }) { return node }
        let lower = text.lowercased()
        let exact = candidates.filter { $0.description?.lowercased() == lower }
        if exact.count == 1 { return exact[0] }
        let partial = candidates.filter { $0.name.lowercased().contains(lower) || ($0.description?.lowercased().contains(lower) ?? false) }
        if partial.count == 1 && !lower.isEmpty { return partial[0] }
        if partial.count > 1 {
            throw CLIError("'\(text)' matches \(partial.count) \(chain.deviceWord)s: \(partial.map(Self.describe).joined(separator: ", ")); give its name or id. Nothing was changed",
                           code: ExitStatus.usage)
        }
        throw CLIError("no \(chain.deviceWord) '\(text)' in PipeWire; \(list). Nothing was changed", code: ExitStatus.usage)
    }

    static func describe(_ node: PipeWireGraph.Node) -> String {
        "\(node.name) (id \(node.id)" + (node.description.map { ", \"\($0)\"" } ?? "") + ")"
    }
}

extension Hearctl {
    struct Device: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the microphones and speakers, or choose the one a chain uses.",
            discussion: """
                A chain follows the default microphone (mic) or speaker (speaker) until you choose \
                one; the choice is kept in the chain's drop-in as target.object and applied at once. \
                Examples:
                  hearctl device list
                  hearctl device set mic alsa_input.usb-Headset-00.mono-fallback
                  hearctl device set speaker "Built-in Audio Analog Stereo"
                  hearctl device set mic default
                """,
            subcommands: [ListDevices.self, SetDevice.self])

        struct ListDevices: ParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "list",
                abstract: "List PipeWire's microphones and speakers: the default, the one each chain is linked to, the one chosen.")
            @OptionGroup var output: JSONOption

            struct Row: Encodable {
                let kind: String
                let id: Int
                let name: String
                let mediaClass: String
                let `default`: Bool
                let linked: Bool
                let chosen: Bool
                @Nullable var description: String?
                /// The chain a device is linked to or chosen for.
                let chain: Int?
            }

            struct Reply: Encodable {
                struct Defaults: Encodable {
                    @Nullable var mic: String?
                    @Nullable var speaker: String?
                }

                let devices: [Row]
                let defaults: Defaults
            }

            func run() throws {
                let devices = Devices()
                guard devices.graph.running else {
                    throw CLIError("PipeWire is not running here (\(devices.graph.error ?? "no daemon")): no devices to list", code: ExitStatus.notRunning)
                }
                var rows: [Row] = []
                for kind in DropInChain.allCases {
                    let userDropIn = try? String(contentsOfFile: try Installation.userDropInDirectory() + "/" + kind.fileName, encoding: .utf8)
                    let number = Devices.number(kind, dropIn: userDropIn)
                    let chosen = userDropIn.flatMap { DeviceDropIn.target($0, chain: kind) }
                    let linked = devices.graphChain(number)?.device?.id
                    for node in devices.candidates(kind) {
                        rows.append(Row(kind: kind.rawValue, id: node.id, name: node.name, mediaClass: node.mediaClass,
                                        default: node.name == devices.effectiveDefault(kind), linked: node.id == linked, chosen: node.name == chosen,
                                        description: node.description, chain: node.id == linked || node.name == chosen ? number : nil))
                    }
                }
                if output.json {
                    Output.json(Reply(devices: rows, defaults: .init(mic: devices.effectiveDefault(.mic), speaker: devices.effectiveDefault(.speaker))))
                    return
                }
                var table = [["KIND", "ID", "NAME", "USE", "DESCRIPTION"]]
                for row in rows {
                    var use: [String] = []
                    if row.default { use.append("default") }
                    if row.linked { use.append("\(row.kind) chain") }
                    if row.chosen { use.append("chosen") }
                    table.append([row.kind, "\(row.id)", row.name, use.isEmpty ? "-" : use.joined(separator: ", "), row.description ?? "-"])
                }
                print(Output.table(table))
            }
        }

        struct SetDevice: ParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "set",
                abstract: "Choose the device a chain records from (mic) or plays to (speaker); default follows the default device again.",
                discussion: """
                    DEVICE is a node name, id or description as `hearctl device list` shows them (a part of \
                    one that fits a single device will do). Writes target.object into the \(DropInChain.mic.deviceSide) \
                    (mic) or \(DropInChain.speaker.deviceSide) (speaker) of your drop-in (`hearctl enable` \
                    writes it), then re-links the running chain through PipeWire's metadata, without a restart.
                    """)

            @Argument(help: "mic or speaker.") var chain: DropInChain
            @Argument(help: ArgumentHelp("A device's name, id or description, or `default`.", valueName: "device"),
                      completion: Complete.devices) var device: String
            @OptionGroup var output: JSONOption

            func run() throws {
                let directory = try Installation.userDropInDirectory()
                let path = directory + "/" + chain.fileName
                guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
                    let system = Installation.systemDropIns(chain).first.map { " (\($0) enables it for every user; hearctl edits only yours)" } ?? ""
                    throw CLIError("\(chain.rawValue) is not enabled for you: no \(path)\(system); `hearctl enable \(chain.rawValue)` writes it. Nothing was changed",
                                   code: ExitStatus.notRunning)
                }
                let devices = Devices()
                let following = device.lowercased() == "default"
                var node: PipeWireGraph.Node?
                if !following {
                    guard devices.graph.running else {
                        throw CLIError("PipeWire is not running here (\(devices.graph.error ?? "no daemon")): cannot check '\(device)'. Nothing was changed",
                                       code: ExitStatus.notRunning)
                    }
                    node = try devices.resolve(device, for: chain)
                }
                // The drop-in first (everything is checked before it is written), then the running chain.
                let edited = try DeviceDropIn.setting(text, chain: chain, to: node?.name, path: path)
                if edited != text {
                    let mode = (try? FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int) ?? 0o644
                    do { try Syscall.writeFileAtomically(path, directory: directory, bytes: Array(edited.utf8)) } catch {
                        throw CLIError("cannot write \(path): \(error)")
                    }
                    chmod(path, mode_t(mode))
                }
                let number = Devices.number(chain, dropIn: text)
                var live = "PipeWire is not running: the chain takes it when PipeWire starts"
                var applied = false
                if devices.graph.running {
                    if let stream = devices.graphChain(number)?.stream {
                        // The node's serial is what WirePlumber matches first; -1 follows the default.
                        let value = node.map { $0.props["object.serial"] ?? $0.name } ?? "-1"
                        let result = hear_pw_set_default_metadata(UInt32(stream.id), "target.object", "Spa:Id", value, 3000)
                        if result == 0 {
                            applied = true
                            live = "re-linked \(stream.name) (node \(stream.id)) through PipeWire's metadata"
                        } else {
                            live = "could not re-link the running chain (\(String(cString: strerror(-result)))): `systemctl --user restart pipewire` applies the drop-in"
                        }
                    } else {
                        live = "PipeWire has no node of chain \(Chains.describe(number)) now: it takes the drop-in when PipeWire next starts"
                    }
                }
                if output.json {
                    struct Reply: Encodable {
                        let chain: Int
                        let name: String
                        let dropIn: String
                        let applied: Bool
                        @Nullable var device: String?
                        let follows: String
                        /// Present when a device is chosen; its description null when it has none.
                        let id: Int?
                        let description: Nullable<String>?
                    }
                    Output.json(Reply(chain: number, name: chain.rawValue, dropIn: path, applied: applied, device: node?.name,
                                      follows: following ? "default" : "device", id: node?.id, description: node.map { Nullable($0.description) }))
                    return
                }
                if let node {
                    print("chain \(Chains.describe(number)) \(chain == .mic ? "records from" : "plays to") \(Devices.describe(node))")
                } else {
                    print("chain \(Chains.describe(number)) follows the default \(chain.deviceWord)"
                          + (devices.effectiveDefault(chain).map { " (now \($0))" } ?? ""))
                }
                print(edited == text ? "\(path) already said so" : "saved in \(path)")
                print(live)
            }
        }
    }
}
