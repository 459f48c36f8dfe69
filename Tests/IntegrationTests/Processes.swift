// Starting and stopping the daemons and tools a test needs. Every process started here is
// recorded, and `stopAll()` (called from each test's `defer`) ends them: SIGTERM, then SIGKILL
// after a grace period, so a failing test leaves nothing running.
//
// posix_spawn rather than Foundation's Process: children get an empty signal mask and default
// handlers (a test runner's threads block signals, and wireplumber or dbus-daemon would inherit
// that and ignore SIGTERM), and the test reaps them itself, at once.

import Foundation
import Glibc
import TestSupport

struct IntegrationError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A child process started by `Processes`.
final class Child: @unchecked Sendable {
    let pid: pid_t
    let command: String
    private(set) var status: Int32?

    init(pid: pid_t, command: String) {
        self.pid = pid
        self.command = command
    }

    /// Reaps the child if it has exited; true while it runs.
    var isRunning: Bool {
        if status != nil { return false }
        var raw: Int32 = 0
        let result = waitpid(pid, &raw, WNOHANG)
        if result == pid {
            // WIFEXITED: the low 7 bits are 0; the exit code is in the next byte. Killed: 128 + signal.
            status = raw & 0x7F == 0 ? (raw >> 8) & 0xFF : 128 + (raw & 0x7F)
            return false
        }
        if result < 0 { status = -1; return false }
        return true
    }

    /// Waits up to `timeout` seconds; true if it ended.
    func wait(timeout: Double) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while isRunning {
            if Date() > deadline { return false }
            usleep(5_000)
        }
        return true
    }
}

/// The processes one test started, and the environment they share.
final class Processes: @unchecked Sendable {
    /// The private runtime, config, state and home directories live under here.
    let root: URL
    var environment: [String: String]
    private var children: [Child] = []
    /// Pids of everything started so far (for the test that checks they are all stopped).
    var pids: [pid_t] { children.map(\.pid) }

    init(name: String) throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("hear-\(name)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        var environment = ProcessInfo.processInfo.environment
        for key in ["PIPEWIRE_REMOTE", "PULSE_SERVER", "PULSE_RUNTIME_PATH", "DBUS_SESSION_BUS_ADDRESS", "DISPLAY",
                    "WAYLAND_DISPLAY", "PIPEWIRE_CONFIG_DIR", "PIPEWIRE_RUNTIME_DIR", "HEAR_RUNTIME_DIR"] {
            environment[key] = nil
        }
        self.environment = environment
    }

    func directory(_ name: String, mode: Int = 0o700) throws -> URL {
        let url = root.appendingPathComponent(name)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true, attributes: [.posixPermissions: mode])
        return url
    }

    /// Starts a program in the background; its output goes to `<root>/<log>.log`.
    @discardableResult
    func start(_ tool: String, _ arguments: [String], log: String) throws -> Child {
        try spawn(tool, arguments, output: root.appendingPathComponent(log + ".log"))
    }

    /// Runs a short command to completion; fails after `timeout` seconds, or on a non-zero exit when `check`.
    @discardableResult
    func run(_ tool: String, _ arguments: [String], timeout: Double = 30, check: Bool = true) throws -> (status: Int32, output: String) {
        let output = root.appendingPathComponent("run-\(UInt32.random(in: 0...UInt32.max)).out")
        defer { try? FileManager.default.removeItem(at: output) }
        let child = try spawn(tool, arguments, output: output)
        let command = "\(tool) \(arguments.joined(separator: " "))"
        guard child.wait(timeout: timeout) else {
            stop(child, signal: SIGKILL)
            throw IntegrationError("\(command) did not finish within \(timeout) s")
        }
        let text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
        let status = child.status ?? -1
        if check && status != 0 { throw IntegrationError("\(command) exited \(status): \(text)") }
        return (status, text)
    }

    private func spawn(_ tool: String, _ arguments: [String], output: URL) throws -> Child {
        let path = try Self.which(tool)
        let fd = open(output.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw IntegrationError("cannot open \(output.path)") }
        defer { close(fd) }
        let pid: pid_t
        do { pid = try Spawn.start(path, arguments, environment: environment, stdout: fd, stderr: fd) } catch {
            throw IntegrationError("\(error)")
        }
        let child = Child(pid: pid, command: ([tool] + arguments).joined(separator: " "))
        children.append(child)
        return child
    }

    /// Sends `signal` and waits for the child to end (SIGKILL after `timeout`).
    func stop(_ child: Child, signal: Int32 = SIGTERM, timeout: Double = 10) {
        guard child.isRunning else { return }
        kill(child.pid, signal)
        if !child.wait(timeout: timeout) {
            kill(child.pid, SIGKILL)
            _ = child.wait(timeout: 10)
        }
    }

    /// Whether `pid` still runs (not a zombie, not gone).
    static func isAlive(_ pid: pid_t) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return false }
        return stat[stat.index(after: close)...].trimmingCharacters(in: .whitespaces).first != "Z"
    }

    /// Ends every process this test started, newest first, and removes the directory tree.
    func stopAll(keepFiles: Bool = false) {
        for child in children.reversed() { stop(child, timeout: 5) }
        children = []
        if !keepFiles { try? FileManager.default.removeItem(at: root) }
    }

    /// The end of a log written by `start`, for failure messages.
    func log(_ name: String) -> String {
        let text = (try? String(contentsOf: root.appendingPathComponent(name + ".log"), encoding: .utf8)) ?? ""
        return String(text.suffix(3000))
    }

    static func which(_ tool: String) throws -> String {
        if tool.hasPrefix("/") { return tool }
        for directory in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
            let candidate = "\(directory)/\(tool)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        throw IntegrationError("\(tool) not found on PATH: `make deps` installs the Debian packages the integration tests use")
    }
}

/// Polls `condition` every 50 ms until it holds; throws with `what` after `timeout` seconds.
func waitFor(_ what: String, timeout: Double = 30, _ condition: () throws -> Bool) throws {
    let deadline = Date().addingTimeInterval(timeout)
    while true {
        if try condition() { return }
        if Date() > deadline { throw IntegrationError("timed out after \(timeout) s waiting for \(what)") }
        usleep(50_000)
    }
}
