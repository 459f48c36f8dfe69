// The daemons and tools one test needs, started with `Command` and `ChildProcess` in a private
// environment (IntegrationTests' sessions, HearPluginTests' PipeWire test). Every process started here is recorded, and `stopAll()` (called from
// each test's `defer`) ends them: SIGTERM, then SIGKILL after a grace period, so a failing test
// leaves nothing running.

import Foundation
import Glibc

public struct TestFailure: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// The processes one test started, and the environment they share.
public final class Processes: @unchecked Sendable {
    /// The private runtime, config, state and home directories live under here.
    public let root: URL
    public var environment: [String: String]
    private var children: [ChildProcess] = []
    /// Pids of everything started so far (for the test that checks they are all stopped).
    public var pids: [pid_t] { children.map(\.pid) }

    public init(name: String) throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("hear-\(name)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        var environment = ProcessInfo.processInfo.environment
        for key in ["PIPEWIRE_REMOTE", "PULSE_SERVER", "PULSE_RUNTIME_PATH", "DBUS_SESSION_BUS_ADDRESS", "DISPLAY",
                    "WAYLAND_DISPLAY", "PIPEWIRE_CONFIG_DIR", "PIPEWIRE_RUNTIME_DIR", "HEAR_RUNTIME_DIR"] {
            environment[key] = nil
        }
        self.environment = environment
    }

    public func directory(_ name: String, mode: Int = 0o700) throws -> URL {
        let url = root.appendingPathComponent(name)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true, attributes: [.posixPermissions: mode])
        return url
    }

    /// Starts a program in the background; its output goes to `<root>/<log>.log`.
    @discardableResult
    public func start(_ tool: String, _ arguments: [String], log: String) throws -> ChildProcess {
        let path = root.appendingPathComponent(log + ".log").path
        let child: ChildProcess
        do { child = try ChildProcess(try Self.which(tool), arguments, environment: environment, stdout: path, stderr: path) } catch {
            throw TestFailure("\(error)")
        }
        children.append(child)
        return child
    }

    /// Runs a short command to completion; fails after `timeout` seconds, or on a non-zero exit when `check`.
    @discardableResult
    public func run(_ tool: String, _ arguments: [String], timeout: Double = 30, check: Bool = true) throws -> CommandResult {
        let path = try Self.which(tool)
        let result: CommandResult
        do { result = try Command.run(path, arguments, environment: environment, timeout: timeout, mergingOutput: true) } catch {
            throw TestFailure("\(error)")
        }
        if check && result.status != 0 { throw TestFailure("\(tool) \(arguments.joined(separator: " ")) exited \(result.status): \(result.output)") }
        return result
    }

    /// Ends every process this test started, newest first, and removes the directory tree.
    public func stopAll(keepFiles: Bool = false) {
        for child in children.reversed() { child.stop(timeout: 5) }
        children = []
        if !keepFiles { try? FileManager.default.removeItem(at: root) }
    }

    /// The end of a log written by `start`, for failure messages.
    public func log(_ name: String) -> String {
        let text = (try? String(contentsOf: root.appendingPathComponent(name + ".log"), encoding: .utf8)) ?? ""
        return String(text.suffix(3000))
    }

    public static func which(_ tool: String) throws -> String {
        do { return try Command.which(tool) } catch { throw TestFailure("\(error)") }
    }
}

/// Polls `condition` every 50 ms until it holds; throws with `what` after `timeout` seconds.
public func waitFor(_ what: String, timeout: Double = 30, _ condition: () throws -> Bool) throws {
    let deadline = Date().addingTimeInterval(timeout)
    while true {
        if try condition() { return }
        if Date() > deadline { throw TestFailure("timed out after \(timeout) s waiting for \(what)") }
        usleep(50_000)
    }
}
