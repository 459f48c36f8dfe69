// The settings text format of state files (`$XDG_STATE_HOME/hear/<chain>.conf`) and presets
// (`$XDG_CONFIG_HOME/hear/presets/<name>.conf`): one `key = value` per line, `#` comments.
//
//     # hear settings
//     gain = 6
//     comp.ratio = 3
//
// Lines may end in LF or CRLF. Presets are strict (`parse`: the first bad line rejects the file);
// state files are read tolerantly (`parseTolerant`: every good line is kept, every bad line is
// reported with its number), so one damaged line never costs the others.

import HearDSP

public struct Settings: Equatable, Sendable {
    /// In schema order, one entry per parameter at most.
    public private(set) var assignments: [Assignment] = []

    public init(_ assignments: [Assignment] = []) {
        for assignment in assignments { self[assignment.parameter] = assignment.value }
    }

    public subscript(parameter: Parameter) -> Float? {
        get { assignments.first { $0.parameter == parameter }?.value }
        set {
            assignments.removeAll { $0.parameter == parameter }
            if let newValue { assignments.append(Assignment(parameter, newValue)) }
            assignments.sort { $0.parameter.rawValue < $1.parameter.rawValue }
        }
    }

    public var isEmpty: Bool { assignments.isEmpty }

    public func text(comment: String) -> String {
        var out = comment.split(separator: "\n").map { "# \($0)\n" }.joined()
        for assignment in assignments { out += "\(assignment.parameter.key) = \(ParameterValue.format(assignment.value))\n" }
        return out
    }

    /// Tolerant (the settings file; a preset reads strictly, HearctlCore's `Settings.parse`): the settings of every good line (a later line for the same key wins), and one
    /// error per bad line, naming its number.
    public static func parseTolerant(_ text: String) -> (settings: Settings, errors: [ProtocolError]) {
        var settings = Settings()
        var errors: [ProtocolError] = []
        var number = 0
        // "\r\n" is one Character in Swift: split on it as well as on "\n" (and a lone "\r").
        for rawLine in text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" || $0 == "\r" }) {
            number += 1
            var line = Substring(rawLine)
            if let hash = line.firstIndex(of: "#") { line = line[..<hash] }
            let trimmed = String(line).trimmingSpaces
            if trimmed.isEmpty { continue }
            guard let equals = trimmed.firstIndex(of: "=") else {
                errors.append(ProtocolError(.badRequest, "line \(number): expected 'key = value'"))
                continue
            }
            let key = String(trimmed[..<equals]).trimmingSpaces
            let valueText = String(trimmed[trimmed.index(after: equals)...]).trimmingSpaces
            switch ParameterKey.parse(key) {
            case .failure(let error): errors.append(ProtocolError(error.code, "line \(number): \(error.message)"))
            case .success(let parameter):
                switch ParameterValue.parse(valueText, for: parameter) {
                case .failure(let error): errors.append(ProtocolError(error.code, "line \(number): \(error.message)"))
                case .success(let value): settings[parameter] = value
                }
            }
        }
        return (settings, errors)
    }
}
