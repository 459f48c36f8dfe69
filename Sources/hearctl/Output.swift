// Text tables for people and JSON for scripts. JSON numbers that have no value (a silent meter,
// a meter this build lacks) are null.

import Foundation
import HearControl
import HearDSP

enum Output {
    static func json(_ object: Any) {
        let data = try! JSONSerialization.data(withJSONObject: sanitize(object), options: [.prettyPrinted, .sortedKeys])
        print(String(decoding: data, as: UTF8.self))
    }

    /// Non-finite numbers become null (JSON has no -inf).
    static func sanitize(_ object: Any) -> Any {
        switch object {
        case let value as Double: return value.isFinite ? value : NSNull()
        case let value as Float: return value.isFinite ? Double(value) : NSNull()
        case let value as [String: Any]: return value.mapValues(sanitize)
        case let value as [Any]: return value.map(sanitize)
        case Optional<Any>.none: return NSNull()
        default: return object
        }
    }

    static func level(_ value: Float?) -> Any {
        guard let value, value.isFinite else { return NSNull() }
        return Double((value * 10).rounded() / 10)
    }

    static func statusObject(pid: Int32, _ status: InstanceStatus) -> [String: Any] {
        [
            "pid": Int(pid), "id": status.id, "chain": status.chain, "name": status.chainName, "label": status.label,
            "rate": status.sampleRate, "channels": status.channels, "latency": status.latency,
            "latencyMilliseconds": Double(status.latency) * 1000 / Double(max(status.sampleRate, 1)),
            "uptime": status.uptime, "running": status.running, "bypass": status.bypassed, "faults": status.faults,
            "meters": [
                "input": ["peak": level(status.inputPeak), "rms": level(status.inputRMS)],
                "output": ["peak": level(status.outputPeak), "rms": level(status.outputRMS)],
                "compressorReduction": level(status.compressorReduction),
                "limiterReduction": level(status.limiterReduction),
                "noiseFloor": level(status.noiseFloor),
                "speechProbability": level(status.speechProbability),
            ] as [String: Any],
        ]
    }

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

    static func table(_ rows: [[String]]) -> String {
        guard let header = rows.first else { return "" }
        var widths = [Int](repeating: 0, count: header.count)
        for row in rows { for (index, cell) in row.enumerated() where index < widths.count { widths[index] = max(widths[index], cell.count) } }
        return rows.map { row in
            row.enumerated().map { index, cell in
                index == row.count - 1 ? cell : cell.padding(toLength: widths[index], withPad: " ", startingAt: 0)
            }.joined(separator: "  ")
        }.joined(separator: "\n")
    }

    static func statusTable(_ statuses: [(pid: Int32, status: InstanceStatus)]) -> String {
        var rows = [["CHAIN", "PID:ID", "LABEL", "RATE", "LATENCY", "UPTIME", "STATE", "BYPASS", "IN PEAK/RMS", "OUT PEAK/RMS", "COMP GR", "LIMIT GR", "NOISE", "SPEECH"]]
        for (pid, status) in statuses {
            let latency = String(format: "%d (%.1f ms)", status.latency, Double(status.latency) * 1000 / Double(max(status.sampleRate, 1)))
            rows.append([
                "\(status.chain) (\(status.chainName))", "\(pid):\(status.id)", status.label,
                "\(status.sampleRate) Hz \(status.channels == 1 ? "mono" : "\(status.channels) ch")", latency,
                duration(status.uptime), status.running ? "running" : "idle", status.bypassed ? "on" : "off",
                "\(decibels(status.inputPeak))/\(decibels(status.inputRMS)) dBFS",
                "\(decibels(status.outputPeak))/\(decibels(status.outputRMS)) dBFS",
                "\(decibels(status.compressorReduction)) dB", "\(decibels(status.limiterReduction)) dB",
                status.noiseFloor.map { "\(decibels($0)) dBFS" } ?? "n/a",
                status.speechProbability.map { String(format: "%.0f%%", $0 * 100) } ?? "n/a",
            ])
        }
        var text = table(rows)
        for (pid, status) in statuses where status.faults > 0 {
            text += "\nchain \(status.chain) (\(status.chainName)) \(pid):\(status.id): \(status.faults) chunk(s) silenced after"
                + " a non-finite sample inside the filter; it restarted clean each time"
        }
        return text
    }

    static func parameterTable(_ chains: [(chain: Int, values: [(Parameter, Float)])]) -> String {
        let valueHeaders = chains.count == 1 ? ["VALUE"] : chains.map { "VALUE[\(ChainName.name($0.chain))]" }
        var rows = [["PARAMETER"] + valueHeaders + ["RANGE", "DEFAULT", "UNIT", "HELP"]]
        for parameter in Parameter.allCases {
            let spec = parameter.spec
            let values = chains.map { chain -> String in
                guard let value = chain.values.first(where: { $0.0 == parameter })?.1 else { return "-" }
                return spec.scale == .toggle ? spec.switchName(value) : ParameterValue.format(value)
            }
            let range = spec.scale == .toggle ? "\(spec.switchName(0))/\(spec.switchName(1))" : "\(ParameterValue.format(spec.minimum))..\(ParameterValue.format(spec.maximum))"
            let defaultText = spec.scale == .toggle ? spec.switchName(spec.defaultValue) : ParameterValue.format(spec.defaultValue)
            rows.append([spec.key] + values + [range, defaultText, spec.unit.isEmpty ? "-" : spec.unit, spec.help])
        }
        return table(rows)
    }
}
