// hearctl as a user meets it: help texts, exit codes (0 success, 1 error, 2 usage), --json shapes,
// presets and completions.

import Foundation
import HearDSP
import Testing

@Suite(.serialized) struct ControlCLITests {
    @Test func helpListsEveryCommand() throws {
        let sandbox = try Sandbox()
        let help = try sandbox.hearctl("--help")
        #expect(help.status == 0)
        for text in ["USAGE: hearctl <subcommand>", "status", "list", "get", "set", "bypass", "reset", "preset", "meter",
                     "Exit status: 0 success, 1 error, 2 usage, 3 timeout", "hearctl set gain 6"] {
            #expect(help.stdout.contains(text), "--help lacks '\(text)'")
        }
        let set = try sandbox.hearctl("set", "--help")
        #expect(set.status == 0)
        for text in ["USAGE: hearctl set", "--chain <chain>", "--timeout <seconds>", "--sync", "hearctl set gain 6dB", "switches take on/off"] {
            #expect(set.stdout.contains(text), "set --help lacks '\(text)':\n\(set.stdout)")
        }
        let meter = try sandbox.hearctl("meter", "--help")
        #expect(meter.stdout.contains("--once") && meter.stdout.contains("--json"))
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
        #expect(none.status == 1)
        #expect(none.stderr.contains("no running hear filter found") && none.stderr.contains("pipewire.conf.d"), "\(none.stderr)")
        for arguments in [["frobnicate"], ["set"], ["set", "gain"], ["bypass", "maybe"], ["get", "--chain", "kitchen"],
                          ["meter", "--interval", "0"]] {
            let result = try run(Built.hearctl, arguments, environment: sandbox.environment)
            #expect(result.status == 2, "\(arguments) exited \(result.status): \(result.stderr)")
            #expect(result.stderr.contains("Usage") || result.stderr.contains("USAGE"), "\(arguments): \(result.stderr)")
        }
        let unknown = try sandbox.hearctl("set", "gian", "3")
        #expect(unknown.status == 1 && unknown.stderr.contains("did you mean gain"), "\(unknown.stderr)")
        let range = try sandbox.hearctl("set", "comp.ratio", "40")
        #expect(range.status == 1 && range.stderr.contains("comp.ratio must be between 1:1 and 16:1; got 40:1; nothing was changed"),
                "\(range.stderr)")
        let completion = try sandbox.hearctl("--generate-completion-script", "bash")
        #expect(completion.status == 0 && completion.stdout.contains("hearctl") && completion.stdout.contains("preset"))
    }

    @Test func jsonShapesAndTextOutputWithARunningFilter() throws {
        let sandbox = try Sandbox()
        let host = try HostProcess(sandbox, chain: 1)
        try sandbox.waitForInstance(chain: 1)
        usleep(300_000)

        let status = try sandbox.hearctlJSON("status")
        let instances = try #require(status["instances"] as? [[String: Any]])
        #expect(instances.count == 1)
        let instance = try #require(instances.first)
        #expect(Set(instance.keys) == ["pid", "id", "chain", "name", "label", "rate", "channels", "latency", "latencyMilliseconds",
                                      "uptime", "running", "bypass", "meters", "faults"])
        #expect(instance["running"] as? Bool == true)
        #expect(instance["faults"] as? Int == 0)
        #expect(instance["chain"] as? Int == 1 && instance["name"] as? String == "mic" && instance["label"] as? String == "hear_mono")
        #expect(instance["rate"] as? Int == 48000 && instance["channels"] as? Int == 1 && instance["pid"] as? Int == Int(host.pid))
        let meters = try #require(instance["meters"] as? [String: Any])
        #expect(Set(meters.keys) == ["input", "output", "compressorReduction", "limiterReduction", "noiseFloor", "speechProbability"])
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
        let table = try sandbox.hearctl("list")
        #expect(table.stdout.split(separator: "\n").count == 1 + Parameter.count && table.stdout.contains("comp.ratio"))

        // bypass and reset
        #expect(try sandbox.hearctl("bypass", "on").status == 0)
        #expect(try sandbox.value("bypass", chain: 1) == 1)
        #expect(try sandbox.hearctl("set", "gain", "6dB", "comp.threshold", "-30").status == 0)
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
        let host = try HostProcess(sandbox, chain: 2)
        try sandbox.waitForInstance(chain: 2)

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
}
