// The settings file as the plugin and hearctl meet it on disk, end to end: every damaged file is
// kept, a file that could not be read in full is never replaced by a smaller one, temporary files
// of writers that died are removed, and a notice leaves `hearctl status` once its condition has
// gone. Each test failed on the code that had two writers of the file (one in the plugin, one in
// hearctl); HearControlTests/SettingsFileTests checks the one implementation itself.

import Foundation
import Glibc
import HearControl
import TestSupport
import Testing

@Suite(.serialized) struct SettingsFileEndToEndTests {
    /// Three damaged files in turn, two met by the plugin at start and one by hearctl on a
    /// suspended chain: each is kept under its own name (`.bad`, `.bad.1`, `.bad.2`), none overwritten.
    @Test func everyDamagedStateFileIsKept() throws {
        let sandbox = try Sandbox()
        try FileManager.default.createDirectory(atPath: sandbox.state + "/hear", withIntermediateDirectories: true)
        let state = sandbox.stateFile(chain: 1)
        let damaged = ["gain = 6\ncomp.ratio = banana\n", "gain = 5\nfirst damage\n", "gain = 4\nsecond = damage\n"]
        for text in damaged.prefix(2) {
            try text.write(toFile: state, atomically: true, encoding: .utf8)
            let host = try sandbox.startHost(chain: 1)
            #expect(sandbox.waitFor(3) { sandbox.read(state).map { !$0.contains("damage") && !$0.contains("banana") } == true },
                    "never rewritten: \(sandbox.read(state) ?? "none")")
            _ = try host.stop()
        }
        try sandbox.writeDropIn(chain: 1, controls: [:])
        try damaged[2].write(toFile: state, atomically: true, encoding: .utf8)
        let set = try sandbox.hearctl("set", "--chain", "mic", "comp.threshold", "=-20")
        #expect(set.status == 0, "\(set.stderr)")
        #expect(sandbox.read(state + ".bad") == damaged[0])
        #expect(sandbox.read(state + ".bad.1") == damaged[1])
        #expect(sandbox.read(state + ".bad.2") == damaged[2])
        #expect(set.stderr.contains(state + ".bad.2"), "hearctl did not say where the damaged file went: \(set.stderr)")
        let saved = sandbox.read(state) ?? ""
        #expect(saved.contains("\ngain = 4\n") && saved.contains("\ncomp.threshold = -20\n"), "\(saved)")
    }

    /// A valid 70 KB file (long comments) is read at start and keeps every setting through a save;
    /// a 2 MiB file, more than is read, is kept aside whole before a save replaces it.
    @Test func aFileTooLargeToReadIsNeverReplacedWithoutACopy() throws {
        let sandbox = try Sandbox()
        try FileManager.default.createDirectory(atPath: sandbox.state + "/hear", withIntermediateDirectories: true)
        let state = sandbox.stateFile(chain: 1)
        let comment = "# " + String(repeating: "notes on this tuning ", count: 4) + "\n"
        let large = "gain = 5\n" + String(repeating: comment, count: 70_000 / comment.utf8.count) + "comp.ratio = 3\n"
        #expect(large.utf8.count > 65_536)
        try large.write(toFile: state, atomically: true, encoding: .utf8)
        let host = try sandbox.startHost(chain: 1)
        #expect(try sandbox.value("gain", chain: 1) == 5, "the 70 KB file was not read")
        #expect(try sandbox.hearctl("set", "--sync", "comp.threshold", "=-20").status == 0)
        let saved = sandbox.read(state) ?? ""
        #expect(saved.contains("\ngain = 5\n") && saved.contains("\ncomp.ratio = 3\n") && saved.contains("\ncomp.threshold = -20\n"),
                "settings of the 70 KB file lost: \(saved)")

        let huge = "gain = 7\n" + String(repeating: comment, count: (2 << 20) / comment.utf8.count)
        try huge.write(toFile: state, atomically: true, encoding: .utf8)
        #expect(try sandbox.hearctl("set", "--sync", "gain", "2").status == 0)
        let copies = ((try? FileManager.default.contentsOfDirectory(atPath: sandbox.state + "/hear")) ?? []).filter { $0.contains(".bad") }
        #expect(copies.contains { sandbox.read(sandbox.state + "/hear/" + $0) == huge }, "the 2 MiB file was replaced and not kept: \(copies)")
        #expect(sandbox.read(state)?.contains("\ngain = 2\n") == true)
        _ = try host.stop()
    }

    /// Temporary files left by writers killed mid-save are removed at the next save; one whose
    /// writer is alive (this test process) stays.
    @Test func temporaryFilesOfDeadWritersAreRemovedAtTheNextSave() throws {
        let sandbox = try Sandbox()
        let directory = sandbox.state + "/hear"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let state = sandbox.stateFile(chain: 1)
        let dead = try Command.exitedPID()
        let abandoned = [state + ".tmp-\(dead)-12345", state + ".tmp-\(dead)-678"]
        let live = state + ".tmp-\(getpid())-999"
        for path in abandoned + [live] { try "gain = 1\n".write(toFile: path, atomically: false, encoding: .utf8) }
        let host = try sandbox.startHost(chain: 1)
        #expect(try sandbox.hearctl("set", "--sync", "gain", "3").status == 0)
        for path in abandoned { #expect(!FileManager.default.fileExists(atPath: path), "\(path) is still there") }
        #expect(FileManager.default.fileExists(atPath: live), "a live writer's temporary file was removed")
        _ = try host.stop()
    }

    /// A save that fails (the state directory is a file) is reported by `hearctl status`; once a
    /// later save succeeds the report is gone.
    @Test func aSaveFailureNoticeClearsOnceASaveSucceeds() throws {
        let sandbox = try Sandbox()
        try FileManager.default.createDirectory(atPath: sandbox.state, withIntermediateDirectories: true)
        try "not a directory\n".write(toFile: sandbox.state + "/hear", atomically: true, encoding: .utf8)
        let host = try sandbox.startHost(chain: 1)
        let failed = try sandbox.hearctl("set", "--sync", "gain", "2")
        #expect(failed.status != 0, "a save into a file that is no directory succeeded")
        let before = try sandbox.hearctl("status")
        #expect(before.stdout.contains("Not a directory"), "\(before.stdout)")
        try FileManager.default.removeItem(atPath: sandbox.state + "/hear")
        let saved = try sandbox.hearctl("set", "--sync", "gain", "3")
        #expect(saved.status == 0, "\(saved.stderr)")
        #expect(sandbox.read(sandbox.stateFile(chain: 1))?.contains("\ngain = 3\n") == true)
        let after = try sandbox.hearctl("status")
        #expect(after.status == 0 && !after.stdout.contains("Not a directory"), "a cleared condition is still reported: \(after.stdout)")
        _ = try host.stop()
    }
}
