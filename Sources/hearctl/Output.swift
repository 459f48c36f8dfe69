// Text tables for people and JSON for scripts. JSON is encoded from Codable types, one per reply
// shape, with sorted keys; numbers that have no value (a silent meter, a meter this build lacks)
// are null (Nullable). Parameter values are rounded to their precision (ParameterValue.decimals);
// tables fit the terminal, or 80 columns when stdout is not one.

import Foundation
import Glibc
import HearctlCore
import HearControl
import HearDSP

enum Output {
    /// Pretty-printed, keys sorted.
    static func json<Value: Encodable>(_ value: Value) {
        print(String(decoding: encoded(value, formatting: [.prettyPrinted, .sortedKeys]), as: UTF8.self))
    }

    static func encoded<Value: Encodable>(_ value: Value, formatting: JSONEncoder.OutputFormatting) -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = formatting.union(.withoutEscapingSlashes)
        // Every number that can be non-finite is Nullable; one that is not would be a bug here.
        encoder.nonConformingFloatEncodingStrategy = .convertToString(positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
        return try! encoder.encode(value)
    }

    static func level(_ value: Float?) -> Double? {
        guard let value, value.isFinite else { return nil }
        // Rounded in decimal, so JSON shows -34.1, not -34.099998474121094.
        return Double(String(format: "%.1f", Double(value)))
    }

    /// A parameter value for JSON, rounded to its precision.
    static func value(_ value: Float?, for parameter: Parameter) -> Double? {
        guard let value, value.isFinite else { return nil }
        return ParameterValue.rounded(value, for: parameter)
    }

    /// Values by parameter key, rounded to their precision.
    static func values(_ values: [(Parameter, Float)]) -> [String: Nullable<Double>] {
        Dictionary(values.map { ($0.0.key, Nullable(value($0.1, for: $0.0))) }, uniquingKeysWith: { $1 })
    }

    /// Columns to fit: the terminal's width, or 80 when stdout is not a terminal.
    static var width: Int {
        guard isatty(STDOUT_FILENO) == 1 else { return 80 }
        var size = winsize()
        if ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0 && size.ws_col >= 40 { return Int(size.ws_col) }
        return 80
    }

    /// Whether stdout is a terminal (escape codes only then).
    static var isTerminal: Bool { isatty(STDOUT_FILENO) == 1 }

    /// One line cut to `width` columns with an ellipsis.
    static func fit(_ line: String, width: Int = Output.width) -> String {
        line.count <= width ? line : String(line.prefix(max(0, width - 1))) + "…"
    }

    struct ChangeReply: Encodable {
        let chain: Int
        let name: String
        let state: String
        let instances: Int
        let values: [String: Nullable<Double>]
        let saved: String?
        /// The parameters that moved by a step, from what to what.
        let steps: [String: Step]?

        struct Step: Encodable {
            let from: Double
            let to: Double
        }
    }

    /// The reply to a change: the chain it changed and the values it has now.
    static func change(_ result: ChangeResult, json: Bool, summary: String? = nil) {
        for notice in result.notices { FileHandle.standardError.write(Data("hearctl: warning: \(notice)\n".utf8)) }
        if json {
            Output.json(ChangeReply(chain: result.chain, name: ChainName.name(result.chain), state: result.state,
                                    instances: result.instances, values: values(result.values), saved: result.saved,
                                    steps: result.steps.isEmpty ? nil : Dictionary(result.steps.map {
                                        ($0.parameter.key, ChangeReply.Step(from: ParameterValue.rounded($0.from, for: $0.parameter),
                                                                            to: ParameterValue.rounded($0.to, for: $0.parameter)))
                                    }, uniquingKeysWith: { $1 })))
            return
        }
        let name = "chain \(Chains.describe(result.chain))"
        let what = summary ?? result.values.map { parameter, value in
            // A step says where it started and by how much it moved: "gain 5 → 3 dB (-2)".
            guard let step = result.steps.first(where: { $0.parameter == parameter }) else {
                return "\(parameter.key) = \(ParameterValue.describe(value, for: parameter))"
            }
            let moved = step.to - step.from
            let by = (moved < 0 ? "-" : "+") + ParameterValue.text(abs(moved), for: parameter)
            return "\(parameter.key) \(ParameterValue.text(step.from, for: parameter)) → \(ParameterValue.describe(step.to, for: parameter)) (\(by))"
        }.joined(separator: ", ")
        if result.state == "running" {
            print("\(name): \(what)")
        } else {
            print("\(name) is suspended: \(what); saved in \(result.saved ?? "its state file"), applied when the chain starts")
        }
    }

    /// One instance in `status --json` and `meter --json`.
    struct Instance: Encodable {
        let pid: Int32
        let id: Int
        let chain: Int
        let name: String
        let label: String
        let rate: Int
        let channels: Int
        let latency: Int
        @Nullable var latencyMilliseconds: Double?
        /// Frames per call of the host (the quantum the graph runs now); null before the first call.
        @Nullable var block: Int?
        @Nullable var uptime: Double?
        let running: Bool
        let bypass: Bool
        let faults: Int
        let meters: MetersObject

        init(pid: Int32, _ status: InstanceStatus) {
            self.pid = pid
            id = status.id
            chain = status.chain
            name = status.chainName
            label = status.label
            rate = status.sampleRate
            channels = status.channels
            latency = status.latency
            latencyMilliseconds = Double(status.latency) * 1000 / Double(max(status.sampleRate, 1))
            block = status.block > 0 ? status.block : nil
            uptime = status.uptime
            running = status.running
            bypass = status.bypassed
            faults = status.faults
            meters = MetersObject(status.meters)
        }
    }

    /// Every meter under its name in the table (HearDSP/Meters.swift), a dot in the name nesting it
    /// (`input.peak` is `{"input": {"peak": ...}}`); null where nothing was measured.
    struct MetersObject: Encodable {
        indirect enum Node: Encodable {
            case reading(Double?)
            case object([String: Node])

            func encode(to encoder: any Encoder) throws {
                switch self {
                case .reading(let value):
                    var container = encoder.singleValueContainer()
                    if let value { try container.encode(value) } else { try container.encodeNil() }
                case .object(let members):
                    var container = encoder.container(keyedBy: Key.self)
                    for (name, node) in members { try container.encode(node, forKey: Key(name)) }
                }
            }
        }

        struct Key: CodingKey {
            let stringValue: String
            init(_ name: String) { stringValue = name }
            init?(stringValue: String) { self.stringValue = stringValue }
            var intValue: Int? { nil }
            init?(intValue: Int) { nil }
        }

        let root: Node

        init(_ meters: MeterReadings) {
            func insert(_ value: Double?, at path: ArraySlice<String>, into members: inout [String: Node]) {
                guard let first = path.first else { return }
                if path.count == 1 { members[first] = .reading(value); return }
                var inner: [String: Node] = [:]
                if case .object(let existing)? = members[first] { inner = existing }
                insert(value, at: path.dropFirst(), into: &inner)
                members[first] = .object(inner)
            }
            var members: [String: Node] = [:]
            for (meter, reading) in meters.all { insert(Output.level(reading), at: meter.namePath[...], into: &members) }
            root = .object(members)
        }

        func encode(to encoder: any Encoder) throws { try root.encode(to: encoder) }
    }

    /// The meters the status table has fixed columns for.
    static let tabulated: Set<Meter> = [.inputPeak, .inputRMS, .outputPeak, .outputRMS, .compressorReduction, .limiterReduction,
                                        .noiseFloor, .speechProbability]

    static func decibels(_ value: Float) -> String {
        value.isFinite ? String(format: "%.1f", value) : "-inf"
    }

    static func duration(_ seconds: Double) -> String {
        let total = Int(seconds)
        if total < 60 { return "\(total)s" }
        if total < 3600 { return "\(total / 60)min \(total % 60)s" }
        if total < 86400 { return "\(total / 3600)h \(total % 3600 / 60)min" }
        return "\(total / 86400)d \(total % 86400 / 3600)h"
    }

    /// Columns two spaces apart; the last column is cut so that every line fits `width`.
    static func table(_ rows: [[String]], width: Int = Output.width) -> String {
        guard let header = rows.first else { return "" }
        var widths = [Int](repeating: 0, count: header.count)
        for row in rows { for (index, cell) in row.enumerated() where index < widths.count { widths[index] = max(widths[index], cell.count) } }
        return rows.map { row in
            fit(row.enumerated().map { index, cell in
                index == row.count - 1 ? cell : cell.padding(toLength: widths[index], withPad: " ", startingAt: 0)
            }.joined(separator: "  "), width: width)
        }.joined(separator: "\n")
    }

    /// Instances (and chains without one: `idle`), then the meters of the running ones.
    static func statusTable(_ statuses: [(pid: Int32, status: InstanceStatus)], idle: [(chain: Int, state: String, label: String)] = []) -> String {
        var rows = [["CHAIN", "STATE", "LABEL", "RATE", "LATENCY", "BLOCK", "UPTIME", "BYPASS"]]
        var entries: [(chain: Int, row: [String])] = []
        for (_, status) in statuses {
            entries.append((status.chain, [
                Chains.describe(status.chain), status.running ? "running" : "idle", status.label, "\(status.sampleRate) Hz",
                String(format: "%.1f ms", Double(status.latency) * 1000 / Double(max(status.sampleRate, 1))),
                status.block > 0 ? "\(status.block)" : "-", duration(status.uptime), status.bypassed ? "on" : "off",
            ]))
        }
        for chain in idle { entries.append((chain.chain, [Chains.describe(chain.chain), chain.state, chain.label, "-", "-", "-", "-", "-"])) }
        rows += entries.sorted { $0.chain < $1.chain }.map(\.row)
        var text = table(rows)
        let running = statuses.filter(\.status.running)
        if !running.isEmpty {
            // Meters the fixed columns do not show get a column of their own, headed by their key.
            let others = Meter.allCases.filter { !tabulated.contains($0) }
            var meters = [["CHAIN", "PID:ID", "IN PK/RMS", "OUT PK/RMS", "COMP GR", "LIM GR", "NOISE", "SPEECH"] + others.map { $0.key.uppercased() }]
            for (pid, status) in running {
                let readings = status.meters
                func level(_ meter: Meter) -> String { decibels(readings[meter] ?? -.infinity) }
                meters.append([
                    status.chainName, "\(pid):\(status.id)",
                    "\(level(.inputPeak))/\(level(.inputRMS))", "\(level(.outputPeak))/\(level(.outputRMS))",
                    decibels(readings[.compressorReduction] ?? 0), decibels(readings[.limiterReduction] ?? 0),
                    readings[.noiseFloor].map { "\(decibels($0))" } ?? "n/a",
                    readings[.speechProbability].map { String(format: "%.0f%%", $0 * 100) } ?? "n/a",
                ] + others.map { $0.spec.unit.text(readings[$0]) })
            }
            text += "\n\nlevels and noise floor in dBFS, gain reduction (GR) in dB\n" + table(meters)
            // Where a microphone chain's echo canceller stands: it has a reference only while a
            // speaker chain plays in the same PipeWire process.
            for (pid, status) in running where status.chain == ChainName.mic {
                let readings = status.meters
                // 10 dB: where speexdsp's filter stands within a second of far-end speech in a room
                // it can learn (EchoCancellerTests); below it, it is still learning, or little
                // echo reaches the microphone (headphones) and there is little to take out.
                let name = "echo canceller of \(status.chainName) \(pid):\(status.id): "
                guard let erle = readings[.echoReturnLossEnhancement] else {
                    text += "\n" + fit(name + "idle: nothing from a speaker chain in this PipeWire yet (hearctl enable mic --echo-cancel)")
                    continue
                }
                text += "\n" + fit(name + "cancelling what the speaker chain plays")
                text += "\n" + fit((erle >= 10 ? "  converged: " : "  not converged (learning, or little echo): ")
                                   + "ERLE \(decibels(erle)) dB"
                                   + (readings[.echoDelay].map { String(format: ", echo delay %.1f ms", $0) } ?? ""))
            }
        }
        for (pid, status) in statuses where status.faults > 0 {
            text += "\n" + fit("chain \(status.chain) (\(status.chainName)) \(pid):\(status.id): \(status.faults) chunk(s) silenced")
                + "\n" + fit("  after a non-finite sample inside the filter; it restarted clean each time")
        }
        return text
    }

    /// One row per parameter: key, value per chain, range with unit, default, help (cut to fit).
    static func parameterTable(_ chains: [(chain: Int, values: [(Parameter, Float)])]) -> String {
        let valueHeaders = chains.count == 1 ? ["VALUE"] : chains.map { ChainName.name($0.chain).uppercased() }
        var rows = [["PARAMETER"] + valueHeaders + ["RANGE", "DEFAULT", "HELP"]]
        for parameter in Parameter.allCases {
            let spec = parameter.spec
            let values = chains.map { chain -> String in
                guard let value = chain.values.first(where: { $0.0 == parameter })?.1 else { return "-" }
                return spec.scale == .toggle ? spec.switchName(value) : ParameterValue.text(value, for: parameter)
            }
            let unit = spec.unit.isEmpty || spec.unit == ":1" ? spec.unit : " " + spec.unit
            let range = spec.scale == .toggle ? "\(spec.switchName(0))/\(spec.switchName(1))"
                : "\(ParameterValue.text(spec.minimum, for: parameter))..\(ParameterValue.text(spec.maximum, for: parameter))\(unit)"
            let defaultText = spec.scale == .toggle ? spec.switchName(spec.defaultValue) : ParameterValue.text(spec.defaultValue, for: parameter)
            rows.append([spec.key] + values + [range, defaultText, spec.help])
        }
        return table(rows)
    }
}

/// A JSON value written as null when it is absent or a number that is not finite (JSON has no
/// -inf), where a plain optional would leave the key out.
@propertyWrapper
struct Nullable<Value: Encodable>: Encodable {
    var wrappedValue: Value?

    init(wrappedValue: Value?) { self.wrappedValue = wrappedValue }
    init(_ value: Value?) { wrappedValue = value }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        guard let value = wrappedValue else { return try container.encodeNil() }
        if let number = value as? Double, !number.isFinite { return try container.encodeNil() }
        if let number = value as? Float, !number.isFinite { return try container.encodeNil() }
        try container.encode(value)
    }
}

extension MeterUnit {
    /// A reading as people read it: a number and its unit; `n/a` when not measured.
    func text(_ reading: Float?) -> String {
        guard let reading else { return "n/a" }
        switch self {
        case .amplitude, .squares, .level: return Output.decibels(reading) + " dBFS"
        case .reduction: return Output.decibels(reading) + " dB"
        case .fraction: return String(format: "%.0f%%", reading * 100)
        case .count: return String(format: "%.0f", reading)
        case .milliseconds: return String(format: "%.1f ms", reading)
        }
    }

    /// The span of a bar for this unit, in the reading's own scale.
    var barRange: (low: Float, high: Float) {
        switch self {
        case .amplitude, .squares, .level: return (-60, 0)
        case .reduction: return (0, 24)
        case .fraction: return (0, 1)
        case .count: return (0, 10)
        case .milliseconds: return (0, 250)
        }
    }
}
