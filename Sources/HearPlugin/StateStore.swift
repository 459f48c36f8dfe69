// Saved settings per chain: what was set over the socket, written to
// `$XDG_STATE_HOME/hear/<chain>.conf` (HearControl/Settings.swift format) so that a PipeWire
// restart or a reboot keeps the user's tuning. Used only on the control server's thread, and never
// while it holds the registry lock: file systems can hang, instances must not wait for them.
//
// When: a change is written 0.25 s after the last change, and never later than 1 s after the first
// unsaved one (a slider that moves for a minute is saved every second), so a kill -9 loses at most
// the last second of changes. A `sync` request (hearctl set --sync) writes at once and answers only
// once the file is on disk. Writes are atomic: a fresh temporary file (O_EXCL|O_NOFOLLOW, 0600),
// fsync, rename, fsync of the directory.
//
// Who wins: several processes may host the same chain (two daemons, a daemon and a test host).
// Each save takes the chain's lock file (`<chain>.conf.lock`, flock), reads the file as it is
// now, applies only the parameters this process changed since its last save, and writes the
// result: per parameter, the process that saved a change to it last wins, and nobody's other
// parameters are lost.
//
// Damage: the file is read tolerantly (CRLF line ends, good lines kept). A file with bad lines is
// moved aside to `<chain>.conf.bad` (reported, and the good lines written back), never lost;
// anything but a regular file (a FIFO, a symlink, a directory) is reported and left alone.

import Glibc
import HearControl
import HearDSP
import HearSystem

final class StateStore {
    /// What one process changed in one chain since its last save: a value, or nil to forget the key.
    typealias Changes = [Parameter: Float?]

    static let debounce = 0.25
    static let maximumDelay = 1.0
    /// After a failed save, try again this much later.
    static let retryDelay = 2.0
    static let maximumFileSize = 1 << 16

    let directory: String?
    private var pending: [Int: Changes] = [:]
    private var firstUnsaved: Double?
    private var lastChange: Double?
    private var retryAt: Double?
    /// Problems worth telling the user about (`hearctl status` prints them).
    private(set) var notices: [String] = []

    init(directory: String?) {
        self.directory = directory
        if directory == nil { notices.append("settings are not saved: neither XDG_STATE_HOME nor HOME is set") }
    }

    func path(chain: Int) -> String? { directory.map { $0 + "/" + SettingsPath.stateFileName(chain: chain) } }

    /// When the next save is due, if one is.
    var deadline: Double? {
        guard !pending.isEmpty, let firstUnsaved, let lastChange else { return nil }
        let due = min(lastChange + Self.debounce, firstUnsaved + Self.maximumDelay)
        if let retryAt { return max(due, retryAt) }
        return due
    }

    /// The settings a new instance of `chain` starts with: the file, with this process's unsaved changes on top.
    func settings(chain: Int) -> Settings {
        var settings = Settings()
        if let path = path(chain: chain) {
            // The lock only to move a damaged file aside; reading needs none (files are replaced by rename).
            let lock = (try? Syscall.tryLock(path + ".lock")) ?? nil
            settings = load(chain: chain, path: path, locked: lock != nil)
            if let lock { Syscall.unlock(lock) }
        }
        for (parameter, value) in pending[chain] ?? [:] { settings[parameter] = value }
        return settings
    }

    func update(chain: Int, _ changes: Changes, now: Double) {
        pending[chain, default: [:]].merge(changes) { _, new in new }
        if firstUnsaved == nil { firstUnsaved = now }
        lastChange = now
    }

    /// Writes the chains whose save is due (all of them when `force`).
    func flush(now: Double, force: Bool = false) {
        guard let deadline, force || now >= deadline else { return }
        _ = save(now: now, lockWait: force ? 0.5 : 0)
    }

    /// Writes every unsaved change now, waiting up to 1 s for another process's save of the same
    /// chain; nil when everything is on disk, else what went wrong.
    func sync(now: Double) -> String? {
        guard directory != nil else { return "settings are not saved: neither XDG_STATE_HOME nor HOME is set" }
        return save(now: now, lockWait: 1)
    }

    /// Saves every pending chain; the first failure, if any.
    private func save(now: Double, lockWait: Double) -> String? {
        guard let directory else { pending.removeAll(); firstUnsaved = nil; return nil }
        var failure: String?
        for chain in pending.keys.sorted() {
            guard let path = path(chain: chain), let changes = pending[chain] else { continue }
            do {
                try Syscall.makeDirectories(directory, mode: 0o700)
                let lockPath = path + ".lock"
                var lock = try Syscall.tryLock(lockPath)
                let waitUntil = Syscall.now() + lockWait
                while lock == nil && Syscall.now() < waitUntil {
                    usleep(10_000)
                    lock = try Syscall.tryLock(lockPath)
                }
                guard let held = lock else {
                    // Another process is saving this chain right now: ours follows shortly.
                    failure = failure ?? "\(path) is being saved by another process; try again"
                    continue
                }
                defer { Syscall.unlock(held) }
                var settings = load(chain: chain, path: path, locked: true)
                for (parameter, value) in changes { settings[parameter] = value }
                let text = settings.text(comment: "hear settings for chain \(chain) (\(ChainName.name(chain))), saved by the control server.\n"
                                         + "Edit with hearctl; lines that do not parse are moved aside to \(SettingsPath.stateFileName(chain: chain)).bad.")
                try Syscall.writeFileAtomically(path, directory: directory, bytes: Array(text.utf8))
                pending[chain] = nil
            } catch {
                let message = "could not save settings to \(path): \(error)"
                report(message)
                failure = failure ?? message
            }
        }
        if pending.isEmpty {
            firstUnsaved = nil
            lastChange = nil
            retryAt = nil
        } else {
            retryAt = now + (failure == nil ? 0.05 : Self.retryDelay)
        }
        return failure
    }

    /// The chain's file as it is on disk: good lines kept; a file with bad lines moved aside to
    /// `.bad` when `locked` (its good lines become changes to write back); unreadable files reported.
    private func load(chain: Int, path: String, locked: Bool) -> Settings {
        let bytes: [UInt8]
        do {
            guard let read = try Syscall.readRegularFile(path, limit: Self.maximumFileSize) else { return Settings() }
            bytes = read
        } catch {
            report("ignoring state file \(path): \(error)")
            return Settings()
        }
        let (settings, errors) = Settings.parseTolerant(String(decoding: bytes, as: UTF8.self))
        guard !errors.isEmpty else { return settings }
        let lines = errors.prefix(3).map(\.message).joined(separator: "; ") + (errors.count > 3 ? "; ..." : "")
        guard locked else {
            report("state file \(path) has bad lines (\(lines)); using its \(settings.assignments.count) good ones")
            return settings
        }
        do {
            try Syscall.rename(path, path + ".bad")
            report("state file \(path) had bad lines (\(lines)); moved it to \(path).bad and kept its \(settings.assignments.count) good ones")
            // Written back (without the bad lines) at the next save.
            var changes = pending[chain] ?? [:]
            for assignment in settings.assignments where changes[assignment.parameter] == nil { changes[assignment.parameter] = assignment.value }
            if !changes.isEmpty {
                pending[chain] = changes
                let now = Syscall.now()
                if firstUnsaved == nil { firstUnsaved = now }
                lastChange = lastChange ?? now
            }
        } catch {
            report("state file \(path) has bad lines (\(lines)) and could not be moved aside: \(error)")
        }
        return settings
    }

    func report(_ notice: String) {
        if notices.last == notice { return }
        // The host's log (PipeWire's journal) gets it too.
        Syscall.log(notice)
        notices.append(notice)
        if notices.count > 8 { notices.removeFirst(notices.count - 8) }
    }
}
