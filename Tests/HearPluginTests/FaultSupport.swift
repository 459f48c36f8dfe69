// Support for the fault-injection tests: a fake control server that misbehaves on purpose (slow,
// endless, hostile), a look at a process's threads through /proc, and files planted where the
// plugin and hearctl will meet them.

import Foundation
import Glibc
import HearControl

/// A server on a Unix socket that serves every connection with `behaviour`, on its own thread.
final class FakeServer: @unchecked Sendable {
    let path: String
    let fd: Int32
    private let lock = NSLock()
    private var requestLines: [String] = []
    private var connectionCount = 0
    private let thread: Thread

    /// What a connection gets: the client's fd, and the server to note requests on.
    typealias Behaviour = @Sendable (Int32, FakeServer) -> Void

    init(path: String, behaviour: @escaping Behaviour) throws {
        self.path = path
        let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in for (i, byte) in path.utf8.enumerated() { raw[i] = byte } }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0, listen(listener, 8) == 0 else {
            close(listener)
            throw HostError.load("fake server at \(path): \(String(cString: strerror(errno)))")
        }
        fd = listener
        final class Box: @unchecked Sendable { weak var server: FakeServer? }
        let box = Box()
        thread = Thread {
            while true {
                let client = accept(listener, nil, nil)
                // The thread closes its listener itself, once stop() has shut it down: closed in stop()
                // while a connection is still being served, its number could be reused by the next
                // FakeServer's listener, and this thread would then accept that server's clients.
                if client < 0 { if errno == EINTR { continue }; close(listener); return }
                guard let server = box.server else { close(client); return }
                server.lock.withLock { server.connectionCount += 1 }
                var time = timeval(tv_sec: 10, tv_usec: 0)
                _ = setsockopt(client, SOL_SOCKET, SO_SNDTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
                behaviour(client, server)
                close(client)
            }
        }
        box.server = self
        thread.start()
    }

    private var stopped = false

    func stop() {
        guard !lock.withLock({ let was = stopped; stopped = true; return was }) else { return }
        shutdown(fd, Int32(SHUT_RDWR))
        unlink(path)
    }

    deinit { stop() }

    var requests: [String] { lock.withLock { requestLines } }
    var connections: Int { lock.withLock { connectionCount } }

    /// Reads one request line (up to 5 s) and notes it.
    func readRequest(_ client: Int32) -> String? {
        var time = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while recv(client, &byte, 1, 0) == 1 {
            if byte == 0x0A {
                let text = String(decoding: line, as: UTF8.self)
                lock.withLock { requestLines.append(text) }
                return text
            }
            line.append(byte)
        }
        return nil
    }

    /// False once the client has gone.
    @discardableResult static func send(_ client: Int32, _ text: String) -> Bool {
        let bytes = Array(text.utf8)
        return bytes.withUnsafeBytes { Glibc.send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } == bytes.count
    }

    static func greet(_ client: Int32) { send(client, Greeting(pid: 4242).line + "\n") }
}

/// The threads of a process, from /proc.
enum ThreadProbe {
    struct Stat {
        let cpuSeconds: Double
        let nice: Int
        /// SCHED_OTHER 0, SCHED_FIFO 1, SCHED_RR 2, SCHED_BATCH 3, SCHED_IDLE 5.
        let policy: Int
    }

    /// The thread of `pid` called `name`.
    static func thread(of pid: Int32, named name: String) -> Int32? {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        for task in tasks {
            let comm = (try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/comm", encoding: .utf8)) ?? ""
            if comm.trimmingCharacters(in: .whitespacesAndNewlines) == name { return Int32(task) }
        }
        return nil
    }

    static func stat(pid: Int32, thread: Int32) -> Stat? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/task/\(thread)/stat", encoding: .utf8),
              let paren = text.lastIndex(of: ")") else { return nil }
        // Fields from the 3rd (state) on.
        let fields = text[text.index(after: paren)...].split(separator: " ").map(String.init)
        guard fields.count > 38, let utime = Double(fields[11]), let stime = Double(fields[12]),
              let nice = Int(fields[16]), let policy = Int(fields[38]) else { return nil }
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        return Stat(cpuSeconds: (utime + stime) / ticks, nice: nice, policy: policy)
    }
}

/// Copies a program through a close-on-exec descriptor: a copy written through an inheritable one
/// while another test thread forks leaves that child holding it open for writing, and executing the
/// copy then fails with ETXTBSY ("Text file busy") for as long as the child lives.
func copyExecutable(_ source: String, to destination: String) throws {
    let bytes = try Data(contentsOf: URL(fileURLWithPath: source))
    let fd = open(destination, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o755)
    guard fd >= 0 else { throw HostError.load("create \(destination): \(String(cString: strerror(errno)))") }
    defer { close(fd) }
    var written = 0
    while written < bytes.count {
        let count = bytes.withUnsafeBytes { raw in write(fd, raw.baseAddress! + written, raw.count - written) }
        guard count > 0 else { throw HostError.load("write \(destination): \(String(cString: strerror(errno)))") }
        written += count
    }
}

enum Plant {
    /// A socket file nobody listens on, as a process killed with -9 leaves behind.
    static func staleSocket(at path: String) throws {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in for (i, byte) in path.utf8.enumerated() { raw[i] = byte } }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        close(fd)
        guard bound == 0 else { throw HostError.load("bind \(path): \(String(cString: strerror(errno)))") }
    }

    static func directory(_ path: String, mode: mode_t) throws {
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        chmod(path, mode)
    }

    static func mode(_ path: String) -> mode_t? {
        var info = Glibc.stat()
        return lstat(path, &info) == 0 ? info.st_mode & 0o7777 : nil
    }

    static func isSocket(_ path: String) -> Bool {
        var info = Glibc.stat()
        return lstat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFSOCK
    }
}

extension Sandbox {
    /// The log (stderr) of every host this sandbox started.
    var hostLogs: String {
        ((try? FileManager.default.contentsOfDirectory(atPath: base)) ?? []).filter { $0.hasSuffix(".log") }
            .map { (try? String(contentsOfFile: base + "/" + $0, encoding: .utf8)) ?? "" }.joined()
    }

    /// Waits up to `seconds` for `condition`.
    func waitFor(_ seconds: Double, _ condition: () throws -> Bool) rethrows -> Bool {
        let deadline = monotonicNow() + seconds
        repeat {
            if try condition() { return true }
            usleep(50_000)
        } while monotonicNow() < deadline
        return try condition()
    }

    func read(_ path: String) -> String? { try? String(contentsOfFile: path, encoding: .utf8) }
}
