// hearctl preset: built-in presets (HearctlCore/Preset.swift) and the user's own in
// $XDG_CONFIG_HOME/hear/presets/NAME.conf (the settings text format). A user preset with a
// built-in's name takes its place.

import ArgumentParser
import Foundation
import Glibc
import HearctlCore
import HearControl
import HearDSP
import HearSystem

enum PresetStore {
    static var directory: String? { Preset.userDirectory(environment: Discovery.environment) }

    static func path(_ name: String) -> String? { directory.map { "\($0)/\(name).conf" } }

    static func userNames() -> [String] {
        guard let directory, let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return [] }
        return names.filter { $0.hasSuffix(".conf") }.map { String($0.dropLast(5)) }.filter(Preset.isValidName).sorted()
    }

    /// A preset is a few hundred bytes; anything far larger is not one (and is not read into memory).
    static let maximumBytes = 64 << 10

    /// The user's preset `name`, or nil when there is none. One that exists but cannot be used is an
    /// error, never a silent fall-back to the built-in preset of that name. A symbolic link is
    /// followed (a preset linked from a dotfiles folder is the user's own); the read is bounded by
    /// what it brings, not by the size the file states.
    static func user(_ name: String) throws -> Settings? {
        guard let path = path(name) else { return nil }
        let found: [UInt8]?
        do throws(SystemError) {
            found = try Syscall.readRegularFile(path, limit: maximumBytes, followingLinks: true)
        } catch where error.code == EFBIG {
            throw CLIError("preset \(path) \(error.detail ?? "is too large"); a preset is at most \(maximumBytes / 1024) KiB (hearctl preset save writes a few hundred bytes)")
        } catch where error.code == EINVAL {
            throw CLIError("preset \(path) is not a regular file")
        } catch {
            throw CLIError("cannot read preset \(path): \(error)")
        }
        guard let data = found else {
            var link = stat()
            guard lstat(path, &link) == 0 else { return nil }
            throw CLIError("cannot read preset \(path): it is a symbolic link to nothing")
        }
        // Bytes that are not UTF-8 (a comment written in another encoding) read as U+FFFD:
        // harmless in a comment, and an error naming the line in a value.
        let text = String(decoding: data, as: UTF8.self)
        switch Settings.parse(text) {
        case .success(let settings): return settings
        case .failure(let error): throw CLIError("preset \(path) is invalid: \(error.message)")
        }
    }

    static func find(_ name: String) throws -> (settings: Settings, source: String) {
        try checkName(name)
        if let settings = try user(name) { return (settings, path(name)!) }
        if let preset = Preset.builtIn(named: name) { return (preset.settings, "built-in") }
        let all = Preset.builtIn.map(\.name) + userNames()
        throw CLIError("no preset named '\(name)'; presets: \(all.joined(separator: ", "))")
    }

    /// Writes `values` (a chain's) as user preset `name`, replacing one of that name; returns its path.
    /// Only what differs from the defaults is written: loading puts everything else back to its
    /// default anyway. Bypass is a momentary switch, not part of a sound.
    static func save(_ name: String, values: [(Parameter, Float)], chain: Int) throws -> String {
        try checkName(name)
        guard let directory, let path = path(name) else {
            throw CLIError("neither XDG_CONFIG_HOME nor HOME is set: nowhere to save presets")
        }
        // Compared and written at each parameter's precision: 200.00002 Hz back from a port is 200.
        let rounded = values.map { ($0.0, Float(ParameterValue.rounded($0.1, for: $0.0))) }
        let settings = Settings(rounded.filter { $0.0 != .bypass && $0.1 != Float(ParameterValue.rounded($0.0.spec.defaultValue, for: $0.0)) }
            .map { Assignment($0.0, $0.1) })
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try Syscall.writeFileAtomically(path, directory: directory, bytes: Array(
            settings.text(comment: "hear preset \(name), saved from chain \(chain) (\(ChainName.name(chain)))").utf8), mode: 0o644)
        return path
    }

    static func checkName(_ name: String) throws {
        guard Preset.isValidName(name) else {
            throw CLIError("preset names use letters, digits, '-', '_' and '.', and do not start with '.': '\(name)'")
        }
    }
}

struct PresetCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "preset",
        abstract: "List, show, save, load and delete presets.",
        discussion: "Built-in: \(Preset.builtIn.map(\.name).joined(separator: ", ")). User presets live in $XDG_CONFIG_HOME/hear/presets/NAME.conf.",
        subcommands: [ListPresets.self, Show.self, Save.self, Load.self, Delete.self]
    )

    struct ListPresets: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "List built-in and user presets.")
        @OptionGroup var output: JSONOption

        func run() throws {
            let user = PresetStore.userNames()
            var entries: [(name: String, source: String, summary: String)] = user.map { ($0, "user", "") }
            for preset in Preset.builtIn where !user.contains(preset.name) { entries.append((preset.name, "built-in", preset.summary)) }
            entries.sort { $0.name < $1.name }
            if output.json {
                struct Entry: Encodable { let name, source, summary: String }
                struct Reply: Encodable { let presets: [Entry] }
                Output.json(Reply(presets: entries.map { Entry(name: $0.name, source: $0.source, summary: $0.summary) }))
                return
            }
            print(Output.table([["NAME", "SOURCE", "DESCRIPTION"]] + entries.map { [$0.name, $0.source, $0.summary] }))
        }
    }

    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print a preset's settings (every other parameter is at its default).")
        @Argument(help: "Preset name.", completion: Complete.presets) var name: String
        @OptionGroup var output: JSONOption

        func run() throws {
            let (settings, source) = try PresetStore.find(name)
            if output.json {
                struct Reply: Encodable {
                    let name, source: String
                    let values: [String: Nullable<Double>]
                }
                Output.json(Reply(name: name, source: source, values: Output.values(settings.assignments.map { ($0.parameter, $0.value) })))
                return
            }
            print(settings.text(comment: "preset \(name) (\(source)); parameters not listed load at their defaults"), terminator: "")
        }
    }

    struct Save: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Save a chain's settings as a user preset (with more than one chain, name it with --chain).")
        @Argument(help: "Preset name.", completion: Complete.userPresets) var name: String
        @OptionGroup var target: ChangeOption
        @Flag(name: .long, help: "Replace an existing user preset.") var force = false
        @OptionGroup var output: JSONOption

        func run() throws {
            try PresetStore.checkName(name)
            let chains = try Chains(timeout: target.timeout)
            let chain = try chains.changing(target.number, verb: "preset save")
            if let path = PresetStore.path(name), FileManager.default.fileExists(atPath: path) && !force {
                throw CLIError("preset \(path) exists; use --force to replace it")
            }
            let path = try PresetStore.save(name, values: try chains.values(chain, []), chain: chain)
            if output.json {
                struct Reply: Encodable {
                    let preset, path: String
                    let chain: Int
                    let name, state: String
                }
                Output.json(Reply(preset: name, path: path, chain: chain, name: ChainName.name(chain), state: chains.state(chain)))
            } else {
                print("saved chain \(Chains.describe(chain)) as preset \(name): \(path)")
            }
        }
    }

    struct Load: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Load a preset into a chain (parameters it does not name go to their defaults; bypass is left as it is).",
            discussion: "With more than one chain, name it with --chain. A suspended chain takes the preset when it starts.")
        @Argument(help: "Preset name.", completion: Complete.presets) var name: String
        @OptionGroup var target: ChangeOption
        @OptionGroup var output: JSONOption

        func run() throws {
            let (settings, source) = try PresetStore.find(name)
            // Every parameter but bypass: the preset's value or the default, so the result never depends on what came before.
            let complete = Preset.complete(settings)
            let chains = try Chains(timeout: target.timeout)
            let chain = try chains.changing(target.number, verb: "preset load")
            var changes: SettingsFile.Changes = [:]
            for assignment in complete { changes[assignment.parameter] = .some(assignment.value) }
            let result = try chains.change(chain, request: .set(chain: chain, assignments: complete), saving: changes,
                                           show: settings.assignments.map(\.parameter))
            Output.change(result, json: output.json, summary: "loaded preset \(name) (\(source == "built-in" ? "built-in" : source))")
        }
    }

    struct Delete: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Delete a user preset.")
        @Argument(help: "Preset name.", completion: Complete.userPresets) var name: String
        @OptionGroup var output: JSONOption

        func run() throws {
            try PresetStore.checkName(name)
            guard let path = PresetStore.path(name), FileManager.default.fileExists(atPath: path) else {
                if Preset.builtIn(named: name) != nil { throw CLIError("'\(name)' is a built-in preset and cannot be deleted") }
                throw CLIError("no user preset named '\(name)'")
            }
            try FileManager.default.removeItem(atPath: path)
            struct Reply: Encodable { let preset, deleted: String }
            if output.json { Output.json(Reply(preset: name, deleted: path)) } else { print("deleted preset \(name): \(path)") }
        }
    }
}
