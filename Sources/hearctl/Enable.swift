// hearctl enable mic|speaker / disable [mic|speaker]: turn a chain on or off for this user by
// writing or removing its PipeWire drop-in in $XDG_CONFIG_HOME/pipewire/pipewire.conf.d/ (else
// ~/.config/...), then restarting the user's PipeWire where systemd runs it. `enable mic
// --echo-cancel` also enables the speaker chain and makes it the default output ("default"
// metadata), since the microphone chain's echo canceller hears only what plays through it.
//
// The drop-in is the template conf.d/pipewire/<name>.conf that `make install` and the Debian
// package ship (<prefix>/share/hear/pipewire/, next to <prefix>/bin/hearctl), with the plugin's
// absolute path (<prefix>/lib/ladspa/libhear.so) in place of @HEAR_PLUGIN@. From a build tree
// (.build/release/hearctl) the repository's conf.d and the libhear.so beside hearctl serve.
// Everything is checked before anything is written or removed: an error changes nothing.

import ArgumentParser
import CPipeWire
import Foundation
import HearctlCore
import HearControl
import HearSystem

enum DropInChain: String, ExpressibleByArgument, CaseIterable {
    case mic, speaker

    var fileName: String { self == .mic ? "hear-microphone.conf" : "hear-speaker.conf" }
    var title: String { self == .mic ? "Hear: enhanced microphone" : "Hear: clearer voices" }
    var hint: String {
        self == .mic ? "pick \"\(title)\" as the microphone in your call app"
            : "pick \"\(title)\" as the speaker in your call app (or as the default output)"
    }
}

/// Where this hearctl's plugin and drop-in templates are, and where the user's drop-ins go.
enum Installation {
    static var environment: [String: String] { ProcessInfo.processInfo.environment }

    /// The folder of the running hearctl, symlinks resolved.
    static var executableDirectory: URL {
        let path = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        return URL(fileURLWithPath: path).deletingLastPathComponent()
    }

    /// `<prefix>/bin/hearctl` → `<prefix>`.
    static var prefix: URL { executableDirectory.deletingLastPathComponent() }

    /// `$XDG_CONFIG_HOME/pipewire/pipewire.conf.d`, else `~/.config/pipewire/pipewire.conf.d` (PipeWire's own rule).
    static func userDropInDirectory() throws -> String {
        if let config = environment["XDG_CONFIG_HOME"], config.hasPrefix("/") { return trimmed(config) + "/pipewire/pipewire.conf.d" }
        if let home = environment["HOME"], home.hasPrefix("/") { return trimmed(home) + "/.config/pipewire/pipewire.conf.d" }
        throw CLIError("neither XDG_CONFIG_HOME nor HOME is set: cannot tell where your PipeWire drop-ins go")
    }

    static func trimmed(_ path: String) -> String {
        var path = Substring(path)
        while path.count > 1 && path.hasSuffix("/") { path = path.dropLast() }
        return String(path)
    }

    /// Drop-ins that enable a chain for every user (`make install PREFIX=...`, or by hand).
    static func systemDropIns(_ chain: DropInChain) -> [String] {
        ["/etc/pipewire/pipewire.conf.d", "/usr/share/pipewire/pipewire.conf.d", "/usr/local/share/pipewire/pipewire.conf.d"]
            .map { "\($0)/\(chain.fileName)" }.filter { FileManager.default.fileExists(atPath: $0) }
    }

    /// The plugin this hearctl belongs to: `--plugin`, else `<prefix>/lib/ladspa/libhear.so`, else the
    /// build's `libhear.so` beside hearctl.
    static func plugin(_ explicit: String?) throws -> String {
        if let explicit {
            let path = explicit.hasPrefix("/") ? explicit : FileManager.default.currentDirectoryPath + "/" + explicit
            let standardized = URL(fileURLWithPath: path).standardizedFileURL.path
            guard FileManager.default.isReadableFile(atPath: standardized) else { throw CLIError("--plugin \(explicit): no readable file there") }
            return standardized
        }
        let candidates = [prefix.appendingPathComponent("lib/ladspa/libhear.so").path,
                          executableDirectory.appendingPathComponent("libhear.so").path]
        if let found = candidates.first(where: { FileManager.default.isReadableFile(atPath: $0) }) { return found }
        throw CLIError("cannot find libhear.so (looked in \(candidates.joined(separator: ", "))); give its path with --plugin")
    }

    /// The drop-in template: `<prefix>/share/hear/pipewire/`, else the repository's conf.d/pipewire/
    /// above a build tree's hearctl.
    static func template(_ chain: DropInChain) throws -> (path: String, text: String) {
        var candidates = [prefix.appendingPathComponent("share/hear/pipewire/\(chain.fileName)").path]
        var directory = executableDirectory
        for _ in 0..<4 {
            candidates.append(directory.appendingPathComponent("conf.d/pipewire/\(chain.fileName)").path)
            directory = directory.deletingLastPathComponent()
        }
        for path in candidates {
            if let text = try? String(contentsOfFile: path, encoding: .utf8) { return (path, text) }
        }
        throw CLIError("cannot find the drop-in template \(chain.fileName) (looked in \(candidates[0]) and the source tree's conf.d/pipewire)")
    }

    /// The template with the plugin's path in place of @HEAR_PLUGIN@ on every line that is not a
    /// comment (as `make install` does).
    static func dropIn(_ template: String, plugin: String) -> String {
        template.split(separator: "\n", omittingEmptySubsequences: false).map { line -> String in
            line.drop(while: { $0 == " " || $0 == "\t" }).hasPrefix("#") ? String(line)
                : line.replacingOccurrences(of: "@HEAR_PLUGIN@", with: plugin)
        }.joined(separator: "\n")
    }
}

/// Restarts the user's PipeWire through systemd, where systemd runs it, and says what it did.
enum UserPipeWire {
    static let units = ["pipewire.service", "pipewire-pulse.service", "wireplumber.service"]

    static func run(_ arguments: [String]) -> (status: Int32, output: String)? {
        let path = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
            .map { "\($0)/systemctl" }.first { FileManager.default.isExecutableFile(atPath: $0) }
        guard let path else { return nil }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        process.standardInput = FileHandle.nullDevice
        do { try process.run() } catch { return (-1, "cannot run \(path): \(error.localizedDescription)") }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// What a restart did: the lines to print, and whether PipeWire was restarted (else the
    /// command that does it, for the user to run).
    struct Outcome {
        var lines: [String]
        var restarted: Bool
        var command: String? { restarted ? nil : UserPipeWire.manualCommand }
    }

    static let manualCommand = "systemctl --user restart pipewire pipewire-pulse wireplumber"

    /// The outcome of not restarting, with why.
    static func notRestarted(_ why: String) -> Outcome {
        Outcome(lines: ["PipeWire was not restarted: \(why); restart PipeWire yourself (`\(manualCommand)`, or log out and back in): it reads drop-ins only when it starts."],
                restarted: false)
    }

    /// Restarts those of pipewire, pipewire-pulse and wireplumber that systemd runs for this user.
    /// Throws only when a restart was tried and failed.
    static func restart(because change: String) throws -> Outcome {
        let manual = "restart PipeWire yourself (`\(manualCommand)`, or log out and back in)"
        guard let show = run(["--user", "show", "--property=Id,LoadState,ActiveState"] + units) else {
            return notRestarted("systemctl is not installed here")
        }
        guard show.status == 0 else {
            let reason = show.output.split(separator: "\n").first.map(String.init) ?? "exit status \(show.status)"
            return notRestarted("no systemd user manager here (systemctl --user: \(reason))")
        }
        // One block of Key=Value lines per unit, separated by blank lines.
        var active: [String] = []
        var loaded: [String] = []
        for block in show.output.components(separatedBy: "\n\n") {
            var fields: [String: String] = [:]
            for line in block.split(separator: "\n") {
                guard let equals = line.firstIndex(of: "=") else { continue }
                fields[String(line[..<equals])] = String(line[line.index(after: equals)...])
            }
            guard let id = fields["Id"], fields["LoadState"] == "loaded" else { continue }
            loaded.append(id)
            if fields["ActiveState"] == "active" || fields["ActiveState"] == "activating" { active.append(id) }
        }
        guard !loaded.isEmpty else { return notRestarted("systemd has no pipewire user unit here") }
        guard active.contains("pipewire.service") else {
            return Outcome(lines: ["PipeWire was not restarted: it does not run now (pipewire.service is inactive) and reads the change when it starts (`systemctl --user start pipewire`)."],
                           restarted: false)
        }
        let command = ["systemctl", "--user", "restart"] + active
        guard let result = run(Array(command.dropFirst())) else { throw CLIError("\(change), but running systemctl failed; \(manual)") }
        guard result.status == 0 else {
            throw CLIError("\(change), but `\(command.joined(separator: " "))` failed (\(result.status)): \(result.output)")
        }
        return Outcome(lines: ["restarted PipeWire: \(command.joined(separator: " "))"], restarted: true)
    }
}

/// What a user keeps after hear is turned off or uninstalled, with the command that removes it.
enum KeptFiles {
    static func lines() -> [String] {
        let environment = Discovery.environment
        var lines: [String] = []
        for (what, directory) in [("saved settings", SettingsPath.stateDirectory(environment: environment)),
                                  ("your presets", Preset.userDirectory(environment: environment))] {
            guard let directory, let names = try? FileManager.default.contentsOfDirectory(atPath: directory), !names.isEmpty else { continue }
            lines.append("kept \(what) in \(directory)/ (\(names.sorted().joined(separator: ", "))); remove them with: rm -r \(quoted(directory))")
        }
        return lines
    }

    /// A path as one shell word.
    static func quoted(_ path: String) -> String {
        path.allSatisfy({ $0.isLetter || $0.isNumber || "/._-+@:,".contains($0) }) ? path
            : "'" + path.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }
}

extension Hearctl {
    struct Enable: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Turn a chain on for you: write its PipeWire drop-in and restart PipeWire.",
            discussion: """
                Writes hear-microphone.conf (mic) or hear-speaker.conf (speaker) to \
                $XDG_CONFIG_HOME/pipewire/pipewire.conf.d/ (else ~/.config/pipewire/pipewire.conf.d/), with \
                the installed plugin's path, then runs `systemctl --user restart` on those of pipewire, \
                pipewire-pulse and wireplumber that systemd runs for you (or says what to do). \
                An existing drop-in that differs is kept unless --force. With --echo-cancel (mic only) \
                the speaker chain is enabled too (an existing one is kept as it is) and made the default \
                output, so that everything the desktop plays passes through it and the microphone \
                chain's echo canceller hears it. Examples:
                  hearctl enable mic
                  hearctl enable mic --echo-cancel
                  hearctl enable speaker --no-restart
                """)

        @Argument(help: "mic (\"Hear: enhanced microphone\") or speaker (\"Hear: clearer voices\").") var chain: DropInChain
        @Option(help: ArgumentHelp("The plugin to name in the drop-in (default: the libhear.so installed with this hearctl).",
                                   valueName: "path")) var plugin: String?
        @Flag(help: "Replace an existing drop-in that differs (your edits to it are lost).") var force = false
        @Flag(name: .customLong("no-restart"), help: "Only write the drop-in; PipeWire loads it when it next starts.") var noRestart = false
        @Flag(name: .customLong("echo-cancel"),
              help: "With mic: enable the speaker chain too and make it the default output, so that the microphone chain cancels the echo of what plays.")
        var echoCancel = false
        @OptionGroup var output: JSONOption

        /// The speaker chain's sink (conf.d/pipewire/hear-speaker.conf's capture node).
        static let speakerSink = "hear_speaker"

        func validate() throws {
            if echoCancel && chain != .mic {
                throw ValidationError("--echo-cancel goes with mic: it enables the speaker chain as the microphone chain's reference")
            }
        }

        /// What writing one chain's drop-in did.
        struct Written {
            let path: String
            let changed: Bool
            let line: String
        }

        /// Writes `chain`'s drop-in unless the same is there; one that differs is an error unless
        /// `force` (or `keepEdited`, which leaves it as it is).
        func write(_ chain: DropInChain, plugin: String, directory: String, keepEdited: Bool) throws -> Written {
            if let system = Installation.systemDropIns(chain).first {
                if keepEdited { return Written(path: system, changed: false, line: "\(chain.rawValue) is enabled for every user by \(system)") }
                throw CLIError("\(chain.rawValue) is already enabled for every user by \(system); a second drop-in would make a second chain. Nothing was changed")
            }
            let template = try Installation.template(chain)
            let path = directory + "/" + chain.fileName
            let text = Installation.dropIn(template.text, plugin: plugin)
            if let existing = try? String(contentsOfFile: path, encoding: .utf8) {
                if DeviceDropIn.withoutChoices(existing) == text {
                    return Written(path: path, changed: false, line: "\(chain.rawValue) is already enabled: \(path) (nothing changed)")
                }
                if keepEdited {
                    return Written(path: path, changed: false, line: "\(chain.rawValue) is already enabled by your own \(path) (kept as it is)")
                }
                guard force else {
                    throw CLIError("\(path) exists and differs from the drop-in hearctl would write (edited, or another plugin path); keep it, or replace it with `hearctl enable \(chain.rawValue) --force`. Nothing was changed")
                }
            }
            do {
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
                // HearSystem's writer: a fresh exclusive temporary name (nothing planted is written
                // through), fsync, rename over the old drop-in or its link.
                try Syscall.writeFileAtomically(path, directory: directory, bytes: Array(text.utf8), mode: 0o644)
            } catch let error as CLIError { throw error } catch let error as SystemError {
                throw CLIError("cannot write \(path): \(error)")
            } catch {
                throw CLIError("cannot write \(path): \(error.localizedDescription)")
            }
            return Written(path: path, changed: true, line: "wrote \(path) (plugin \(plugin))")
        }

        func run() throws {
            let plugin = try Installation.plugin(plugin)
            let directory = try Installation.userDropInDirectory()
            // Everything that can fail is checked before the first file is written.
            if echoCancel { _ = try Installation.template(.speaker) }
            let main = try write(chain, plugin: plugin, directory: directory, keepEdited: false)
            let speaker = echoCancel ? try write(.speaker, plugin: plugin, directory: directory, keepEdited: true) : nil
            var lines = [main.line] + (speaker.map { [$0.line] } ?? [])
            let changed = main.changed || speaker?.changed == true
            var outcome: UserPipeWire.Outcome?
            if changed {
                let why = [main, speaker].compactMap { $0 }.filter(\.changed).map(\.path).joined(separator: " and ")
                outcome = noRestart
                    ? UserPipeWire.Outcome(lines: ["PipeWire was not restarted (--no-restart): it loads the drop-in when it next starts (`\(UserPipeWire.manualCommand)`)."], restarted: false)
                    : try UserPipeWire.restart(because: "wrote \(why)")
                lines += outcome?.lines ?? []
            }
            var defaultOutput: Bool?
            if echoCancel {
                let (set, line) = Self.makeSpeakerTheDefaultOutput(waitForPipeWire: outcome?.restarted == true)
                defaultOutput = set
                lines.append(line)
            }
            if main.changed { lines.append("enabled \(chain.rawValue): \(chain.hint)") }
            if echoCancel {
                lines.append("echo cancellation: the microphone chain cancels what plays through \"\(DropInChain.speaker.title)\"; `hearctl status` shows its ERLE (aec.erle)")
            }
            report(path: main.path, changed: main.changed, lines: lines, plugin: changed ? plugin : nil, outcome: outcome,
                   speaker: speaker, defaultOutput: defaultOutput)
        }

        /// Sets PipeWire's configured default output to the speaker chain's sink ("default" metadata,
        /// as `wpctl set-default` does; WirePlumber keeps it), retrying for a few seconds after a
        /// restart while WirePlumber comes up. Returns whether it was set, and the line saying so.
        static func makeSpeakerTheDefaultOutput(waitForPipeWire: Bool) -> (Bool, String) {
            let value = "{ \"name\": \"\(speakerSink)\" }"
            var result: Int32 = 0
            let tries = waitForPipeWire ? 20 : 1
            for attempt in 0..<tries {
                result = hear_pw_set_default_metadata(0, "default.configured.audio.sink", "Spa:String:JSON", value, 2000)
                if result == 0 { return (true, "made \"\(DropInChain.speaker.title)\" (\(speakerSink)) the default output") }
                if attempt + 1 < tries { usleep(500_000) }
            }
            return (false, "could not make \"\(DropInChain.speaker.title)\" the default output (\(String(cString: strerror(-result)))): once PipeWire runs it, choose it as the output in your sound settings, or `wpctl set-default` its id")
        }

        func report(path: String, changed: Bool, lines: [String], plugin: String? = nil, outcome: UserPipeWire.Outcome? = nil,
                    speaker: Written? = nil, defaultOutput: Bool? = nil) {
            guard output.json else { return lines.forEach { print($0) } }
            struct Reply: Encodable {
                let chain, dropIn: String
                let changed: Bool
                @Nullable var plugin: String?
                /// Whether PipeWire was restarted (null: nothing changed, so no restart was needed).
                @Nullable var restarted: Bool?
                @Nullable var restartCommand: String?
                /// With --echo-cancel: the speaker chain's drop-in, and whether it was written.
                let speakerDropIn: String?
                let speakerChanged: Bool?
                /// With --echo-cancel: whether the speaker chain was made the default output.
                let defaultOutput: Bool?
                let messages: [String]
            }
            Output.json(Reply(chain: chain.rawValue, dropIn: path, changed: changed, plugin: plugin, restarted: outcome?.restarted,
                              restartCommand: outcome?.command, speakerDropIn: speaker?.path, speakerChanged: speaker?.changed,
                              defaultOutput: defaultOutput, messages: lines))
        }
    }

    struct Disable: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Turn chains off for you: remove their PipeWire drop-ins and restart PipeWire.",
            discussion: """
                Removes hear-microphone.conf (mic), hear-speaker.conf (speaker) or both (no argument) from \
                your PipeWire drop-in folder, restarts PipeWire as `enable` does, and lists what stays \
                (saved settings, presets) with the command that removes it. Examples:
                  hearctl disable
                  hearctl disable speaker
                """)

        @Argument(help: "The chain to turn off (both when none is named).") var chain: DropInChain?
        @Flag(name: .customLong("no-restart"), help: "Only remove the drop-ins; PipeWire drops the chains when it next starts.") var noRestart = false
        @OptionGroup var output: JSONOption

        func run() throws {
            let chains = chain.map { [$0] } ?? DropInChain.allCases
            let directory = try Installation.userDropInDirectory()
            let present = chains.filter { FileManager.default.fileExists(atPath: directory + "/" + $0.fileName) }
            let absent = chains.filter { !present.contains($0) }
            for chain in absent {
                if let system = Installation.systemDropIns(chain).first, self.chain != nil {
                    throw CLIError("\(chain.rawValue) is enabled for every user by \(system), not by you: remove that file as root (make uninstall PREFIX=...). Nothing was changed")
                }
            }
            var lines: [String] = []
            for chain in present {
                let path = directory + "/" + chain.fileName
                guard unlink(path) == 0 || errno == ENOENT else {
                    throw CLIError("cannot remove \(path): \(String(cString: strerror(errno)))")
                }
                lines.append("removed \(path)")
            }
            for chain in absent {
                let system = Installation.systemDropIns(chain).first.map { "; enabled for every user by \($0)" } ?? ""
                lines.append("\(chain.rawValue) was not enabled (no \(directory)/\(chain.fileName))\(system)")
            }
            var outcome: UserPipeWire.Outcome?
            if !present.isEmpty {
                outcome = noRestart
                    ? UserPipeWire.Outcome(lines: ["PipeWire was not restarted (--no-restart): the chains go when it next starts (`\(UserPipeWire.manualCommand)`)."], restarted: false)
                    : try UserPipeWire.restart(because: "removed the drop-ins")
                lines += outcome?.lines ?? []
            }
            let kept = KeptFiles.lines()
            guard output.json else { return (lines + kept).forEach { print($0) } }
            struct Reply: Encodable {
                let removed, notEnabled: [String]
                /// Whether PipeWire was restarted (null: nothing was removed, so no restart was needed).
                @Nullable var restarted: Bool?
                @Nullable var restartCommand: String?
                let messages, kept: [String]
            }
            Output.json(Reply(removed: present.map { directory + "/" + $0.fileName }, notEnabled: absent.map(\.rawValue),
                              restarted: outcome?.restarted, restartCommand: outcome?.command, messages: lines, kept: kept))
        }
    }
}
