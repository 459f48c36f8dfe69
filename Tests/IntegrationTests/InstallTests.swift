// `make install` into a throw-away HOME writes exactly the files its manifest lists (and prints),
// a real PipeWire loads the installed drop-ins, and `make uninstall` leaves HOME as it found it.

import Foundation
import Testing
import TestSupport

@Suite struct InstallTests {
    /// Every file and folder under `root`, relative.
    static func tree(_ root: URL) -> Set<String> {
        var paths: Set<String> = []
        let enumerator = FileManager.default.enumerator(atPath: root.path)
        while let path = enumerator?.nextObject() as? String { paths.insert(path) }
        return paths
    }

    @Test func installWritesWhatItsManifestListsAndUninstallRemovesIt() throws {
        let processes = try Processes(name: "install")
        defer { processes.stopAll() }
        let home = try processes.directory("home")
        try "keep me\n".write(to: home.appendingPathComponent(".profile"), atomically: true, encoding: .utf8)
        // A chain's saved settings: the user's, which uninstall keeps and lists with the command that removes them.
        let state = home.appendingPathComponent(".local/state/hear")
        try FileManager.default.createDirectory(at: state, withIntermediateDirectories: true)
        try "gain = 6\n".write(to: state.appendingPathComponent("mic.conf"), atomically: true, encoding: .utf8)
        let before = Self.tree(home)
        // A HOME and runtime dir of its own and no session bus: nothing reaches the user's real PipeWire.
        processes.environment["HOME"] = home.path
        processes.environment["XDG_RUNTIME_DIR"] = try processes.directory("run").path
        for key in ["XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "PREFIX"] { processes.environment[key] = nil }

        let install = try processes.run("make", ["-C", Repository.root.path, "--no-print-directory", "install", "NO_BUILD=1"])
        let manifestURL = home.appendingPathComponent(".local/share/hear/install-manifest")
        let manifest = try String(contentsOf: manifestURL, encoding: .utf8).split(separator: "\n").map(String.init)
        let files = Set(manifest.filter { $0.hasPrefix("file ") }.map { String($0.dropFirst(5)) })
        let folders = Set(manifest.filter { $0.hasPrefix("dir ") }.map { String($0.dropFirst(4)) })
        let printed = Set(install.output.split(separator: "\n").compactMap { line -> String? in
            guard line.hasPrefix("installed ") else { return nil }
            return String(line.dropFirst(10).split(separator: " ")[0])
        })
        #expect(files == printed, "manifest vs output:\n\(install.output)")
        let expected = [".local/lib/ladspa/libhear.so", ".config/pipewire/pipewire.conf.d/hear-microphone.conf",
                        ".config/pipewire/pipewire.conf.d/hear-speaker.conf", ".local/share/hear/hear.pa",
                        ".local/share/hear/install-manifest",
                        // the templates `hearctl enable` fills in
                        ".local/share/hear/pipewire/hear-microphone.conf", ".local/share/hear/pipewire/hear-speaker.conf"]
        for path in expected { #expect(files.contains(home.appendingPathComponent(path).path), "\(path) not in \(files)") }
        // hearctl comes along whenever it is built.
        let hearctlBuilt = FileManager.default.isExecutableFile(atPath: Repository.url(".build/release/hearctl").path)
        #expect(files.contains(home.appendingPathComponent(".local/bin/hearctl").path) == hearctlBuilt)
        // Exactly these: every new path under HOME is a listed file or a listed folder.
        let added = Self.tree(home).subtracting(before).map { home.appendingPathComponent($0).path }
        #expect(Set(added) == files.union(folders), "unlisted: \(Set(added).subtracting(files.union(folders)))")
        // The drop-ins name the installed plugin, which is the built one.
        let plugin = home.appendingPathComponent(".local/lib/ladspa/libhear.so").path
        let microphone = try String(contentsOfFile: home.appendingPathComponent(".config/pipewire/pipewire.conf.d/hear-microphone.conf").path,
                                    encoding: .utf8)
        #expect(DropIn.code(microphone).contains("plugin = \"\(plugin)\""))
        #expect(FileManager.default.contentsEqual(atPath: plugin, andPath: Repository.url(".build/release/libhear.so").path))
        #expect(install.output.contains("restart"), "install says how PipeWire picks the drop-ins up")

        // A real PipeWire with this HOME loads the installed drop-ins.
        do {
            let session = try PipeWireSession(name: "installed", installedHome: home)
            defer { session.stop() }
            let nodes = try session.nodes()
            #expect(nodes["hear_microphone"]?["media.class"] as? String == "Audio/Source")
            #expect(nodes["hear_speaker"]?["media.class"] as? String == "Audio/Sink")
        }
        // The session's own pipewire.conf, wireplumber settings and state are not install's: remove them first.
        try FileManager.default.removeItem(at: home.appendingPathComponent(".config/pipewire/pipewire.conf"))
        try FileManager.default.removeItem(at: home.appendingPathComponent(".config/wireplumber"))

        let uninstall = try processes.run("make", ["-C", Repository.root.path, "--no-print-directory", "uninstall"])
        #expect(Self.tree(home) == before, "left behind: \(Self.tree(home).subtracting(before))\n\(uninstall.output)")
        // It says how PipeWire drops the chains, and what stays with the command that removes it.
        #expect(uninstall.output.contains("restart"), "\(uninstall.output)")
        #expect(uninstall.output.contains("kept saved settings in \(state.path)/ (mic.conf); remove them with: rm -r \(state.path)"),
                "\(uninstall.output)")
        #expect(try String(contentsOf: home.appendingPathComponent(".profile"), encoding: .utf8) == "keep me\n")
        // A second uninstall has nothing to do and says so.
        #expect(try processes.run("make", ["-C", Repository.root.path, "--no-print-directory", "uninstall"]).output
            .contains("not installed"))
    }
}
