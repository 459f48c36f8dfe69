// The live instances of this process, as the control server sees them. The host's threads add and
// remove entries (instantiate, cleanup); the server thread reads them. The audio thread never
// touches the registry: it meets the server only through each instance's ControlBlock.
// The first instance starts the control server and the last one stops it. Neither waits on a file
// system: starting only creates the server's thread, and the server never holds the lock below
// while it reads or writes files or sockets.

import Glibc
import HearControl
import HearDSP
import HearSystem
import Synchronization

/// Sendable because the server reaches `control` only under the registry's lock, and cleanup frees it only after removal.
struct RegistryEntry: @unchecked Sendable {
    let id: Int
    let control: UnsafeMutablePointer<ControlBlock>
    let label: String
    let sampleRate: Int
    let channels: Int
    let latency: Int
    let created: Double
    /// The chain whose saved settings this instance was given, once its chain number is known.
    var restoredChain: Int?
    /// The last meter window as read.
    var meters = MeterReadings()
    /// The frame count last seen and when it last moved, to tell a running instance from a suspended one.
    var lastFrames: UInt64 = 0
    var lastProgress = -Double.infinity

    func running(now: Double) -> Bool { now - lastProgress < 0.5 }

    /// -1 until the audio thread has run a block and read the `chain` port.
    var chain: Int { control.pointee.chain.load(ordering: .acquiring) }
}

final class Registry: @unchecked Sendable {
    static let shared = Registry()

    struct State {
        var entries: [RegistryEntry] = []
        var nextID = 1
        /// The id of the server that may touch the entries (0: none). A server that could not be
        /// joined in time (stuck in a file system) finds itself replaced and keeps its hands off.
        var server = 0
        var nextServer = 1
    }

    let state = Mutex(State())
    /// Held while adding or removing an instance, so the server starts and stops exactly once.
    /// The server thread never takes it, so stopping (which joins that thread) cannot deadlock.
    private let lifecycle = Mutex<ControlServer?>(nil)

    func add(control: UnsafeMutablePointer<ControlBlock>, label: String, sampleRate: Int, channels: Int, latency: Int) {
        let entry = RegistryEntry(id: 0, control: control, label: label, sampleRate: sampleRate, channels: channels,
                                  latency: latency, created: Syscall.now())
        lifecycle.withLock { server in
            state.withLock { state in
                state.entries.append(RegistryEntry(id: state.nextID, control: entry.control, label: entry.label,
                                                   sampleRate: entry.sampleRate, channels: entry.channels,
                                                   latency: entry.latency, created: entry.created))
                state.nextID += 1
            }
            if server == nil {
                // Code that a thread runs must stay mapped until that thread ends, whatever the host dlcloses.
                Threads.pinLibrary()
                let id = state.withLock { state in
                    state.server = state.nextServer
                    state.nextServer += 1
                    return state.server
                }
                do {
                    server = try ControlServer.start(registry: self, id: id)
                } catch {
                    // The filter works without its control socket; say why hearctl will not find it.
                    Syscall.log("control socket unavailable, hearctl cannot reach this process: \(error)")
                }
            }
        }
    }

    /// After this returns the server no longer touches `control`, which the caller may free.
    func remove(control: UnsafeMutablePointer<ControlBlock>) {
        let key = Int(bitPattern: control)
        lifecycle.withLock { server in
            let empty = state.withLock { state in
                state.entries.removeAll { Int(bitPattern: $0.control) == key }
                if state.entries.isEmpty { state.server = 0 }
                return state.entries.isEmpty
            }
            if empty, let running = server {
                running.stop()
                server = nil
            }
        }
    }
}
