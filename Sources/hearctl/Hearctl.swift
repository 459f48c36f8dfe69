// hearctl: tune the running hear filters from any terminal. Every command talks to all processes
// that host the plugin (one control socket each); --chain narrows it to one chain.

import ArgumentParser
import Foundation
import HearControl
import HearDSP

struct Hearctl: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hearctl",
        abstract: "Tune the running hear speech filters live.",
        discussion: """
            hearctl talks to every process that runs the hear plugin (PipeWire's filter-chain, a PulseAudio \
            daemon) through its control socket in $HEAR_RUNTIME_DIR, else $XDG_RUNTIME_DIR/hear, else \
            /tmp/hear-$UID. Changes take effect within one audio block and are saved per chain, so they \
            survive a restart (`set --sync` returns once they are on disk). Every wait for a server has a \
            deadline (--timeout, default 2 s).

            Exit status: 0 success, 1 error, 2 usage, 3 timeout (a server did not answer in time).

            Examples:
              hearctl status
              hearctl set gain 6
              hearctl set --chain mic comp.ratio 3 comp.threshold -30dB
              hearctl preset load voice-call --chain mic
              hearctl meter
              hearctl fit --left 250:20,500:25,1000:35,2000:50,4000:60 --right 250:15,500:20,1000:30,2000:45,4000:55
            """,
        version: "hearctl 0.1.0 (protocol \(Protocol.tag))",
        subcommands: [Status.self, List.self, Get.self, Set.self, Bypass.self, Reset.self, PresetCommand.self, Meter.self, Fit.self,
                      Enable.self, Disable.self]
    )
}

/// Which instances a command addresses.
struct ChainOption: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("Only this chain: a number or a name (default, mic, speaker, chainN). Default: every instance.",
                                            valueName: "chain"))
    var chain: String?

    @Option(name: .long, help: ArgumentHelp("Seconds to wait for each server to connect and to answer each request (exit status 3 when one does not).",
                                            valueName: "seconds"))
    var timeout: Double = 2

    mutating func validate() throws {
        if let chain, ChainName.number(chain) == nil {
            throw ValidationError("--chain takes a number from 0 to \(ChainName.maximum) or a name (default, mic, speaker, chainN), not '\(chain)'")
        }
        guard timeout.isFinite, timeout > 0, timeout <= 3600 else { throw ValidationError("--timeout takes seconds, more than 0 and at most 3600") }
    }

    var number: Int? { chain.flatMap(ChainName.number) }
}

struct JSONOption: ParsableArguments {
    @Flag(name: .long, help: "Print JSON for scripts instead of text.")
    var json = false
}

extension Hearctl {
    struct Status: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show every running instance (chain, rate, latency, uptime, meters) and the PipeWire nodes that host them.")

        @OptionGroup var target: ChainOption
        @OptionGroup var output: JSONOption

        func run() throws {
            // PipeWire's side (nodes, states, devices, graph rate), then the plugin's (control sockets).
            var graph = PipeWireGraph.snapshot()
            graph.only = self.target.number
            let chains = graph.chains
            let target: Target
            do {
                target = try Target(self.target)
            } catch where !chains.isEmpty {
                // No instance: filter-chain drops the plugin while its nodes are suspended.
                if output.json {
                    Output.json(["instances": [Any](), "notices": [String](), "pipewire": graph.jsonObject])
                } else {
                    print("no plugin instance runs: PipeWire starts a chain when an app uses it")
                    print("\n" + graph.summary + "\n" + graph.table)
                }
                return
            }
            let statuses = try target.statuses()
            let notices = Array(Swift.Set(statuses.flatMap(\.notices))).sorted()
            if output.json {
                Output.json(["instances": statuses.map { Output.statusObject(pid: $0.pid, $0.status) }, "notices": notices,
                             "pipewire": graph.jsonObject])
                return
            }
            if statuses.isEmpty { throw CLIError("no running instance of \(target.chainDescription)") }
            print(Output.statusTable(statuses.map { ($0.pid, $0.status) }))
            for notice in notices { print("notice: \(notice)") }
            print("\n" + graph.summary + (chains.isEmpty ? "" : "\n" + graph.table))
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List every parameter with its current value, range, default, unit and help.")

        @OptionGroup var target: ChainOption
        @OptionGroup var output: JSONOption

        func run() throws {
            let chains = try Target(target).values([])
            if output.json {
                Output.json(["parameters": Parameter.allCases.map { parameter -> [String: Any] in
                    let spec = parameter.spec
                    return ["key": spec.key, "minimum": Double(spec.minimum), "maximum": Double(spec.maximum),
                            "default": Double(spec.defaultValue), "unit": spec.unit, "scale": "\(spec.scale)", "help": spec.help,
                            "values": chains.map { chain in
                                ["chain": chain.chain, "name": ChainName.name(chain.chain),
                                 "value": Double(chain.values.first { $0.0 == parameter }?.1 ?? .nan)] as [String: Any]
                            }]
                }])
                return
            }
            print(Output.parameterTable(chains))
        }
    }

    struct Get: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print parameter values (every parameter when none is named).",
            discussion: "Example: hearctl get gain comp.ratio")

        @Argument(help: ArgumentHelp("Parameter keys, e.g. gain, comp.ratio (see `hearctl list`).", valueName: "param"))
        var parameters: [String] = []
        @OptionGroup var target: ChainOption
        @OptionGroup var output: JSONOption

        func run() throws {
            let keys = try parameters.map { try Input.parameter($0) }
            let chains = try Target(target).values(keys)
            if output.json {
                Output.json(["chains": chains.map { chain -> [String: Any] in
                    ["chain": chain.chain, "name": ChainName.name(chain.chain),
                     "values": Dictionary(uniqueKeysWithValues: chain.values.map { ($0.0.key, Double($0.1)) })]
                }])
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

    struct Set: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Set parameters on the running filter: PARAM VALUE [PARAM VALUE ...].",
            discussion: """
                Values may carry the parameter's unit; switches take on/off. All pairs are checked before \
                anything changes. Settings are saved within 1 s; with --sync hearctl returns only once they \
                are on disk. Examples:
                  hearctl set gain 6
                  hearctl set gain 6dB
                  hearctl set comp.ratio 3 comp.threshold -30
                  hearctl set --sync gain 6
                """)

        @Argument(parsing: .allUnrecognized, help: ArgumentHelp("Parameter and value pairs.", valueName: "param value"))
        var pairs: [String] = []
        @OptionGroup var target: ChainOption
        @Flag(name: .long, help: "Return only once the new values are saved on disk.") var sync = false

        mutating func validate() throws {
            // Negative values ("-30") arrive here too: only the leading --chain option is parsed by name.
            var rest: [String] = []
            var index = 0
            while index < pairs.count {
                let token = pairs[index]
                if token == "--chain", index + 1 < pairs.count { target.chain = pairs[index + 1]; index += 2; continue }
                if token.hasPrefix("--chain=") { target.chain = String(token.dropFirst(8)); index += 1; continue }
                if token == "--sync" { sync = true; index += 1; continue }
                if token == "--timeout" || token.hasPrefix("--timeout=") {
                    let text = token == "--timeout" ? (index + 1 < pairs.count ? pairs[index + 1] : "") : String(token.dropFirst(10))
                    guard let seconds = Double(text) else { throw ValidationError("--timeout takes seconds, not '\(text)'") }
                    target.timeout = seconds
                    index += token == "--timeout" ? 2 : 1
                    continue
                }
                if token.hasPrefix("--") { throw ValidationError("unknown option '\(token)'") }
                rest.append(token)
                index += 1
            }
            pairs = rest
            try target.validate()
            if pairs.isEmpty { throw ValidationError("missing PARAM VALUE pairs, e.g. `hearctl set gain 6`") }
            if pairs.count % 2 != 0 { throw ValidationError("'\(pairs.last!)' has no value: give PARAM VALUE pairs") }
        }

        func run() throws {
            var assignments: [Assignment] = []
            for index in stride(from: 0, to: pairs.count, by: 2) {
                let parameter = try Input.parameter(pairs[index])
                assignments.append(Assignment(parameter, try Input.value(pairs[index + 1], for: parameter)))
            }
            let target = try Target(target)
            let replies = try target.each(.set(chain: self.target.number, assignments: assignments))
            if sync { try target.sync(replies) }
        }
    }

    struct Bypass: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Pass audio through unprocessed (on) or process it again (off); click-free.")

        enum State: String, ExpressibleByArgument, CaseIterable { case on, off }

        @Argument(help: "on or off.") var state: State
        @OptionGroup var target: ChainOption

        func run() throws {
            _ = try Target(target).each(.set(chain: target.number, assignments: [Assignment(.bypass, state == .on ? 1 : 0)]))
        }
    }

    struct Reset: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Put parameters back to their defaults (every parameter when none is named).",
            discussion: "The saved values are forgotten too: after a restart the config's control values apply.")

        @Argument(help: ArgumentHelp("Parameter keys.", valueName: "param")) var parameters: [String] = []
        @OptionGroup var target: ChainOption

        func run() throws {
            let keys = try parameters.map { try Input.parameter($0) }
            _ = try Target(target).each(.reset(chain: target.number, parameters: keys))
        }
    }
}

/// Arguments checked against the schema before anything is sent.
enum Input {
    static func parameter(_ text: String) throws -> Parameter {
        switch ParameterKey.parse(text) {
        case .success(let parameter): return parameter
        case .failure(let error): throw CLIError(error.message + " (see `hearctl list`)")
        }
    }

    static func value(_ text: String, for parameter: Parameter) throws -> Float {
        switch ParameterValue.parse(text, for: parameter) {
        case .success(let value): return value
        case .failure(let error): throw CLIError(error.message + "; nothing was changed")
        }
    }
}
