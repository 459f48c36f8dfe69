// Every system call the control server makes goes through here: interrupted calls are retried,
// failures come back as typed errors that name the call, and nothing here runs on the audio thread.

import CHearSys
import Glibc

struct SystemError: Error, CustomStringConvertible {
    let call: String
    let code: Int32

    var description: String { "\(call): \(String(cString: strerror(code)))" }
    var wouldBlock: Bool { code == EAGAIN || code == EWOULDBLOCK }
}

enum Syscall {
    /// Runs `body` until it succeeds or fails with something other than EINTR.
    @discardableResult
    static func retrying<T: BinaryInteger>(_ call: String, _ body: () -> T) throws(SystemError) -> T {
        while true {
            let result = body()
            if result >= 0 { return result }
            let code = errno
            if code != EINTR { throw SystemError(call: call, code: code) }
        }
    }

    static func close(_ fd: Int32) {
        // Linux closes the descriptor even when close reports EINTR: never retry.
        if fd >= 0 { _ = Glibc.close(fd) }
    }

    /// Bytes read (0 at end of file); a Result, so callers can use it inside buffer closures.
    static func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) -> Result<Int, SystemError> {
        Result { () throws(SystemError) -> Int in try retrying("read") { Glibc.read(fd, buffer.baseAddress, buffer.count) } }
    }

    /// Sends without raising SIGPIPE in the host process when the peer has gone.
    static func send(_ fd: Int32, _ buffer: UnsafeRawBufferPointer) -> Result<Int, SystemError> {
        Result { () throws(SystemError) -> Int in
            try retrying("send") { Glibc.send(fd, buffer.baseAddress, buffer.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT)) }
        }
    }

    static func write(_ fd: Int32, _ buffer: UnsafeRawBufferPointer) -> Result<Int, SystemError> {
        Result { () throws(SystemError) -> Int in try retrying("write") { Glibc.write(fd, buffer.baseAddress, buffer.count) } }
    }

    static func poll(_ fds: inout [pollfd], timeoutMilliseconds: Int32) throws(SystemError) -> Int32 {
        let count = nfds_t(fds.count)
        return try fds.withUnsafeMutableBufferPointer { (buffer) throws(SystemError) -> Int32 in
            try retrying("poll") { Glibc.poll(buffer.baseAddress, count, timeoutMilliseconds) }
        }
    }

    static func pipe() throws(SystemError) -> (read: Int32, write: Int32) {
        var fds: [Int32] = [-1, -1]
        try fds.withUnsafeMutableBufferPointer { (buffer) throws(SystemError) in
            _ = try retrying("pipe2") { hear_pipe2(buffer.baseAddress, O_CLOEXEC | O_NONBLOCK) }
        }
        return (fds[0], fds[1])
    }

    /// A Unix socket address, or nil if the path does not fit in sun_path.
    static func address(_ path: String) -> sockaddr_un? {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard !bytes.isEmpty, bytes.count < capacity, !bytes.contains(0) else { return nil }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in bytes.enumerated() { raw[index] = byte }
            raw[bytes.count] = 0
        }
        return address
    }

    /// A non-blocking listening socket at `path`, mode 0600. It is bound under a temporary name and
    /// renamed into place once it listens: a client never finds the path refusing connections, which
    /// would mark it stale.
    static func listen(at path: String, backlog: Int32) throws(SystemError) -> Int32 {
        let temporary = path + ".new"
        guard var address = address(temporary) else { throw SystemError(call: "socket path \(temporary)", code: ENAMETOOLONG) }
        try unlink(temporary)
        let fd = try retrying("socket") { socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0) }
        do throws(SystemError) {
            // The directory is 0700 already; 0600 on the socket closes the window for other users anyway.
            _ = try retrying("fchmod") { fchmod(fd, 0o600) }
            _ = try retrying("bind \(temporary)") {
                withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
                }
            }
            _ = try retrying("chmod \(temporary)") { chmod(temporary, 0o600) }
            _ = try retrying("listen") { Glibc.listen(fd, backlog) }
            _ = try retrying("rename \(temporary)") { rename(temporary, path) }
            return fd
        } catch {
            close(fd)
            try? unlink(temporary)
            throw error
        }
    }

    /// The next pending connection (non-blocking, close-on-exec), or nil when there is none.
    static func accept(_ listener: Int32) throws(SystemError) -> Int32? {
        do throws(SystemError) {
            return try retrying("accept4") { hear_accept4(listener, Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue)) }
        } catch where error.wouldBlock || error.code == ECONNABORTED {
            return nil
        }
    }

    /// The uid of the process on the other end of a Unix socket.
    static func peerUID(_ fd: Int32) throws(SystemError) -> uid_t {
        var uid: UInt32 = 0
        _ = try retrying("getsockopt(SO_PEERCRED)") { hear_peer_uid(fd, &uid) }
        return uid
    }

    /// Creates `path` (and missing parents) with `mode`; an existing directory is left as it is.
    static func makeDirectories(_ path: String, mode: mode_t) throws(SystemError) {
        var prefix = ""
        for component in path.split(separator: "/") {
            prefix += "/" + component
            if Glibc.mkdir(prefix, mode) == 0 { continue }
            let code = errno
            if code == EEXIST { continue }
            if code == EINTR { try makeDirectories(path, mode: mode); return }
            throw SystemError(call: "mkdir \(prefix)", code: code)
        }
    }

    static func status(_ path: String) throws(SystemError) -> stat {
        var info = stat()
        _ = try retrying("stat \(path)") { lstat(path, &info) }
        return info
    }

    static func unlink(_ path: String) throws(SystemError) {
        do throws(SystemError) {
            _ = try retrying("unlink \(path)") { Glibc.unlink(path) }
        } catch where error.code == ENOENT {}
    }

    /// Names in a directory (without "." and "..").
    static func list(_ path: String) throws(SystemError) -> [String] {
        guard let directory = opendir(path) else { throw SystemError(call: "opendir \(path)", code: errno) }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// True unless the process is known to be gone (kill(pid, 0) says ESRCH).
    static func processExists(_ pid: Int32) -> Bool {
        kill(pid, 0) == 0 || errno != ESRCH
    }

    /// The whole file, or nil if it does not exist.
    static func readFile(_ path: String, limit: Int) throws(SystemError) -> [UInt8]? {
        let fd: Int32
        do throws(SystemError) {
            fd = try retrying("open \(path)") { open(path, O_RDONLY | O_CLOEXEC) }
        } catch where error.code == ENOENT {
            return nil
        }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = try chunk.withUnsafeMutableBytes { raw in read(fd, into: raw) }.get()
            if count == 0 { return bytes }
            bytes += chunk[0..<count]
            if bytes.count > limit { throw SystemError(call: "read \(path)", code: EFBIG) }
        }
    }

    /// Replaces `path` atomically: write a temporary file beside it, fsync, rename, fsync the directory.
    static func writeFileAtomically(_ path: String, directory: String, bytes: [UInt8]) throws(SystemError) {
        let temporary = path + ".tmp-\(getpid())"
        var fd = try retrying("open \(temporary)") { open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600) }
        do throws(SystemError) {
            var written = 0
            while written < bytes.count {
                let count = try bytes[written...].withUnsafeBytes { raw in write(fd, raw) }.get()
                written += count
            }
            _ = try retrying("fsync \(temporary)") { fsync(fd) }
            close(fd)
            fd = -1
            _ = try retrying("rename \(temporary)") { rename(temporary, path) }
        } catch {
            close(fd)
            try? unlink(temporary)
            throw error
        }
        if let directoryFD = try? retrying("open \(directory)", { open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }) {
            _ = fsync(directoryFD)
            close(directoryFD)
        }
    }

    /// A line for the host's log (stderr: PipeWire's journal), written straight to fd 2.
    static func log(_ message: String) {
        let bytes = Array(("hear: " + message + "\n").utf8)
        bytes.withUnsafeBytes { raw in _ = Glibc.write(2, raw.baseAddress, raw.count) }
    }

    /// Seconds on the monotonic clock.
    static func now() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) * 1e-9
    }
}
