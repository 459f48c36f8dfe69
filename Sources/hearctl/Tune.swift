// hearctl tune: a full-screen terminal UI for one chain. Sliders for the main controls and the
// chain's live meters (the status records `meter` reads), redrawn five times a second and at once
// after each key. A change is the request `hearctl set` sends (and `r` the one `hearctl reset`
// sends), so a suspended chain keeps it in its state file as with `set`. TuneView.swift decides
// what keys do and what the screen shows; this file owns the terminal and the chain.
//
// The terminal: raw mode (termios: no echo, no line buffering, no signals from keys: Ctrl-C is a
// key that quits), the alternate screen, the cursor hidden, lines not wrapped. All of it is put
// back on every way out: q, Esc, Ctrl-C, an error (a `defer`), and SIGINT, SIGTERM, SIGHUP and
// SIGQUIT (the handler restores the terminal, then dies by the same signal). The size is read
// again for every frame, and SIGWINCH redraws at once.

import ArgumentParser
import Foundation
import Glibc
import HearControl
import HearDSP
import HearSystem

extension Hearctl {
    struct Tune: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Tune one chain in a full-screen terminal UI: sliders for the main controls, live meters.",
            discussion: """
                Controls: bypass, noise reduction and model, output gain, compressor threshold and ratio, \
                the EQ bands' gains. Keys: up/down select; left/right change by one step (0.5 dB for \
                levels), shift+left/right or PgDn/PgUp by ten; Enter or space flips a switch; r puts the \
                selected control back to the chain's configured value (as `reset`); b toggles bypass; s \
                saves the chain's settings as a preset (it asks for a name); q, Esc or Ctrl-C quits. Each \
                change goes to the chain as `hearctl set` sends it. With more than one chain, name it \
                with --chain. Needs a terminal on stdin and stdout (exit status 2 otherwise).
                """)

        @OptionGroup var target: ChangeOption

        func run() throws {
            guard isatty(STDIN_FILENO) == 1, isatty(STDOUT_FILENO) == 1 else {
                throw CLIError("tune needs a terminal on stdin and stdout; in scripts use `hearctl set`, `get` and `meter`",
                               code: ExitStatus.usage)
            }
            let first = try Chains(timeout: target.timeout)
            let chain = try first.changing(target.number, verb: "tune")
            var session = TuneSession(chain: chain, timeout: target.timeout, chains: first)
            try TerminalScreen.begin()
            defer { TerminalScreen.end() }
            try session.loop()
        }
    }
}

/// One chain being tuned: the last reading, the view, and the changes sent.
struct TuneSession {
    let chain: Int
    let timeout: Double
    var chains: Chains
    var view = TuneView()
    var statuses: [(pid: Int32, status: InstanceStatus)] = []
    var problem: String?
    var lastSize = (width: 0, height: 0)

    /// Seconds between readings of the meters and values.
    static let interval = 0.2

    init(chain: Int, timeout: Double, chains: Chains) {
        self.chain = chain
        self.timeout = timeout
        self.chains = chains
        absorb(chains)
    }

    mutating func loop() throws {
        var nextReading = Syscall.now() + Self.interval
        draw()
        while true {
            let wait = max(0, nextReading - Syscall.now())
            guard let bytes = TerminalScreen.read(timeout: wait) else { return }  // the terminal went away
            for key in TuneKey.decode(bytes) {
                let action = view.handle(key)
                if action == .quit { return }
                perform(action)
            }
            if Syscall.now() >= nextReading {
                refresh()
                nextReading = Syscall.now() + Self.interval
            }
            draw()
        }
    }

    /// Reads the chains again (servers come and go: a suspended chain gets an instance when used).
    mutating func refresh() {
        do {
            absorb(try Chains(timeout: timeout))
        } catch {
            problem = "\(error)"
        }
    }

    mutating func absorb(_ fresh: Chains) {
        chains = fresh
        problem = nil
        statuses = fresh.statuses.filter { $0.status.chain == chain }.map { ($0.pid, $0.status) }
        for parameter in Parameter.allCases { view.configured[parameter] = fresh.configuredValue(chain, parameter) }
        guard fresh.known.contains(chain) else { return }
        do {
            for (parameter, value) in try fresh.values(chain, []) { view.values[parameter] = value }
        } catch {
            problem = "\(error)"
        }
    }

    mutating func perform(_ action: TuneAction) {
        do {
            switch action {
            case .none, .quit:
                return
            case .set(let parameter, let value):
                try change(.set(chain: chain, assignments: [Assignment(parameter, value)]), saving: [parameter: .some(value)], parameter)
            case .reset(let parameter):
                let value = chains.configuredValue(chain, parameter)
                try change(.reset(chain: chain, parameters: [parameter], values: [Assignment(parameter, value)]),
                           saving: [parameter: Float?.none], parameter)
            case .save(let name, let replace):
                guard let path = PresetStore.path(name) else {
                    throw CLIError("neither XDG_CONFIG_HOME nor HOME is set: nowhere to save presets")
                }
                if FileManager.default.fileExists(atPath: path) && !replace {
                    view.confirmReplace = true
                    return
                }
                let saved = try PresetStore.save(name, values: try chains.values(chain, []), chain: chain)
                view.prompt = nil
                view.message = "saved preset \(name): \(saved)"
            }
        } catch {
            view.message = "\(error)"
        }
    }

    /// Sends a change as `set`/`reset` do; the values the chain reports afterwards are shown.
    mutating func change(_ request: Request, saving changes: SettingsFile.Changes, _ parameter: Parameter) throws {
        guard chains.known.contains(chain) else {
            view.message = "chain \(Chains.describe(chain)) neither runs nor is configured: nothing changed"
            return
        }
        let result: ChangeResult
        do {
            result = try chains.change(chain, request: request, saving: changes, show: [parameter])
        } catch {
            // A server that went away since the last reading: read again, try once more.
            refresh()
            result = try chains.change(chain, request: request, saving: changes, show: [parameter])
        }
        for (parameter, value) in result.values { view.values[parameter] = value }
        let what = result.values.map { "\($0.0.key) = \(ParameterValue.describe($0.1, for: $0.0))" }.joined(separator: ", ")
        view.message = result.state == "running" ? what : "\(what) (suspended: saved, applied when the chain starts)"
        if let notice = result.notices.last { view.message += "; \(notice)" }
    }

    var title: String {
        let name = "hearctl tune: chain \(Chains.describe(chain))"
        if let problem { return "\(name): \(problem.split(separator: "\n").first ?? "")" }
        guard let first = statuses.first?.status else {
            return chains.known.contains(chain) ? "\(name): suspended (PipeWire starts it when an app uses it)"
                : "\(name): not running and not configured"
        }
        let count = statuses.count == 1 ? "" : ", \(statuses.count) instances"
        return "\(name): \(first.running ? "running" : "idle"), \(first.sampleRate) Hz, \(first.label)\(count)"
    }

    /// The first instance's meters, as `hearctl meter` draws them; every meter has its line.
    var meters: [String] {
        guard let (pid, status) = statuses.first else {
            return ["meters: idle" + (chains.known.contains(chain) ? " (suspended: no app uses the chain)" : "")]
        }
        var lines = Hearctl.MeterCommand.bars(pid: pid, status)
        lines[0] = "meters \(lines[0])"
        if status.meters[.noiseFloor] == nil { lines.append("  noise    floor n/a (noise suppression off)") }
        if status.meters[.speechProbability] == nil { lines.append("  speech   n/a (noise suppression off)") }
        return lines
    }

    mutating func draw() {
        let size = TerminalScreen.size()
        let frame = view.render(width: size.width, height: size.height, title: title, meters: meters)
        let clear = size != lastSize || TerminalScreen.takeResize()
        lastSize = size
        TerminalScreen.show(frame, width: size.width, height: size.height, clear: clear)
    }
}

/// The terminal while tune runs; every static so that the signal handler can reach it.
enum TerminalScreen {
    nonisolated(unsafe) static var saved = termios()
    nonisolated(unsafe) static var active: sig_atomic_t = 0
    nonisolated(unsafe) static var resized: sig_atomic_t = 0
    /// Written by the signal handler: set up before any handler is installed, never freed.
    nonisolated(unsafe) static var leave: UnsafeMutableBufferPointer<UInt8> = .init(start: nil, count: 0)

    static let enterSequence = "\u{1B}[?1049h\u{1B}[?25l\u{1B}[?7l\u{1B}[2J"
    static let leaveSequence = "\u{1B}[0m\u{1B}[?7h\u{1B}[?25h\u{1B}[?1049l"

    static func begin() throws {
        guard tcgetattr(STDIN_FILENO, &saved) == 0 else { throw CLIError("cannot read the terminal's settings: \(String(cString: strerror(errno)))") }
        let bytes = Array(leaveSequence.utf8)
        leave = .allocate(capacity: bytes.count)
        _ = leave.initialize(from: bytes)
        var raw = saved
        raw.c_iflag &= ~tcflag_t(BRKINT | ICRNL | INPCK | ISTRIP | IXON)
        raw.c_lflag &= ~tcflag_t(ECHO | ICANON | IEXTEN | ISIG)
        raw.c_cflag |= tcflag_t(CS8)
        withUnsafeMutableBytes(of: &raw.c_cc) { cc in
            cc[Int(VMIN)] = 0
            cc[Int(VTIME)] = 0
        }
        // Handled even when the parent left them blocked (the mask is inherited).
        var handled = sigset_t()
        sigemptyset(&handled)
        for signal in [SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGWINCH] {
            sigaddset(&handled, signal)
            var action = sigaction()
            action.__sigaction_handler.sa_handler = terminalSignal
            sigemptyset(&action.sa_mask)
            action.sa_flags = 0  // no SA_RESTART: poll wakes up on SIGWINCH
            sigaction(signal, &action, nil)
        }
        pthread_sigmask(SIG_UNBLOCK, &handled, nil)
        active = 1
        guard tcsetattr(STDIN_FILENO, TCSAFLUSH, &raw) == 0 else {
            let reason = String(cString: strerror(errno))
            end()
            throw CLIError("cannot put the terminal in raw mode: \(reason)")
        }
        write(enterSequence)
    }

    /// Puts the terminal back as it was (once; the signal handler may have done it already).
    static func end() {
        restore()
        for signal in [SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGWINCH] { Glibc.signal(signal, SIG_DFL) }
    }

    /// Async-signal-safe: write(2) and tcsetattr(3) only.
    static func restore() {
        guard active == 1 else { return }
        active = 0
        if let base = leave.baseAddress { _ = Glibc.write(STDOUT_FILENO, base, leave.count) }
        _ = tcsetattr(STDIN_FILENO, TCSANOW, &saved)
    }

    static func takeResize() -> Bool {
        defer { resized = 0 }
        return resized == 1
    }

    static func size() -> (width: Int, height: Int) {
        var size = winsize()
        if ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0 && size.ws_col > 0 && size.ws_row > 0 {
            return (Int(size.ws_col), Int(size.ws_row))
        }
        return (80, 24)
    }

    /// Bytes typed within `timeout` seconds (empty when none, or on a signal); nil at end of input.
    /// An Esc alone waits 50 ms for the rest of a sequence before it counts as the Esc key.
    static func read(timeout: Double) -> [UInt8]? {
        var bytes: [UInt8] = []
        guard wait(timeout) else { return bytes }
        guard readAvailable(into: &bytes) else { return nil }
        while bytes.last == 0x1B && wait(0.05) {
            guard readAvailable(into: &bytes) else { return nil }
        }
        return bytes
    }

    private static func wait(_ seconds: Double) -> Bool {
        var descriptor = pollfd(fd: STDIN_FILENO, events: Int16(POLLIN), revents: 0)
        let ready = poll(&descriptor, 1, Int32(max(0, min(seconds, 10)) * 1000))
        return ready > 0
    }

    /// False at end of input (the terminal hung up).
    private static func readAvailable(into bytes: inout [UInt8]) -> Bool {
        var buffer = [UInt8](repeating: 0, count: 256)
        let count = buffer.withUnsafeMutableBytes { Glibc.read(STDIN_FILENO, $0.baseAddress, $0.count) }
        if count > 0 { bytes += buffer[0..<count]; return true }
        if count < 0 && (errno == EINTR || errno == EAGAIN) { return true }
        return false
    }

    /// One frame: each line at its row, the rest of the row cleared; the selected row in reverse video.
    static func show(_ frame: TuneView.Frame, width: Int, height: Int, clear: Bool) {
        var text = clear ? "\u{1B}[2J" : ""
        for (index, line) in frame.lines.enumerated() {
            text += "\u{1B}[\(index + 1);1H"
            if index == frame.highlight {
                text += "\u{1B}[7m" + TuneView.pad(line, width) + "\u{1B}[0m"
            } else {
                // With wrapping off the cursor stays on the last column after a full line: no erase then.
                text += line + (line.count < width ? "\u{1B}[K" : "")
            }
        }
        if frame.lines.count < height { text += "\u{1B}[\(frame.lines.count + 1);1H\u{1B}[J" }
        write(text)
    }

    static func write(_ text: String) {
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let count = bytes.withUnsafeBytes { Glibc.write(STDOUT_FILENO, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { return }
            bytes = bytes.dropFirst(count)
        }
    }
}

/// Restores the terminal, then lets the signal do what it does by default (the shell sees 128+N).
/// SIGWINCH only marks the screen for a redraw.
private func terminalSignal(_ signal: Int32) {
    if signal == SIGWINCH {
        TerminalScreen.resized = 1
        return
    }
    TerminalScreen.restore()
    Glibc.signal(signal, SIG_DFL)
    raise(signal)
}
