// Requests: parsed from and encoded to one protocol line (see Protocol.swift).

import HearDSP

public struct Assignment: Equatable, Sendable {
    public let parameter: Parameter
    public let value: Float

    public init(_ parameter: Parameter, _ value: Float) {
        self.parameter = parameter
        self.value = value
    }
}

public enum Request: Equatable, Sendable {
    case ping
    case status
    /// Every parameter when `parameters` is empty.
    case get(chain: Int?, parameters: [Parameter])
    case set(chain: Int?, assignments: [Assignment])
    /// Each parameter moves by its assignment's value from the value it has when the server takes the
    /// request, stopping at the range's ends: read and written in one turn, so concurrent steps add up.
    case step(chain: Int?, steps: [Assignment])
    /// Every parameter when `parameters` is empty. Each goes to its value in `values` (the
    /// drop-in's configured value, which hearctl reads) or else to its schema default.
    case reset(chain: Int?, parameters: [Parameter], values: [Assignment] = [])
    /// Answered once every change the server took is on disk.
    case sync

    /// The request on one line, without the newline.
    public var line: String {
        switch self {
        case .ping: return "ping"
        case .status: return "status"
        case .sync: return "sync"
        case .get(let chain, let parameters):
            return (["get"] + Self.selector(chain) + parameters.map(\.key)).joined(separator: " ")
        case .set(let chain, let assignments):
            let pairs = assignments.flatMap { [$0.parameter.key, ParameterValue.format($0.value)] }
            return (["set"] + Self.selector(chain) + pairs).joined(separator: " ")
        case .step(let chain, let steps):
            let pairs = steps.flatMap { [$0.parameter.key, ParameterValue.formatStep($0.value)] }
            return (["step"] + Self.selector(chain) + pairs).joined(separator: " ")
        case .reset(let chain, let parameters, let values):
            let tokens = parameters.map { parameter in
                values.last { $0.parameter == parameter }.map { "\(parameter.key)=\(ParameterValue.format($0.value))" } ?? parameter.key
            }
            return (["reset"] + Self.selector(chain) + tokens).joined(separator: " ")
        }
    }

    static func selector(_ chain: Int?) -> [String] { chain.map { ["chain=\($0)"] } ?? [] }

    /// Parses one request line (without its newline); any flaw is an error, never a partial request.
    public static func parse(_ bytes: some Collection<UInt8>) -> Result<Request, ProtocolError> {
        guard bytes.count < Protocol.maximumLine else {
            return .failure(ProtocolError(.tooLong, "request longer than \(Protocol.maximumLine - 1) bytes"))
        }
        for byte in bytes where byte < 0x20 && byte != 0x09 && byte != 0x0D {
            return .failure(ProtocolError(.badRequest, byte == 0 ? "request contains a NUL byte" : "request contains control byte \(byte)"))
        }
        if bytes.contains(0x7F) { return .failure(ProtocolError(.badRequest, "request contains control byte 127")) }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            return .failure(ProtocolError(.badRequest, "request is not UTF-8 text"))
        }
        let tokens = text.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\r" }).map(String.init)
        guard let verb = tokens.first else { return .failure(ProtocolError(.badRequest, "empty request")) }
        var rest = Array(tokens.dropFirst())
        switch verb {
        case "ping", "status", "sync":
            guard rest.isEmpty else { return .failure(ProtocolError(.badRequest, "\(verb) takes no arguments")) }
            return .success(verb == "ping" ? .ping : verb == "status" ? .status : .sync)
        case "get", "reset":
            let chain: Int?
            switch takeSelector(&rest) {
            case .failure(let error): return .failure(error)
            case .success(let value): chain = value
            }
            var parameters: [Parameter] = []
            var values: [Assignment] = []
            for token in rest {
                // reset takes KEY or KEY=VALUE (the value to go back to).
                let parts = verb == "reset" ? token.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).map(String.init) : [token]
                switch ParameterKey.parse(parts[0]) {
                case .failure(let error): return .failure(error)
                case .success(let parameter):
                    if !parameters.contains(parameter) { parameters.append(parameter) }
                    guard parts.count == 2 else { continue }
                    switch ParameterValue.parse(parts[1], for: parameter) {
                    case .failure(let error): return .failure(error)
                    case .success(let value):
                        values.removeAll { $0.parameter == parameter }
                        values.append(Assignment(parameter, value))
                    }
                }
            }
            return .success(verb == "get" ? .get(chain: chain, parameters: parameters) : .reset(chain: chain, parameters: parameters, values: values))
        case "set", "step":
            let chain: Int?
            switch takeSelector(&rest) {
            case .failure(let error): return .failure(error)
            case .success(let value): chain = value
            }
            let value = verb == "set" ? "VALUE" : "STEP"
            guard !rest.isEmpty else { return .failure(ProtocolError(.badRequest, "\(verb) needs KEY \(value) pairs")) }
            guard rest.count % 2 == 0 else {
                return .failure(ProtocolError(.badRequest, "\(verb) needs KEY \(value) pairs; '\(ParameterValue.printable(rest[rest.count - 1]))' has no value"))
            }
            var assignments: [Assignment] = []
            for pair in stride(from: 0, to: rest.count, by: 2) {
                let parameter: Parameter
                switch ParameterKey.parse(rest[pair]) {
                case .failure(let error): return .failure(error)
                case .success(let value): parameter = value
                }
                let parsed = verb == "set" ? ParameterValue.parse(rest[pair + 1], for: parameter)
                    : ParameterValue.step(rest[pair + 1], for: parameter)
                switch parsed {
                case .failure(let error): return .failure(error)
                case .success(let value):
                    // Within one request the last value given for a key counts.
                    assignments.removeAll { $0.parameter == parameter }
                    assignments.append(Assignment(parameter, value))
                }
            }
            return .success(verb == "set" ? .set(chain: chain, assignments: assignments) : .step(chain: chain, steps: assignments))
        default:
            return .failure(ProtocolError(.unknownVerb, "unknown request '\(ParameterValue.printable(verb))'; expected ping, status, get, set, step, reset or sync"))
        }
    }

    static func takeSelector(_ tokens: inout [String]) -> Result<Int?, ProtocolError> {
        guard let first = tokens.first, first.hasPrefix("chain=") else { return .success(nil) }
        tokens.removeFirst()
        let text = String(first.dropFirst(6))
        guard let digits = Int(text), digits >= 0, digits <= ChainName.maximum, text.allSatisfy({ $0 >= "0" && $0 <= "9" }) else {
            return .failure(ProtocolError(.badRequest, "chain must be a number from 0 to \(ChainName.maximum), not '\(ParameterValue.printable(text))'"))
        }
        return .success(digits)
    }
}
