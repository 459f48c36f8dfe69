// Finding and talking to control servers: every `hear-<pid>.sock` in the socket directory is one
// process hosting the plugin. The socket work is HearSystem's (shared with the plugin's server);
// this file adds what a client must not trust:
//   - the directory must be the user's (or root's) and not writable by group or others, each
//     socket the user's, and each server's SO_PEERCRED uid the user's or root's;
//   - every wait has a deadline (`--timeout`, default 2 s: connect, greeting, each reply), and a
//     server that misses it is reported with exit status 3;
//   - a reply line longer than Protocol.maximumReplyLine is an error, not a memory leak;
//   - control characters in what a server sends are replaced before anything is printed;
//   - a socket that refuses connections is stale and removed (it is the user's); pids are never
//     used to judge a socket, since a server in another PID namespace has a pid meaningless here.

import Foundation
import Glibc
import HearctlCore
import HearControl
import HearDSP
import HearSystem

struct CLIError: Error, CustomStringConvertible {
    let description: String
    /// The exit status (ExitStatus): 1 unless the error says otherwise.
    var code: Int32 = ExitStatus.error
    init(_ description: String, code: Int32 = ExitStatus.error) {
        self.description = description
        self.code = code
    }

    var timedOut: Bool { code == ExitStatus.timeout }
}

/// Exit statuses: one table for every verb (`hearctl --help`, README).
enum ExitStatus {
    static let success: Int32 = 0
    static let error: Int32 = 1
    static let usage: Int32 = 2
    static let notRunning: Int32 = 3
    static let timeout: Int32 = 4

    static let table = """
        Exit status (every verb):
          0  success
          1  error: a server refused the request, a file could not be read or written
          2  usage: unknown verb, option or parameter; a bad value, unit or range;
             a change without --chain while several chains exist
          3  not running: no hear filter runs or is configured (or not the chain named)
          4  timeout: a server did not answer within --timeout
        """
}

/// A server's answer to one request.
struct Reply {
    var records: [Record] = []
    var notices: [String] = []
    var okFields: [(name: String, value: String)] = []
}

/// Text from a server made safe for a terminal: control characters (C0, DEL, C1, and the Unicode
/// format controls that reorder text) become "?", invalid UTF-8 becomes U+FFFD.
enum Sanitize {
    static func text(_ bytes: some Collection<UInt8>) -> String {
        var scalars = String.UnicodeScalarView()
        for scalar in String(decoding: bytes, as: UTF8.self).unicodeScalars {
            scalars.append(isControl(scalar) ? "?" : scalar)
        }
        return String(scalars)
    }

    static func text(_ string: String) -> String { text(Array(string.utf8)) }

    static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        let value = scalar.value
        if value < 0x20 || value == 0x7F || (0x80...0x9F).contains(value) { return true }
        // Bidirectional overrides and isolates, zero-width and other invisible format characters.
        return scalar.properties.generalCategory == .format
    }
}

final class Connection {
    let path: String
    let pid: Int32
    let timeout: Double
    private let channel: LineConnection

    init(path: String, pid: Int32, timeout: Double) throws {
        self.path = path
        self.pid = pid
        self.timeout = timeout
        let deadline = Deadline(seconds: timeout)
        do {
            channel = try LineConnection(path: path, deadline: deadline)
        } catch {
            throw ConnectError(error: error)
        }
        let peer: PeerCredentials
        do { peer = try channel.peerCredentials() } catch { throw CLIError("\(Sanitize.text(path)): \(error)") }
        guard Trust.acceptablePeer(peer, uid: getuid()) else {
            throw CLIError("\(Sanitize.text(path)): the server runs as uid \(peer.uid), not as you (uid \(getuid())) or root; not talking to it")
        }
        let greeting = try readLine(deadline: deadline, waitingFor: "its greeting")
        if let line = ReplyLine.parse(greeting), case .error(let error) = line {
            throw CLIError("\(Sanitize.text(path)): \(error.code.rawValue): \(error.message)")
        }
        guard let parsed = Greeting.parse(greeting) else {
            throw CLIError("\(Sanitize.text(path)): not a hear control socket (greeting '\(greeting.prefix(60))')")
        }
        guard parsed.version == Protocol.version else {
            throw CLIError("\(Sanitize.text(path)): speaks protocol version \(parsed.version), this hearctl speaks \(Protocol.version); use matching versions")
        }
    }

    /// A failure to connect at all (the caller decides whether the socket is stale).
    struct ConnectError: Error { let error: SystemError }

    func send(_ request: Request) throws -> Reply {
        try sendRaw(request.line)
    }

    /// One request and its whole reply, within `timeout`.
    func sendRaw(_ line: String) throws -> Reply {
        let deadline = Deadline(seconds: timeout)
        do {
            try channel.send(Array((line + "\n").utf8), deadline: deadline)
        } catch {
            throw failure(error, waitingFor: "the request to be taken")
        }
        var reply = Reply()
        while true {
            let text = try readLine(deadline: deadline, waitingFor: "a reply")
            guard let parsed = ReplyLine.parse(text) else { throw CLIError("process \(pid): unreadable reply '\(text.prefix(80))'") }
            switch parsed {
            case .record(let record): reply.records.append(record)
            case .notice(let notice): reply.notices.append(notice)
            case .ok(let fields): reply.okFields = fields; return reply
            case .error(let error): throw ServerError(pid: pid, error: error)
            }
        }
    }

    /// The next line, with control characters replaced.
    private func readLine(deadline: Deadline, waitingFor what: String) throws -> String {
        do {
            return Sanitize.text(try channel.readLine(deadline: deadline, limit: Protocol.maximumReplyLine))
        } catch {
            throw failure(error, waitingFor: what)
        }
    }

    private func failure(_ error: LineError, waitingFor what: String) -> CLIError {
        let place = "process \(pid) (\(Sanitize.text(path)))"
        switch error {
        case .timedOut(let seconds):
            return CLIError("\(place) did not send \(what) within \(Self.seconds(seconds)); it may be hung (--timeout sets the wait)", code: ExitStatus.timeout)
        case .closed:
            return CLIError("\(place) closed the connection")
        case .tooLong(let limit):
            return CLIError("\(place) sent a reply line longer than \(limit) bytes; not a hear server, or a broken one")
        case .system(let error):
            return CLIError("\(place): \(error)")
        }
    }

    static func seconds(_ value: Double) -> String { value == value.rounded() ? "\(Int(value)) s" : "\(value) s" }
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

    /// Connections to every live server, oldest process first. Stale sockets of ours are removed.
    /// With `required` false, no server at all is an empty list rather than an error (suspended chains have none).
    static func connect(timeout: Double, required: Bool = true) throws -> [Connection] {
        let directory = self.directory
        let uid = getuid()
        if let note = SocketPath.ignoredSetting(environment: environment, uid: uid) {
            FileHandle.standardError.write(Data("hearctl: warning: \(Sanitize.text(note))\n".utf8))
        }
        var names: [String] = []
        do {
            try Trust.checkClientDirectory(directory, uid: uid)
            names = try Syscall.list(directory)
        } catch where error.notFound {
            names = []
        } catch {
            throw CLIError(Sanitize.text(error.description))
        }
        var connections: [Connection] = []
        var problems: [String] = []
        var timedOut = false
        for (pid, name) in names.compactMap({ name in SocketPath.pid(socketName: name).map { ($0, name) } }).sorted(by: { $0.0 < $1.0 }) {
            let path = directory + "/" + name
            guard let info = try? Syscall.status(path) else { continue }
            guard info.st_mode & S_IFMT == S_IFSOCK else {
                problems.append("\(Sanitize.text(path)) is a \(Syscall.kind(info.st_mode)), not a socket; skipped")
                continue
            }
            guard info.st_uid == uid else {
                problems.append("\(Sanitize.text(path)) belongs to uid \(info.st_uid), not to you; skipped")
                continue
            }
            do {
                connections.append(try Connection(path: path, pid: pid, timeout: timeout))
            } catch let failure as Connection.ConnectError {
                switch failure.error.code {
                case ECONNREFUSED:
                    try? Syscall.unlink(path)  // nobody listens: left behind by a process that is gone
                case ENOENT:
                    continue
                case ETIMEDOUT:
                    timedOut = true
                    problems.append(Sanitize.text(failure.error.description))
                default:
                    problems.append(Sanitize.text(failure.error.description))
                }
            } catch let error as CLIError {
                timedOut = timedOut || error.timedOut
                problems.append(error.description)
            } catch {
                problems.append("\(error)")
            }
        }
        if connections.isEmpty {
            if !problems.isEmpty { throw CLIError(problems.joined(separator: "\n"), code: timedOut ? ExitStatus.timeout : ExitStatus.error) }
            if !required { return [] }
            throw notRunning(directory: directory)
        }
        for problem in problems { FileHandle.standardError.write(Data("hearctl: warning: \(problem)\n".utf8)) }
        return connections
    }
}

extension Discovery {
    /// No server and no drop-in: the advice to add one.
    static func notRunning(directory: String? = nil) -> CLIError {
        CLIError("""
            no running hear filter found (no control socket in \(Sanitize.text(directory ?? self.directory))) and no \
            PipeWire drop-in that loads libhear.so in \(DropIns.directories(environment: environment).joined(separator: ", ")).
            Start one: `hearctl enable mic` (a clean microphone for calls) or `hearctl enable speaker` \
            (clearer voices from the other side) writes the drop-in and restarts PipeWire; README, "Enable".
            """, code: ExitStatus.notRunning)
    }
}

/// The chain selected with --chain, and requests fanned out to every server.
struct Target {
    let chain: Int?
    let connections: [Connection]

    init(chain: Int?, timeout: Double, required: Bool = true) throws {
        self.chain = chain
        connections = try Discovery.connect(timeout: timeout, required: required)
    }

    init(_ option: ChainOption) throws { try self.init(chain: option.number, timeout: option.timeout) }

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
            throw CLIError("no running instance of \(chainDescription); running chains: \(list)", code: ExitStatus.notRunning)
        }
        return replies
    }

    /// Asks every server that took a change to have it on disk before answering.
    func sync(_ replies: [(Connection, Reply)]) throws {
        for (connection, _) in replies { _ = try connection.send(.sync) }
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
