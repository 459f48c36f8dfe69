// Finding and talking to control servers: every `hear-<pid>.sock` in the socket directory is one
// process hosting the plugin. Sockets of dead processes are removed, never trusted.

import Foundation
import Glibc
import HearControl
import HearDSP

struct CLIError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A server's answer to one request.
struct Reply {
    var records: [Record] = []
    var notices: [String] = []
    var okFields: [(name: String, value: String)] = []
}

final class Connection {
    let path: String
    let pid: Int32
    private let fd: Int32
    private var buffer: [UInt8] = []

    init(path: String, pid: Int32, timeout: Double = 2) throws {
        self.path = path
        self.pid = pid
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw CLIError("socket: \(String(cString: strerror(errno)))") }
        var time = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - floor(timeout)) * 1e6))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            close(fd)
            throw CLIError("socket path too long: \(path)")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in bytes.enumerated() { raw[index] = byte }
        }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        if result != 0 {
            let code = errno
            close(fd)
            throw ConnectError(code: code)
        }
        let greeting = try readLine()
        if let line = ReplyLine.parse(greeting), case .error(let error) = line {
            close(fd)
            throw CLIError("\(path): \(error.code.rawValue): \(error.message)")
        }
        guard let parsed = Greeting.parse(greeting) else {
            close(fd)
            throw CLIError("\(path): not a hear control socket (greeting '\(greeting.prefix(60))')")
        }
        guard parsed.version == Protocol.version else {
            close(fd)
            throw CLIError("\(path): speaks protocol version \(parsed.version), this hearctl speaks \(Protocol.version); use matching versions")
        }
    }

    struct ConnectError: Error { let code: Int32 }

    deinit { close(fd) }

    func send(_ request: Request) throws -> Reply {
        try sendRaw(request.line)
    }

    func sendRaw(_ line: String) throws -> Reply {
        let bytes = Array((line + "\n").utf8)
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if count < 0 {
                if errno == EINTR { continue }
                throw CLIError("process \(pid): send: \(String(cString: strerror(errno)))")
            }
            sent += count
        }
        var reply = Reply()
        while true {
            let text = try readLine()
            guard let parsed = ReplyLine.parse(text) else { throw CLIError("process \(pid): unreadable reply '\(text.prefix(80))'") }
            switch parsed {
            case .record(let record): reply.records.append(record)
            case .notice(let notice): reply.notices.append(notice)
            case .ok(let fields): reply.okFields = fields; return reply
            case .error(let error): throw ServerError(pid: pid, error: error)
            }
        }
    }

    private func readLine() throws -> String {
        while true {
            if let newline = buffer.firstIndex(of: 0x0A) {
                let line = String(decoding: buffer[..<newline], as: UTF8.self)
                buffer.removeSubrange(...newline)
                return line
            }
            var chunk = [UInt8](repeating: 0, count: 4096)
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count < 0 {
                if errno == EINTR { continue }
                if errno == EAGAIN || errno == EWOULDBLOCK { throw CLIError("process \(pid) did not answer in time (\(path))") }
                throw CLIError("process \(pid): \(String(cString: strerror(errno)))")
            }
            if count == 0 { throw CLIError("process \(pid) closed the connection (\(path))") }
            buffer += chunk[0..<count]
        }
    }
}

/// An `error` line from a server.
struct ServerError: Error, CustomStringConvertible {
    let pid: Int32
    let error: ProtocolError
    var description: String { error.message }
}

enum Discovery {
    static var environment: (String) -> String? { { ProcessInfo.processInfo.environment[$0] } }
    static var directory: String { SocketPath.directory(environment: environment, uid: getuid()) }

    /// Connections to every live server, oldest process first. Stale sockets are removed.
    static func connect() throws -> [Connection] {
        let directory = self.directory
        // A directory someone else made (say /tmp/hear-<uid> planted by another user) is not trusted.
        var info = stat()
        if lstat(directory, &info) == 0 && (info.st_uid != getuid() || info.st_mode & S_IFMT != S_IFDIR) {
            throw CLIError("\(directory) is not a directory of yours (owner uid \(info.st_uid)); refusing to use it")
        }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        var connections: [Connection] = []
        var problems: [String] = []
        for (pid, name) in names.compactMap({ name in SocketPath.pid(socketName: name).map { ($0, name) } }).sorted(by: { $0.0 < $1.0 }) {
            let path = directory + "/" + name
            if kill(pid, 0) != 0 && errno == ESRCH {
                unlink(path)  // its process is gone
                continue
            }
            do {
                connections.append(try Connection(path: path, pid: pid))
            } catch let error as Connection.ConnectError {
                if error.code == ECONNREFUSED || error.code == ENOENT {
                    unlink(path)  // nobody listens: left behind by a process whose pid now belongs to another
                } else {
                    problems.append("\(path): \(String(cString: strerror(error.code)))")
                }
            } catch {
                problems.append("\(error)")
            }
        }
        if connections.isEmpty {
            if !problems.isEmpty { throw CLIError(problems.joined(separator: "\n")) }
            throw CLIError("""
                no running hear filter found (no control socket in \(directory)).
                Start one: put a filter-chain drop-in that loads libhear.so into ~/.config/pipewire/pipewire.conf.d/ \
                (see the README, "Set-up") and run `systemctl --user restart pipewire`.
                """)
        }
        for problem in problems { FileHandle.standardError.write(Data("hearctl: warning: \(problem)\n".utf8)) }
        return connections
    }
}

/// The chain selected with --chain, and requests fanned out to every server.
struct Target {
    let chain: Int?
    let connections: [Connection]

    init(chain: Int?) throws {
        self.chain = chain
        connections = try Discovery.connect()
    }

    var chainDescription: String { chain.map { "chain \($0) (\(ChainName.name($0)))" } ?? "any chain" }

    /// Sends to every server; servers without an instance of the chain are skipped. Fails if none had one.
    func each(_ request: Request) throws -> [(Connection, Reply)] {
        var replies: [(Connection, Reply)] = []
        for connection in connections {
            do {
                replies.append((connection, try connection.send(request)))
            } catch let error as ServerError where error.error.code == .noInstance {
                continue
            }
        }
        if replies.isEmpty {
            let running = (try? runningChains()) ?? []
            let list = running.isEmpty ? "none" : running.map { "\($0) (\(ChainName.name($0)))" }.joined(separator: ", ")
            throw CLIError("no running instance of \(chainDescription); running chains: \(list)")
        }
        return replies
    }

    func statuses() throws -> [(pid: Int32, status: InstanceStatus, notices: [String])] {
        var result: [(Int32, InstanceStatus, [String])] = []
        for connection in connections {
            let reply = try connection.send(.status)
            for record in reply.records {
                guard let status = InstanceStatus(record) else { continue }
                if let chain, status.chain != chain { continue }
                result.append((connection.pid, status, reply.notices))
            }
        }
        return result
    }

    func runningChains() throws -> [Int] {
        var chains = Set<Int>()
        for connection in connections {
            for record in try connection.send(.status).records { if let status = InstanceStatus(record) { chains.insert(status.chain) } }
        }
        return chains.sorted()
    }

    /// Current values per chain (the first instance of each chain answers for it).
    func values(_ parameters: [Parameter]) throws -> [(chain: Int, values: [(Parameter, Float)])] {
        var byChain: [Int: [(Parameter, Float)]] = [:]
        for (_, reply) in try each(.get(chain: chain, parameters: parameters)) {
            var values: [Int: [(Parameter, Float)]] = [:]
            for record in reply.records { if let value = ValueRecord(record) { values[value.chain, default: []].append((value.parameter, value.value)) } }
            for (chain, list) in values where byChain[chain] == nil { byChain[chain] = list }
        }
        return byChain.keys.sorted().map { ($0, byChain[$0]!) }
    }
}
