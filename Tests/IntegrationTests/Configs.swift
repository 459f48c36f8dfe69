// Reading the committed configs: the controls a PipeWire drop-in sets, and the module lines of
// the PulseAudio script.

import Foundation
import TestSupport

struct DropIn {
    let label: String
    let controls: [String: Double]

    init(_ text: String) throws {
        let code = Self.code(text)
        guard let label = code.firstMatch(of: /label\s*=\s*"?([a-z_]+)"?/)?.1 else { throw TestFailure("no label") }
        self.label = String(label)
        guard let block = code.firstMatch(of: /control\s*=\s*\{([^}]*)\}/)?.1 else { throw TestFailure("no control block") }
        var controls: [String: Double] = [:]
        for match in block.matches(of: /"([^"]+)"\s*=\s*(-?[0-9.]+)/) {
            guard let value = Double(match.2) else { throw TestFailure("bad value for \(match.1)") }
            controls[String(match.1)] = value
        }
        self.controls = controls
    }

    /// The text without comment lines.
    static func code(_ text: String) -> String {
        text.split(separator: "\n").filter { !$0.trimmingCharacters(in: .whitespaces).hasPrefix("#") }.joined(separator: "\n")
    }
}

/// One `load-module module-ladspa-sink` line of hear.pa.
struct PulseLADSPASink {
    let line: String
    let sinkName: String
    let label: String
    /// Positional control values; nil where the entry is empty (the plugin's default).
    let values: [Double?]

    static func all(in text: String) throws -> [PulseLADSPASink] {
        try text.split(separator: "\n").map(String.init).filter { $0.hasPrefix("load-module module-ladspa-sink ") }.map { line in
            guard let sink = line.firstMatch(of: /sink_name=([A-Za-z0-9_.]+)/)?.1,
                  let label = line.firstMatch(of: /label=([a-z_]+)/)?.1,
                  let list = line.firstMatch(of: /control=([-0-9.,]*)/)?.1 else { throw TestFailure("cannot read: \(line)") }
            return PulseLADSPASink(line: line, sinkName: String(sink), label: String(label),
                                   values: list.split(separator: ",", omittingEmptySubsequences: false).map { Double($0) })
        }
    }

    /// The values by port name.
    func controls(ports: [String]) -> [String: Double] {
        var named: [String: Double] = [:]
        for (index, value) in values.enumerated() where index < ports.count { if let value { named[ports[index]] = value } }
        return named
    }

    /// A control value as the script writes it: 6 rather than 6.0.
    static func format(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e9 ? String(Int(value)) : String(value)
    }

    /// The module arguments with another sink name, master and control list (for loading with pactl).
    func arguments(sinkName: String, master: String, controls: [String: Double], ports: [String]) -> String {
        let list = ports.map { port in controls[port].map { String($0) } ?? "" }.joined(separator: ",")
        let kept = line.matches(of: /(?:^| )((?:plugin|label|rate|channels|channel_map)=[^ ]+)/).map { String($0.1) }
        return (["sink_name=\(sinkName)", "sink_master=\(master)"] + kept + ["control=\(list)"]).joined(separator: " ")
    }
}
