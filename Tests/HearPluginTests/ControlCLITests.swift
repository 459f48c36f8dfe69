// hearctl as a user meets it: help texts, exit codes (0 success, 1 error, 2 usage, 3 not running,
// 4 timeout), --json shapes, presets and completions.

import Foundation
import HearDSP
import Testing
import TestSupport

@Suite(.serialized) struct ControlCLITests {
    @Test func helpListsEveryCommand() throws {
        let sandbox = try Sandbox()
        let help = try sandbox.hearctl("--help")
        #expect(help.status == 0)
        for text in ["USAGE: hearctl <subcommand>", "status", "list", "get", "set", "bypass", "reset", "preset", "meter",
                     "Exit status (every verb):", "  0  success", "  1  error:", "  2  usage:", "  3  not running:", "  4  timeout:",
                     "needs --chain mic|speaker|N", "hearctl set --chain mic gain 6",
                     "  2  usage: unknown verb, option or parameter; a bad value, unit or range;\n     a change without --chain while several chains exist\n"] {
            #expect(help.stdout.contains(text), "--help lacks '\(text)':\n\(help.stdout)")
        }
        let set = try sandbox.hearctl("set", "--help")
        #expect(set.status == 0)
        for text in ["USAGE: hearctl set", "--chain <chain>", "--timeout <seconds>", "--sync", "--json", "hearctl set --chain mic gain +2", "comp.threshold =-30dB",
                     "switches take on/off", "Hz, kHz or k", "ms or s", "Needed when more than one"] {
            #expect(set.stdout.contains(text), "set --help lacks '\(text)':\n\(set.stdout)")
        }
        let meter = try sandbox.hearctl("meter", "--help")
        #expect(meter.stdout.contains("--once") && meter.stdout.contains("--json") && meter.stdout.contains("without escape codes"))
        let reset = try sandbox.hearctl("reset", "--help")
        #expect(reset.stdout.contains("the value the chain's PipeWire drop-in gives it"), "\(reset.stdout)")
        for verb in ["status", "list", "get", "set", "bypass", "reset", "meter"] {
            #expect(try sandbox.hearctl(verb, "--help").stdout.contains("--json"), "\(verb) --help lacks --json")
        }
        for verb in ["save", "load", "delete", "list", "show"] {
            #expect(try sandbox.hearctl("preset", verb, "--help").stdout.contains("--json"), "preset \(verb) --help lacks --json")
        }
        let preset = try sandbox.hearctl("preset", "--help")
        for text in ["list", "show", "save", "load", "delete", "voice-call", "noisy-room", "podcast", "gentle"] {
            #expect(preset.stdout.contains(text), "preset --help lacks '\(text)'")
        }
        let version = try sandbox.hearctl("--version")
        #expect(version.status == 0 && version.stdout.contains("hear/1"))
    }

    @Test func exitCodesWithoutARunningFilter() throws {
        let sandbox = try Sandbox()
        let none = try sandbox.hearctl("status")
        #expect(none.status == 3)
        #expect(none.stderr.contains("no running hear filter found") && none.stderr.contains("pipewire.conf.d"), "\(none.stderr)")
        for arguments in [["frobnicate"], ["set"], ["set", "gain"], ["bypass", "maybe"], ["get", "--chain", "kitchen"],
                          ["meter", "--interval", "0"]] {
            let result = try Command.run(Built.hearctl, arguments, environment: sandbox.environment)
            #expect(result.status == 2, "\(arguments) exited \(result.status): \(result.stderr)")
            #expect(result.stderr.contains("Usage") || result.stderr.contains("USAGE"), "\(arguments): \(result.stderr)")
        }
        let unknown = try sandbox.hearctl("set", "gian", "3")
        #expect(unknown.status == 2 && unknown.stderr.contains("did you mean gain"), "\(unknown.stderr)")
        let range = try sandbox.hearctl("set", "comp.ratio", "40")
        #expect(range.status == 2 && range.stderr.contains("comp.ratio must be between 1:1 and 16:1; got 40:1; nothing was changed"),
                "\(range.stderr)")
        let unit = try sandbox.hearctl("set", "gain", "1kHz")
        #expect(unit.status == 2 && unit.stderr.contains("gain takes a level in dB, and '1kHz' is a frequency"), "\(unit.stderr)")
        // Not running: every verb says so with status 3.
        for arguments in [["list"], ["get", "gain"], ["set", "gain", "1"], ["bypass", "on"], ["reset"], ["meter", "--once"],
                          ["preset", "load", "gentle"], ["preset", "save", "x"]] {
            let result = try Command.run(Built.hearctl, arguments, environment: sandbox.environment)
            #expect(result.status == 3 && result.stderr.contains("no running hear filter found"), "\(arguments): \(result.status) \(result.stderr)")
        }
        let completion = try sandbox.hearctl("--generate-completion-script", "bash")
        #expect(completion.status == 0 && completion.stdout.contains("hearctl") && completion.stdout.contains("preset"))
    }

    @Test func jsonShapesAndTextOutputWithARunningFilter() throws {
        let sandbox = try Sandbox()
        let host = try sandbox.startHost(chain: 1)
        usleep(300_000)

        let status = try sandbox.hearctlJSON("status")
        let instances = try #require(status["instances"] as? [[String: Any]])
        #expect(instances.count == 1)
        let instance = try #require(instances.first)
        #expect(Set(instance.keys) == ["pid", "id", "chain", "name", "label", "rate", "channels", "latency", "latencyMilliseconds",
                                      "block", "uptime", "running", "bypass", "meters", "faults"])
        // The host calls the plugin with blocks of 256 frames: the quantum it runs now.
        #expect(instance["block"] as? Int == 256, "\(instance)")
        #expect(instance["running"] as? Bool == true)
        #expect(instance["faults"] as? Int == 0)
        #expect(instance["chain"] as? Int == 1 && instance["name"] as? String == "mic" && instance["label"] as? String == "hear_mono")
        #expect(instance["rate"] as? Int == 48000 && instance["channels"] as? Int == 1 && instance["pid"] as? Int == Int(host.pid))
        let meters = try #require(instance["meters"] as? [String: Any])
        #expect(Set(meters.keys) == ["input", "output", "compressorReduction", "limiterReduction", "noiseFloor", "speechProbability", "echo"])
        let input = try #require(meters["input"] as? [String: Any])
        // A 0.02 sine: peak -34 dBFS, RMS -37 dBFS.
        #expect(abs((input["peak"] as? Double ?? 0) + 34) < 0.5 && abs((input["rms"] as? Double ?? 0) + 37) < 0.5, "\(input)")
        #expect(status["notices"] is [String])

        let list = try sandbox.hearctlJSON("list")
        let parameters = try #require(list["parameters"] as? [[String: Any]])
        let gain = try #require(parameters.first { $0["key"] as? String == "gain" })
        #expect(Set(gain.keys) == ["key", "minimum", "maximum", "default", "unit", "scale", "help", "values"])
        #expect(gain["unit"] as? String == "dB" && gain["minimum"] as? Double == -24)
        #expect((gain["values"] as? [[String: Any]])?.first?["value"] as? Double == 0)

        let get = try sandbox.hearctlJSON("get", "gain", "comp.ratio")
        let chains = try #require(get["chains"] as? [[String: Any]])
        #expect(chains.count == 1 && chains[0]["chain"] as? Int == 1 && chains[0]["name"] as? String == "mic")
        #expect(chains[0]["values"] as? [String: Double] == ["gain": 0, "comp.ratio": 4])

        let meter = try sandbox.hearctlJSON("meter", "--once")
        #expect((meter["instances"] as? [[String: Any]])?.count == 1)
        let bars = try sandbox.hearctl("meter", "--once")
        #expect(bars.status == 0 && bars.stdout.contains("in ") && bars.stdout.contains("comp GR"), "\(bars.stdout)")

        let text = try sandbox.hearctl("status")
        #expect(text.status == 0 && text.stdout.hasPrefix("CHAIN") && text.stdout.contains("1 (mic)") && text.stdout.contains("48000 Hz"))
        #expect(text.stdout.contains("running") && text.stdout.contains("COMP GR"), "\(text.stdout)")
        let table = try sandbox.hearctl("list")
        #expect(table.stdout.split(separator: "\n").count == 1 + Parameter.count && table.stdout.contains("comp.ratio"))
        // Both fit 80 columns (stdout is a pipe here); before, they were 162 and 166 wide.
        for line in (text.stdout + table.stdout).split(separator: "\n") { #expect(line.count <= 80, "\(line.count) columns: \(line)") }
        #expect(table.stdout.contains("comp.ratio       4") && table.stdout.contains("1..16:1"), "\(table.stdout)")

        // bypass and reset
        #expect(try sandbox.hearctl("bypass", "on").status == 0)
        #expect(try sandbox.value("bypass", chain: 1) == 1)
        #expect(try sandbox.hearctl("set", "gain", "6dB", "comp.threshold", "=-30").status == 0)
        #expect(try sandbox.hearctl("get", "gain", "comp.threshold").stdout == "gain = 6 dB\ncomp.threshold = -30 dB\n")
        #expect(try sandbox.hearctl("reset", "gain").status == 0)
        #expect(try sandbox.value("gain", chain: 1) == 0)
        #expect(try sandbox.value("comp.threshold", chain: 1) == -30)
        #expect(try sandbox.hearctl("reset").status == 0)
        #expect(try sandbox.value("bypass", chain: 1) == 0)
        #expect(try sandbox.value("comp.threshold", chain: 1) == -24)
        _ = try host.stop()
    }

    @Test func presetsSaveLoadShowDelete() throws {
        let sandbox = try Sandbox()
        let host = try sandbox.startHost(chain: 2)

        let builtIn = try sandbox.hearctlJSON("preset", "list")
        let names = (builtIn["presets"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }
        #expect(Set(["voice-call", "noisy-room", "podcast", "gentle"]).isSubset(of: Set(names)))

        #expect(try sandbox.hearctl("preset", "load", "voice-call").status == 0)
        #expect(try sandbox.value("comp.ratio", chain: 2) == 3)
        #expect(try sandbox.value("eq.hp.freq", chain: 2) == 100)
        #expect(try sandbox.hearctl("set", "gain", "2").status == 0)
        let save = try sandbox.hearctl("preset", "save", "mine")
        #expect(save.status == 0, "\(save.stderr)")
        let file = try String(contentsOfFile: sandbox.config + "/hear/presets/mine.conf", encoding: .utf8)
        #expect(file.contains("gain = 2\n") && file.contains("comp.ratio = 3\n"), "\(file)")
        #expect(try sandbox.hearctl("preset", "save", "mine").status == 1)  // exists; needs --force
        let show = try sandbox.hearctlJSON("preset", "show", "mine")
        #expect((show["values"] as? [String: Double])?["gain"] == 2)

        #expect(try sandbox.hearctl("preset", "load", "gentle").status == 0)
        #expect(try sandbox.value("gain", chain: 2) == 0)  // not named by the preset: back to its default
        #expect(try sandbox.hearctl("preset", "load", "mine").status == 0)
        #expect(try sandbox.value("gain", chain: 2) == 2)
        #expect(try sandbox.hearctl("preset", "delete", "mine").status == 0)
        #expect(try sandbox.hearctl("preset", "load", "mine").status == 1)
        #expect(try sandbox.hearctl("preset", "delete", "podcast").stderr.contains("built-in"))
        #expect(try sandbox.hearctl("preset", "save", "../evil").status == 1)
        _ = try host.stop()
    }

    /// With two chains a change needs --chain (usage error, nothing changes), and
    /// the reply names the chain it changed; reading verbs show both.
    @Test func aChangeNeedsItsChainWhenSeveralExistAndTheReplyNamesIt() throws {
        let sandbox = try Sandbox()
        let mic = try HostProcess(sandbox, chain: 1)
        let speaker = try HostProcess(sandbox, chain: 2, label: "hear_stereo")
        try sandbox.waitForInstance(chain: 1)
        try sandbox.waitForInstance(chain: 2)
        for arguments in [["set", "gain", "3"], ["bypass", "on"], ["reset"], ["reset", "gain"], ["preset", "load", "gentle"],
                          ["preset", "save", "both"], ["set", "gain", "3", "--json"]] {
            let result = try Command.run(Built.hearctl, arguments, environment: sandbox.environment)
            #expect(result.status == 2 && result.stderr.contains("2 chains exist (mic (1) running, speaker (2) running)")
                    && result.stderr.contains("--chain mic or --chain speaker"), "\(arguments): \(result.status) \(result.stderr)")
            // Only --json puts anything on stdout: the error, for scripts.
            #expect(arguments.contains("--json") ? result.stdout.contains("\"exit\" : 2") : result.stdout.isEmpty, "\(result.stdout)")
        }
        for chain in [1, 2] {
            #expect(try sandbox.value("gain", chain: chain) == 0 && sandbox.value("bypass", chain: chain) == 0)
            #expect(try sandbox.value("comp.ratio", chain: chain) == 4)
        }
        let set = try sandbox.hearctl("set", "--chain", "mic", "gain", "3", "eq.peak2.freq", "2.5k")
        #expect(set.status == 0 && set.stdout == "chain 1 (mic): gain = 3 dB, eq.peak2.freq = 2500 Hz\n", "\(set.stdout)\(set.stderr)")
        #expect(try sandbox.value("gain", chain: 1) == 3 && sandbox.value("gain", chain: 2) == 0)

        let bypass = try sandbox.hearctlJSON("bypass", "on", "--chain", "speaker")
        #expect(bypass["chain"] as? Int == 2 && bypass["name"] as? String == "speaker" && bypass["state"] as? String == "running")
        #expect(bypass["instances"] as? Int == 1 && (bypass["values"] as? [String: Double]) == ["bypass": 1], "\(bypass)")
        #expect(try sandbox.value("bypass", chain: 1) == 0 && sandbox.value("bypass", chain: 2) == 1)

        let load = try sandbox.hearctl("preset", "load", "gentle", "--chain", "2")
        #expect(load.status == 0 && load.stdout == "chain 2 (speaker): loaded preset gentle (built-in)\n", "\(load.stdout)\(load.stderr)")
        #expect(try sandbox.value("comp.ratio", chain: 2) == 2 && sandbox.value("comp.ratio", chain: 1) == 4)
        let reset = try sandbox.hearctlJSON("reset", "gain", "--chain", "mic")
        #expect(reset["chain"] as? Int == 1 && (reset["values"] as? [String: Double]) == ["gain": 0], "\(reset)")
        #expect(try sandbox.value("gain", chain: 1) == 0)

        // Reading verbs show every chain.
        let get = try sandbox.hearctl("get", "comp.ratio")
        #expect(get.stdout == "[mic] comp.ratio = 4:1\n[speaker] comp.ratio = 2:1\n", "\(get.stdout)")
        _ = try mic.stop()
        _ = try speaker.stop()
    }

    /// A chain the drop-in configures but no process runs (no PipeWire here) shows as configured, reads as idle in `meter`, keeps changes in its state file
    /// and takes them when it starts; `reset` goes back to the drop-in's values.
    @Test func aSuspendedChainKeepsChangesUntilItStartsAndResetGoesToTheDropIn() throws {
        let sandbox = try Sandbox()
        let controls: [String: Float] = ["gain": 2, "comp.ratio": 3, "eq.hp.freq": 100, "ns.enable": 0]
        let dropIn = try sandbox.writeDropIn(chain: 1, controls: controls)

        // No PipeWire runs in the sandbox: the chain is configured, not something PipeWire suspended.
        let status = try sandbox.hearctl("status")
        #expect(status.status == 0 && status.stdout.split(separator: "\n").contains { $0.hasPrefix("1 (mic)") && $0.contains("configured") },
                "\(status.stdout)\(status.stderr)")
        #expect(status.stdout.contains("PipeWire is not running: configured chains start with it"), "\(status.stdout)")
        let statusJSON = try sandbox.hearctlJSON("status")
        let chains = try #require(statusJSON["chains"] as? [[String: Any]])
        #expect(chains.count == 1 && chains[0]["state"] as? String == "configured" && chains[0]["dropIn"] as? String == dropIn)
        let meter = try sandbox.hearctl("meter", "--once")
        #expect(meter.status == 0 && meter.stdout == "chain 1 (mic): idle (suspended: PipeWire starts it when an app uses it)\n",
                "\(meter.stdout)\(meter.stderr)")
        #expect(try sandbox.hearctl("get", "gain", "comp.ratio").stdout == "gain = 2 dB\ncomp.ratio = 3:1\n")

        let set = try sandbox.hearctl("set", "gain", "5", "eq.peak2.freq", "2.5kHz")
        #expect(set.status == 0, "\(set.stderr)")
        #expect(set.stdout.hasPrefix("chain 1 (mic) is suspended: gain = 5 dB, eq.peak2.freq = 2500 Hz; saved in \(sandbox.stateFile(chain: 1))"),
                "\(set.stdout)")
        let saved = try String(contentsOfFile: sandbox.stateFile(chain: 1), encoding: .utf8)
        #expect(saved.contains("gain = 5\n") && saved.contains("eq.peak2.freq = 2500\n"), "\(saved)")
        let get = try sandbox.hearctlJSON("get", "gain")
        #expect((get["chains"] as? [[String: Any]])?.first?["state"] as? String == "suspended")
        #expect(try sandbox.value("gain", chain: 1) == 5)
        // A reset while suspended forgets the saved value: the chain starts at the drop-in's.
        #expect(try sandbox.hearctl("set", "comp.ratio", "8").status == 0)
        #expect(try sandbox.hearctl("reset", "comp.ratio").status == 0)
        #expect(try !String(contentsOfFile: sandbox.stateFile(chain: 1), encoding: .utf8).contains("comp.ratio"))

        // PipeWire starts the chain: the instance has the config's controls, then the saved values on top.
        let host = try HostProcess(sandbox, chain: 1, controls: controls)
        try sandbox.waitForInstance(chain: 1)
        usleep(200_000)
        #expect(try sandbox.value("gain", chain: 1) == 5 && sandbox.value("eq.peak2.freq", chain: 1) == 2500)
        #expect(try sandbox.value("comp.ratio", chain: 1) == 3)
        #expect(try sandbox.hearctlJSON("status")["chains"].flatMap { ($0 as? [[String: Any]])?.first?["state"] as? String } == "running")

        // reset goes back to the drop-in's values, not the plugin's defaults (gain 0, comp.ratio 4, eq.hp.freq 80).
        #expect(try sandbox.hearctl("set", "comp.ratio", "6", "eq.hp.freq", "200", "comp.knee", "12").status == 0)
        let reset = try sandbox.hearctl("reset", "gain", "comp.ratio")
        #expect(reset.status == 0 && reset.stdout == "chain 1 (mic): gain = 2 dB, comp.ratio = 3:1\n", "\(reset.stdout)\(reset.stderr)")
        #expect(try sandbox.value("gain", chain: 1) == 2 && sandbox.value("comp.ratio", chain: 1) == 3)
        #expect(try sandbox.value("eq.hp.freq", chain: 1) == 200)
        let all = try sandbox.hearctl("reset")
        #expect(all.stdout == "chain 1 (mic): every parameter back to the values of \(dropIn)\n", "\(all.stdout)")
        #expect(try sandbox.value("eq.hp.freq", chain: 1) == 100 && sandbox.value("comp.knee", chain: 1) == 6)
        #expect(try sandbox.value("eq.peak2.freq", chain: 1) == 1500)
        _ = try host.stop()
        let after = try String(contentsOfFile: sandbox.stateFile(chain: 1), encoding: .utf8)
        #expect(!after.contains("gain") && !after.contains("comp.ratio"), "reset values stay saved:\n\(after)")
    }

    /// Values rounded to their precision, JSON without float noise, --json on
    /// changes, units checked on input, and no escape codes into a pipe.
    @Test func outputIsRoundedUnitsAreCheckedAndPipesGetNoEscapeCodes() throws {
        let sandbox = try Sandbox()
        let host = try sandbox.startHost(chain: 1)
        #expect(try sandbox.hearctl("set", "eq.low.freq", "200.00002", "gain", "0.1").status == 0)
        #expect(try sandbox.hearctl("get", "eq.low.freq", "gain").stdout == "eq.low.freq = 200 Hz\ngain = 0.1 dB\n")
        let raw = try sandbox.hearctl("get", "gain", "--json").stdout
        #expect(raw.contains("\"gain\" : 0.1\n") && !raw.contains("0.100000"), "\(raw)")
        let list = try sandbox.hearctl("list", "--json").stdout
        #expect(!list.contains("0.100000") && !list.contains("200.0000"), "\(list.prefix(400))")

        let set = try sandbox.hearctlJSON("set", "eq.peak1.freq", "1k", "comp.release", "0.2s", "comp.threshold", "=-30dB")
        #expect(set["chain"] as? Int == 1 && set["state"] as? String == "running")
        #expect(set["values"] as? [String: Double] == ["eq.peak1.freq": 1000, "comp.release": 200, "comp.threshold": -30], "\(set)")
        let wrong = try sandbox.hearctl("set", "eq.peak1.freq", "800", "gain", "1kHz")
        #expect(wrong.status == 2 && wrong.stderr.contains("'1kHz' is a frequency"), "\(wrong.stderr)")
        #expect(try sandbox.value("eq.peak1.freq", chain: 1) == 1000)  // nothing changed

        let meter = try Command.output(of: Built.hearctl, ["meter", "--interval", "0.1"], environment: sandbox.environment, after: 1.5)
        #expect(!meter.stdout.contains("\u{1B}"), "escape codes into a pipe")
        #expect(meter.stdout.components(separatedBy: "comp GR").count >= 3, "\(meter.stdout)")
        _ = try host.stop()
    }
}
