// The built-in presets (HearctlCore/Preset.swift): named, valid, and whole settings.

import HearctlCore
import HearControl
import HearDSP
import Testing

@Suite struct PresetTests {
    @Test func userPresetsLiveInTheConfigDirectory() {
        #expect(Preset.userDirectory(environment: { ["XDG_CONFIG_HOME": "/c"][$0] }) == "/c/hear/presets")
        #expect(Preset.userDirectory(environment: { ["HOME": "/home/a"][$0] }) == "/home/a/.config/hear/presets")
        #expect(Preset.userDirectory(environment: { ["XDG_CONFIG_HOME": "relative", "HOME": "/h"][$0] }) == "/h/.config/hear/presets")
        #expect(Preset.userDirectory(environment: { _ in nil }) == nil)
    }

    @Test func builtInPresetsAreValidAndNamed() {
        let names = Preset.builtIn.map(\.name)
        for required in ["voice-call", "noisy-room", "podcast", "gentle"] { #expect(names.contains(required)) }
        #expect(Set(names).count == names.count)
        for preset in Preset.builtIn {
            #expect(Preset.isValidName(preset.name))
            // Through the text format and back: every value is in range and survives.
            #expect(Settings.parse(preset.settings.text(comment: preset.name)) == .success(preset.settings), "\(preset.name)")
            #expect(preset.complete.count == Parameter.count - 1)
            #expect(!preset.complete.contains { $0.parameter == .bypass })
        }
        #expect(!Preset.isValidName("../etc/passwd"))
        #expect(!Preset.isValidName(".hidden"))
    }

    @Test(arguments: ["gain 6", "gain = loud", "gain = 99", "volume = 3", "gain = nan", "= 3"])
    func aPresetWithOneBadLineIsRejectedWithThatLine(line: String) {
        guard case .failure(let error) = Settings.parse("# ok\ngain = 1\n\(line)\ncomp.ratio = 3\n") else {
            Issue.record("accepted \(line)")
            return
        }
        #expect(error.message.hasPrefix("line 3: "), "\(error.message)")
    }
}
