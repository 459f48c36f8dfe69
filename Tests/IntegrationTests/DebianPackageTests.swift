// The Debian package: `make deb` (NO_BUILD=1: what `make test` built, its man page included) gives
// hear_<version>_<arch>.deb; dpkg installs it into a scratch root (never the real system: --root
// and a log of its own); the files are where Debian wants them; the installed hearctl's `enable`
// writes drop-ins that name the installed plugin, a private PipeWire loads that very file;
// `disable` removes them and lists what stays; `dpkg --purge` leaves the root empty. lintian
// reports no errors.

import Foundation
import Testing
import TestSupport

@Suite(.serialized) struct DebianPackageTests {
    static func onPath(_ tool: String) -> Bool { (try? Processes.which(tool)) != nil }
    /// dpkg-deb and dpkg come with every Debian; dpkg-shlibdeps (dpkg-dev) and strip (binutils) are in `make test`'s list.
    static let canBuild = ["dpkg", "dpkg-deb", "dpkg-shlibdeps", "strip", "make"].allSatisfy(onPath)
    static let canRunPipeWire = ["pipewire", "wireplumber", "dbus-daemon", "pw-dump"].allSatisfy(onPath)

    /// The package's version: the first line of the Debian changelog, as `make deb` reads it.
    static func version() throws -> String {
        let first = try Repository.text("packaging/debian/changelog").split(separator: "\n")[0]
        guard let open = first.firstIndex(of: "("), let close = first.firstIndex(of: ")") else {
            throw TestFailure("no version on the changelog's first line: \(first)")
        }
        return String(first[first.index(after: open)..<close])
    }

    /// Builds the package into a directory of the test's own and returns its path.
    static func build(_ processes: Processes) throws -> URL {
        let out = try processes.directory("out")
        let result = try processes.run("make", ["-C", Repository.root.path, "--no-print-directory", "deb", "NO_BUILD=1",
                                                "DEB_OUT=\(out.path)"], timeout: 300)
        let arch = try processes.run("dpkg", ["--print-architecture"]).output.trimmingCharacters(in: .whitespacesAndNewlines)
        let deb = out.appendingPathComponent("hear_\(try version())_\(arch).deb")
        #expect(result.output.contains("built \(deb.path)"), "\(result.output)")
        let built = try FileManager.default.contentsOfDirectory(atPath: out.path)
        try #require(built == [deb.lastPathComponent], "make deb wrote \(built)")
        return deb
    }

    /// A repository drop-in as `make install`, `make deb` and `hearctl enable` write it: the plugin's
    /// path in place of @HEAR_PLUGIN@ on the lines that are not comments.
    static func dropIn(_ name: String, plugin: String) throws -> String {
        try Repository.text("conf.d/pipewire/" + name).split(separator: "\n", omittingEmptySubsequences: false).map { line in
            line.trimmingCharacters(in: .whitespaces).hasPrefix("#") ? String(line)
                : line.replacingOccurrences(of: Repository.placeholder, with: plugin)
        }.joined(separator: "\n")
    }

    static let files = [
        "usr/lib/ladspa/libhear.so", "usr/bin/hearctl", "usr/share/man/man1/hearctl.1.gz",
        "usr/share/bash-completion/completions/hearctl", "usr/share/zsh/vendor-completions/_hearctl",
        "usr/share/fish/vendor_completions.d/hearctl.fish",
        "usr/share/hear/pipewire/hear-microphone.conf", "usr/share/hear/pipewire/hear-speaker.conf",
        "usr/share/doc/hear/examples/hear-microphone.conf", "usr/share/doc/hear/examples/hear-speaker.conf",
        "usr/share/doc/hear/examples/hear.pa", "usr/share/doc/hear/copyright", "usr/share/doc/hear/changelog.Debian.gz",
        "usr/share/lintian/overrides/hear",
    ]

    /// Regular files under `directory`, relative.
    static func regularFiles(_ directory: URL) -> Set<String> {
        var files: Set<String> = []
        let enumerator = FileManager.default.enumerator(atPath: directory.path)
        while let path = enumerator?.nextObject() as? String {
            if (enumerator?.fileAttributes?[.type] as? FileAttributeType) == .typeRegular { files.insert(path) }
        }
        return files
    }

    @Test(.enabled(if: canBuild && canRunPipeWire, "needs dpkg-dev, binutils and PipeWire (make test installs them)"))
    func packageInstallsIntoAScratchRootRunsInPipeWireAndPurgesCleanly() throws {
        let processes = try Processes(name: "deb")
        defer { processes.stopAll() }
        let deb = try Self.build(processes)
        let version = try Self.version()

        let fields = try processes.run("dpkg-deb", ["--field", deb.path, "Package", "Version", "Depends"]).output
        #expect(fields.contains("Package: hear") && fields.contains("Version: \(version)"), "\(fields)")
        #expect(fields.contains("libc6") && fields.contains("libpipewire-0.3-0"), "Depends from dpkg-shlibdeps: \(fields)")
        #expect(!fields.contains("libswift"), "\(fields)")

        // A scratch root with an empty dpkg database; the package's library dependencies are the host's.
        let root = try processes.directory("root", mode: 0o755)
        for folder in ["var/lib/dpkg/info", "var/lib/dpkg/updates", "var/log"] { _ = try processes.directory("root/" + folder, mode: 0o755) }
        for file in ["var/lib/dpkg/status", "var/lib/dpkg/available"] {
            _ = FileManager.default.createFile(atPath: root.appendingPathComponent(file).path, contents: Data())
        }
        let dpkg = ["--root=\(root.path)", "--log=\(root.appendingPathComponent("var/log/dpkg.log").path)", "--force-depends"]
        try processes.run("dpkg", dpkg + ["--install", deb.path], timeout: 120)

        // Exactly the files Debian wants, as dpkg lists them.
        let installed = Self.regularFiles(root.appendingPathComponent("usr")).map { "usr/" + $0 }
        #expect(Set(installed) == Set(Self.files), "unexpected: \(Set(installed).subtracting(Self.files)), missing: \(Set(Self.files).subtracting(installed))")
        let listed = try processes.run("dpkg", ["--root=\(root.path)", "--listfiles", "hear"]).output.split(separator: "\n").map(String.init)
        for file in Self.files { #expect(listed.contains("/" + file), "dpkg -L lacks /\(file)") }
        let path = { (file: String) in root.appendingPathComponent(file).path }
        let text = { (file: String) in (try? String(contentsOfFile: path(file), encoding: .utf8)) ?? "" }
        let gunzip = { (file: String) in try processes.run("gzip", ["-dc", path(file)]).output }

        // The plugin: both labels, loadable by Debian's own LADSPA tool.
        let labels = try processes.run("analyseplugin", [path("usr/lib/ladspa/libhear.so")]).output
        #expect(labels.contains("hear_mono") && labels.contains("hear_stereo"), "\(labels)")
        // hearctl runs from the root and says the package's upstream version.
        let hearctl = path("usr/bin/hearctl")
        let upstream = String(version.split(separator: "-")[0])
        #expect(try processes.run(hearctl, ["--version"]).output.contains("hearctl \(upstream) "))
        #expect(!(try processes.run("ldd", [hearctl]).output.contains("libswift")))
        // The man page (generate-manual: the same source as --help) covers every verb, enable and disable included.
        let manual = try gunzip("usr/share/man/man1/hearctl.1.gz")
        #expect(manual.contains(".Dt HEARCTL 1"), "\(manual.prefix(300))")
        for verb in ["status", "set", "preset", "fit", "enable", "disable", "toggle", "version"] {
            #expect(manual.contains(".It Em \(verb)"), "man page lacks \(verb)")
        }
        // EXIT STATUS is hearctl's own table as a tagged list (wrapped lines keep their indent), not mdoc's generic sentence.
        let exitStatus = try #require(manual.components(separatedBy: ".Sh \"EXIT STATUS\"").last)
        #expect(!manual.contains(".Ex -std") && exitStatus.contains(".Bl -tag -width Ds\n.It 0\nsuccess\n.It 1\n")
                && exitStatus.contains(".It 3\nnot running:") && exitStatus.contains(".It 4\ntimeout:"), "\(exitStatus)")
        #expect(!manual.contains("Exit status (every verb):"), "the table is still in DESCRIPTION, where troff fills it")
        // Completions, each in its shell's vendor folder; bash's is sourced, so no #! line.
        let bash = text("usr/share/bash-completion/completions/hearctl")
        #expect(!bash.hasPrefix("#!") && bash.contains("enable") && bash.contains("disable"))
        #expect(text("usr/share/zsh/vendor-completions/_hearctl").hasPrefix("#compdef hearctl"))
        #expect(text("usr/share/fish/vendor_completions.d/hearctl.fish").contains("complete -c 'hearctl'"))
        // The examples name the installed plugin and are otherwise the repository's drop-ins.
        for name in Repository.dropIns {
            #expect(text("usr/share/doc/hear/examples/" + name) == (try Self.dropIn(name, plugin: "/usr/lib/ladspa/libhear.so")))
            #expect(text("usr/share/hear/pipewire/" + name) == (try Repository.text("conf.d/pipewire/" + name)))
        }
        #expect(try gunzip("usr/share/doc/hear/changelog.Debian.gz").hasPrefix("hear (\(version))"))
        #expect(text("usr/share/doc/hear/copyright").hasPrefix("Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/"))

        // The installed hearctl turns both chains on for a user of its own (no systemd user manager
        // reachable from its private runtime dir: it says so rather than restarting anything).
        let home = try processes.directory("home")
        processes.environment["HOME"] = home.path
        processes.environment["XDG_RUNTIME_DIR"] = try processes.directory("run").path
        for key in ["XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME"] { processes.environment[key] = nil }
        let plugin = path("usr/lib/ladspa/libhear.so")
        let dropIns = home.appendingPathComponent(".config/pipewire/pipewire.conf.d")
        for (chain, name) in [("mic", "hear-microphone.conf"), ("speaker", "hear-speaker.conf")] {
            let enable = try processes.run(hearctl, ["enable", chain]).output
            #expect(enable.contains("wrote \(dropIns.path)/\(name) (plugin \(plugin))"), "\(enable)")
            #expect(enable.contains("PipeWire was not restarted") && enable.contains("restart PipeWire yourself"), "\(enable)")
            #expect(try String(contentsOf: dropIns.appendingPathComponent(name), encoding: .utf8)
                == Self.dropIn(name, plugin: plugin))
        }
        #expect(try processes.run(hearctl, ["enable", "mic"]).output.contains("already enabled"))

        // A private PipeWire with that HOME loads the plugin from the installed path.
        do {
            let session = try PipeWireSession(name: "deb-installed", installedHome: home)
            defer { session.stop() }
            let nodes = try session.nodes()
            #expect(nodes["hear_microphone"]?["media.class"] as? String == "Audio/Source")
            #expect(nodes["hear_speaker"]?["media.class"] as? String == "Audio/Sink")
            let daemons = session.processes.pids.filter {
                (try? String(contentsOfFile: "/proc/\($0)/comm", encoding: .utf8))?.hasPrefix("pipewire") == true
            }
            try #require(daemons.count == 1)
            // /proc files report size 0: String(contentsOfFile:) can stop after its first read and
            // miss the later mappings (seen: 23 of several hundred lines), so read to the end.
            let file = try #require(FileHandle(forReadingAtPath: "/proc/\(daemons[0])/maps"))
            let maps = String(decoding: try file.readToEnd() ?? Data(), as: UTF8.self)
            try file.close()
            #expect(maps.contains(plugin), "the daemon did not map \(plugin)")
        }
        // The session's own pipewire.conf and wireplumber settings are not the package's.
        try FileManager.default.removeItem(at: home.appendingPathComponent(".config/pipewire/pipewire.conf"))
        try FileManager.default.removeItem(at: home.appendingPathComponent(".config/wireplumber"))

        // disable removes both drop-ins and lists what stays (here: a preset) with the command that removes it.
        let presets = home.appendingPathComponent(".config/hear/presets")
        try FileManager.default.createDirectory(at: presets, withIntermediateDirectories: true)
        try "gain = 3\n".write(to: presets.appendingPathComponent("mine.conf"), atomically: true, encoding: .utf8)
        let disable = try processes.run(hearctl, ["disable"]).output
        for name in Repository.dropIns {
            #expect(disable.contains("removed \(dropIns.path)/\(name)"), "\(disable)")
            #expect(!FileManager.default.fileExists(atPath: dropIns.appendingPathComponent(name).path))
        }
        #expect(disable.contains("kept your presets in \(presets.path)/ (mine.conf); remove them with: rm -r \(presets.path)"), "\(disable)")
        #expect(try processes.run(hearctl, ["disable", "mic"]).output.contains("mic was not enabled"))

        // Purged: nothing of the package is left in the root.
        try processes.run("dpkg", dpkg + ["--purge", "hear"], timeout: 120)
        #expect(Self.regularFiles(root.appendingPathComponent("usr")).isEmpty)
        let status = try processes.run("dpkg", ["--root=\(root.path)", "--status", "hear"], check: false)
        #expect(status.status != 0 || !status.output.contains("Status: install ok installed"), "\(status.output)")
    }

    @Test(.enabled(if: canBuild && onPath("lintian"), "needs dpkg-dev, binutils and lintian (make test installs them)"))
    func lintianReportsNoErrors() throws {
        let processes = try Processes(name: "deb-lintian")
        defer { processes.stopAll() }
        let deb = try Self.build(processes)
        let lintian = try processes.run("lintian", ["--fail-on", "error", "--tag-display-limit", "0", deb.path], timeout: 300, check: false)
        #expect(lintian.status == 0, "lintian:\n\(lintian.output)")
        #expect(!lintian.output.contains("E: "), "\(lintian.output)")
        // Every override is used (an unused one would hide nothing and mislead).
        #expect(!lintian.output.contains("unused-override"), "\(lintian.output)")
        print("lintian \(deb.lastPathComponent): \(lintian.output.isEmpty ? "clean" : lintian.output)")
    }
}
