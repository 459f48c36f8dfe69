// Saved settings per chain: what was set over the socket, written to the chain's settings file
// (HearControl/SettingsFile: lock, merge by parameter, damage kept aside, atomic write) so that a
// PipeWire restart or a reboot keeps the user's tuning. This type only decides when to write.
// Used only on the control server's thread, and never while it holds the registry lock: file
// systems can hang, instances must not wait for them.
//
// When: a change is written 0.25 s after the last change, and never later than 1 s after the first
// unsaved one (a slider that moves for a minute is saved every second), so a kill -9 loses at most
// the last second of changes. A `sync` request (hearctl set --sync) writes at once and answers only
// once the file is on disk. A failed write is tried again 2 s later; the changes stay pending.
//
// Notices (`hearctl status`, and the host's log): what was done once (a damaged file kept aside)
// stays among the last eight; a standing condition (a chain's file that cannot be read or written,
// the control socket unavailable) has a topic, and leaves the list once it no longer holds.

import HearControl
import HearDSP
import HearSystem

final class StateStore {
    static let debounce = 0.25
    static let maximumDelay = 1.0
    /// After a failed save, try again this much later.
    static let retryDelay = 2.0
    /// Background saves never wait for another writer (they come again shortly); one at shutdown
    /// waits a little; `sync` waits longer, within hearctl's 2 s for the reply.
    static let flushLockWait = 0.0
    static let shutdownLockWait = 0.5
    static let syncLockWait = 1.0

    let directory: String?
    private var pending: [Int: SettingsFile.Changes] = [:]
    private var firstUnsaved: Double?
    private var lastChange: Double?
    private var retryAt: Double?
    private var reports: [(topic: String?, message: String)] = []

    /// Problems worth telling the user about (`hearctl status` prints them), oldest first.
    var notices: [String] { reports.map { $0.message } }

    init(directory: String?) {
        self.directory = directory
        if directory == nil { report("settings are not saved: neither XDG_STATE_HOME nor HOME is set", topic: "state directory") }
    }

    func file(chain: Int) -> SettingsFile? {
        directory.map { SettingsFile(directory: $0, chain: chain, writer: "the control server") }
    }

    /// When the next save is due, if one is.
    var deadline: Double? {
        guard !pending.isEmpty, let firstUnsaved, let lastChange else { return nil }
        let due = min(lastChange + Self.debounce, firstUnsaved + Self.maximumDelay)
        if let retryAt { return max(due, retryAt) }
        return due
    }

    /// The settings a new instance of `chain` starts with: the file (repaired if damaged and
    /// nobody else is writing it), with this process's unsaved changes on top.
    func settings(chain: Int) -> Settings {
        var settings = Settings()
        if let file = file(chain: chain) {
            let outcome = file.read(repair: true)
            settings = outcome.settings
            // With nothing unsaved, no failed save of this chain stands: a clean read clears its notice.
            take(outcome, chain: chain, clears: pending[chain] == nil)
        }
        for (parameter, value) in pending[chain] ?? [:] { settings[parameter] = value }
        return settings
    }

    func update(chain: Int, _ changes: SettingsFile.Changes, now: Double) {
        pending[chain, default: [:]].merge(changes) { _, new in new }
        if firstUnsaved == nil { firstUnsaved = now }
        lastChange = now
    }

    /// Writes the chains whose save is due (all of them when `force`).
    func flush(now: Double, force: Bool = false) {
        guard let deadline, force || now >= deadline else { return }
        _ = save(now: now, lockWait: force ? Self.shutdownLockWait : Self.flushLockWait)
    }

    /// Writes every unsaved change now; nil when everything is on disk, else what went wrong.
    func sync(now: Double) -> String? {
        guard directory != nil else { return "settings are not saved: neither XDG_STATE_HOME nor HOME is set" }
        return save(now: now, lockWait: Self.syncLockWait)
    }

    /// Saves every pending chain; the first failure, if any.
    private func save(now: Double, lockWait: Double) -> String? {
        guard directory != nil else { pending.removeAll(); firstUnsaved = nil; return nil }
        var failure: String?
        for chain in pending.keys.sorted() {
            guard let file = file(chain: chain), let changes = pending[chain] else { continue }
            let outcome = file.update(changes, lockWait: lockWait)
            take(outcome, chain: chain, clears: true)
            if let problem = outcome.problem {
                failure = failure ?? problem.message
            } else {
                pending[chain] = nil
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

    /// Reports what a read or write of `chain`'s file did and found. Another process's save in
    /// progress is no news (ours follows shortly); an outcome without a problem clears the chain's
    /// standing notice when `clears`.
    private func take(_ outcome: SettingsFile.Outcome, chain: Int, clears: Bool) {
        if !outcome.removedTemporaries.isEmpty {
            Syscall.log("removed temporary files of writers that died: \(outcome.removedTemporaries.joined(separator: ", "))")
        }
        for notice in outcome.notices { report(notice) }
        let topic = "chain \(chain)"
        if let problem = outcome.problem {
            if !problem.busy { report(problem.message, topic: topic) }
        } else if clears {
            clear(topic)
        }
    }

    /// Adds a notice and logs it. With a topic, it replaces the topic's earlier notice and stays
    /// until `clear(topic)`; without, it is dropped after eight newer ones.
    func report(_ notice: String, topic: String? = nil) {
        if let topic, let index = reports.firstIndex(where: { $0.topic == topic }) {
            if reports[index].message == notice { return }
            reports.remove(at: index)
        } else if topic == nil && reports.last?.message == notice {
            return
        }
        // The host's log (PipeWire's journal) gets it too.
        Syscall.log(notice)
        reports.append((topic, notice))
        while reports.count > 8, let oldest = reports.firstIndex(where: { $0.topic == nil }) { reports.remove(at: oldest) }
    }

    /// The condition `topic` named no longer holds.
    func clear(_ topic: String) { reports.removeAll { $0.topic == topic } }
}
