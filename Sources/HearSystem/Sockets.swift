// Unix stream sockets for the control protocol: the server's listening socket, the test that tells
// a live socket from a stale one (by connecting, never by pid: pids mean nothing across PID
// namespaces), and the client's connection with deadlines on every wait and a cap on line length.

import CHearSys
import Glibc

/// Which file a path named when it was checked, to tell later whether it is still the same one.
public struct FileIdentity: Equatable, Sendable {
    public let device: UInt64
    public let inode: UInt64

    public init(_ info: stat) {
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
    }
}

/// The peer of a connected Unix socket, as the kernel saw it at connect (SO_PEERCRED).
public struct PeerCredentials: Equatable, Sendable {
    public let uid: uid_t
    public let pid: pid_t

    public init(uid: uid_t, pid: pid_t) {
        self.uid = uid
        self.pid = pid
    }
}

/// What is at a socket path, found by looking (lstat) and then by connecting.
public enum SocketState: Equatable, Sendable {
    /// Something accepts connections there (or its queue is full, which only a live server has).
    case live
    /// A socket nobody listens on (ECONNREFUSED): left behind by a process that is gone.
    case stale
    case absent
    /// Not a socket at all: never ours to remove.
    case notASocket(kind: String)
    /// A socket of another user: never ours to remove or to talk to.
    case foreign(owner: uid_t)
    case unreachable(SystemError)
}

/// A listening socket at a path, removed only if the path still names it.
public struct Listener: Sendable {
    public let fd: Int32
    public let path: String
    public let identity: FileIdentity

    /// Unlinks the path (if it is still this socket), then stops listening: a client that finds the
    /// path never finds it refusing connections, which would mark it stale.
    public func close() {
        if let info = try? Syscall.status(path), FileIdentity(info) == identity { try? Syscall.unlink(path) }
        Syscall.close(fd)
    }
}

extension Syscall {
    /// A Unix socket address, or nil if the path does not fit in sun_path.
    public static func address(_ path: String) -> sockaddr_un? {
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

    static func streamSocket() throws(SystemError) -> Int32 {
        try retrying("socket") { socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0) }
    }

    /// connect(2) on a non-blocking socket: 0, or the errno value.
    static func connectOnce(_ fd: Int32, _ address: inout sockaddr_un) -> Int32 {
        while true {
            let result = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
            if result == 0 { return 0 }
            if errno != EINTR { return errno }
        }
    }

    /// A non-blocking listening socket at `path`, mode 0600. It is bound under a temporary name and
    /// renamed into place once it listens: a client never finds the path refusing connections.
    public static func listen(at path: String, backlog: Int32) throws(SystemError) -> Listener {
        let temporary = path + ".new"
        guard var address = address(temporary) else {
            throw SystemError(call: "socket path \(temporary)", code: ENAMETOOLONG, detail: "longer than a Unix socket path may be (107 bytes)")
        }
        try unlink(temporary)
        let fd = try streamSocket()
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
            let identity = FileIdentity(try status(temporary))
            try rename(temporary, path)
            return Listener(fd: fd, path: path, identity: identity)
        } catch {
            close(fd)
            try? unlink(temporary)
            throw error
        }
    }

    /// The next pending connection (non-blocking, close-on-exec), or nil when there is none.
    public static func accept(_ listener: Int32) throws(SystemError) -> Int32? {
        do throws(SystemError) {
            return try retrying("accept4") { hear_accept4(listener, Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue)) }
        } catch where error.wouldBlock || error.code == ECONNABORTED {
            return nil
        }
    }

    public static func peerCredentials(_ fd: Int32) throws(SystemError) -> PeerCredentials {
        var uid: UInt32 = 0
        var pid: Int32 = 0
        _ = try retrying("getsockopt(SO_PEERCRED)") { hear_peer_credentials(fd, &uid, &pid) }
        return PeerCredentials(uid: uid, pid: pid)
    }

    /// What is at `path`: only a socket owned by `uid` is connected to, without waiting.
    public static func probeSocket(_ path: String, uid: uid_t) -> SocketState {
        let info: stat
        do { info = try status(path) } catch { return error.notFound ? .absent : .unreachable(error) }
        guard info.st_mode & S_IFMT == S_IFSOCK else { return .notASocket(kind: kind(info.st_mode)) }
        guard info.st_uid == uid else { return .foreign(owner: info.st_uid) }
        guard var address = address(path) else { return .unreachable(SystemError(call: "socket path \(path)", code: ENAMETOOLONG)) }
        let fd: Int32
        do { fd = try streamSocket() } catch { return .unreachable(error) }
        defer { close(fd) }
        switch connectOnce(fd, &address) {
        case 0, EAGAIN, EINPROGRESS: return .live  // EAGAIN: its accept queue is full, so someone listens
        case ECONNREFUSED: return .stale
        case ENOENT: return .absent
        case let code: return .unreachable(SystemError(call: "connect \(path)", code: code))
        }
    }

    /// A connected, non-blocking client socket; ETIMEDOUT if the server's queue stays full until the deadline.
    public static func connect(_ path: String, deadline: Deadline) throws(SystemError) -> Int32 {
        guard var address = address(path) else {
            throw SystemError(call: "connect \(path)", code: ENAMETOOLONG, detail: "longer than a Unix socket path may be (107 bytes)")
        }
        let fd = try streamSocket()
        while true {
            let code = connectOnce(fd, &address)
            switch code {
            case 0:
                return fd
            case EAGAIN:
                // The accept queue is full: a busy server, or one that no longer accepts.
                if deadline.passed {
                    close(fd)
                    throw SystemError(call: "connect \(path)", code: ETIMEDOUT,
                                      detail: "the server did not accept the connection within \(LineError.seconds(deadline.seconds))")
                }
                usleep(10_000)
            case EINPROGRESS:
                var fds = [pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)]
                do throws(SystemError) {
                    if try poll(&fds, timeoutMilliseconds: deadline.pollMilliseconds) == 0 && deadline.passed {
                        throw SystemError(call: "connect \(path)", code: ETIMEDOUT,
                                          detail: "the server did not accept the connection within \(LineError.seconds(deadline.seconds))")
                    }
                } catch {
                    close(fd)
                    throw error
                }
                var failure: Int32 = 0
                var length = socklen_t(MemoryLayout<Int32>.size)
                getsockopt(fd, SOL_SOCKET, SO_ERROR, &failure, &length)
                if failure == 0 && fds[0].revents & Int16(POLLOUT) != 0 { return fd }
                if failure != 0 {
                    close(fd)
                    throw SystemError(call: "connect \(path)", code: failure)
                }
            default:
                close(fd)
                throw SystemError(call: "connect \(path)", code: code)
            }
        }
    }
}

/// A client's connection to a line-based server: every send and every line read has a deadline,
/// and a line longer than a limit is an error, so a slow, silent or endless server cannot hold
/// the client or its memory.
public final class LineConnection {
    public let fd: Int32
    public let path: String
    private var buffer: [UInt8] = []
    /// How far `buffer` has been searched for a newline.
    private var searched = 0

    public init(path: String, deadline: Deadline) throws(SystemError) {
        self.path = path
        fd = try Syscall.connect(path, deadline: deadline)
    }

    deinit { Syscall.close(fd) }

    public func peerCredentials() throws(SystemError) -> PeerCredentials { try Syscall.peerCredentials(fd) }

    public func send(_ bytes: [UInt8], deadline: Deadline) throws(LineError) {
        var sent = 0
        while sent < bytes.count {
            let result = bytes[sent...].withUnsafeBytes { raw in Syscall.send(fd, raw) }
            switch result {
            case .success(let count):
                sent += count
            case .failure(let error) where error.wouldBlock:
                try wait(for: Int16(POLLOUT), deadline: deadline)
            case .failure(let error):
                if error.code == EPIPE || error.code == ECONNRESET { throw .closed }
                throw .system(error)
            }
        }
    }

    /// The next line without its newline; at most `limit` bytes.
    public func readLine(deadline: Deadline, limit: Int) throws(LineError) -> [UInt8] {
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            if let newline = buffer[searched...].firstIndex(of: 0x0A) {
                if newline > limit { throw .tooLong(limit: limit) }
                let line = Array(buffer[..<newline])
                buffer.removeSubrange(...newline)
                searched = 0
                return line
            }
            searched = buffer.count
            if buffer.count > limit { throw .tooLong(limit: limit) }
            let result = chunk.withUnsafeMutableBytes { raw in
                Result { () throws(SystemError) -> Int in
                    try Syscall.retrying("recv") { recv(fd, raw.baseAddress, raw.count, Int32(MSG_DONTWAIT)) }
                }
            }
            switch result {
            case .success(0):
                throw .closed
            case .success(let count):
                buffer += chunk[0..<count]
            case .failure(let error) where error.wouldBlock:
                try wait(for: Int16(POLLIN), deadline: deadline)
            case .failure(let error):
                if error.code == ECONNRESET { throw .closed }
                throw .system(error)
            }
        }
    }

    private func wait(for events: Int16, deadline: Deadline) throws(LineError) {
        if deadline.passed { throw .timedOut(seconds: deadline.seconds) }
        var fds = [pollfd(fd: fd, events: events, revents: 0)]
        do {
            _ = try Syscall.poll(&fds, timeoutMilliseconds: deadline.pollMilliseconds)
        } catch {
            throw .system(error)
        }
        if fds[0].revents == 0 && deadline.passed { throw .timedOut(seconds: deadline.seconds) }
    }
}
