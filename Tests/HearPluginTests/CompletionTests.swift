// Shell completion and help text as a user meets them: the bash script hearctl generates, sourced
// into a real bash and asked the way bash asks on Tab (its function with COMP_WORDS/COMP_CWORD),
// offers verbs, parameter keys (with a switch's settings after it), presets and the chains that
// exist; the zsh and fish scripts call the same `---completion` entry. Help states each default
// once: the argument parser appends "(default: ...)" itself, so no help text of an option that
// has a default mentions it again.

import Foundation
import HearctlCore
import HearControl
import HearDSP
import Testing
import TestSupport

@Suite(.serialized) struct CompletionTests {
    static let bash = "/bin/bash"

    /// What the generated bash completion offers for `hearctl WORDS...` (the last word is the one
    /// being completed, "" for a new one), run in bash with the sandbox's environment.
    func complete(_ sandbox: Sandbox, script: String, _ words: [String]) throws -> [String] {
        let driver = """
            source "$1"; shift
            COMP_WORDS=("$@")
            COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
            COMP_LINE="${COMP_WORDS[*]}"
            COMP_POINT=${#COMP_LINE}
            _hearctl "${COMP_WORDS[0]}" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
            printf '%s\\n' "${COMPREPLY[@]}"
            """
        let result = try Command.run(Self.bash, ["-c", driver, "complete", script, Built.hearctl] + words, environment: sandbox.environment)
        #expect(result.status == 0, "bash: \(result.stderr)")
        return result.stdout.split(separator: "\n").map(String.init).filter { !$0.isEmpty }.sorted()
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: bash), "no bash"))
    func bashCompletesVerbsKeysPresetsAndChains() throws {
        try Built.require()
        let sandbox = try Sandbox()
        let script = sandbox.base + "/hearctl.bash"
        let generated = try sandbox.hearctl("--generate-completion-script", "bash")
        #expect(generated.status == 0)
        try generated.stdout.write(toFile: script, atomically: true, encoding: .utf8)
        // Chains: mic configured by a drop-in, chain 7 running; a preset of the user's own.
        try sandbox.writeDropIn(chain: 1, controls: ["gain": 3])
        let host = try sandbox.startHost(chain: 7)
        let presets = sandbox.config + "/hear/presets"
        try FileManager.default.createDirectory(atPath: presets, withIntermediateDirectories: true)
        try "gain = 4\n".write(toFile: presets + "/mine.conf", atomically: true, encoding: .utf8)

        let keys = Parameter.allCases.map(\.key).sorted()
        let verbs = try complete(sandbox, script: script, [""])
        for verb in ["status", "list", "get", "set", "bypass", "reset", "preset", "meter", "fit", "device", "enable", "disable"] {
            #expect(verbs.contains(verb), "verbs: \(verbs)")
        }
        #expect(try complete(sandbox, script: script, ["s"]) == ["set", "status"])
        #expect(try complete(sandbox, script: script, ["set", ""]) == keys)
        #expect(try complete(sandbox, script: script, ["set", "gain", "3", ""]) == keys)
        #expect(try complete(sandbox, script: script, ["set", "--chain", "mic", "comp.r"]) == ["comp.ratio", "comp.release"])
        // After a key, a switch's settings (by name where it has names); nothing for a number.
        #expect(try complete(sandbox, script: script, ["set", "--chain", "mic", "eq.enable", ""]) == ["off", "on"])
        #expect(try complete(sandbox, script: script, ["set", "ns.mode", ""]) == ["classical", "learned"])
        #expect(try complete(sandbox, script: script, ["set", "gain", ""]) == [])
        #expect(try complete(sandbox, script: script, ["get", "eq.peak1."]) == ["eq.peak1.freq", "eq.peak1.gain", "eq.peak1.q"])
        #expect(try complete(sandbox, script: script, ["reset", "--chain", "mic", ""]) == keys)

        let builtIn = Preset.builtIn.map(\.name)
        #expect(try complete(sandbox, script: script, ["preset", "load", ""]) == (builtIn + ["mine"]).sorted())
        #expect(try complete(sandbox, script: script, ["preset", "show", "m"]) == ["mine"])
        #expect(try complete(sandbox, script: script, ["preset", "delete", ""]) == ["mine"])
        #expect(try complete(sandbox, script: script, ["preset", ""]).filter { !$0.hasPrefix("-") } == ["delete", "list", "load", "save", "show"])

        for words in [["set", "--chain", ""], ["status", "--chain", ""], ["meter", "--chain", ""], ["preset", "load", "gentle", "--chain", ""],
                      ["fit", "--chain", ""]] {
            #expect(try complete(sandbox, script: script, words) == ["chain7", "mic"], "\(words)")
        }
        #expect(try complete(sandbox, script: script, ["bypass", ""]) == ["off", "on", "toggle"])
        #expect(try complete(sandbox, script: script, ["enable", ""]) == ["mic", "speaker"])
        #expect(try complete(sandbox, script: script, ["device", ""]).filter { !$0.hasPrefix("-") } == ["list", "set"])
        #expect(try complete(sandbox, script: script, ["device", "set", ""]) == ["mic", "speaker"])
        _ = host

        // zsh and fish call the same entry point with their own SAP_SHELL.
        for shell in ["zsh", "fish"] {
            let text = try sandbox.hearctl("--generate-completion-script", shell)
            #expect(text.status == 0 && text.stdout.contains("---completion preset load -- positional@0"), "\(shell)")
            var environment = sandbox.environment
            environment["SAP_SHELL"] = shell
            let answer = try Command.run(Built.hearctl, ["---completion", "set", "--", "positional@0", "3", "0", "hearctl", "set", "ns.mode", ""],
                                 environment: environment)
            #expect(answer.status == 0 && answer.stdout.split(separator: "\n").filter { !$0.allSatisfy(\.isWhitespace) } == ["classical", "learned"], "\(shell): \(answer.stdout)")
        }
    }

    /// Every command's arguments, as generate-manual and --help see them.
    func arguments() throws -> [(command: [String], argument: [String: Any])] {
        let dump = try Sandbox().hearctl("--experimental-dump-help")
        let root = try #require(try JSONSerialization.jsonObject(with: Data(dump.stdout.utf8)) as? [String: Any])
        var result: [([String], [String: Any])] = []
        func walk(_ command: [String: Any], _ path: [String]) {
            for argument in command["arguments"] as? [[String: Any]] ?? [] { result.append((path, argument)) }
            for sub in command["subcommands"] as? [[String: Any]] ?? [] { walk(sub, path + [sub["commandName"] as? String ?? "?"]) }
        }
        walk(try #require(root["command"] as? [String: Any]), [])
        return result
    }

    @Test func helpStatesEachDefaultOnce() throws {
        try Built.require()
        let all = try arguments()
        #expect(all.count > 50 && all.contains { $0.command == ["fit"] && $0.argument["valueName"] as? String == "chain" })
        var commands = Set<[String]>()
        for (command, argument) in all {
            commands.insert(command)
            let help = argument["abstract"] as? String ?? ""
            // The parser appends the default; the text must not say it again.
            if argument["defaultValue"] != nil {
                #expect(!help.lowercased().contains("default"), "hearctl \(command.joined(separator: " ")): '\(help)' repeats its default")
            }
        }
        // And in the rendered help: no option's entry names a default twice.
        let sandbox = try Sandbox()
        for command in commands where !command.contains("help") {
            let text = try Command.run(Built.hearctl, command + ["--help"], environment: sandbox.environment).stdout
            guard let options = text.range(of: "\nARGUMENTS:") ?? text.range(of: "\nOPTIONS:") else {
                Issue.record("hearctl \(command.joined(separator: " ")) --help has no ARGUMENTS or OPTIONS")
                continue
            }
            // One entry per argument: a line indented by two, then its continuation lines.
            var entries: [String] = []
            for line in text[options.upperBound...].split(separator: "\n") {
                if line.hasPrefix("  ") && !line.hasPrefix("   ") || entries.isEmpty { entries.append(String(line)) }
                else { entries[entries.count - 1] += "\n" + line }
            }
            for entry in entries {
                #expect(entry.lowercased().components(separatedBy: "default:").count <= 2,
                        "hearctl \(command.joined(separator: " ")) --help states a default twice:\n\(entry)")
            }
        }
    }
}
