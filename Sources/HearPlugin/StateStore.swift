// Saved settings per chain: what was set over the socket, written to the chain's settings file
// (HearControl/SettingsFile: lock, merge by parameter, damage kept aside, atomic write) so that a
// PipeWire restart or a reboot keeps the user's tuning. This type decides when to write; the writes
// themselves run on the saver's thread (SettingsSaver), so a file system that hangs holds up neither
// the instances nor the clients of the control loop. Used only on the control server's thread.
//
// When: a change is written 0.25 s after the last change, and never later than 1 s after the first
// unsaved one (a slider that moves for a minute is saved every second), so a kill -9 loses at most
// the last second of changes. A `sync` request (hearctl set --sync) hands everything over at once and
// is answered once the saver reports it on disk; the loop serves everyone else meanwhile. A failed
// write is tried again 2 s later; the changes stay pending.
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
    /// The control loop's wake pipe, for the saver to say a batch is done.
    private let notify: Int32
    private var saver: SettingsSaver?
    /// Changes not handed over yet, and those handed over but not reported written (by batch).
    private var pending: [Int: SettingsFile.Changes] = [:]
    private var inFlight: [(generation: UInt64, changes: [Int: SettingsFile.Changes])] = []
    private var generation: UInt64 = 0
    /// Every batch up to this one has been written (or has failed: then its changes are pending again).
    private(set) var completed: UInt64 = 0
    /// Batches that failed, with why, for the syncs that wait on them.
    private var failures: [UInt64: String] = [:]
    private var firstUnsaved: Double?
    private var lastChange: Double?
    private var retryAt: Double?
    private var reports: [(topic: String?, message: String)] = []

    /// Problems worth telling the user about (`hearctl status` prints them), oldest first.
    var notices: [String] { reports.map { $0.message } }

    init(directory: String?, notify: Int32) {
        self.directory = directory
        self.notify = notify
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
        for batch in inFlight { for (parameter, value) in batch.changes[chain] ?? [:] { settings[parameter] = value } }
        for (parameter, value) in pending[chain] ?? [:] { settings[parameter] = value }
        return settings
    }

    func update(chain: Int, _ changes: SettingsFile.Changes, now: Double) {
        pending[chain, default: [:]].merge(changes) { _, new in new }
        if firstUnsaved == nil { firstUnsaved = now }
        lastChange = now
    }

    /// Hands the chains whose save is due to the saver (all of them when `force`).
    func flush(now: Double, force: Bool = false) {
        guard let deadline, force || now >= deadline else { return }
        _ = handOver(now: now, lockWait: force ? Self.shutdownLockWait : Self.flushLockWait)
    }

    /// What a `sync` gets: everything on disk already, a failure, or a batch to wait for.
    enum SyncState: Equatable {
        case saved
        case failed(String)
        case waiting(UInt64)
    }

    /// Hands every unsaved change over now.
    func sync(now: Double) -> SyncState {
        guard directory != nil else { return .failed("settings are not saved: neither XDG_STATE_HOME nor HOME is set") }
        if let handed = handOver(now: now, lockWait: Self.syncLockWait) { return handed }
        return inFlight.last.map { .waiting($0.generation) } ?? .saved
    }

    /// The answer for a `sync` that waits on batch `generation`, once `completed` has reached it:
    /// failed if that batch or one before it (still unwritten when the sync came) failed.
    func syncResult(_ generation: UInt64, since start: UInt64) -> SyncState? {
        guard completed >= generation else { return nil }
        if let failure = failures.filter({ $0.key > start && $0.key <= generation }).sorted(by: { $0.key < $1.key }).first {
            return .failed(failure.value)
        }
        return .saved
    }

    /// Every pending change as one batch; written on the loop itself only if the saver's thread
    /// could not be started (then `.failed` or `.saved` comes back at once).
    private func handOver(now: Double, lockWait: Double) -> SyncState? {
        guard let directory else { pending.removeAll(); firstUnsaved = nil; return nil }
        guard !pending.isEmpty else { return nil }
        generation += 1
        let batch = SettingsSaver.Batch(generation: generation, changes: pending, lockWait: lockWait)
        pending.removeAll()
        firstUnsaved = nil
        lastChange = nil
        retryAt = nil
        if saver == nil {
            do { saver = try SettingsSaver(directory: directory, notify: notify) } catch {
                report("settings are saved on the control thread: \(error)", topic: "saver")
            }
        }
        inFlight.append((batch.generation, batch.changes))
        if let saver {
            saver.submit(batch)
            return nil
        }
        for chain in batch.changes.keys.sorted() {
            guard let file = file(chain: chain), let changes = batch.changes[chain] else { continue }
            record(SettingsSaver.Written(generation: batch.generation, chain: chain, changes: changes,
                                         outcome: file.update(changes, lockWait: lockWait)), now: now)
        }
        finish(batch.generation)
        return failures[batch.generation].map { .failed($0) } ?? .saved
    }

    /// Takes in what the saver wrote: notices, failures (their changes pending again, under any
    /// newer ones, tried again later), and the batches now complete.
    func collect(now: Double) {
        guard let saver else { return }
        var done: [UInt64] = []
        for written in saver.takeWritten() {
            record(written, now: now)
            if !done.contains(written.generation) { done.append(written.generation) }
        }
        for generation in done { finish(generation) }
    }

    private func record(_ written: SettingsSaver.Written, now: Double) {
        take(written.outcome, chain: written.chain, clears: true)
        guard let problem = written.outcome.problem else { return }
        failures[written.generation] = failures[written.generation] ?? problem.message
        // Newer changes of the same parameters win over the ones that failed to be written.
        pending[written.chain] = written.changes.merging(pending[written.chain] ?? [:]) { _, newer in newer }
        if firstUnsaved == nil { firstUnsaved = now }
        lastChange = lastChange ?? now
        retryAt = now + Self.retryDelay
    }

    private func finish(_ batch: UInt64) {
        inFlight.removeAll { $0.generation <= batch }
        completed = max(completed, batch)
        // A sync waits on at most a few batches: old failures serve nobody.
        failures = failures.filter { $0.key + 64 > completed }
    }

    /// At shutdown: hands everything over and lets the saver finish, within `seconds`.
    func close(now: Double, within seconds: Double) {
        flush(now: now, force: true)
        saver?.stop(within: seconds)
        collect(now: now)
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
