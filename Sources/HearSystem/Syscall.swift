// Every system call the control server and hearctl make goes through here (and Sockets.swift,
// Files.swift, Threads.swift): interrupted calls are retried, failures come back as SystemError
// naming the call, and nothing here runs on the audio thread. No Foundation: the plugin links it.

import CHearSys
import Glibc

public enum Syscall {
    /// Runs `body` until it succeeds or fails with something other than EINTR.
    @discardableResult
    public static func retrying<T: BinaryInteger>(_ call: @autoclosure () -> String, _ body: () -> T) throws(SystemError) -> T {
        while true {
            let result = body()
            if result >= 0 { return result }
            let code = errno
            if code != EINTR { throw SystemError(call: call(), code: code) }
        }
    }

    public static func close(_ fd: Int32) {
        // Linux closes the descriptor even when close reports EINTR: never retry.
        if fd >= 0 { _ = Glibc.close(fd) }
    }

    /// Bytes read (0 at end of file); a Result, so callers can use it inside buffer closures.
    public static func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) -> Result<Int, SystemError> {
        Result { () throws(SystemError) -> Int in try retrying("read") { Glibc.read(fd, buffer.baseAddress, buffer.count) } }
    }

    /// Sends without raising SIGPIPE in the host process when the peer has gone, never waiting.
    public static func send(_ fd: Int32, _ buffer: UnsafeRawBufferPointer) -> Result<Int, SystemError> {
        Result { () throws(SystemError) -> Int in
            try retrying("send") { Glibc.send(fd, buffer.baseAddress, buffer.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT)) }
        }
    }

    public static func write(_ fd: Int32, _ buffer: UnsafeRawBufferPointer) -> Result<Int, SystemError> {
        Result { () throws(SystemError) -> Int in try retrying("write") { Glibc.write(fd, buffer.baseAddress, buffer.count) } }
    }

    /// poll(2); the timeout is not restarted after EINTR (callers loop on their own deadlines).
    public static func poll(_ fds: inout [pollfd], timeoutMilliseconds: Int32) throws(SystemError) -> Int32 {
        let count = nfds_t(fds.count)
        return try fds.withUnsafeMutableBufferPointer { (buffer) throws(SystemError) -> Int32 in
            let result = Glibc.poll(buffer.baseAddress, count, timeoutMilliseconds)
            if result >= 0 { return result }
            if errno == EINTR { return 0 }
            throw SystemError.last("poll")
        }
    }

    /// A non-blocking, close-on-exec pipe (the control thread's wake-up line).
    public static func pipe() throws(SystemError) -> (read: Int32, write: Int32) {
        var fds: [Int32] = [-1, -1]
        try fds.withUnsafeMutableBufferPointer { (buffer) throws(SystemError) in
            _ = try retrying("pipe2") { hear_pipe2(buffer.baseAddress, O_CLOEXEC | O_NONBLOCK) }
        }
        return (fds[0], fds[1])
    }

    public static func status(_ path: String) throws(SystemError) -> stat {
        var info = stat()
        _ = try retrying("stat \(path)") { lstat(path, &info) }
        return info
    }

    public static func status(descriptor fd: Int32, _ what: @autoclosure () -> String) throws(SystemError) -> stat {
        var info = stat()
        _ = try retrying("fstat \(what())") { fstat(fd, &info) }
        return info
    }

    /// Removes `path`; one that is already gone is not an error.
    public static func unlink(_ path: String) throws(SystemError) {
        do throws(SystemError) {
            _ = try retrying("unlink \(path)") { Glibc.unlink(path) }
        } catch where error.code == ENOENT {}
    }

    public static func rename(_ from: String, _ to: String) throws(SystemError) {
        _ = try retrying("rename \(from) to \(to)") { Glibc.rename(from, to) }
    }

    /// Creates `path` and missing parents with `mode`; existing directories are left as they are.
    /// True if the last component was created here.
    @discardableResult
    public static func makeDirectories(_ path: String, mode: mode_t) throws(SystemError) -> Bool {
        var prefix = ""
        var created = false
        for component in path.split(separator: "/") {
            prefix += "/" + component
            while true {
                if Glibc.mkdir(prefix, mode) == 0 { created = true; break }
                let code = errno
                if code == EINTR { continue }
                if code == EEXIST { created = false; break }
                throw SystemError(call: "mkdir \(prefix)", code: code)
            }
        }
        return created
    }

    /// Names in a directory (without "." and "..").
    public static func list(_ path: String) throws(SystemError) -> [String] {
        guard let directory = opendir(path) else { throw SystemError.last("opendir \(path)") }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = entryName(entry)
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// A directory entry's name, read up to its terminating NUL and never past it: the kernel sizes
    /// each entry to its name, so d_name's declared 256 bytes may run past the entry's end.
    public static func entryName(_ entry: UnsafePointer<dirent>) -> String {
        let offset = MemoryLayout<dirent>.offset(of: \dirent.d_name)!
        let name = (UnsafeRawPointer(entry) + offset).assumingMemoryBound(to: CChar.self)
        return String(cString: name)
    }

    /// A line for the host's log (stderr: PipeWire's journal), written straight to fd 2.
    public static func log(_ message: String) {
        let bytes = Array(("hear: " + message + "\n").utf8)
        bytes.withUnsafeBytes { raw in _ = Glibc.write(2, raw.baseAddress, raw.count) }
    }

    /// Seconds on the monotonic clock.
    public static func now() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) * 1e-9
    }

    /// The calling thread's kernel id.
    public static func threadID() -> Int32 { hear_gettid() }
}

/// A point on the monotonic clock that a sequence of calls must finish by.
public struct Deadline: Sendable {
    public let time: Double
    /// How long the deadline allowed in all, for messages.
    public let seconds: Double

    public init(seconds: Double) {
        self.seconds = seconds
        time = Syscall.now() + seconds
    }

    public var remaining: Double { time - Syscall.now() }
    public var passed: Bool { remaining <= 0 }

    /// For poll: at least 1 ms while time remains, 0 once it has passed.
    public var pollMilliseconds: Int32 {
        let left = remaining
        if left <= 0 { return 0 }
        return Int32(min(left * 1000, 3_600_000).rounded(.up))
    }
}
