// hearctl: tune the running hear filters from any terminal. Every command talks to all processes
// that host the plugin (one control socket each); --chain narrows it to one chain.

import ArgumentParser
import Foundation
import HearControl
import HearctlCore
import HearDSP

struct Hearctl: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hearctl",
        abstract: "Tune the running hear speech filters live.",
        discussion: """
            hearctl talks to every process that runs the hear plugin (PipeWire's filter-chain, a PulseAudio \
            daemon) through its control socket in $HEAR_RUNTIME_DIR, else $XDG_RUNTIME_DIR/hear, else \
            /tmp/hear-$UID, and reads the chains the PipeWire drop-ins configure. Changes take effect \
            within one audio block and are saved per chain, so they survive a restart (`set --sync` \
            returns once they are on disk). A chain PipeWire has suspended (no app uses it) keeps its \
            changes in its state file and takes them when it starts. Every wait for a server has a \
            deadline (--timeout, default 2 s).

            Chains: with more than one chain (running or suspended), a change (set, bypass, reset, \
            preset load) needs --chain mic|speaker|N; reading commands show every chain. The reply \
            names the chain it changed.

            \(ExitStatus.table)

            Examples:
              hearctl status
              hearctl set --chain mic gain 6
              hearctl set --chain speaker eq.peak2.freq 2.5kHz comp.threshold =-30dB
              hearctl preset load voice-call --chain mic
              hearctl meter
              hearctl tune --chain mic
              hearctl fit --left 250:20,500:25,1000:35,2000:50,4000:60 \\
                          --right 250:15,500:20,1000:30,2000:45,4000:55
            """,
        version: "hearctl \(versionNumber) (protocol \(Protocol.tag))",
        subcommands: [Status.self, List.self, Get.self, SetCommand.self, Bypass.self, Toggle.self, Reset.self, PresetCommand.self, MeterCommand.self,
                      Tune.self, Fit.self, HearingTestCommand.self, Device.self, Enable.self, Disable.self, Version.self]
    )

    static let versionNumber = "0.1.0"
}

/// --chain and --timeout: for reading commands the chain is optional (every chain by default).
struct ChainOption: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("Only this chain: a number or a name (default, mic, speaker, chainN). Default: every chain.",
                                            valueName: "chain"), completion: Complete.chains)
    var chain: String?

    @Option(name: .long, help: ArgumentHelp("Seconds to wait for each server to connect and to answer each request (exit status 4 when one does not).",
                                            valueName: "seconds"))
    var timeout: Double = 2

    mutating func validate() throws { try Self.check(chain: chain, timeout: timeout) }

    static func check(chain: String?, timeout: Double) throws {
        if let chain, ChainName.number(chain) == nil {
            throw ValidationError("--chain takes a number from 0 to \(ChainName.maximum) or a name (default, mic, speaker, chainN), not '\(chain)'")
        }
        guard timeout.isFinite, timeout > 0, timeout <= 3600 else { throw ValidationError("--timeout takes seconds, more than 0 and at most 3600") }
    }

    var number: Int? { chain.flatMap(ChainName.number) }
}

/// --chain and --timeout for a change: the chain is needed when more than one exists.
struct ChangeOption: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("The chain to change: a number or a name (default, mic, speaker, chainN). Needed when more than one chain exists.",
                                            valueName: "chain"), completion: Complete.chains)
    var chain: String?

    @Option(name: .long, help: ArgumentHelp("Seconds to wait for each server to connect and to answer each request (exit status 4 when one does not).",
                                            valueName: "seconds"))
    var timeout: Double = 2

    mutating func validate() throws { try ChainOption.check(chain: chain, timeout: timeout) }

    var number: Int? { chain.flatMap(ChainName.number) }
}

struct JSONOption: ParsableArguments {
    @Flag(name: .long, help: "Print JSON for scripts instead of text.")
    var json = false
}

extension Hearctl {
    struct Status: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show every chain (running or suspended), its instances and meters, and the PipeWire nodes that host them.")

        @OptionGroup var target: ChainOption
        @OptionGroup var output: JSONOption

        func run() throws {
            // PipeWire's side (nodes, states, devices, graph rate), then the plugin's (control sockets).
            var graph = PipeWireGraph.snapshot()
            graph.only = self.target.number
            let chains = try Chains(target)
            graph.runningBlocks = chains.statuses.filter { $0.status.running && $0.status.block > 0 }.map(\.status.block)
            let graphChains = graph.chains.map(\.number)
            let shown = Array(Set(chains.known + graphChains)).sorted().filter { target.number == nil || $0 == target.number }
            if shown.isEmpty {
                if let number = target.number, !chains.known.isEmpty { throw chains.unknown(number) }
                throw Discovery.notRunning()
            }
            let statuses = chains.statuses.filter { shown.contains($0.status.chain) }
            let notices = Array(Set(statuses.flatMap(\.notices))).sorted()
            // A chain without an instance: PipeWire's node state when it shows one, else suspended.
            let idle = shown.filter { !chains.isRunning($0) }.map { number -> (chain: Int, state: String, label: String) in
                let node = graph.chains.first { $0.number == number }
                // Without PipeWire a chain is only a drop-in, not something PipeWire put to sleep.
                let state = node?.state ?? (graph.running ? "suspended" : "configured")
                return (number, state == "?" ? "suspended" : state, chains.configured[number]?.label ?? "-")
            }
            if output.json {
                struct Chain: Encodable {
                    let chain: Int
                    let name: String
                    let state: String
                    let instances: Int
                    let dropIn: String?
                    @Nullable var device: String?
                    @Nullable var linkedDevice: String?
                    /// Whether the hearing stage (a fit's six-band compression) is on.
                    let hearingProfile: Bool
                }
                struct Reply: Encodable {
                    let instances: [Output.Instance]
                    let notices: [String]
                    let chains: [Chain]
                    let pipewire: PipeWireGraph.Summary
                }
                Output.json(Reply(
                    instances: statuses.map { Output.Instance(pid: $0.pid, $0.status) }, notices: notices,
                    chains: shown.map { number in
                        let node = graph.chains.first { $0.number == number }
                        return Chain(chain: number, name: ChainName.name(number),
                                     state: chains.isRunning(number) ? "running" : (idle.first { $0.chain == number }?.state ?? "suspended"),
                                     instances: statuses.filter { $0.status.chain == number }.count,
                                     dropIn: chains.configured[number]?.path,
                                     device: Devices.chosen(number, configured: chains.configured[number], graph: node),
                                     linkedDevice: node?.device?.name,
                                     hearingProfile: ((try? chains.values(number, [.mbEnable]))?.first?.1 ?? 0) >= 0.5)
                    },
                    pipewire: graph.jsonSummary))
                return
            }
            print(Output.statusTable(statuses.map { ($0.pid, $0.status) }, idle: idle))
            for notice in notices { print("notice: \(notice)") }
            print("\n" + Output.fit(graph.summary) + (graph.chains.isEmpty ? "" : "\n" + graph.table))
            // The device each chain is set to (`hearctl device set`), or that it follows the default.
            for number in shown {
                let node = graph.chains.first { $0.number == number }
                guard chains.configured[number] != nil, let kind = Devices.kind(number, configured: chains.configured[number], graph: node)
                else { continue }
                let chosen = Devices.chosen(number, configured: chains.configured[number], graph: node)
                print(Output.fit("device of \(Chains.describe(number)): " + (chosen.map { "\($0) (hearctl device set)" }
                                                                             ?? "the default \(kind.deviceWord)")))
            }
            // A fitted hearing profile changes the sound more than any other setting: say where it is on.
            for number in shown {
                guard let values = try? chains.values(number, [.mbEnable, .compEnable, .eqEnable]),
                      values.first(where: { $0.0 == .mbEnable })?.1 ?? 0 >= 0.5 else { continue }
                let off = values.filter { $0.0 != .mbEnable && $0.1 < 0.5 }.map { $0.0 == .compEnable ? "compressor off" : "equalizer off" }
                print(Output.fit("hearing profile of \(Chains.describe(number)): on (hearctl fit)" + (off.isEmpty ? "" : "; " + off.joined(separator: ", "))))
            }
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List every parameter with its value per chain, range, default and help (full help with --json).")

        @OptionGroup var target: ChainOption
        @OptionGroup var output: JSONOption

        func run() throws {
            let known = try Chains(target)
            let chains = try known.reading(target.number).map { (chain: $0, state: known.state($0), values: try known.values($0, [])) }
            if output.json {
                struct Value: Encodable {
                    let chain: Int
                    let name: String
                    let state: String
                    @Nullable var value: Double?
                }
                struct Entry: Encodable {
                    let key: String
                    let minimum: Double
                    let maximum: Double
                    let `default`: Double
                    let unit: String
                    let scale: String
                    let help: String
                    let values: [Value]
                }
                struct Reply: Encodable { let parameters: [Entry] }
                Output.json(Reply(parameters: Parameter.allCases.map { parameter in
                    let spec = parameter.spec
                    return Entry(key: spec.key, minimum: Double(spec.minimum), maximum: Double(spec.maximum),
                                 default: ParameterValue.rounded(spec.defaultValue, for: parameter), unit: spec.unit, scale: "\(spec.scale)",
                                 help: spec.help,
                                 values: chains.map { chain in
                                     Value(chain: chain.chain, name: ChainName.name(chain.chain), state: chain.state,
                                           value: Output.value(chain.values.first { $0.0 == parameter }?.1, for: parameter))
                                 })
                }))
                return
            }
            print(Output.parameterTable(chains.map { ($0.chain, $0.values) }))
        }
    }

    struct Get: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print parameter values (every parameter when none is named).",
            discussion: "A suspended chain shows the values it starts with. Example: hearctl get gain comp.ratio")

        @Argument(help: ArgumentHelp("Parameter keys, e.g. gain, comp.ratio (see `hearctl list`).", valueName: "param"),
                  completion: Complete.parameterKeys)
        var parameters: [String] = []
        @OptionGroup var target: ChainOption
        @OptionGroup var output: JSONOption

        mutating func validate() throws { _ = try parameters.map { try Input.parameter($0) } }

        func run() throws {
            let keys = try parameters.map { try Input.parameter($0) }
            let known = try Chains(target)
            let chains = try known.reading(target.number).map { (chain: $0, state: known.state($0), values: try known.values($0, keys)) }
            if output.json {
                struct Chain: Encodable {
                    let chain: Int
                    let name: String
                    let state: String
                    let values: [String: Nullable<Double>]
                }
                struct Reply: Encodable { let chains: [Chain] }
                Output.json(Reply(chains: chains.map { chain in
                    Chain(chain: chain.chain, name: ChainName.name(chain.chain), state: chain.state, values: Output.values(chain.values))
                }))
                return
            }
            for chain in chains {
                let prefix = chains.count > 1 ? "[\(ChainName.name(chain.chain))] " : ""
                for (parameter, value) in chain.values {
                    print("\(prefix)\(parameter.key) = \(ParameterValue.describe(value, for: parameter))")
                }
            }
        }
    }

    struct Version: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print hearctl's version and the control protocol it speaks (as --version).")

        @OptionGroup var output: JSONOption

        func run() throws {
            if output.json {
                struct Reply: Encodable { let version: String; let `protocol`: String }
                Output.json(Reply(version: Hearctl.versionNumber, protocol: Protocol.tag))
            } else {
                print(Hearctl.configuration.version)
            }
        }
    }

    struct Reset: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Put parameters back to the chain's configured values (every parameter when none is named).",
            discussion: """
                A parameter goes back to the value the chain's PipeWire drop-in gives it (its \
                `control = { ... }`), else to the plugin's default; its saved value is forgotten. With \
                more than one chain, name it with --chain.
                """)

        @Argument(help: ArgumentHelp("Parameter keys.", valueName: "param"), completion: Complete.parameterKeys) var parameters: [String] = []
        @OptionGroup var target: ChangeOption
        @OptionGroup var output: JSONOption

        mutating func validate() throws { _ = try parameters.map { try Input.parameter($0) } }

        func run() throws {
            let keys = try parameters.map { try Input.parameter($0) }
            let chains = try Chains(timeout: target.timeout)
            let chain = try chains.changing(target.number, verb: "reset")
            let all = keys.isEmpty ? Parameter.allCases : keys
            let values = all.map { Assignment($0, chains.configuredValue(chain, $0)) }
            var changes: SettingsFile.Changes = [:]
            for parameter in all { changes[parameter] = .some(nil) }
            let result = try chains.change(chain, request: .reset(chain: chain, parameters: all, values: values), saving: changes, show: all)
            Output.change(result, json: output.json,
                          summary: keys.isEmpty ? "every parameter back to " + (chains.configured[chain].map { "the values of \($0.path)" } ?? "the defaults") : nil)
        }
    }
}

/// Arguments checked against the schema before anything is sent.
enum Input {
    static func parameter(_ text: String) throws -> Parameter {
        switch ParameterKey.parse(text) {
        case .success(let parameter): return parameter
        case .failure(let error): throw ValidationError(error.message + " (see `hearctl list`)")
        }
    }

    static func value(_ text: String, for parameter: Parameter) throws -> Float {
        switch ParameterValue.parse(text, for: parameter) {
        case .success(let value): return value
        case .failure(let error): throw ValidationError(error.message + "; nothing was changed")
        }
    }

    static func change(_ text: String, for parameter: Parameter) throws -> ValueChange {
        switch ParameterValue.parseChange(text, for: parameter) {
        case .success(let change): return change
        case .failure(let error): throw ValidationError(error.message + "; nothing was changed")
        }
    }
}
