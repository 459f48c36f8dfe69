// The one error type of the socket and file layer: the call that failed (with the path or peer it
// concerned) and its errno value, or a refusal with a sentence saying what is wrong and how to fix it.

import Glibc

public struct SystemError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The call and what it was applied to, e.g. "connect /run/user/1000/hear/hear-42.sock".
    public let call: String
    /// The errno value (ETIMEDOUT for deadlines, EPERM for refused ownership or modes).
    public let code: Int32
    /// Set when the failure is a refusal of ours rather than the kernel's: what is wrong, in words.
    public let detail: String?

    public init(call: String, code: Int32, detail: String? = nil) {
        self.call = call
        self.code = code
        self.detail = detail
    }

    /// The failure of the call just made (errno).
    public static func last(_ call: String) -> SystemError { SystemError(call: call, code: errno) }

    public var description: String { "\(call): \(detail ?? message)" }
    /// strerror's text for the code.
    public var message: String { String(cString: strerror(code)) }

    public var wouldBlock: Bool { code == EAGAIN || code == EWOULDBLOCK }
    public var notFound: Bool { code == ENOENT }
    public var timedOut: Bool { code == ETIMEDOUT }
    /// A file longer than a reader allowed (`readRegularFile`).
    public var tooLarge: Bool { code == EFBIG }
}

/// How reading one line from a peer can fail.
public enum LineError: Error, Equatable, Sendable, CustomStringConvertible {
    case system(SystemError)
    /// The deadline passed before a whole line arrived.
    case timedOut(seconds: Double)
    /// The peer closed the connection before a whole line arrived.
    case closed
    /// The peer sent more than `limit` bytes without a newline.
    case tooLong(limit: Int)

    public var description: String {
        switch self {
        case .system(let error): return error.description
        case .timedOut(let seconds): return "no complete reply within \(Self.seconds(seconds))"
        case .closed: return "the connection was closed"
        case .tooLong(let limit): return "a reply line longer than \(limit) bytes"
        }
    }

    static func seconds(_ value: Double) -> String {
        value == value.rounded() ? "\(Int(value)) s" : "\(value) s"
    }
}
