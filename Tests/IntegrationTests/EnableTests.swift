// hearctl enable / disable from the build tree, in a HOME of the test's own: what they write and
// remove, that an error changes nothing, and the restart. A systemd user manager cannot run here,
// so the restart is checked against a `systemctl` first on PATH that answers `show` the way
// systemd does and records what it was asked; without one reachable, hearctl says what to do.
// (DebianPackageTests runs the installed hearctl against a real PipeWire.)

import Foundation
import Glibc
import Testing
import TestSupport

@Suite struct EnableTests {
    static let hearctl = Repository.url(".build/release/hearctl").path

    func sandbox(_ name: String) throws -> (Processes, URL) {
        let processes = try Processes(name: name)
        let home = try processes.directory("home")
        processes.environment["HOME"] = home.path
        processes.environment["XDG_RUNTIME_DIR"] = try processes.directory("run").path
        for key in ["XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME"] { processes.environment[key] = nil }
        return (processes, home.appendingPathComponent(".config/pipewire/pipewire.conf.d"))
    }

    @Test func enableWritesTheDropInAndErrorsChangeNothing() throws {
        let (processes, dropIns) = try sandbox("enable")
        defer { processes.stopAll() }
        let microphone = dropIns.appendingPathComponent("hear-microphone.conf")
        let enable = try processes.run(Self.hearctl, ["enable", "mic"]).output
        // The build tree's plugin and the repository's template, as `make install` fills it in.
        let plugin = URL(fileURLWithPath: Self.hearctl).resolvingSymlinksInPath().deletingLastPathComponent()
            .appendingPathComponent("libhear.so").path
        let written = try String(contentsOf: microphone, encoding: .utf8)
        #expect(written == (try DebianPackageTests.dropIn("hear-microphone.conf", plugin: plugin)))
        #expect(enable.contains("wrote \(microphone.path) (plugin \(plugin))"), "\(enable)")
        #expect(enable.contains("PipeWire was not restarted") && enable.contains("restart PipeWire yourself"), "\(enable)")
        #expect(!FileManager.default.fileExists(atPath: dropIns.appendingPathComponent("hear-speaker.conf").path))

        // An edited drop-in is kept: exit 1, the file as it was; --force replaces it.
        try (written + "# mine\n").write(to: microphone, atomically: true, encoding: .utf8)
        let refused = try processes.run(Self.hearctl, ["enable", "mic"], check: false)
        #expect(refused.status == 1 && refused.output.contains("--force") && refused.output.contains("Nothing was changed"), "\(refused.output)")
        #expect(try String(contentsOf: microphone, encoding: .utf8) == written + "# mine\n")
        // Usage errors (exit 2) and a missing plugin (exit 1) write nothing.
        for arguments in [["enable"], ["enable", "kitchen"], ["disable", "kitchen"], ["enable", "speaker", "--plugin", "/nonexistent/libhear.so"]] {
            let result = try processes.run(Self.hearctl, arguments, check: false)
            #expect(result.status == (arguments.count == 4 ? 1 : 2), "\(arguments): \(result.status) \(result.output)")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: dropIns.path) == ["hear-microphone.conf"])
        let forced = try processes.run(Self.hearctl, ["enable", "mic", "--force", "--no-restart", "--json"]).output
        #expect(try String(contentsOf: microphone, encoding: .utf8) == written)
        let enabled = try JSONSerialization.jsonObject(with: Data(forced.utf8)) as? [String: Any]
        #expect(enabled?["chain"] as? String == "mic" && enabled?["dropIn"] as? String == microphone.path
                    && enabled?["changed"] as? Bool == true && enabled?["plugin"] as? String == plugin, "\(forced)")
        // Not restarted (exit 0 all the same): the reply says so, with the command that does it.
        #expect(enabled?["restarted"] as? Bool == false
                    && enabled?["restartCommand"] as? String == "systemctl --user restart pipewire pipewire-pulse wireplumber", "\(forced)")
        let again = try processes.run(Self.hearctl, ["enable", "mic", "--json"]).output
        #expect((try JSONSerialization.jsonObject(with: Data(again.utf8)) as? [String: Any])?["changed"] as? Bool == false, "\(again)")

        // disable speaker: not enabled, nothing removed; disable: the microphone's goes.
        let notEnabled = try processes.run(Self.hearctl, ["disable", "speaker", "--json"]).output
        let report = try JSONSerialization.jsonObject(with: Data(notEnabled.utf8)) as? [String: Any]
        #expect(report?["notEnabled"] as? [String] == ["speaker"] && (report?["removed"] as? [String])?.isEmpty == true, "\(notEnabled)")
        #expect(FileManager.default.fileExists(atPath: microphone.path))
        let disable = try processes.run(Self.hearctl, ["disable"]).output
        #expect(disable.contains("removed \(microphone.path)"), "\(disable)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dropIns.path).isEmpty)
    }

    /// Writes an executable script through a close-on-exec descriptor and renames it into place: a
    /// process another test forks meanwhile must not inherit it open for writing (exec: ETXTBSY).
    static func install(_ script: String, at url: URL) throws {
        let temporary = url.path + ".new"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o755)
        guard fd >= 0 else { throw TestFailure("cannot create \(temporary)") }
        let bytes = Array(script.utf8)
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
        guard written == bytes.count, rename(temporary, url.path) == 0 else { throw TestFailure("cannot write \(url.path)") }
    }

    @Test func restartsTheUnitsSystemdRunsForTheUser() throws {
        let (processes, dropIns) = try sandbox("enable-systemd")
        defer { processes.stopAll() }
        // `systemctl --user show` as systemd prints it: pipewire and wireplumber active, pipewire-pulse not installed.
        let bin = try processes.directory("bin")
        let calls = processes.root.appendingPathComponent("systemctl.calls")
        let script = """
            #!/bin/sh
            echo "$*" >> '\(calls.path)'
            case "$2" in
            show) printf 'Id=pipewire.service\\nLoadState=loaded\\nActiveState=active\\n\\nId=pipewire-pulse.service\\nLoadState=not-found\\nActiveState=inactive\\n\\nId=wireplumber.service\\nLoadState=loaded\\nActiveState=active\\n' ;;
            restart) exit 0 ;;
            *) exit 1 ;;
            esac
            """
        let systemctl = bin.appendingPathComponent("systemctl")
        try Self.install(script, at: systemctl)
        processes.environment["PATH"] = bin.path + ":" + (processes.environment["PATH"] ?? "/usr/bin:/bin")

        let enable = try processes.run(Self.hearctl, ["enable", "speaker"]).output
        #expect(enable.contains("restarted PipeWire: systemctl --user restart pipewire.service wireplumber.service"), "\(enable)")
        let disable = try processes.run(Self.hearctl, ["disable"]).output
        #expect(disable.contains("restarted PipeWire: systemctl --user restart pipewire.service wireplumber.service"), "\(disable)")
        #expect(!FileManager.default.fileExists(atPath: dropIns.appendingPathComponent("hear-speaker.conf").path))
        let asked = try String(contentsOf: calls, encoding: .utf8).split(separator: "\n").filter { $0.contains("restart") }
        #expect(asked == ["--user restart pipewire.service wireplumber.service", "--user restart pipewire.service wireplumber.service"])
        // A failed restart is an error that says the file was written.
        try Self.install(script.replacingOccurrences(of: "restart) exit 0", with: "restart) echo 'Job failed'; exit 1"), at: systemctl)
        let failed = try processes.run(Self.hearctl, ["enable", "mic"], check: false)
        #expect(failed.status == 1 && failed.output.contains("wrote") && failed.output.contains("Job failed"), "\(failed.output)")
    }

    @Test func echoCancelEnablesTheSpeakerChainTooAndKeepsAnEditedOne() throws {
        let (processes, dropIns) = try sandbox("enable-echo")
        defer { processes.stopAll() }
        // Only with mic: a usage error that writes nothing.
        let wrong = try processes.run(Self.hearctl, ["enable", "speaker", "--echo-cancel"], check: false)
        #expect(wrong.status == 2 && wrong.output.contains("--echo-cancel goes with mic"), "\(wrong.output)")
        #expect(!FileManager.default.fileExists(atPath: dropIns.path))
        // Both drop-ins; no PipeWire here, so the default output is not set, and the reply says what to do.
        let reply = try processes.run(Self.hearctl, ["enable", "mic", "--echo-cancel", "--no-restart", "--json"]).output
        let json = try JSONSerialization.jsonObject(with: Data(reply.utf8)) as? [String: Any]
        let speaker = dropIns.appendingPathComponent("hear-speaker.conf")
        #expect(json?["changed"] as? Bool == true && json?["speakerChanged"] as? Bool == true
                    && json?["speakerDropIn"] as? String == speaker.path && json?["defaultOutput"] as? Bool == false, "\(reply)")
        #expect((json?["messages"] as? [String])?.contains { $0.contains("could not make") && $0.contains("choose it as the output") } == true, "\(reply)")
        #expect(try Set(FileManager.default.contentsOfDirectory(atPath: dropIns.path)) == ["hear-microphone.conf", "hear-speaker.conf"])
        // A speaker chain of the user's own is kept as it is (it is still what plays).
        try (try String(contentsOf: speaker, encoding: .utf8) + "# mine\n").write(to: speaker, atomically: true, encoding: .utf8)
        let again = try processes.run(Self.hearctl, ["enable", "mic", "--echo-cancel", "--no-restart"]).output
        #expect(again.contains("kept as it is"), "\(again)")
        #expect(try String(contentsOf: speaker, encoding: .utf8).hasSuffix("# mine\n"))
    }
}
