// Built-in presets. A preset is a whole setting: loading one puts every parameter it does not
// name back to its default, so the result never depends on what was set before.

import HearControl
import HearDSP

public struct Preset: Sendable {
    /// Where a user's own presets live: `$XDG_CONFIG_HOME/hear/presets`, else `~/.config/hear/presets`.
    public static func userDirectory(environment: (String) -> String?) -> String? {
        if let config = environment("XDG_CONFIG_HOME"), config.hasPrefix("/") { return SocketPath.trimmed(config) + "/hear/presets" }
        if let home = environment("HOME"), home.hasPrefix("/") { return SocketPath.trimmed(home) + "/.config/hear/presets" }
        return nil
    }

    public let name: String
    public let summary: String
    public let settings: Settings

    /// Every parameter but bypass: the preset's values, defaults elsewhere.
    public var complete: [Assignment] { Self.complete(settings) }

    public static func complete(_ settings: Settings) -> [Assignment] {
        Parameter.allCases.filter { $0 != .bypass }.map { Assignment($0, settings[$0] ?? $0.spec.defaultValue) }
    }

    public static let builtIn: [Preset] = [
        Preset(name: "voice-call", summary: "Your microphone in calls: rumble cut, steady level, a little presence", settings: Settings([
            .init(.eqHighPassFrequency, 100), .init(.eqLowShelfGain, -2), .init(.eqPeak2Frequency, 2500), .init(.eqPeak2Gain, 3),
            .init(.compThreshold, -28), .init(.compRatio, 3), .init(.compMakeup, 4), .init(.nsReduction, 25),
        ])),
        Preset(name: "noisy-room", summary: "Strong noise suppression and a firm compressor for a loud place", settings: Settings([
            .init(.nsReduction, 32), .init(.eqHighPassFrequency, 140), .init(.eqPeak3Gain, 3), .init(.compThreshold, -30),
            .init(.compRatio, 5), .init(.compMakeup, 5), .init(.compAttack, 5),
        ])),
        Preset(name: "podcast", summary: "Broadcast-style voice: warm, present, tightly levelled", settings: Settings([
            .init(.eqHighPassFrequency, 80), .init(.eqLowShelfGain, 2), .init(.eqPeak1Frequency, 400), .init(.eqPeak1Gain, -2),
            .init(.eqPeak3Frequency, 3500), .init(.eqPeak3Gain, 2), .init(.compThreshold, -20), .init(.compRatio, 3),
            .init(.compAttack, 5), .init(.compRelease, 150), .init(.compMakeup, 3),
        ])),
        Preset(name: "gentle", summary: "Light touch: mild noise reduction and compression, flat EQ", settings: Settings([
            .init(.nsReduction, 10), .init(.compThreshold, -20), .init(.compRatio, 2), .init(.compKnee, 12),
        ])),
        Preset(name: "clear-speech", summary: "Listening: louder consonants and an even level for voices that are hard to follow", settings: Settings([
            .init(.eqLowShelfGain, -3), .init(.eqPeak2Frequency, 2000), .init(.eqPeak2Gain, 3), .init(.eqPeak3Frequency, 4000),
            .init(.eqPeak3Gain, 6), .init(.eqPeak3Q, 0.8), .init(.eqHighShelfGain, 3), .init(.compThreshold, -30),
            .init(.compRatio, 3), .init(.compMakeup, 4), .init(.gain, 3),
        ])),
    ]

    public static func builtIn(named name: String) -> Preset? { builtIn.first { $0.name == name } }

    /// Preset names are file names: letters, digits, '-', '_' and '.', not starting with '.'.
    public static func isValidName(_ name: String) -> Bool {
        !name.isEmpty && name.count <= 64 && !name.hasPrefix(".")
            && name.unicodeScalars.allSatisfy { ($0.properties.isAlphabetic && $0.isASCII) || ("0"..."9").contains($0) || "-_.".unicodeScalars.contains($0) }
    }
}

extension Settings {
    /// A preset's text, strictly: the first line that is not a known key with a value in range fails
    /// the whole preset (the settings file reads tolerantly, `parseTolerant`, so that one bad line
    /// does not cost a listener every other setting).
    public static func parse(_ text: String) -> Result<Settings, ProtocolError> {
        let (settings, errors) = parseTolerant(text)
        if let first = errors.first { return .failure(first) }
        return .success(settings)
    }
}
