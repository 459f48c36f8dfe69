// hearctl set, bypass and toggle: the commands that change a running chain's values.

import ArgumentParser
import Foundation
import HearControl
import HearctlCore
import HearDSP

extension Hearctl {
    struct SetCommand: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "set",
            abstract: "Set parameters on a chain: PARAM VALUE [PARAM VALUE ...].",
            discussion: """
                Values may carry a unit of the parameter's kind: dB for levels, Hz, kHz or k for \
                frequencies, ms or s for times, % and N:1; switches take on/off. A leading + or - \
                is a step from the current value, as in wpctl (gain +2, gain -3dB; a step stops at the \
                end of the range); write a negative value with = (comp.threshold =-30dB). All pairs are \
                checked before anything changes. With more than one chain, name it with --chain. A \
                suspended chain keeps the values and takes them when it starts. Settings are saved \
                within 1 s; with --sync hearctl returns only once they are on disk. Examples:
                  hearctl set gain 6
                  hearctl set --chain mic gain +2
                  hearctl set --chain speaker eq.peak3.freq 4k comp.attack 0.005s
                  hearctl set comp.ratio 3 comp.threshold =-30dB
                  hearctl set --sync gain 6
                """)

        @Argument(parsing: .allUnrecognized, help: ArgumentHelp("Parameter and value pairs (+N/-N: a step; =-N: a negative value).", valueName: "param value"),
                  completion: Complete.setPairs)
        var pairs: [String] = []
        @OptionGroup var target: ChangeOption
        @Flag(name: .long, help: "Return only once the new values are saved on disk.") var sync = false
        @OptionGroup var output: JSONOption

        mutating func validate() throws {
            // Negative values ("-30") arrive here too: options after the first pair are picked out by hand.
            var rest: [String] = []
            var index = 0
            while index < pairs.count {
                let token = pairs[index]
                if token == "--chain", index + 1 < pairs.count { target.chain = pairs[index + 1]; index += 2; continue }
                if token.hasPrefix("--chain=") { target.chain = String(token.dropFirst(8)); index += 1; continue }
                if token == "--sync" { sync = true; index += 1; continue }
                if token == "--json" { output.json = true; index += 1; continue }
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
            // Keys, values and units are checked here, so a bad one is a usage error and nothing is sent.
            _ = try changes()
        }

        /// Each parameter once (the last pair naming it wins), in the order given.
        func changes() throws -> [(parameter: Parameter, change: ValueChange)] {
            var changes: [(parameter: Parameter, change: ValueChange)] = []
            for index in stride(from: 0, to: pairs.count, by: 2) {
                let parameter = try Input.parameter(pairs[index])
                let change = try Input.change(pairs[index + 1], for: parameter)
                changes.removeAll { $0.parameter == parameter }
                changes.append((parameter, change))
            }
            return changes
        }

        func run() throws {
            let changes = try changes()
            let chains = try Chains(timeout: target.timeout)
            let chain = try chains.changing(target.number, verb: "set")
            var assignments: [Assignment] = []
            var steps: [Assignment] = []
            for item in changes {
                switch item.change {
                case .to(let value): assignments.append(Assignment(item.parameter, value))
                // A step goes to the chain as a step, never as the value read before it: the server (or
                // the state file's lock) adds it to the value of the moment, so concurrent steps add up.
                case .by(let step): steps.append(Assignment(item.parameter, step))
                }
            }
            let shown = changes.map(\.parameter)
            var notices: [String] = []
            if !assignments.isEmpty {
                var saving: SettingsFile.Changes = [:]
                for assignment in assignments { saving[assignment.parameter] = .some(assignment.value) }
                let set = try chains.change(chain, request: .set(chain: chain, assignments: assignments), saving: saving, show: shown)
                guard !steps.isEmpty else { return try finish(set, chains: chains) }
                notices = set.notices
            }
            // The steps' reply shows every value now (the absolute ones set just before included).
            var result = try chains.step(chain, steps, show: shown)
            result.notices = notices + result.notices
            try finish(result, chains: chains)
        }

        /// `--sync` waits for the save; then the reply.
        func finish(_ result: ChangeResult, chains: Chains) throws {
            if sync && result.state == "running" { try chains.sync(result.chain) }
            Output.change(result, json: output.json)
        }
    }

    struct Bypass: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Pass audio through unprocessed (on) or process it again (off), or switch (toggle); click-free.",
            discussion: """
                With more than one chain, name it with --chain. `toggle` (also the verb `hearctl toggle`) \
                switches to the other state and prints the new one: bind it to a desktop hotkey.
                """)

        enum State: String, ExpressibleByArgument, CaseIterable { case on, off, toggle }

        @Argument(help: "on: pass audio through; off: process it; toggle: the other of the two.") var state: State
        @OptionGroup var target: ChangeOption
        @OptionGroup var output: JSONOption

        func run() throws { try Self.change(to: state, target: target, json: output.json) }

        static func change(to state: State, target: ChangeOption, json: Bool) throws {
            let chains = try Chains(timeout: target.timeout)
            let chain = try chains.changing(target.number, verb: "bypass")
            let on: Bool
            switch state {
            case .on: on = true
            case .off: on = false
            case .toggle: on = (try chains.values(chain, [.bypass]).first?.1 ?? 0) < 0.5
            }
            let value: Float = on ? 1 : 0
            let result = try chains.change(chain, request: .set(chain: chain, assignments: [Assignment(.bypass, value)]),
                                           saving: [.bypass: .some(value)], show: [.bypass])
            Output.change(result, json: json, summary: state == .toggle ? (on ? "bypassed: audio passes through unprocessed" : "processing (bypass off)") : nil)
        }
    }

    struct Toggle: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Switch bypass on or off (the same as `bypass toggle`) and print the new state.",
            discussion: "With more than one chain, name it with --chain. Example: hearctl toggle --chain mic")

        @OptionGroup var target: ChangeOption
        @OptionGroup var output: JSONOption

        func run() throws { try Bypass.change(to: .toggle, target: target, json: output.json) }
    }
}
