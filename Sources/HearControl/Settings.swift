// The settings text format of state files (`$XDG_STATE_HOME/hear/<chain>.conf`) and presets
// (`$XDG_CONFIG_HOME/hear/presets/<name>.conf`): one `key = value` per line, `#` comments.
//
//     # hear settings
//     gain = 6
//     comp.ratio = 3
//
// A file is taken whole or not at all: any line that is not a known key with a value in range
// makes it corrupt, and the reader reports the line and ignores the file.

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

    public static func parse(_ text: String) -> Result<Settings, ProtocolError> {
        var settings = Settings()
        var number = 0
        for rawLine in text.split(separator: "\n", omittingEmptySubsequences: false) {
            number += 1
            var line = Substring(rawLine)
            if let hash = line.firstIndex(of: "#") { line = line[..<hash] }
            let trimmed = String(line).trimmingSpaces
            if trimmed.isEmpty { continue }
            guard let equals = trimmed.firstIndex(of: "=") else {
                return .failure(ProtocolError(.badRequest, "line \(number): expected 'key = value'"))
            }
            let key = String(trimmed[..<equals]).trimmingSpaces
            let valueText = String(trimmed[trimmed.index(after: equals)...]).trimmingSpaces
            switch ParameterKey.parse(key) {
            case .failure(let error): return .failure(ProtocolError(error.code, "line \(number): \(error.message)"))
            case .success(let parameter):
                switch ParameterValue.parse(valueText, for: parameter) {
                case .failure(let error): return .failure(ProtocolError(error.code, "line \(number): \(error.message)"))
                case .success(let value): settings[parameter] = value
                }
            }
        }
        return .success(settings)
    }
}
