// SettingsFile, the one reader and writer of a chain's settings file, in a scratch directory:
// merge by parameter, the lock, every damaged file kept, a file that could not be read never
// replaced by a smaller one, and temporary files of dead writers removed. The plugin and hearctl
// meet the same cases end to end in HearPluginTests/SettingsFileEndToEndTests.

import Foundation
import Glibc
import HearControl
import HearDSP
import TestSupport
import Testing

/// A fresh directory, removed with everything in it at the end.
private final class ScratchDirectory {
    let path: String

    init() throws {
        var template = Array("/tmp/hear-settings-test-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw CocoaError(.fileWriteUnknown) }
        path = String(cString: made)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    func file(chain: Int = 1) -> SettingsFile { SettingsFile(directory: path, chain: chain, writer: "a test") }
    func read(_ name: String) -> String? { try? String(contentsOfFile: path + "/" + name, encoding: .utf8) }
    func write(_ text: String, to name: String) throws { try text.write(toFile: path + "/" + name, atomically: false, encoding: .utf8) }
    func exists(_ name: String) -> Bool { FileManager.default.fileExists(atPath: path + "/" + name) }
    var names: [String] { ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted() }
}

@Suite struct SettingsFileTests {
    @Test func eachWriteChangesOnlyItsOwnParameters() throws {
        let scratch = try ScratchDirectory()
        let file = scratch.file()
        #expect(file.path == scratch.path + "/mic.conf")
        #expect(file.update([.gain: 6], lockWait: 0).problem == nil)
        #expect(file.update([.compRatio: 3], lockWait: 0).problem == nil)
        #expect(file.read(repair: false).settings == Settings([Assignment(.gain, 6), Assignment(.compRatio, 3)]))
        let forget: SettingsFile.Changes = [.gain: nil]
        let forgotten = file.update(forget, lockWait: 0)
        #expect(forgotten.problem == nil && forgotten.settings == Settings([Assignment(.compRatio, 3)]))
        let text = try #require(scratch.read("mic.conf"))
        #expect(text.hasPrefix("# hear settings for chain 1 (mic), saved by a test.\n") && text.hasSuffix("\ncomp.ratio = 3\n"), "\(text)")
        var info = stat()
        #expect(lstat(file.path, &info) == 0 && info.st_mode & 0o777 == 0o600)
    }

    @Test func aWriterWaitsForTheLockOrSaysItIsBusy() throws {
        let scratch = try ScratchDirectory()
        let file = scratch.file()
        #expect(file.update([.gain: 1], lockWait: 0).problem == nil)
        let held = open(file.lockPath, O_RDWR)
        #expect(held >= 0 && flock(held, LOCK_EX | LOCK_NB) == 0)
        let start = Date()
        let busy = file.update([.gain: 2], lockWait: 0.2)
        let waited = Date().timeIntervalSince(start)
        #expect(busy.problem?.busy == true && waited >= 0.2 && waited < 2, "\(String(describing: busy.problem)) after \(waited) s")
        #expect(file.read(repair: false).settings[.gain] == 1)
        close(held)
        #expect(file.update([.gain: 2], lockWait: 0.2).problem == nil)
        #expect(file.read(repair: false).settings[.gain] == 2)
    }

    /// Defect: a second damaged file replaced the first one's `.bad`.
    @Test func everyDamagedFileIsKeptUnderItsOwnName() throws {
        let scratch = try ScratchDirectory()
        let file = scratch.file()
        try scratch.write("old copy of the user's own\n", to: "mic.conf.bad")
        let damaged = ["gain = 6\r\ncomp.ratio = banana\r\n", "gain = 5\nfirst damage\n", "gain = 4\nsecond = damage\n"]
        try scratch.write(damaged[0], to: "mic.conf")
        let first = file.update([.compThreshold: -20], lockWait: 0)
        #expect(first.problem == nil && first.settings == Settings([Assignment(.gain, 6), Assignment(.compThreshold, -20)]))
        #expect(first.notices.count == 1 && first.notices[0].contains("line 2") && first.notices[0].contains("mic.conf.bad.1"), "\(first.notices)")
        try scratch.write(damaged[1], to: "mic.conf")
        #expect(file.update([:], lockWait: 0).problem == nil)
        // The plugin's read at instantiate repairs too.
        try scratch.write(damaged[2], to: "mic.conf")
        let repaired = file.read(repair: true)
        #expect(repaired.problem == nil && repaired.settings == Settings([Assignment(.gain, 4)]))
        #expect(repaired.notices.first?.contains("mic.conf.bad.3") == true, "\(repaired.notices)")
        #expect(scratch.read("mic.conf.bad") == "old copy of the user's own\n")
        #expect(scratch.read("mic.conf.bad.1") == damaged[0])
        #expect(scratch.read("mic.conf.bad.2") == damaged[1])
        #expect(scratch.read("mic.conf.bad.3") == damaged[2])
        #expect(scratch.read("mic.conf")?.hasSuffix("\ngain = 4\n") == true)
        // A read without repair changes nothing on disk and says what is wrong.
        try scratch.write(damaged[1], to: "mic.conf")
        let looked = file.read(repair: false)
        #expect(looked.settings == Settings([Assignment(.gain, 5)]) && looked.problem?.message.contains("line 2") == true)
        #expect(scratch.read("mic.conf") == damaged[1] && !scratch.exists("mic.conf.bad.4"))
    }

    /// Defect: a valid 70 KB file was ignored (64 KiB cap), then replaced by one line.
    @Test func aLargeValidFileIsReadInFull() throws {
        let scratch = try ScratchDirectory()
        let file = scratch.file()
        let comment = "# " + String(repeating: "notes on this tuning ", count: 4) + "\n"
        let large = "gain = 5\n" + String(repeating: comment, count: 70_000 / comment.utf8.count) + "comp.ratio = 3\n"
        #expect(large.utf8.count > 1 << 16 && large.utf8.count < SettingsFile.maximumSize)
        try scratch.write(large, to: "mic.conf")
        let read = file.read(repair: true)
        #expect(read.problem == nil && read.settings == Settings([Assignment(.gain, 5), Assignment(.compRatio, 3)]))
        #expect(scratch.read("mic.conf") == large, "a valid file was rewritten at a read")
        let saved = file.update([.compThreshold: -20], lockWait: 0)
        #expect(saved.problem == nil && saved.settings == Settings([Assignment(.gain, 5), Assignment(.compRatio, 3), Assignment(.compThreshold, -20)]))
    }

    /// Defect: a file over the cap was replaced with no copy kept.
    @Test func aFileTooLargeToReadIsKeptAsideBeforeItIsReplaced() throws {
        let scratch = try ScratchDirectory()
        let file = scratch.file()
        let huge = "gain = 7\n" + String(repeating: "# padding\n", count: SettingsFile.maximumSize / 10 + 1)
        try scratch.write(huge, to: "mic.conf")
        let read = file.read(repair: false)
        #expect(read.settings.isEmpty && read.problem?.message.contains("not read") == true, "\(String(describing: read.problem))")
        #expect(scratch.read("mic.conf") == huge)
        let saved = file.update([.gain: 2], lockWait: 0)
        #expect(saved.problem == nil && saved.notices.first?.contains("mic.conf.bad") == true, "\(saved)")
        #expect(scratch.read("mic.conf.bad") == huge, "the large file was not kept")
        #expect(scratch.read("mic.conf")?.hasSuffix("\ngain = 2\n") == true)
    }

    /// Defect: a file that could not be read (a symbolic link, a FIFO) was replaced by rename.
    @Test func aFileThatCannotBeReadIsNeverReplaced() throws {
        let scratch = try ScratchDirectory()
        let file = scratch.file()
        try scratch.write("gain = 3\n", to: "elsewhere.conf")
        #expect(symlink(scratch.path + "/elsewhere.conf", file.path) == 0)
        let linked = file.update([.gain: 9], lockWait: 0)
        #expect(linked.problem?.message.contains("symbolic link") == true, "\(String(describing: linked.problem))")
        var info = stat()
        #expect(lstat(file.path, &info) == 0 && info.st_mode & S_IFMT == S_IFLNK, "the link was replaced")
        #expect(scratch.read("elsewhere.conf") == "gain = 3\n")
        #expect(unlink(file.path) == 0 && mkfifo(file.path, 0o600) == 0)
        let fifo = file.update([.gain: 9], lockWait: 0)
        #expect(fifo.problem?.message.contains("not a regular file (FIFO)") == true, "\(String(describing: fifo.problem))")
        #expect(lstat(file.path, &info) == 0 && info.st_mode & S_IFMT == S_IFIFO, "the FIFO was replaced")
        #expect(scratch.names == ["elsewhere.conf", "mic.conf", "mic.conf.lock"])
    }

    /// Defect: a file the writer may not read was replaced (root reads every file: not there).
    @Test(.enabled(if: getuid() != 0, "root can read a file of mode 000"))
    func aFileWithoutReadPermissionIsNeverReplaced() throws {
        let scratch = try ScratchDirectory()
        let file = scratch.file()
        try scratch.write("gain = 3\n", to: "mic.conf")
        #expect(chmod(file.path, 0) == 0)
        let refused = file.update([.gain: 9], lockWait: 0)
        #expect(refused.problem?.message.contains("Permission denied") == true, "\(String(describing: refused.problem))")
        #expect(chmod(file.path, 0o600) == 0)
        #expect(scratch.read("mic.conf") == "gain = 3\n")
    }

    /// Defect: temporary files of writers killed mid-save stayed for ever.
    @Test func temporaryFilesOfDeadWritersAreRemovedAtTheNextWrite() throws {
        let scratch = try ScratchDirectory()
        let file = scratch.file()
        let dead = try Command.exitedPID()
        let live = getpid()
        try scratch.write("victim\n", to: "victim")
        let removed = ["mic.conf.tmp-\(dead)-1", "mic.conf.tmp-\(dead)-2", "mic.conf.tmp-\(live)-3"]
        let kept = ["mic.conf.tmp-\(live)-4", "speaker.conf.tmp-\(dead)-5", "mic.conf.tmp-nopid"]
        for name in removed.prefix(1) + removed.suffix(1) + kept { try scratch.write("gain = 1\n", to: name) }
        #expect(symlink(scratch.path + "/victim", scratch.path + "/" + removed[1]) == 0)
        // Older than any save takes: its writer is gone, whatever its pid says.
        var times = [timeval(tv_sec: time(nil) - 600, tv_usec: 0), timeval(tv_sec: time(nil) - 600, tv_usec: 0)]
        #expect(utimes(scratch.path + "/" + removed[2], &times) == 0)
        let saved = file.update([.gain: 2], lockWait: 0)
        #expect(saved.problem == nil && saved.removedTemporaries == removed.sorted(), "\(saved.removedTemporaries)")
        for name in removed { #expect(!scratch.exists(name) && (try? FileManager.default.destinationOfSymbolicLink(atPath: scratch.path + "/" + name)) == nil, "\(name)") }
        for name in kept { #expect(scratch.exists(name), "\(name) was removed") }
        #expect(scratch.read("victim") == "victim\n")
    }
}
