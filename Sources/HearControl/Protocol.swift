// The hear control protocol, version 1 ("hear/1"). This comment is its one description; the
// server (HearPlugin/ControlServer.swift) and the CLI (hearctl) both speak it through the types
// in this folder.
//
// Transport
//   A Unix stream socket per process that hosts the plugin: `<dir>/hear-<pid>.sock`, where <dir>
//   follows SocketPath.directory (HEAR_RUNTIME_DIR, else $XDG_RUNTIME_DIR/hear, else
//   /tmp/hear-<uid>). The directory is 0700 and the socket 0600; the server also refuses any peer
//   whose uid (SO_PEERCRED) is not its own. Clients glob the directory and talk to every socket;
//   a socket that refuses connections is stale and is removed (only if it is a socket of the same
//   user); pids are not trusted for this, since a server in another PID namespace has a pid that
//   means nothing here. Clients trust only a directory of their own that group and others cannot
//   write, a socket of their own, and a server whose SO_PEERCRED uid is theirs (or root's).
//
// Framing
//   UTF-8 text, one request per line ending in "\n", at most `Protocol.maximumLine` bytes
//   including the newline. On connect the server sends one greeting line:
//       hear/1 pid=<pid>
//   Each request is answered, in order, by zero or more data lines and exactly one final line:
//       ok [name=value ...]
//       error <code> <message>
//   Data lines are `<kind> name=value ...` (values never contain spaces) or `notice <text>`.
//   Numbers are decimal; "-inf" is a silent meter; "-" is a meter not measured (its stage is off).
//
// Requests (tokens separated by spaces; the chain selector `chain=N` is optional and, when
// absent, means every instance in the process)
//   ping                                   -> ok
//   status                                 -> `instance` lines (InstanceStatus: id chain name label rate
//                                             channels latency block uptime state bypass (block: the
//                                             frames of the host's last call, the quantum its graph
//                                             runs now; 0 before the first), one field per
//                                             meter of HearDSP/Meters.swift by its key (in.peak in.rms
//                                             out.peak out.rms comp.gr limit.gr ns.floor ns.speech ...),
//                                             faults),
//                                             then `notice` lines (problems the server wants seen)
//   get   [chain=N] [KEY ...]              -> `value chain=N key=KEY value=V` per chain and key
//                                             (every parameter when no key is given)
//   set   [chain=N] KEY VALUE [KEY VALUE ...] -> ok instances=<count changed>
//   step  [chain=N] KEY STEP [KEY STEP ...]   -> `step chain=N key=KEY from=V to=W` per chain and key, then
//                                             ok instances=<count changed>; each parameter moves by STEP (a
//                                             signed number in its unit, at most its whole range; not a
//                                             switch) from the value it has when the server takes the
//                                             request, stopping at its range's ends. The read and the
//                                             write are one turn of the server: concurrent steps add up
//                                             (`hearctl set gain +2`)
//   reset [chain=N] [KEY[=VALUE] ...]      -> ok instances=<count>; each KEY back to VALUE (hearctl sends
//                                             the value the chain's drop-in configures) or else to its
//                                             schema default; its saved value is forgotten either way
//   sync                                   -> ok once every change this process took is saved on disk
//                                             (`hearctl set --sync`), else error save-failed
//   KEY is a schema key (HearDSP/Parameters.swift). VALUE is a number, optionally followed by the
//   parameter's unit ("6", "6dB", "3:1"), or on/off/true/false/yes/no for switches. A request is
//   checked whole before anything changes: one bad key or value and nothing is set.
//
// Errors (codes)
//   bad-request        not UTF-8, a NUL or control byte, a malformed selector, a missing value
//   too-long           the line exceeded Protocol.maximumLine; the connection is then closed
//   unknown-verb       the first token is not a request above
//   unknown-parameter  no such key (the message names the closest keys)
//   bad-value          not a finite number in the parameter's unit
//   out-of-range       outside the schema range (the message states it)
//   no-instance        no instance of the selected chain runs in this process
//   busy               the server already serves its maximum number of clients (or closes this
//                      idle connection to serve a new one)
//   denied             the peer runs as another user
//   timeout            a request line was not completed within 5 s of its first byte, or no
//                      request came for 10 s; the connection is then closed
//   save-failed        `sync` could not write the settings (the message says why)
//
// Flow: requests may be pipelined; they are answered in order. While a client has 64 KB of replies
//   unread the server reads no further requests from it (backpressure) and drops it if its replies
//   do not drain within 10 s. Clients are served in turns: per turn at most 32 requests and one
//   `sync` of each, so one client's pipeline never holds up another's ping. After end of input
//   (shutdown SHUT_WR) the replies owed are still sent; requests sent just before a close() are
//   still applied. A connection silent for 10 s is told `error timeout` and closed. A line of
//   `maximumLine` bytes or more is `error too-long` and the end of the connection, however it
//   arrived.
//
// Who wins: the host's control ports and socket writes are last-writer-wins, per parameter. The
//   audio thread notices a control port whose value changed since the last block, and a socket
//   write newer than the last it took; the later of the two holds until the other side writes
//   again. (If both change the same parameter within one block, the socket write is taken.)
//   Socket writes are saved per chain and restored when an instance of that chain starts, so a
//   saved setting overrides the config's control value until `hearctl reset`.
//
// Chains: an instance's `chain` control port (an integer, default 0) names the chain it belongs
//   to; instances with the same chain number (filter-chain's per-channel copies) move together.
//   Numbers have names (ChainName): 0 default, 1 mic, 2 speaker, N chainN.

public enum Protocol {
    public static let name = "hear"
    public static let version = 1
    /// The greeting's first token.
    public static var tag: String { "\(name)/\(version)" }
    /// Longest request line, newline included.
    public static let maximumLine = 4096
    /// Longest reply line a client accepts (without the newline); replies are far shorter.
    public static let maximumReplyLine = 1 << 16
}

/// What went wrong with a request, as sent in an `error` line.
public enum ErrorCode: String, Sendable, CaseIterable {
    case badRequest = "bad-request"
    case tooLong = "too-long"
    case unknownVerb = "unknown-verb"
    case unknownParameter = "unknown-parameter"
    case badValue = "bad-value"
    case outOfRange = "out-of-range"
    case noInstance = "no-instance"
    case busy
    case denied
    case timeout
    case saveFailed = "save-failed"
}

public struct ProtocolError: Error, Equatable, Sendable, CustomStringConvertible {
    public let code: ErrorCode
    public let message: String

    public init(_ code: ErrorCode, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
