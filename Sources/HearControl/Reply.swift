// Replies: data lines, then one final `ok` or `error` line (see Protocol.swift).

import HearDSP

/// One `kind name=value ...` data line.
public struct Record: Equatable, Sendable {
    public var kind: String
    public var fields: [(name: String, value: String)]

    public init(kind: String, fields: [(name: String, value: String)]) {
        self.kind = kind
        self.fields = fields
    }

    public subscript(name: String) -> String? { fields.first { $0.name == name }?.value }

    public static func == (a: Record, b: Record) -> Bool {
        a.kind == b.kind && a.fields.count == b.fields.count
            && zip(a.fields, b.fields).allSatisfy { $0.name == $1.name && $0.value == $1.value }
    }
}

public enum ReplyLine: Equatable, Sendable {
    case record(Record)
    case notice(String)
    case ok([(name: String, value: String)])
    case error(ProtocolError)

    public var isFinal: Bool {
        switch self {
        case .ok, .error: return true
        case .record, .notice: return false
        }
    }

    public static func == (a: ReplyLine, b: ReplyLine) -> Bool {
        switch (a, b) {
        case (.record(let x), .record(let y)): return x == y
        case (.notice(let x), .notice(let y)): return x == y
        case (.ok(let x), .ok(let y)): return Record(kind: "ok", fields: x) == Record(kind: "ok", fields: y)
        case (.error(let x), .error(let y)): return x == y
        default: return false
        }
    }

    /// The line without its newline. Field values must not contain spaces (callers use tokens).
    public var line: String {
        switch self {
        case .record(let record): return ([record.kind] + record.fields.map { "\($0.name)=\($0.value)" }).joined(separator: " ")
        case .notice(let text): return "notice " + Self.oneLine(text)
        case .ok(let fields): return (["ok"] + fields.map { "\($0.name)=\($0.value)" }).joined(separator: " ")
        case .error(let error): return "error \(error.code.rawValue) \(Self.oneLine(error.message))"
        }
    }

    static func oneLine(_ text: String) -> String {
        String(text.map { $0 == "\n" || $0 == "\r" ? " " : $0 })
    }

    public static func parse(_ line: String) -> ReplyLine? {
        let tokens = line.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
        guard let kind = tokens.first else { return nil }
        switch kind {
        case "notice": return .notice(String(line.dropFirst(min(line.count, 7))))
        case "error":
            guard tokens.count >= 2, let code = ErrorCode(rawValue: tokens[1]) else { return nil }
            let prefix = "error \(tokens[1]) "
            let message = line.hasPrefix(prefix) ? String(line.dropFirst(prefix.count)) : ""
            return .error(ProtocolError(code, message))
        default:
            var fields: [(name: String, value: String)] = []
            for token in tokens.dropFirst() {
                guard let equals = token.firstIndex(of: "=") else { return nil }
                fields.append((String(token[..<equals]), String(token[token.index(after: equals)...])))
            }
            return kind == "ok" ? .ok(fields) : .record(Record(kind: kind, fields: fields))
        }
    }
}

/// The greeting line a server sends on connect.
public struct Greeting: Equatable, Sendable {
    public let version: Int
    public let pid: Int32

    public init(version: Int = Protocol.version, pid: Int32) {
        self.version = version
        self.pid = pid
    }

    public var line: String { "\(Protocol.name)/\(version) pid=\(pid)" }

    public static func parse(_ line: String) -> Greeting? {
        let tokens = line.split(separator: " ")
        guard tokens.count >= 2, tokens[0].hasPrefix("\(Protocol.name)/"), let version = Int(tokens[0].dropFirst(Protocol.name.count + 1)),
              tokens[1].hasPrefix("pid="), let pid = Int32(tokens[1].dropFirst(4)) else { return nil }
        return Greeting(version: version, pid: pid)
    }
}

/// One parameter value of one chain, as in a `value` line.
public struct ValueRecord: Equatable, Sendable {
    public let chain: Int
    public let parameter: Parameter
    public let value: Float

    public init(chain: Int, parameter: Parameter, value: Float) {
        self.chain = chain
        self.parameter = parameter
        self.value = value
    }

    public var record: Record {
        Record(kind: "value", fields: [("chain", String(chain)), ("key", parameter.key), ("value", ParameterValue.format(value))])
    }

    public init?(_ record: Record) {
        guard record.kind == "value", let chain = record["chain"].flatMap({ Int($0) }),
              let parameter = record["key"].flatMap({ Parameter(key: $0) }),
              let value = record["value"].flatMap({ Float($0) }) else { return nil }
        self.init(chain: chain, parameter: parameter, value: value)
    }
}

/// One parameter of one chain moved by a `step` request: from what to what.
public struct StepRecord: Equatable, Sendable {
    public let chain: Int
    public let parameter: Parameter
    public let from: Float
    public let to: Float

    public init(chain: Int, parameter: Parameter, from: Float, to: Float) {
        self.chain = chain
        self.parameter = parameter
        self.from = from
        self.to = to
    }

    public var record: Record {
        Record(kind: "step", fields: [("chain", String(chain)), ("key", parameter.key),
                                      ("from", ParameterValue.format(from)), ("to", ParameterValue.format(to))])
    }

    public init?(_ record: Record) {
        guard record.kind == "step", let chain = record["chain"].flatMap({ Int($0) }),
              let parameter = record["key"].flatMap({ Parameter(key: $0) }),
              let from = record["from"].flatMap({ Float($0) }), let to = record["to"].flatMap({ Float($0) }) else { return nil }
        self.init(chain: chain, parameter: parameter, from: from, to: to)
    }
}

/// One live instance, as in an `instance` line, with its meters (HearDSP's `Meter` table, in table order).
public struct InstanceStatus: Equatable, Sendable {
    public var id: Int
    public var chain: Int
    public var label: String
    public var sampleRate: Int
    public var channels: Int
    /// Samples.
    public var latency: Int
    /// Frames in the host's last call (the quantum its graph runs now); 0 before the first, or from a
    /// server that does not report it.
    public var block: Int
    /// Seconds since instantiate.
    public var uptime: Double
    public var bypassed: Bool
    /// The last meter window; an empty one while the instance is idle.
    public var meters: MeterReadings
    /// False while the host does not run the instance (a suspended node); its meters are then silent.
    public var running: Bool
    /// Chunks the chain silenced because it produced a non-finite sample itself (its state was reset).
    public var faults: Int

    public init(id: Int, chain: Int, label: String, sampleRate: Int, channels: Int, latency: Int, uptime: Double,
                bypassed: Bool, meters: MeterReadings = MeterReadings(), running: Bool = true, faults: Int = 0, block: Int = 0) {
        self.id = id
        self.block = block
        self.chain = chain
        self.label = label
        self.sampleRate = sampleRate
        self.channels = channels
        self.latency = latency
        self.uptime = uptime
        self.bypassed = bypassed
        self.meters = meters
        self.running = running
        self.faults = faults
    }

    public var chainName: String { ChainName.name(chain) }

    public var record: Record {
        func level(_ value: Float) -> String { value.isFinite ? ParameterValue.format((value * 10).rounded() / 10) : (value < 0 ? "-inf" : "nan") }
        var fields: [(name: String, value: String)] = [
            ("id", String(id)), ("chain", String(chain)), ("name", chainName), ("label", label),
            ("rate", String(sampleRate)), ("channels", String(channels)), ("latency", String(latency)), ("block", String(block)),
            ("uptime", ParameterValue.format(Float((uptime * 10).rounded() / 10))), ("state", running ? "running" : "idle"),
            ("bypass", bypassed ? "on" : "off"),
        ]
        // Not measured: `-`.
        for (meter, reading) in meters.all { fields.append((meter.key, reading.map(level) ?? "-")) }
        fields.append(("faults", String(faults)))
        return Record(kind: "instance", fields: fields)
    }

    public init?(_ record: Record) {
        func level(_ name: String) -> Float? {
            guard let text = record[name] else { return nil }
            if text == "-inf" { return -.infinity }
            return Float(text)
        }
        guard record.kind == "instance", let id = record["id"].flatMap({ Int($0) }), let chain = record["chain"].flatMap({ Int($0) }),
              let label = record["label"], let rate = record["rate"].flatMap({ Int($0) }),
              let channels = record["channels"].flatMap({ Int($0) }), let latency = record["latency"].flatMap({ Int($0) }),
              let uptime = record["uptime"].flatMap({ Double($0) }), let bypass = record["bypass"], let state = record["state"]
        else { return nil }
        var meters = MeterReadings()
        for meter in Meter.allCases {
            let reading = level(meter.key)
            // A meter that every window measures must be there; the others read `-` while their stage is off.
            if reading == nil && meter.measuredAlways { return nil }
            meters[meter] = reading
        }
        self.init(id: id, chain: chain, label: label, sampleRate: rate, channels: channels, latency: latency, uptime: uptime,
                  bypassed: bypass == "on", meters: meters, running: state == "running",
                  faults: record["faults"].flatMap { Int($0) } ?? 0, block: record["block"].flatMap { Int($0) } ?? 0)
    }
}
