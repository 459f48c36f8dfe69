// The settings file of one chain, `$XDG_STATE_HOME/hear/<chain>.conf` (Settings.swift's format):
// the one implementation through which the plugin's control server (HearPlugin/StateStore, while
// the chain runs) and hearctl (while it is suspended) read and write it.
//
// Who wins: several processes may write one chain's file (two daemons, a daemon and hearctl).
// Every write holds the chain's lock file (`<chain>.conf.lock`, flock), reads the file as it is
// now, applies only the writer's own changes, and writes the result: per parameter, the writer
// that saved a change to it last wins, and nobody's other parameters are lost. Reading takes no
// lock: the file is only ever replaced by rename, so a reader sees one whole version.
//
// Nothing the user wrote is lost:
// - A file with bad lines keeps its good ones: under the lock, the whole file is first kept under
//   a name no file has yet (`<chain>.conf.bad`, else `.bad.1`, `.bad.2`, ...), then rewritten
//   without the bad lines. A later damaged file never replaces an earlier one's copy.
// - A file over `maximumSize` is not read; it is kept aside the same way before a write replaces it.
// - A file that cannot be read (permissions, an I/O error, a FIFO, a symbolic link or a directory
//   at the path) is never replaced: the write is refused, saying why.
// - Writes are atomic (Syscall.writeFileAtomically). Temporary files that a writer killed
//   mid-save left behind are removed by the next write, under the lock.
//
// Results are values (the settings, what was done, what stands in the way), so the plugin can log
// and show them and hearctl print them.

import HearDSP
import HearSystem

public struct SettingsFile: Sendable {
    /// What one writer changed: a value, or nil to forget the parameter.
    public typealias Changes = [Parameter: Float?]

    /// Far above what hear writes (a few hundred bytes) or anyone writes by hand, small enough to
    /// read on the control server's thread.
    public static let maximumSize = 1 << 20
    /// Seconds after which a temporary file has no live writer, whatever its pid says.
    public static let abandonedAfter = 60.0
    /// Copies of damaged files kept per chain; with this many, writes are refused until some go.
    public static let maximumCopies = 1000

    public let directory: String
    public let chain: Int
    /// Who writes, for the file's first comment: "the control server", "hearctl".
    public let writer: String

    public init(directory: String, chain: Int, writer: String) {
        self.directory = directory
        self.chain = chain
        self.writer = writer
    }

    /// The chain's file in `$XDG_STATE_HOME/hear`, else `~/.local/state/hear`; nil without either.
    public init?(chain: Int, writer: String, environment: (String) -> String?) {
        guard let directory = SettingsPath.stateDirectory(environment: environment) else { return nil }
        self.init(directory: directory, chain: chain, writer: writer)
    }

    public var path: String { directory + "/" + SettingsPath.stateFileName(chain: chain) }
    public var lockPath: String { path + ".lock" }

    /// What a read or a write found and did.
    public struct Outcome: Sendable {
        /// The file's settings (its good lines); after a write, what was written.
        public var settings = Settings()
        /// What was done that the user should hear of once (a damaged file kept aside).
        public var notices: [String] = []
        /// What stands in the way: the file could not be read in full, or a write did not happen.
        public var problem: Problem?
        /// Temporary files of dead writers that a write removed (names in `directory`).
        public var removedTemporaries: [String] = []
    }

    public struct Problem: Error, Equatable, Sendable, CustomStringConvertible {
        public let message: String
        /// Another process holds the lock: nothing is wrong, a write later succeeds.
        public let busy: Bool

        init(_ message: String, busy: Bool = false) {
            self.message = message
            self.busy = busy
        }

        public var description: String { message }
    }

    /// The file's settings. With `repair`, and the lock free at once, a damaged or too large file
    /// is kept aside and rewritten now; otherwise nothing on disk changes.
    public func read(repair: Bool) -> Outcome {
        var outcome = Outcome()
        let lock = repair ? (try? Syscall.lock(lockPath, waiting: 0)) ?? nil : nil
        defer { if let lock { Syscall.unlock(lock) } }
        let found = examine(locked: lock != nil)
        outcome.settings = found.settings
        outcome.problem = found.problem
        if let kept = found.kept { write(found.settings, keeping: kept, into: &outcome) }
        return outcome
    }

    /// Applies `changes` to the file as it is now, holding its lock (waiting up to `lockWait`
    /// seconds for another writer to finish).
    public func update(_ changes: Changes, lockWait: Double) -> Outcome {
        update(lockWait: lockWait) { _ in changes }
    }

    /// Applies the changes `make` computes from the file's settings as they are under its lock, so
    /// that a change relative to a saved value (`hearctl set gain +2` on a suspended chain) loses no
    /// concurrent one.
    public func update(lockWait: Double, _ make: (Settings) -> Changes) -> Outcome {
        var outcome = Outcome()
        let lock: Int32
        do {
            try Syscall.makeDirectories(directory, mode: 0o700)
            guard let held = try Syscall.lock(lockPath, waiting: lockWait) else {
                outcome.problem = Problem("\(path) is being saved by another process; try again", busy: true)
                return outcome
            }
            lock = held
        } catch {
            outcome.problem = Problem("could not save settings to \(path): \(error)")
            return outcome
        }
        defer { Syscall.unlock(lock) }
        outcome.removedTemporaries = Syscall.removeAbandonedTemporaries(of: path, in: directory, olderThan: Self.abandonedAfter)
        let found = examine(locked: true)
        outcome.settings = found.settings
        if let problem = found.problem {
            outcome.problem = Problem("settings not saved: \(problem.message)")
            return outcome
        }
        var settings = found.settings
        for (parameter, value) in make(found.settings) { settings[parameter] = value }
        write(settings, keeping: found.kept, into: &outcome)
        return outcome
    }

    /// A copy of the file kept aside, and what to say about it once the file is rewritten.
    private struct Kept {
        let copy: String
        let notice: String
    }

    /// The file as it is: its good lines, what stops a write, and (only when `locked`) the copy
    /// of a damaged or too large file, which must then be rewritten.
    private func examine(locked: Bool) -> (settings: Settings, problem: Problem?, kept: Kept?) {
        let bytes: [UInt8]
        do throws(SystemError) {
            guard let read = try Syscall.readRegularFile(path, limit: Self.maximumSize) else { return (Settings(), nil, nil) }
            bytes = read
        } catch where error.tooLarge {
            let size = "state file \(path) \(error.detail ?? error.message)"
            guard locked else { return (Settings(), Problem("\(size): not read; it is kept aside at the next save"), nil) }
            do throws(SystemError) {
                let copy = try keepCopy(bytes: nil)
                return (Settings(), nil, Kept(copy: copy, notice: "\(size): not read; moved it to \(copy)"))
            } catch {
                return (Settings(), Problem("\(size): not read, and no copy could be kept (\(error)); it is left as it is"), nil)
            }
        } catch {
            return (Settings(), Problem("state file \(path) cannot be read (\(error)); it is left as it is"), nil)
        }
        let (settings, errors) = Settings.parseTolerant(String(decoding: bytes, as: UTF8.self))
        guard !errors.isEmpty else { return (settings, nil, nil) }
        let lines = errors.prefix(3).map(\.message).joined(separator: "; ") + (errors.count > 3 ? "; ..." : "")
        let good = settings.assignments.count
        guard locked else { return (settings, Problem("state file \(path) has bad lines (\(lines)); using its \(good) good ones"), nil) }
        do throws(SystemError) {
            let copy = try keepCopy(bytes: bytes)
            return (settings, nil, Kept(copy: copy, notice: "state file \(path) had bad lines (\(lines)); moved it to \(copy) and kept its \(good) good ones"))
        } catch {
            return (settings, Problem("state file \(path) has bad lines (\(lines)) and no copy could be kept (\(error)); it is left as it is"), nil)
        }
    }

    private func keepCopy(bytes: [UInt8]?) throws(SystemError) -> String {
        try Syscall.keepCopy(of: path, as: path + ".bad", bytes: bytes, maximumCopies: Self.maximumCopies)
    }

    /// Replaces the file with `settings`. A copy kept aside is told of once the file is rewritten,
    /// and removed again when it is not (the file it copies is still in place; the next write keeps it).
    private func write(_ settings: Settings, keeping kept: Kept?, into outcome: inout Outcome) {
        let text = settings.text(comment: "hear settings for chain \(chain) (\(ChainName.name(chain))), saved by \(writer).\n"
                                 + "Edit with hearctl; a file with lines that do not parse is kept as "
                                 + "\(SettingsPath.stateFileName(chain: chain)).bad (.bad.1, ... when taken).")
        do throws(SystemError) {
            try Syscall.writeFileAtomically(path, directory: directory, bytes: Array(text.utf8))
            outcome.settings = settings
            if let kept { outcome.notices.append(kept.notice) }
        } catch {
            if let kept { try? Syscall.unlink(kept.copy) }
            outcome.problem = Problem("could not save settings to \(path): \(error)")
        }
    }
}
