// Parameter values as people and files write them: "6", "6dB", "-3.5 dB", "3:1", "on".
// One parser for the server, the CLI, state files and presets, so all accept the same text.

import HearDSP

public enum ParameterValue {
    /// The value `text` means for `parameter`, checked against the schema range; nothing is clamped.
    public static func parse(_ text: String, for parameter: Parameter) -> Result<Float, ProtocolError> {
        let spec = parameter.spec
        let trimmed = text.trimmingSpaces
        if spec.scale == .toggle, spec.choices.count == 2 {
            let name = trimmed.lowercased()
            if name == spec.choices[0] || name == "0" { return .success(0) }
            if name == spec.choices[1] || name == "1" { return .success(1) }
            return .failure(ProtocolError(.badValue, "\(spec.key) is \(spec.choices[0]) or \(spec.choices[1]) (or 0 or 1), not '\(printable(trimmed))'"))
        }
        if spec.scale == .toggle {
            switch trimmed.lowercased() {
            case "on", "true", "yes", "1", "1.0": return .success(1)
            case "off", "false", "no", "0", "0.0": return .success(0)
            default:
                return .failure(ProtocolError(.badValue, "\(spec.key) is a switch: use on or off (or 1 or 0), not '\(printable(trimmed))'"))
            }
        }
        let value: Float
        switch number(trimmed, for: parameter) {
        case .failure(let error): return .failure(error)
        case .success(let parsed): value = parsed
        }
        guard value >= spec.minimum && value <= spec.maximum else {
            return .failure(ProtocolError(.outOfRange, "\(spec.key) must be between \(describe(spec.minimum, for: parameter)) and \(describe(spec.maximum, for: parameter)); got \(describe(value, for: parameter))"))
        }
        return .success(value)
    }

    /// Units people type, by the schema unit they measure in, with the factor to that unit.
    static let units: [(suffix: String, unit: String, factor: Float)] = [
        ("db", "dB", 1), ("khz", "Hz", 1000), ("hz", "Hz", 1), ("k", "Hz", 1000), ("ms", "ms", 1), ("s", "ms", 1000),
        ("%", "%", 1), (":1", ":1", 1),
    ]

    /// What each schema unit measures, for messages.
    static func quantity(_ unit: String) -> String {
        switch unit {
        case "dB": return "a level in dB"
        case "Hz": return "a frequency (Hz, kHz, k)"
        case "ms": return "a time (ms, s)"
        case "%": return "a percentage"
        case ":1": return "a ratio (N:1)"
        default: return "a plain number"
        }
    }

    /// A number with an optional unit, converted to the parameter's unit: "1k" and "1kHz" are
    /// 1000 Hz, "0.1s" is 100 ms, "-3dB" is -3 dB. A unit of another quantity is an error.
    static func number(_ text: String, for parameter: Parameter) -> Result<Float, ProtocolError> {
        let spec = parameter.spec
        var digits = Substring(text)
        var suffix = ""
        if digits.hasSuffix(":1") {
            digits = digits.dropLast(2)
            suffix = ":1"
        } else {
            while let last = digits.last, last.isLetter || last == "%" {
                suffix = String(last) + suffix
                digits = digits.dropLast()
            }
        }
        while digits.last == " " { digits = digits.dropLast() }
        var factor: Float = 1
        if !suffix.isEmpty {
            guard let unit = units.first(where: { $0.suffix == suffix.lowercased() }) else {
                return .failure(ProtocolError(.badValue, "\(spec.key) takes \(quantity(spec.unit)); '\(printable(suffix))' is not a unit hear knows, in '\(printable(text))'"))
            }
            guard unit.unit == spec.unit else {
                return .failure(ProtocolError(.badValue, "\(spec.key) takes \(quantity(spec.unit)), and '\(printable(text))' is \(quantity(unit.unit))"))
            }
            factor = unit.factor
        }
        guard let parsed = Float(digits), parsed.isFinite, isPlainNumber(digits), (parsed * factor).isFinite else {
            let unit = spec.unit.isEmpty ? "" : " (optionally followed by \(spec.unit))"
            return .failure(ProtocolError(.badValue, "\(spec.key) takes a finite number\(unit), not '\(printable(text))'"))
        }
        return .success(parsed * factor)
    }

    /// Decimal digits, one optional sign, point and exponent: no "inf", "nan" or hex floats.
    static func isPlainNumber(_ text: Substring) -> Bool {
        !text.isEmpty && text.allSatisfy { "0123456789+-.eE".contains($0) }
    }

    /// Shortest text that reads back to the same Float; whole numbers without ".0".
    public static func format(_ value: Float) -> String {
        if value.isNaN { return "nan" }
        if value.isInfinite { return value < 0 ? "-inf" : "inf" }
        if value == value.rounded() && abs(value) < 1e7 { return String(Int(value)) }
        return value.description
    }

    /// Decimal places a value is shown with, from the schema: switches whole, frequencies and
    /// times to 0.1 Hz or ms, percentages to 0.1, levels, ratios and plain numbers (Q) to 0.01.
    /// Finer than any control needs, coarse enough that 200.00002 reads 200.
    public static func decimals(for parameter: Parameter) -> Int {
        let spec = parameter.spec
        if spec.scale == .toggle { return 0 }
        switch spec.unit {
        case "Hz", "ms", "%": return 1
        default: return 2
        }
    }

    /// `value` rounded to its parameter's precision, as text without trailing zeros ("200", "0.1", "-2.5").
    public static func text(_ value: Float, for parameter: Parameter) -> String {
        guard value.isFinite else { return format(value) }
        let places = decimals(for: parameter)
        var scale = 1.0
        for _ in 0..<places { scale *= 10 }
        let scaled = (Double(value) * scale).rounded()
        guard abs(scaled) < 1e15 else { return format(value) }
        let negative = scaled < 0
        var digits = String(Int64(abs(scaled)))
        if places > 0 {
            if digits.count <= places { digits = String(repeating: "0", count: places + 1 - digits.count) + digits }
            var fraction = String(digits.suffix(places))
            digits = String(digits.dropLast(places))
            while fraction.hasSuffix("0") { fraction.removeLast() }
            if !fraction.isEmpty { digits += "." + fraction }
        }
        return (negative && digits != "0" ? "-" : "") + digits
    }

    /// `value` rounded to its parameter's precision, as the Double nearest that decimal (for JSON: 0.1, not 0.1000000015).
    public static func rounded(_ value: Float, for parameter: Parameter) -> Double {
        guard value.isFinite else { return Double(value) }
        return Double(text(value, for: parameter)) ?? Double(value)
    }

    /// `value` with its unit, for people, rounded to its precision: "6 dB", "3:1", "on".
    public static func describe(_ value: Float, for parameter: Parameter) -> String {
        let spec = parameter.spec
        if spec.scale == .toggle { return spec.switchName(value) }
        if spec.unit.isEmpty { return text(value, for: parameter) }
        if spec.unit == ":1" { return text(value, for: parameter) + ":1" }
        return text(value, for: parameter) + " " + spec.unit
    }

    /// Text safe to echo in an error line: printable ASCII only, at most 40 characters.
    package static func printable(_ text: String) -> String {
        var out = ""
        for scalar in text.unicodeScalars.prefix(40) {
            out.unicodeScalars.append(scalar.value >= 0x20 && scalar.value < 0x7F ? scalar : "?")
        }
        return text.unicodeScalars.count > 40 ? out + "..." : out
    }
}

/// A parameter key that may be misspelled: the schema parameter, or the closest keys.
public enum ParameterKey {
    public static func parse(_ text: String) -> Result<Parameter, ProtocolError> {
        let key = text.lowercased()
        if let parameter = Parameter(key: key) { return .success(parameter) }
        let near = closest(to: key)
        let hint = near.isEmpty ? "" : "; did you mean \(near.joined(separator: ", "))?"
        return .failure(ProtocolError(.unknownParameter, "unknown parameter '\(ParameterValue.printable(text))'\(hint)"))
    }

    /// Up to three schema keys nearest to `text`: those containing it first, then by edit distance.
    public static func closest(to text: String, limit: Int = 3) -> [String] {
        let keys = Parameter.allCases.map(\.key)
        let needle = String(text.lowercased().prefix(64))
        guard !needle.isEmpty else { return [] }
        let ranked = keys.map { key -> (String, Int) in
            if key.hasPrefix(needle) || (needle.count >= 3 && key.contains(needle)) { return (key, 0) }
            let lastPart = String(key.split(separator: ".").last ?? Substring(key))
            return (key, min(distance(needle, key), distance(needle, lastPart) + 1))
        }
        let bound = max(2, needle.count / 3)
        return ranked.filter { $0.1 <= bound }.sorted { $0.1 < $1.1 || ($0.1 == $1.1 && $0.0 < $1.0) }
            .prefix(limit).map(\.0)
    }

    /// Levenshtein distance.
    static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a.utf8), b = Array(b.utf8)
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            swap(&previous, &current)
        }
        return previous[b.count]
    }
}

extension String {
    package var trimmingSpaces: String {
        var scalars = Substring(self)
        while let first = scalars.first, first == " " || first == "\t" || first == "\r" { scalars = scalars.dropFirst() }
        while let last = scalars.last, last == " " || last == "\t" || last == "\r" { scalars = scalars.dropLast() }
        return String(scalars)
    }
}

extension ParameterValue {
    /// A step (the protocol's `step` request, hearctl's "+2"): a signed number in the parameter's
    /// unit, no larger than its whole range; switches take none.
    public static func step(_ text: String, for parameter: Parameter) -> Result<Float, ProtocolError> {
        let spec = parameter.spec
        if spec.scale == .toggle {
            return .failure(ProtocolError(.badValue, "\(spec.key) is a switch and takes no step ('\(printable(text))'): give its state"))
        }
        switch number(text, for: parameter) {
        case .failure(let error): return .failure(error)
        case .success(let step):
            guard abs(step) <= spec.maximum - spec.minimum else {
                return .failure(ProtocolError(.outOfRange, "a step of \(describe(step, for: parameter)) is more than \(spec.key)'s whole range (\(describe(spec.minimum, for: parameter)) to \(describe(spec.maximum, for: parameter)))"))
            }
            return .success(step)
        }
    }

    /// A step as the protocol writes it: always signed ("+0.5", "-2").
    public static func formatStep(_ step: Float) -> String { (step >= 0 ? "+" : "") + format(step) }
}
