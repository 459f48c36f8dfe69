// hearctl set's value syntax: what one parameter is asked for on its command line. Only hearctl
// reads it (the protocol has `set` and `step` requests, Values.swift), so it lives here and not in
// HearControl, which the plugin links.

import HearControl
import HearDSP

/// What `hearctl set` is asked for one parameter: a value, or a step from the current value.
public enum ValueChange: Equatable, Sendable {
    case to(Float)
    case by(Float)
}

extension ParameterValue {
    /// `hearctl set`'s value syntax. A leading sign is a step from the current value ("+2", "-3dB",
    /// as wpctl's relative volumes); "=" makes the value absolute, which is how a negative value
    /// is written ("=-30dB"); anything else is a value as `parse` reads it. Switches take no steps.
    public static func parseChange(_ text: String, for parameter: Parameter) -> Result<ValueChange, ProtocolError> {
        let trimmed = text.trimmingSpaces
        if trimmed.hasPrefix("=") { return parse(String(trimmed.dropFirst()), for: parameter).map(ValueChange.to) }
        guard trimmed.hasPrefix("+") || trimmed.hasPrefix("-") else { return parse(trimmed, for: parameter).map(ValueChange.to) }
        switch step(trimmed, for: parameter) {
        case .failure(let error):
            guard error.code == .outOfRange else { return .failure(error) }
            return .failure(ProtocolError(.outOfRange, error.message + "; for a negative value write =\(printable(trimmed))"))
        case .success(let step): return .success(.by(step))
        }
    }
}
