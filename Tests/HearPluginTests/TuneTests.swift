// hearctl tune as a user meets it: the real hearctl in a shell inside a detached tmux session of
// 80x24 (Debian's tmux), driven with send-keys and read with capture-pane, against a real-time
// test host. Each change is checked with `hearctl get`, the preset file on disk, and the terminal
// afterwards: the shell is back (not the alternate screen), the cursor shows, the tty settings
// are the ones before (`stty -g`), and the exit status is the one the way out gives.
// Each test starts its own tmux server (-L, a unique name, its socket in the sandbox) and kills it
// on the way out, failed or not.

import Foundation
import Glibc
import TestSupport
import Testing

/// A tmux server of our own with one session ("tune") running /bin/sh in the sandbox's environment.
final class TmuxSession {
    static let executable = ["/usr/bin/tmux", "/bin/tmux"].first { FileManager.default.isExecutableFile(atPath: $0) }
    static var available: Bool { executable != nil }

    let name = "tune-\(getpid())-\(UUID().uuidString.prefix(8))"
    let environment: [String: String]
    /// Held so that the sandbox (and the server's socket in it) outlives the session: kill-server
    /// finds the server by that socket.
    let sandbox: Sandbox
    /// The server's pid, for the last resort when kill-server cannot reach it.
    private(set) var serverPid: pid_t = 0

    init(_ sandbox: Sandbox, width: Int = 80, height: Int = 24) throws {
        var environment = sandbox.environment
        environment["TMUX_TMPDIR"] = sandbox.base
        environment["TMUX"] = nil
        environment["PS1"] = "$ "
        environment["ENV"] = nil
        environment["TERM"] = "xterm-256color"
        self.environment = environment
        self.sandbox = sandbox
        // Short command lines (no wrapping at 80 columns): the shell starts in the sandbox, where
        // check-tty prints "$1-same" when the tty settings equal those saved in stty-before.
        try "stty -g | cmp -s - stty-before && echo \"$1-same\" || echo \"$1-changed\"\n"
            .write(toFile: sandbox.base + "/check-tty", atomically: true, encoding: .utf8)
        let started = try tmux("-f", "/dev/null", "new-session", "-d", "-s", "tune", "-c", sandbox.base,
                               "-x", String(width), "-y", String(height), "/bin/sh")
        guard started.status == 0 else { throw HostError.load("tmux new-session failed (\(started.status)): \(started.stderr)") }
        serverPid = pid_t(try format("#{pid}")) ?? 0
    }

    /// The server goes with its sessions and everything they run: by its socket, else by its pid.
    deinit {
        _ = try? tmux("kill-server")
        guard serverPid > 0 else { return }
        let deadline = monotonicNow() + 2
        while Command.isAlive(serverPid) && monotonicNow() < deadline { usleep(10_000) }
        if Command.isAlive(serverPid) { kill(serverPid, SIGKILL) }
    }

    /// One tmux command, to completion (killed after 10 s). Through TestSupport's `Command`: the
    /// tmux server it may start must hold none of the test's descriptors and must not inherit its
    /// blocked signals.
    @discardableResult
    func tmux(_ arguments: String...) throws -> CommandResult {
        try Command.run(Self.executable ?? "/usr/bin/tmux", ["-L", name] + arguments, environment: environment, timeout: 10)
    }

    /// Types `line` into the shell and presses Enter.
    func type(_ line: String) throws {
        try tmux("send-keys", "-t", "tune", "-l", line)
        try tmux("send-keys", "-t", "tune", "Enter")
    }

    /// Presses keys by tmux's names (Up, Right, S-Right, NPage, Escape, C-c, q, ...).
    func press(_ keys: String...) throws {
        for key in keys { try tmux("send-keys", "-t", "tune", key) }
    }

    /// The screen as it shows, row by row.
    var pane: String { (try? tmux("capture-pane", "-p", "-t", "tune").stdout) ?? "" }

    /// The screen with lines the terminal wrapped joined again (what a shell command printed).
    var joinedPane: String { (try? tmux("capture-pane", "-p", "-J", "-t", "tune").stdout) ?? "" }

    func format(_ format: String) throws -> String {
        try tmux("display-message", "-p", "-t", "tune", format).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The pane once `condition` holds (up to `timeout` s); the last capture and `what` otherwise, as an error.
    @discardableResult
    func wait(for what: String, joined: Bool = false, timeout: Double = 10, _ condition: (String) -> Bool) throws -> String {
        let deadline = monotonicNow() + timeout
        var last = ""
        while monotonicNow() < deadline {
            last = joined ? joinedPane : pane
            if condition(last) { return last }
            usleep(50_000)
        }
        throw HostError.load("tmux pane never showed \(what) in \(timeout) s; it shows:\n\(last)")
    }

    /// Waits until the shell prints the exit status of the command that ran in the foreground.
    func exitStatus() throws -> Int {
        let marker = "status-\(UUID().uuidString.prefix(6))"
        try type("echo \(marker)=$?")
        let pane = try wait(for: "\(marker)=N", joined: true) { $0.contains("\(marker)=") && $0.components(separatedBy: "\(marker)=").count > 2 }
        let text = pane.components(separatedBy: "\(marker)=").last ?? ""
        return Int(text.prefix { $0.isNumber }) ?? -1
    }
}

@Suite(.serialized, .enabled(if: TmuxSession.available, "tmux is not installed (Debian: apt-get install tmux)"))
struct TuneTests {
    /// The value `hearctl get` reports once it equals `expected` (or the last one after 3 s).
    func settled(_ sandbox: Sandbox, _ key: String, _ expected: Double) throws -> Double? {
        let deadline = monotonicNow() + 3
        var value = try sandbox.value(key, chain: 1)
        while value != expected && monotonicNow() < deadline {
            usleep(50_000)
            value = try sandbox.value(key, chain: 1)
        }
        return value
    }

    /// The row of `label` on the screen (the line that starts with it after the selection marker).
    func row(_ pane: String, _ label: String) -> String? {
        pane.split(separator: "\n").map(String.init).first { $0.dropFirst(2).hasPrefix(label) }
    }

    @Test func slidersChangeTheRunningChainMetersShowAndAPresetIsSaved() throws {
        let sandbox = try Sandbox()
        let host = try HostProcess(sandbox, chain: 1, controls: ["ns.enable": 1])
        try sandbox.waitForInstance(chain: 1)
        let tmux = try TmuxSession(sandbox)
        _ = try startTune(tmux, sandbox)
        var pane = try tmux.wait(for: "the tune screen with meters") {
            $0.contains("hearctl tune: chain 1 (mic): running, 48000 Hz") && $0.contains("  in ") && $0.contains("arrows: select/change")
                && !$0.contains("rms   -inf")  // the host's first blocks
        }
        #expect(try tmux.format("#{alternate_on} #{cursor_flag}") == "1 0", "tune runs on the alternate screen, cursor hidden")
        // 80x24: every line fits, the keys on the last row, the first control selected.
        let lines = pane.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        #expect(lines.prefix(24).last?.hasPrefix("arrows: select/change") == true, "\(pane)")
        for line in lines { #expect(line.count <= 80, "\(line.count) columns: \(line)") }
        for label in ["bypass", "noise reduction", "noise model", "output gain", "comp threshold", "comp ratio",
                      "EQ low 200 Hz", "EQ peak1 500 Hz", "EQ peak2 1.5 kHz", "EQ peak3 3 kHz", "EQ high 6 kHz"] {
            #expect(row(pane, label) != nil, "no '\(label)' row:\n\(pane)")
        }
        #expect(pane.contains("> bypass"), "\(pane)")
        #expect(row(pane, "noise reduction")?.contains("25 dB") == true && row(pane, "comp ratio")?.contains("4:1") == true, "\(pane)")
        #expect(row(pane, "noise model")?.contains("[learned]") == true, "\(pane)")
        // The meters of the running chain: a 0.02 sine is -37 dBFS RMS at the input.
        let input = try #require(pane.split(separator: "\n").first { $0.hasPrefix("  in ") }, "\(pane)")
        let rms = input.components(separatedBy: "rms").last.flatMap { Double($0.split(separator: " ").first ?? "") }
        #expect(rms.map { abs($0 + 37) < 0.5 } == true, "input meter: \(input)")
        for meter in ["  out ", "  comp GR ", "  limit GR ", "  noise ", "  speech "] {
            #expect(pane.contains(meter), "no '\(meter)' meter:\n\(pane)")
        }

        // Down to the output gain, three steps up: 0.5 dB each, from the schema's range and unit.
        try tmux.press("Down", "Down", "Down")
        try tmux.wait(for: "output gain selected") { $0.contains("> output gain") }
        try tmux.press("Right", "Right", "Right")
        #expect(try settled(sandbox, "gain", 1.5) == 1.5)
        pane = try tmux.wait(for: "gain 1.5 dB") { self.row($0, "output gain")?.contains("1.5 dB") == true }
        #expect(pane.contains("gain -24..24 dB, step 0.5 dB, shift 5 dB"), "\(pane)")
        // Shift: ten steps; PgDn: ten steps down; Left: one.
        try tmux.press("S-Right")
        #expect(try settled(sandbox, "gain", 6.5) == 6.5)
        try tmux.press("NPage", "Left")
        #expect(try settled(sandbox, "gain", 1) == 1)
        // The ratio moves on its log scale, onto two digits; r puts it back.
        try tmux.press("Down", "Down", "Right")
        #expect(try settled(sandbox, "comp.ratio", 4.2) == 4.2)
        try tmux.press("r")
        #expect(try settled(sandbox, "comp.ratio", 4) == 4)
        // b: bypass from any row; the meters say so.
        try tmux.press("b")
        #expect(try settled(sandbox, "bypass", 1) == 1)
        try tmux.wait(for: "the meters bypassed") { $0.contains("(bypassed)") && self.row($0, "bypass")?.contains("[on]") == true }
        try tmux.press("b")
        #expect(try settled(sandbox, "bypass", 0) == 0)

        // s: a name, Enter: the preset holds what the chain runs.
        try tmux.press("s")
        try tmux.wait(for: "the name prompt") { $0.contains("save preset as: _") }
        try tmux.tmux("send-keys", "-t", "tune", "-l", "tuned-mic")
        try tmux.press("Enter")
        let presetPath = sandbox.config + "/hear/presets/tuned-mic.conf"
        pane = try tmux.wait(for: "the preset saved") { $0.contains("saved preset tuned-mic: \(sandbox.config.prefix(40))") }
        let preset = try String(contentsOfFile: presetPath, encoding: .utf8)
        #expect(preset.contains("gain = 1\n") && !preset.contains("comp.ratio") && !preset.contains("bypass") && !preset.contains("freq"), "\(preset)")
        // The same name again asks before replacing.
        try tmux.press("s")
        try tmux.tmux("send-keys", "-t", "tune", "-l", "tuned-mic")
        try tmux.press("Enter")
        try tmux.wait(for: "the replace question") { $0.contains("(exists: Enter replaces it, Esc cancels)") }
        try tmux.press("Escape")
        try tmux.wait(for: "the prompt gone") { $0.contains("not saved") }

        // q: the shell again, the terminal as it was, exit status 0.
        try tmux.press("q")
        #expect(try restored(tmux, sandbox) == 0)
        // The changes stay on the chain.
        #expect(try sandbox.value("gain", chain: 1) == 1)
        let recording = try host.stop()
        #expect(recording.summary["nonfinite"] == 0, "\(recording.summary)")
    }

    /// Starts tune in the shell with its pid in a file; returns the pid once the screen shows.
    func startTune(_ tmux: TmuxSession, _ sandbox: Sandbox, _ arguments: String = "--chain mic", ready: String = "  in ") throws -> Int32 {
        try? FileManager.default.removeItem(atPath: sandbox.base + "/tune.pid")
        try tmux.type("stty -g > stty-before; sh -c 'echo $$ > tune.pid; exec \(Built.hearctl) tune \(arguments)'")
        try tmux.wait(for: "the tune screen") { $0.contains("arrows: select/change") && $0.contains(ready) }
        return Int32(try String(contentsOfFile: sandbox.base + "/tune.pid", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
    }

    /// After tune ended: the shell's screen, cursor shown, tty settings as before, and the exit status.
    func restored(_ tmux: TmuxSession, _ sandbox: Sandbox) throws -> Int {
        try tmux.wait(for: "the shell") { !$0.contains("arrows: select/change") }
        #expect(try tmux.format("#{alternate_on} #{cursor_flag}") == "0 1", "the alternate screen left, the cursor shown")
        let status = try tmux.exitStatus()
        let marker = "tty\(UUID().uuidString.prefix(6))"
        try tmux.type("sh check-tty \(marker)")
        let pane = try tmux.wait(for: "the tty compared", joined: true) { $0.contains("\n\(marker)-") }
        #expect(pane.contains("\n\(marker)-same"), "the tty settings differ after tune:\n\(pane)")
        try tmux.type("clear")
        try tmux.wait(for: "a clear screen") { !$0.contains(marker) }
        return status
    }

    @Test func everyWayOutRestoresTheTerminal() throws {
        let sandbox = try Sandbox()
        let host = try sandbox.startHost(chain: 1)
        let tmux = try TmuxSession(sandbox)
        // Esc and Ctrl-C are keys that quit (exit 0).
        for key in ["Escape", "C-c"] {
            _ = try startTune(tmux, sandbox)
            try tmux.press(key)
            #expect(try restored(tmux, sandbox) == 0, "after \(key)")
        }
        // SIGTERM and SIGINT from another process: restored, then dead by the signal (128+N).
        for (signal, status) in [(SIGTERM, 143), (SIGINT, 130), (SIGHUP, 129)] {
            let pid = try startTune(tmux, sandbox)
            #expect(pid > 0)
            kill(pid, signal)
            #expect(try restored(tmux, sandbox) == status, "after signal \(signal)")
        }
        _ = try host.stop()
    }

    /// The lines between the title and the first control, joined: the selected control's detail.
    static func help(_ lines: [Substring]) -> String {
        let first = lines.firstIndex { $0.hasPrefix("> ") } ?? min(2, lines.count)
        return lines[min(1, first)..<first].filter { !$0.isEmpty }.joined(separator: " ")
    }

    @Test func resizedTerminalsGetAFittingScreen() throws {
        let sandbox = try Sandbox()
        let host = try sandbox.startHost(chain: 1)
        let tmux = try TmuxSession(sandbox)
        _ = try startTune(tmux, sandbox)
        for (width, height) in [(60, 16), (120, 40), (80, 24)] {
            try tmux.tmux("resize-window", "-t", "tune", "-x", String(width), "-y", String(height))
            // The title on top, the selected control, the keys on the last row, no line wider than the screen.
            let pane = try tmux.wait(for: "a \(width)x\(height) screen") { pane in
                let lines = pane.split(separator: "\n", omittingEmptySubsequences: false)
                return lines.count >= height && lines[0].hasPrefix("hearctl tune: chain 1 (mic)") && pane.contains("> bypass")
                    && lines[height - 1].hasPrefix("arrows: select/change".prefix(min(width - 1, 21)))
                    && lines.allSatisfy { $0.count <= width }
                    // Drawn for this width (not the last frame cropped by tmux): the help whole, or cut with '>'.
                    && (height >= 24 ? Self.help(lines).hasSuffix("(click-free crossfade)") : (lines[1].count == width && lines[1].hasSuffix(">")))
            }
            // From 24 rows on, every control and the meters; fewer rows drop the meters first.
            #expect(pane.contains("  in ") == (height >= 24), "\(width)x\(height):\n\(pane)")
            #expect(pane.contains("EQ high") && pane.contains("output gain"), "\(width)x\(height):\n\(pane)")
            // The selected control's help (longer than 80 columns) wraps at the screen's width; only
            // where rows run short (16) is it cut to one line, marked with '>'.
            let lines = pane.split(separator: "\n", omittingEmptySubsequences: false)
            let help = Self.help(lines)
            #expect(help.hasPrefix("bypass off/on"), "\(width)x\(height): '\(help)'")
            #expect(height >= 24 ? help.hasSuffix("Pass the input through unchanged (click-free crossfade)") : help.hasSuffix(">"),
                    "\(width)x\(height): '\(help)'")
            #expect(height >= 24 || lines[2].hasPrefix("> bypass"), "\(width)x\(height):\n\(pane)")
        }
        try tmux.press("q")
        #expect(try restored(tmux, sandbox) == 0)
        _ = try host.stop()
    }

    @Test func aSuspendedChainIsTunedThroughItsStateFileAndStartsWithTheChanges() throws {
        let sandbox = try Sandbox()
        try sandbox.writeDropIn(chain: 1, controls: ["gain": 2, "comp.ratio": 3, "ns.enable": 0])
        let tmux = try TmuxSession(sandbox)
        _ = try startTune(tmux, sandbox, ready: "meters: idle (suspended: no app uses the chain)")
        let pane = tmux.pane
        #expect(pane.contains("hearctl tune: chain 1 (mic): suspended (PipeWire starts it when an app uses it)"), "\(pane)")
        // The values it will start with: the drop-in's.
        #expect(row(pane, "output gain")?.contains(" 2 dB") == true && row(pane, "comp ratio")?.contains("3:1") == true, "\(pane)")
        try tmux.press("Down", "Down", "Down", "Right", "Right")
        try tmux.wait(for: "the change saved") { $0.contains("gain = 3 dB (suspended: saved, applied when the chain starts)") }
        #expect(try String(contentsOfFile: sandbox.stateFile(chain: 1), encoding: .utf8).contains("gain = 3\n"))
        #expect(try sandbox.value("gain", chain: 1) == 3)
        // r: back to the drop-in's value, the saved one forgotten.
        try tmux.press("r")
        try tmux.wait(for: "the reset") { $0.contains("gain = 2 dB (suspended") }
        #expect(try !String(contentsOfFile: sandbox.stateFile(chain: 1), encoding: .utf8).contains("gain"))
        try tmux.press("Right")
        try tmux.wait(for: "gain 2.5") { $0.contains("gain = 2.5 dB (suspended") }
        // An app uses the chain: tune sees it start (meters), and it runs with the change.
        let host = try HostProcess(sandbox, chain: 1, controls: ["gain": 2, "comp.ratio": 3])
        try tmux.wait(for: "the chain running") { $0.contains("hearctl tune: chain 1 (mic): running") && $0.contains("  in ") }
        #expect(try sandbox.value("gain", chain: 1) == 2.5)
        // r on the running chain: the drop-in's value again, as `hearctl reset` gives.
        try tmux.press("r")
        #expect(try settled(sandbox, "gain", 2) == 2)
        try tmux.press("q")
        #expect(try restored(tmux, sandbox) == 0)
        _ = try host.stop()
    }

    /// With a hearing profile on (a fit switched the broadband compressor off), tune shows the
    /// profile's switch and ceiling instead of the compressor's sliders, which would do nothing.
    @Test func aHearingProfileHasItsRowsInsteadOfTheCompressors() throws {
        let sandbox = try Sandbox()
        try sandbox.writeDropIn(chain: 1, controls: ["mb.enable": 1, "comp.enable": 0, "ns.enable": 0])
        let tmux = try TmuxSession(sandbox)
        _ = try startTune(tmux, sandbox, ready: "meters: idle (suspended: no app uses the chain)")
        let pane = tmux.pane
        #expect(row(pane, "hearing profile") != nil && row(pane, "profile ceiling")?.contains("-1 dB") == true, "\(pane)")
        #expect(row(pane, "comp threshold") == nil && row(pane, "comp ratio") == nil, "\(pane)")
        try tmux.press("q")
    }

    @Test func refusesWithoutATerminalAndFollowsTheChainRule() throws {
        let sandbox = try Sandbox()
        // stdin and stdout are pipes here.
        let piped = try sandbox.hearctl("tune", "--chain", "mic")
        #expect(piped.status == 2 && piped.stderr.contains("tune needs a terminal on stdin and stdout"), "\(piped.status) \(piped.stderr)")
        // Two chains and no --chain: a usage error naming them, before the screen is touched.
        let mic = try HostProcess(sandbox, chain: 1)
        let speaker = try HostProcess(sandbox, chain: 2, label: "hear_stereo")
        try sandbox.waitForInstance(chain: 1)
        try sandbox.waitForInstance(chain: 2)
        var server: pid_t = 0
        do {
            let tmux = try TmuxSession(sandbox)
            server = tmux.serverPid
            try tmux.type("\(Built.hearctl) tune")
            let pane = try tmux.wait(for: "the chain rule", joined: true) { $0.contains("say which one `tune` changes") }
            #expect(pane.contains("--chain mic or --chain speaker"), "\(pane)")
            #expect(try tmux.exitStatus() == 2)
            #expect(try tmux.format("#{alternate_on} #{cursor_flag}") == "0 1")
        }
        // The session's tmux server is gone with it (gone, or a zombie its parent has not reaped yet).
        #expect(server > 0)
        #expect(!Command.isAlive(server), "tmux server \(server) still runs")
        _ = try mic.stop()
        _ = try speaker.stop()
    }
}
