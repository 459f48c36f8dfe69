// Writes settings files on a thread of its own, so that a slow file system (an fsync that takes
// seconds) never holds up the control loop that answers clients: with the writes on the loop, a
// 3 s fsync made a ping wait 6 s and `hearctl set --sync` time out. The loop (StateStore) hands
// over batches of changes; the saver writes them in order and hands back what each write did, then
// wakes the loop through its pipe. Never real-time: it only ever waits on its own pipe, a lock
// file or the file system.
//
// HEAR_TEST_SAVE_DELAY (seconds, tests only): the saver sleeps that long before each write, as a
// file system whose fsync hangs would make it wait.

import Glibc
import HearControl
import HearSystem
import Synchronization

final class SettingsSaver: Sendable {
    struct Batch: Sendable {
        let generation: UInt64
        let changes: [Int: SettingsFile.Changes]
        let lockWait: Double
    }

    /// One chain's write of one batch.
    struct Written: Sendable {
        let generation: UInt64
        let chain: Int
        let changes: SettingsFile.Changes
        let outcome: SettingsFile.Outcome
    }

    private struct Shared {
        var queue: [Batch] = []
        var written: [Written] = []
        var stopping = false
    }

    let directory: String
    private let shared = Mutex(Shared())
    /// The saver's own wake-up pipe: one byte per batch or stop.
    private let signal: (read: Int32, write: Int32)
    /// The control loop's wake pipe (its write end), written once a batch is done.
    private let notify: Int32
    private let testDelay: Double
    private let thread: Mutex<pthread_t?> = Mutex(nil)

    init(directory: String, notify: Int32) throws(SystemError) {
        self.directory = directory
        self.notify = notify
        signal = try Syscall.pipe()
        testDelay = getenv("HEAR_TEST_SAVE_DELAY").flatMap { Double(String(cString: $0)) }.map { min(max($0, 0), 60) } ?? 0
        let started = try Threads.start(name: "hear-save") { [self] in run() }
        thread.withLock { $0 = started }
    }

    /// Queues a batch; returns at once.
    func submit(_ batch: Batch) {
        shared.withLock { $0.queue.append(batch) }
        poke(signal.write)
    }

    /// What was written since the last call, in order.
    func takeWritten() -> [Written] {
        shared.withLock { state in
            defer { state.written.removeAll() }
            return state.written
        }
    }

    /// Lets the queued batches finish, up to `seconds`; a saver stuck in a file system is left to
    /// finish on its own (the library is pinned).
    func stop(within seconds: Double) {
        shared.withLock { $0.stopping = true }
        poke(signal.write)
        guard let thread = thread.withLock({ $0 }) else { return }
        if Threads.join(thread, within: seconds) {
            Syscall.close(signal.read)
            Syscall.close(signal.write)
        } else {
            Syscall.log("settings are still being saved (a slow file system?); the save will finish on its own")
        }
    }

    private func run() {
        while true {
            let next: Batch? = shared.withLock { state in state.queue.isEmpty ? nil : state.queue.removeFirst() }
            guard let batch = next else {
                if shared.withLock({ $0.stopping }) { return }
                // Asleep until a batch or the stop: the pipe's bytes say only "look again".
                var fds = [pollfd(fd: signal.read, events: Int16(POLLIN), revents: 0)]
                _ = try? Syscall.poll(&fds, timeoutMilliseconds: -1)
                var bytes = [UInt8](repeating: 0, count: 64)
                while bytes.withUnsafeMutableBytes({ Glibc.read(signal.read, $0.baseAddress, $0.count) }) > 0 {}
                continue
            }
            var written: [Written] = []
            for chain in batch.changes.keys.sorted() {
                guard let changes = batch.changes[chain] else { continue }
                if testDelay > 0 { usleep(UInt32(testDelay * 1e6)) }
                let file = SettingsFile(directory: directory, chain: chain, writer: "the control server")
                written.append(Written(generation: batch.generation, chain: chain, changes: changes,
                                       outcome: file.update(changes, lockWait: batch.lockWait)))
            }
            shared.withLock { $0.written += written }
            poke(notify)
        }
    }

    private func poke(_ fd: Int32) {
        var byte: UInt8 = 1
        _ = Glibc.write(fd, &byte, 1)
    }
}
