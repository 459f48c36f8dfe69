// What users bring from wpctl and other tools, through the real hearctl against the plugin in
// hear-host: relative steps (`set gain +2`), `bypass toggle` and `toggle` for a hotkey, a
// `version` verb, `get` naming an unknown key, JSON on stdout for failures too, and user presets
// that are damaged or far too large.

import Foundation
import Glibc
import HearControl
import Testing
import TestSupport

@Suite(.serialized) struct ControlHabitsTests {
    init() throws { try Built.require() }

    static func json(_ text: String) -> [String: Any]? {
        try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
    }

    /// A leading sign steps from the current value, stopping at the range's end; "=" writes a
    /// negative value; a switch takes no step; a step larger than the range is refused whole.
    @Test func relativeStepsStartFromTheCurrentValue() throws {
        let sandbox = try Sandbox()
        let host = try sandbox.startHost(chain: 1)
        #expect(try sandbox.hearctl("set", "gain", "6").status == 0)
        let up = try sandbox.hearctl("set", "gain", "+2")
        #expect(up.status == 0 && up.stdout == "chain 1 (mic): gain 6 → 8 dB (+2)\n", "\(up.stdout)\(up.stderr)")
        #expect(try sandbox.value("gain", chain: 1) == 8)
        #expect(try sandbox.hearctl("set", "gain", "-3dB").status == 0)
        #expect(try sandbox.value("gain", chain: 1) == 5)
        #expect(try sandbox.hearctl("set", "comp.threshold", "=-30dB", "gain", "=-2").status == 0)
        #expect(try sandbox.value("comp.threshold", chain: 1) == -30 && sandbox.value("gain", chain: 1) == -2)
        // A value and a step in one command: both applied, the step said as one.
        let mixed = try sandbox.hearctl("set", "comp.threshold", "=-20dB", "gain", "+1")
        #expect(mixed.status == 0 && mixed.stdout.contains("comp.threshold = -20 dB") && mixed.stdout.contains("gain -2 → -1 dB (+1)"),
                "\(mixed.stdout)\(mixed.stderr)")
        #expect(try sandbox.hearctl("set", "gain", "=-2").status == 0)
        // From -2, +30 stops at the top of the range (+24), as wpctl's volume steps stop at their limit.
        #expect(try sandbox.hearctl("set", "gain", "+30").status == 0)
        #expect(try sandbox.value("gain", chain: 1) == 24)
        for (arguments, message) in [(["set", "gain", "+49"], "more than gain's whole range"),
                                     (["set", "ns.enable", "-1"], "is a switch and takes no step"),
                                     (["set", "gain", "=-25"], "gain must be between -24 dB and 24 dB")] {
            let refused = try Command.run(Built.hearctl, arguments, environment: sandbox.environment)
            #expect(refused.status == 2 && refused.stderr.contains(message), "\(arguments): \(refused.status) \(refused.stderr)")
        }
        #expect(try sandbox.value("gain", chain: 1) == 24 && sandbox.value("ns.enable", chain: 1) == 0)
        _ = try host.stop()
    }

    /// A step is the server's read and write in one turn (the protocol's `step`), so steps of many
    /// clients at once add up: 16 clients x 100 x `set gain +0.01` end exactly 16 dB up, where
    /// reading the value and sending an absolute set lost 609 of them. The same on a suspended
    /// chain, whose steps go to its state file under the file's lock.
    @Test func concurrentRelativeStepsAllCount() throws {
        let sandbox = try Sandbox()
        let host = try sandbox.startHost(chain: 1)
        #expect(try sandbox.hearctl("set", "gain", "0").status == 0)

        final class Failures: @unchecked Sendable {
            var list = [String]()
            let lock = NSLock()
            func add(_ text: String) { lock.withLock { list.append(text) } }
        }
        let failures = Failures()
        let environment = sandbox.environment
        DispatchQueue.concurrentPerform(iterations: 16) { _ in
            for _ in 0..<100 {
                do {
                    let result = try Command.run(Built.hearctl, ["set", "gain", "+0.01"], environment: environment)
                    if result.status != 0 { failures.add(result.stderr) }
                } catch { failures.add("\(error)") }
            }
        }
        #expect(failures.list.isEmpty, "\(failures.list.prefix(3))")
        let running = try #require(try sandbox.value("gain", chain: 1))
        #expect(abs(running - 16) < 0.005, "16 x 100 steps of +0.01 dB from 0 end at \(running) dB")
        // The reply says it was a step, in JSON too.
        let json = try sandbox.hearctlJSON("set", "gain", "-2")
        let step = (json["steps"] as? [String: Any])?["gain"] as? [String: Double]
        #expect(step?["to"] == 14 && abs((step?["from"] ?? 0) - 16) < 0.005, "\(json)")
        _ = try host.stop()

        // Suspended: the drop-in's chain 2 runs nowhere; 8 x 20 steps of +0.1 from the drop-in's -10.
        try sandbox.writeDropIn(chain: 2, controls: ["gain": -10])
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            for _ in 0..<20 {
                do {
                    let result = try Command.run(Built.hearctl, ["set", "gain", "+0.1", "--chain", "2"], environment: environment)
                    if result.status != 0 { failures.add(result.stderr) }
                } catch { failures.add("\(error)") }
            }
        }
        #expect(failures.list.isEmpty, "\(failures.list.prefix(3))")
        let suspended = try #require(try sandbox.value("gain", chain: 2))
        #expect(abs(suspended - 6) < 0.005, "8 x 20 steps of +0.1 dB from -10 end at \(suspended) dB")
        let down = try sandbox.hearctl("set", "gain", "=6", "--chain", "2")
        #expect(down.status == 0)
        let stepped = try sandbox.hearctl("set", "gain", "-44", "--chain", "2")
        #expect(stepped.status == 0 && stepped.stdout.contains("gain 6 → -24 dB (-30)"), "a step stops at the range's end: \(stepped.stdout)\(stepped.stderr)")
    }

    /// `bypass toggle` and `toggle` switch to the other state and say which.
    @Test func toggleSwitchesBypassAndPrintsTheNewState() throws {
        let sandbox = try Sandbox()
        let host = try sandbox.startHost(chain: 1)
        let on = try sandbox.hearctl("bypass", "toggle")
        #expect(on.status == 0 && on.stdout.contains("bypassed"), "\(on.stdout)\(on.stderr)")
        #expect(try sandbox.value("bypass", chain: 1) == 1)
        let off = try sandbox.hearctl("toggle")
        #expect(off.status == 0 && off.stdout.contains("processing (bypass off)"), "\(off.stdout)\(off.stderr)")
        #expect(try sandbox.value("bypass", chain: 1) == 0)
        let json = try sandbox.hearctlJSON("toggle")
        #expect((json["values"] as? [String: Double]) == ["bypass": 1], "\(json)")
        _ = try host.stop()
    }

    /// Without a running filter: `version` as a verb, `get` with an unknown key, and every
    /// failure of a --json command answered in JSON on stdout with the exit status.
    @Test func versionUnknownKeysAndJSONFailures() throws {
        let sandbox = try Sandbox()
        let version = try sandbox.hearctl("version")
        let option = try sandbox.hearctl("--version")
        #expect(version.status == 0 && version.stdout == option.stdout && version.stdout.contains("hear/1"))
        let versionJSON = Self.json(try sandbox.hearctl("version", "--json").stdout)
        #expect(versionJSON?["protocol"] as? String == "hear/1" && (versionJSON?["version"] as? String)?.isEmpty == false)

        let unknown = try sandbox.hearctl("get", "nosuch")
        #expect(unknown.status == 2 && unknown.stderr.contains("unknown parameter 'nosuch'") && unknown.stderr.contains("hearctl get"),
                "\(unknown.stderr)")
        #expect(!unknown.stderr.contains("SUBCOMMANDS"), "the top-level usage instead of get's: \(unknown.stderr)")
        let near = try sandbox.hearctl("get", "comp.ratoi")
        #expect(near.status == 2 && near.stderr.contains("did you mean comp.ratio"), "\(near.stderr)")

        for (arguments, status, message) in [(["status", "--json"], 3, "no running hear filter found"),
                                             (["set", "gian", "3", "--json"], 2, "unknown parameter 'gian'"),
                                             (["get", "nosuch", "--json"], 2, "unknown parameter 'nosuch'"),
                                             (["bypass", "maybe", "--json"], 2, "maybe")] {
            let result = try Command.run(Built.hearctl, arguments, environment: sandbox.environment)
            let reply = Self.json(result.stdout)
            #expect(result.status == Int32(status) && reply?["exit"] as? Int == status
                    && (reply?["error"] as? String)?.contains(message) == true, "\(arguments): \(result.status) \(result.stdout) \(result.stderr)")
            #expect(result.stderr.contains(message), "\(arguments): people still read it on stderr: \(result.stderr)")
        }
        let advice = try sandbox.hearctl("status").stderr
        #expect(advice.contains("hearctl enable mic") && advice.contains("README, \"Enable\""), "\(advice)")
    }

    /// A chain configured for a separate `pipewire -c filter-chain.conf` (its drop-ins in
    /// filter-chain.conf.d, as Debian 12 documents filter-chains) is known while suspended, with its values.
    @Test func filterChainDropInsAreReadToo() throws {
        let sandbox = try Sandbox()
        let written = try sandbox.writeDropIn(chain: 1, controls: ["gain": 2.5])
        let directory = sandbox.config + "/pipewire/filter-chain.conf.d"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let path = directory + "/hear-chain1.conf"
        try FileManager.default.moveItem(atPath: written, toPath: path)
        let chains = try sandbox.hearctlJSON("status")["chains"] as? [[String: Any]] ?? []
        #expect(chains.first { $0["chain"] as? Int == 1 }?["dropIn"] as? String == path, "\(chains)")
        #expect(try sandbox.value("gain", chain: 1) == 2.5)
    }

    /// Drop-ins are read as PipeWire reads them: a symbolic link (stow, home-manager) is the chain's
    /// drop-in, and `reset` on the running chain goes to its values. A file nested 4,000 levels
    /// deep, one not SPA-JSON, one too large and a link to nothing are each skipped with a warning
    /// naming the file and the reason; every verb still works (it crashed with exit 139).
    @Test func dropInsAreReadAsPipeWireReadsThem() throws {
        let sandbox = try Sandbox()
        let written = try sandbox.writeDropIn(chain: 1, controls: ["gain": 2.5])
        let stowed = sandbox.base + "/dotfiles-hear.conf"
        try FileManager.default.moveItem(atPath: written, toPath: stowed)
        try FileManager.default.createSymbolicLink(atPath: written, withDestinationPath: stowed)
        let directory = sandbox.config + "/pipewire/pipewire.conf.d"
        let deep = "context.modules = " + String(repeating: "[", count: 4000) + String(repeating: "]", count: 4000)
        _ = FileManager.default.createFile(atPath: directory + "/deep.conf", contents: Data(deep.utf8))
        _ = FileManager.default.createFile(atPath: directory + "/broken.conf", contents: Data("context.modules = [ { broken".utf8))
        let huge = directory + "/huge.conf"
        _ = FileManager.default.createFile(atPath: huge, contents: nil)
        #expect(truncate(huge, 65 << 20) == 0)  // sparse: nothing is written
        try FileManager.default.createSymbolicLink(atPath: directory + "/gone.conf", withDestinationPath: sandbox.base + "/nothing.conf")

        let status = try sandbox.hearctl("status")
        #expect(status.status == 0, "\(status.status) \(status.stderr)")
        for (file, reason) in [("deep.conf", "nested more than 64 levels deep"), ("broken.conf", "not PipeWire's SPA-JSON"),
                               ("huge.conf", "more than the 67108864 allowed"), ("gone.conf", "a symbolic link to nothing")] {
            let line = status.stderr.split(separator: "\n").first { $0.contains(file) }.map(String.init) ?? ""
            #expect(line.hasPrefix("hearctl: warning: skipped drop-in \(directory)/\(file): ") && line.contains(reason), "\(status.stderr)")
        }
        #expect(status.stderr.components(separatedBy: "deep.conf").count == 2, "warned once: \(status.stderr)")
        #expect(try sandbox.value("gain", chain: 1) == 2.5)

        let host = try sandbox.startHost(chain: 1)
        #expect(try sandbox.hearctl("set", "gain", "9").status == 0)
        let reset = try sandbox.hearctl("reset", "gain")
        #expect(reset.status == 0, "\(reset.stderr)")
        #expect(try sandbox.value("gain", chain: 1) == 2.5, "reset goes to the linked drop-in's value")
        _ = try host.stop()
    }

    /// A user preset with a byte that is not UTF-8 in a comment is that preset (not the built-in
    /// of its name, not "no preset"); a bad byte in a value names the line; a huge file is refused unread.
    @Test func damagedOrHugeUserPresetsAreNeverSilentlyReplaced() throws {
        let sandbox = try Sandbox()
        let directory = sandbox.config + "/hear/presets"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let latin1Comment: [UInt8] = Array("# caf".utf8) + [0xE9] + Array("\ngain = 7\n".utf8)
        for name in ["podcast", "mine"] {
            _ = FileManager.default.createFile(atPath: "\(directory)/\(name).conf", contents: Data(latin1Comment))
            let show = Self.json(try sandbox.hearctl("preset", "show", name, "--json").stdout)
            #expect(show?["source"] as? String == "\(directory)/\(name).conf" && (show?["values"] as? [String: Double]) == ["gain": 7],
                    "\(name): \(show ?? [:])")
        }
        _ = FileManager.default.createFile(atPath: directory + "/bad.conf", contents: Data(Array("gain = 7".utf8) + [0xE9, 0x0A]))
        let bad = try sandbox.hearctl("preset", "show", "bad")
        #expect(bad.status == 1 && bad.stderr.contains("bad.conf is invalid: line 1"), "\(bad.stderr)")
        _ = FileManager.default.createFile(atPath: directory + "/huge.conf", contents: Data(repeating: 0x23, count: 200_000))
        let huge = try sandbox.hearctl("preset", "show", "huge")
        #expect(huge.status == 1 && huge.stderr.contains("is 200000 bytes, more than the 65536 allowed; a preset is at most 64 KiB"), "\(huge.stderr)")
        // A link to a file whose stat size is 0 but whose content has no end: bounded by the read itself.
        try FileManager.default.createSymbolicLink(atPath: directory + "/endless.conf", withDestinationPath: "/proc/self/pagemap")
        let started = Date()
        let endless = try sandbox.hearctl("preset", "show", "endless")
        #expect(endless.status == 1 && endless.stderr.contains("grew past the 65536 bytes allowed while being read"), "\(endless.stderr)")
        print("a preset linked to /proc/self/pagemap refused in \(String(format: "%.3f", Date().timeIntervalSince(started))) s")
        // A link from a dotfiles folder is the user's own preset; a link to nothing is said to be one.
        _ = FileManager.default.createFile(atPath: sandbox.base + "/dotfile.conf", contents: Data("gain = 3\n".utf8))
        try FileManager.default.createSymbolicLink(atPath: directory + "/linked.conf", withDestinationPath: sandbox.base + "/dotfile.conf")
        let linked = Self.json(try sandbox.hearctl("preset", "show", "linked", "--json").stdout)
        #expect((linked?["values"] as? [String: Double]) == ["gain": 3], "\(linked ?? [:])")
        try FileManager.default.createSymbolicLink(atPath: directory + "/dangling.conf", withDestinationPath: sandbox.base + "/nothing.conf")
        let dangling = try sandbox.hearctl("preset", "show", "dangling")
        #expect(dangling.status == 1 && dangling.stderr.contains("a symbolic link to nothing"), "\(dangling.stderr)")
        let listed = Self.json(try sandbox.hearctl("preset", "list", "--json").stdout)?["presets"] as? [[String: Any]] ?? []
        #expect(listed.first { $0["name"] as? String == "podcast" }?["source"] as? String == "user", "\(listed)")
    }
}
