// Shell completion (bash, zsh, fish: `hearctl --generate-completion-script SHELL`) from the same
// declarations as --help and the man page. Verbs, options and fixed choices come from the
// commands themselves; parameter keys from the schema (HearDSP/Parameters.swift); preset, chain
// and device names are asked for when the user presses Tab (the scripts run
// `hearctl ---completion ...`, which ends in the closures here).

import ArgumentParser
import HearctlCore
import HearControl
import HearDSP

enum Complete {
    /// Every parameter key, from the schema.
    static let parameterKeys = CompletionKind.list(Parameter.allCases.map(\.key))

    /// The chains that exist now (running or configured by a drop-in), by name.
    static let chains = CompletionKind.custom { _, _, _ in chainNames() }

    /// Built-in and user presets.
    static let presets = CompletionKind.custom { _, _, _ in presetNames() }

    /// User presets only (a name to save to or delete).
    static let userPresets = CompletionKind.custom { _, _, _ in PresetStore.userNames() }

    /// `set PARAM VALUE ...`: a key where a key goes, a switch's settings where its value goes.
    static let setPairs = CompletionKind.custom { words, index, _ in setPair(words, index) }

    /// `device set mic|speaker DEVICE`: the names of the devices of that kind, and `default`.
    static let devices = CompletionKind.custom { words, _, _ in
        guard let verb = words.firstIndex(of: "set"), verb + 1 < words.count, let chain = DropInChain(rawValue: words[verb + 1])
        else { return [] }
        return ["default"] + Devices().candidates(chain).map(\.name)
    }

    static func chainNames() -> [String] {
        var numbers = Set(ConfiguredChains.load().keys)
        if let chains = try? Chains(timeout: 0.5) { numbers.formUnion(chains.running) }
        // Nothing known yet: the two chains `hearctl enable` makes.
        if numbers.isEmpty { return [ChainName.name(1), ChainName.name(2)] }
        return numbers.sorted().map { ChainName.name($0) }
    }

    static func presetNames() -> [String] {
        Array(Set(Preset.builtIn.map(\.name) + PresetStore.userNames())).sorted()
    }

    /// The words after `set` with options and their values left out decide: an even count of
    /// them before the cursor puts a key there, an odd count the value of the key before it.
    static func setPair(_ words: [String], _ index: Int) -> [String] {
        guard let verb = words.firstIndex(of: "set"), verb < index, index <= words.count else { return [] }
        var positional: [String] = []
        var position = verb + 1
        while position < index {
            let word = words[position]
            if word == "--chain" || word == "--timeout" { position += 2; continue }
            if !word.hasPrefix("--") { positional.append(word) }
            position += 1
        }
        if positional.count % 2 == 0 { return parameterKeyNames }
        guard let key = positional.last, case .success(let parameter) = ParameterKey.parse(key), parameter.spec.scale == .toggle
        else { return [] }
        let choices = parameter.spec.choices
        return choices.count == 2 ? choices : ["on", "off"]
    }

    static let parameterKeyNames = Parameter.allCases.map(\.key)
}
