// Chain numbers and their names. LADSPA gives an instance no name, so a config sets the integer
// `chain` control port; the first few numbers have names people can type (`--chain mic`).

import HearDSP

public enum ChainName {
    static let named = ["default", "mic", "speaker"]
    /// The chain whose echo canceller reads the speaker chain's output, and the chain that writes it.
    @inlinable public static var mic: Int { 1 }
    @inlinable public static var speaker: Int { 2 }
    /// The largest chain number; the control port is clamped to 0...maximum.
    @inlinable public static var maximum: Int { 999 }

    public static func name(_ number: Int) -> String {
        number >= 0 && number < named.count ? named[number] : "chain\(number)"
    }

    /// A chain number from "1", "mic" or "chain7".
    public static func number(_ text: String) -> Int? {
        let lower = text.lowercased()
        if let index = named.firstIndex(of: lower) { return index }
        let digits = lower.hasPrefix("chain") ? String(lower.dropFirst(5)) : lower
        guard !digits.isEmpty, digits.allSatisfy(\.isASCII), let value = Int(digits), value >= 0, value <= maximum
        else { return nil }
        return value
    }

    /// The chain number a control-port value stands for (NaN and junk fall back to 0). Real-time safe.
    @inlinable public static func number(port value: Float) -> Int {
        guard value == value, value > 0.5 else { return 0 }
        if value >= Float(maximum) { return maximum }
        // Rounded (Float.rounded() is not allowed on the audio thread), and converted without a trap.
        return truncatedInt(Double(value + 0.5))
    }
}
