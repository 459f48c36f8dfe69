// The tests' one way to start programs: `Command.run` for a command that runs to completion,
// `ChildProcess` for one that runs beside the test (a host, a daemon, a fake server).
//
// posix_spawn rather than Foundation's Process: the child gets only stdin (/dev/null), stdout and
// stderr, every other descriptor closed (Process hands it a descriptor it watches for the child's
// end, which a daemon such as the tmux server would keep open for ever), an empty signal mask and
// default handlers (the test runner's threads block signals, and a child, or the programs it
// starts, such as wireplumber or dbus-daemon, would inherit that and ignore SIGTERM).
// Output goes to files, not pipes: a chatty child never blocks on a full pipe, and a grandchild
// that keeps the descriptor cannot hold up the test. Children are waited for and killed by pid:
// at their timeout, and when the `ChildProcess` goes, also when the test fails.

import Foundation
import Glibc

public struct ProcessFailure: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

public struct CommandResult: Sendable {
    /// The exit status, or 128 + the signal that ended the command.
    public let status: Int32
    public let stdout: String
    /// Empty when the command ran with `mergingOutput`.
    public let stderr: String
    /// Everything the command wrote (in the order written when it ran with `mergingOutput`).
    public var output: String { stdout + stderr }
}

public enum Command {
    /// Runs `tool` (a path, or a name looked up on PATH) with `arguments` and exactly `environment`
    /// to completion and collects its output. After `timeout` seconds it is killed and this throws.
    /// `mergingOutput` sends stderr into the same file as stdout, so the result keeps their order.
    public static func run(_ tool: String, _ arguments: [String],
                           environment: [String: String] = ProcessInfo.processInfo.environment,
                           timeout: Double = 30, mergingOutput: Bool = false) throws -> CommandResult {
        try run(tool, arguments, environment: environment, seconds: timeout, mergingOutput: mergingOutput, timeoutIsAnError: true)
    }

    /// Runs a command that does not end by itself (`hearctl meter`) for `seconds`, then kills it:
    /// what it wrote by then, and its status (128 + SIGKILL if it was still running).
    public static func output(of tool: String, _ arguments: [String],
                              environment: [String: String] = ProcessInfo.processInfo.environment,
                              after seconds: Double, mergingOutput: Bool = false) throws -> CommandResult {
        try run(tool, arguments, environment: environment, seconds: seconds, mergingOutput: mergingOutput, timeoutIsAnError: false)
    }

    static func run(_ tool: String, _ arguments: [String], environment: [String: String], seconds timeout: Double,
                    mergingOutput: Bool, timeoutIsAnError: Bool) throws -> CommandResult {
        let path = try which(tool)
        let out = try anonymousFile()
        defer { close(out) }
        let err = try mergingOutput ? out : anonymousFile()
        defer { if err != out { close(err) } }
        let child = try ChildProcess(path: path, arguments, environment: environment, stdout: out, stderr: err)
        if !child.wait(timeout: timeout) {
            child.stop(signal: SIGKILL)
            guard timeoutIsAnError else {
                return CommandResult(status: child.status ?? -1, stdout: contents(of: out), stderr: err == out ? "" : contents(of: err))
            }
            throw ProcessFailure("\(child.command) did not finish within \(timeout) s; it wrote: \(contents(of: out))\(err == out ? "" : contents(of: err))")
        }
        return CommandResult(status: child.status ?? -1, stdout: contents(of: out), stderr: err == out ? "" : contents(of: err))
    }

    /// The executable `tool` names: itself when it is a path, else the first on PATH.
    public static func which(_ tool: String) throws -> String {
        if tool.contains("/") { return tool }
        for directory in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
            let candidate = "\(directory)/\(tool)"
            if access(candidate, X_OK) == 0 { return candidate }
        }
        throw ProcessFailure("\(tool) not found on PATH: `make deps` installs the Debian packages the tests use")
    }

    /// Whether `pid` runs (not gone, not a zombie waiting for its parent).
    public static func isAlive(_ pid: pid_t) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let end = stat.lastIndex(of: ")") else { return false }
        return stat[stat.index(after: end)...].trimmingCharacters(in: .whitespaces).first != "Z"
    }

    /// A file with no name (unlinked at once), so nothing is left behind whatever happens.
    static func anonymousFile() throws -> Int32 {
        var template = Array("/tmp/hear-test-output-XXXXXX".utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard fd >= 0 else { throw ProcessFailure("mkstemp: \(String(cString: strerror(errno)))") }
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) }
        return fd
    }

    static func contents(of fd: Int32) -> String {
        var data = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 65536)
        var offset: off_t = 0
        while true {
            let count = chunk.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, offset) }
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { break }
            data += chunk[0..<count]
            offset += off_t(count)
        }
        return String(decoding: data, as: UTF8.self)
    }

    /// The pid of a process that has exited and been reaped (/bin/true): a pid nothing owns.
    public static func exitedPID() throws -> pid_t {
        let child = try ChildProcess("/bin/true", [])
        child.waitUntilExit()
        return child.pid
    }

    /// posix_spawn with stdin from `stdin` (/dev/null where nil), stdout and stderr on the given
    /// descriptors (they may be the same one), every other descriptor closed, an empty signal mask
    /// and default handlers.
    static func spawn(_ path: String, _ arguments: [String], environment: [String: String],
                      stdin: Int32? = nil, stdout: Int32, stderr: Int32) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if let stdin {
            posix_spawn_file_actions_adddup2(&actions, stdin, 0)
        } else {
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        }
        posix_spawn_file_actions_adddup2(&actions, stdout, 1)
        posix_spawn_file_actions_adddup2(&actions, stderr, 2)
        // Not in Swift's Glibc module (_GNU_SOURCE only).
        typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np") else {
            throw ProcessFailure("this glibc has no posix_spawn_file_actions_addclosefrom_np (2.34 or later needed)")
        }
        _ = unsafeBitCast(symbol, to: CloseFrom.self)(&actions, 3)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var empty = sigset_t(), defaults = sigset_t()
        sigemptyset(&empty)
        sigemptyset(&defaults)
        for signal in [SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGPIPE, SIGCHLD, SIGWINCH, SIGUSR1, SIGUSR2] {
            sigaddset(&defaults, signal)
        }
        posix_spawnattr_setsigmask(&attributes, &empty)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for pointer in argv + envp { free(pointer) } }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, path, &actions, &attributes, argv, envp)
        guard result == 0 else { throw ProcessFailure("posix_spawn \(path): \(String(cString: strerror(result)))") }
        return pid
    }
}

/// A program running beside the test. It is killed (SIGKILL) and reaped when this goes, if it
/// still runs, so a test that fails or throws leaves nothing behind.
public final class ChildProcess: @unchecked Sendable {
    public let pid: pid_t
    public let command: String
    /// Set once the child has been reaped: its exit status, or 128 + the signal that ended it.
    public private(set) var status: Int32?

    /// Starts `tool` (a path, or a name looked up on PATH); stdout and stderr go to the files at
    /// the given paths (created or truncated; the same path for both gives one file in the order
    /// written), or to /dev/null where nil.
    public convenience init(_ tool: String, _ arguments: [String],
                            environment: [String: String] = ProcessInfo.processInfo.environment,
                            stdout: String? = nil, stderr: String? = nil) throws {
        let path = try Command.which(tool)
        func openOutput(_ file: String?) throws -> Int32 {
            let fd = open(file ?? "/dev/null", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
            guard fd >= 0 else { throw ProcessFailure("cannot open \(file ?? "/dev/null"): \(String(cString: strerror(errno)))") }
            return fd
        }
        let out = try openOutput(stdout)
        defer { close(out) }
        let err = try stderr == stdout ? out : openOutput(stderr)
        defer { if err != out { close(err) } }
        try self.init(path: path, arguments, environment: environment, stdout: out, stderr: err)
    }

    init(path: String, _ arguments: [String], environment: [String: String], stdin: Int32? = nil,
         stdout: Int32, stderr: Int32) throws {
        pid = try Command.spawn(path, arguments, environment: environment, stdin: stdin, stdout: stdout, stderr: stderr)
        command = ([path] + arguments).joined(separator: " ")
    }

    deinit {
        if isRunning {
            kill(pid, SIGKILL)
            _ = waitUntilExit()
        }
    }

    /// Reaps the child if it has ended; true while it runs.
    public var isRunning: Bool { reap(blocking: false) }

    /// Waits up to `timeout` seconds; true if it ended.
    public func wait(timeout: Double) -> Bool {
        let deadline = Self.now() + timeout
        while isRunning {
            if Self.now() > deadline { return false }
            usleep(2_000)
        }
        return true
    }

    /// Waits however long it takes; the status.
    @discardableResult
    public func waitUntilExit() -> Int32 {
        while reap(blocking: true) {}
        return status ?? -1
    }

    /// Sends `signal` and waits for the child to end; SIGKILL after `timeout` seconds.
    public func stop(signal: Int32 = SIGTERM, timeout: Double = 10) {
        guard isRunning else { return }
        kill(pid, signal)
        if !wait(timeout: timeout) {
            kill(pid, SIGKILL)
            waitUntilExit()
        }
    }

    private func reap(blocking: Bool) -> Bool {
        if status != nil { return false }
        var raw: Int32 = 0
        let result = waitpid(pid, &raw, blocking ? 0 : WNOHANG)
        if result == pid {
            // Exited: the low 7 bits are 0 and the exit code is in the next byte. Killed: 128 + signal.
            status = raw & 0x7F == 0 ? (raw >> 8) & 0xFF : 128 + (raw & 0x7F)
            return false
        }
        if result < 0 {
            if errno == EINTR { return true }
            status = -1
            return false
        }
        return true
    }

    private static func now() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) * 1e-9
    }
}

/// A program the test talks to line by line: its stdin and stdout are pipes, its stderr an
/// unnamed file read at the end. The descriptors close, and the program is killed if it still
/// runs, when this goes.
public final class Conversation: @unchecked Sendable {
    public let child: ChildProcess
    private var toChild: Int32
    private let fromChild: Int32
    private let errors: Int32
    private var buffer: [UInt8] = []

    public init(_ tool: String, _ arguments: [String],
                environment: [String: String] = ProcessInfo.processInfo.environment) throws {
        // A program that ends early must fail the test, not kill it: a write to its closed stdin
        // returns EPIPE instead of raising SIGPIPE (children get the default action back at spawn).
        signal(SIGPIPE, SIG_IGN)
        var input: [Int32] = [0, 0], output: [Int32] = [0, 0]
        // (pipe2 is not in Swift's Glibc module; another test's spawn in between closes every
        // descriptor above 2 in its child anyway.)
        guard pipe(&input) == 0 else { throw ProcessFailure("pipe: \(String(cString: strerror(errno)))") }
        guard pipe(&output) == 0 else {
            close(input[0]); close(input[1])
            throw ProcessFailure("pipe: \(String(cString: strerror(errno)))")
        }
        for fd in input + output { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        errors = try Command.anonymousFile()
        do {
            child = try ChildProcess(path: try Command.which(tool), arguments, environment: environment,
                                     stdin: input[0], stdout: output[1], stderr: errors)
        } catch {
            for fd in input + output + [errors] { close(fd) }
            throw error
        }
        close(input[0])
        close(output[1])
        toChild = input[1]
        fromChild = output[0]
    }

    deinit {
        if toChild >= 0 { close(toChild) }
        close(fromChild)
        close(errors)
    }

    /// The next line the program writes (without its newline); nil at the end of its output.
    public func readLine() -> String? {
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            if let newline = buffer.firstIndex(of: 0x0A) {
                let line = String(decoding: buffer[..<newline], as: UTF8.self)
                buffer.removeSubrange(...newline)
                return line
            }
            let count = chunk.withUnsafeMutableBytes { read(fromChild, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { return nil }
            buffer += chunk[0..<count]
        }
    }

    /// Writes `line` and a newline to the program's stdin.
    public func send(_ line: String) {
        var bytes = Array((line + "\n").utf8)[...]
        while !bytes.isEmpty {
            let count = bytes.withUnsafeBytes { write(toChild, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { return }
            bytes = bytes.dropFirst(count)
        }
    }

    /// Closes the program's stdin, waits for it to end (killed after `timeout` s): its status and stderr.
    public func finish(timeout: Double = 30) -> (status: Int32, stderr: String) {
        if toChild >= 0 { close(toChild); toChild = -1 }
        if !child.wait(timeout: timeout) { child.stop(signal: SIGKILL) }
        return (child.status ?? -1, Command.contents(of: errors))
    }
}
