// The control server: one per process, on its own thread, serving hear/1 (HearControl/Protocol.swift)
// on `<dir>/hear-<pid>.sock`. It never runs on, waits for or allocates on the audio thread: it only
// stores to and loads from each instance's ControlBlock, under the registry lock, and never does
// file or socket I/O while it holds that lock (instantiate and cleanup, on the host's main thread,
// take it too). Starting it only creates the thread; the socket is set up on that thread, so
// instantiate never waits on a file system.
// Its parts: the socket and the poll loop here, clients in ControlClients.swift, requests in
// ControlRequests.swift, restoring settings and sampling meters in ControlHousekeeping.swift.

import Glibc
import HearControl
import HearDSP
import HearSystem
import Synchronization

final class ControlServer: @unchecked Sendable {
    static let maximumClients = 16
    /// A client that sends nothing for this long is disconnected (hearctl meter polls far faster).
    static let idleTimeout = 10.0
    /// A request line must be complete this long after its first byte arrived.
    static let requestTimeout = 5.0
    /// A client whose pending replies make no progress for this long does not read them: dropped.
    static let writeTimeout = 10.0
    /// Unread replies past which a client's further requests wait (backpressure).
    static let outputHighWater = 1 << 16
    /// With every slot taken, a client idle this long may be evicted for a newcomer.
    static let evictAfter = 1.0
    /// Requests of one client answered per poll round (at most one of them a `sync`).
    static let requestsPerTurn = 32
    static let meterInterval = 0.1
    /// How long cleanup waits for the thread to finish (its last save included) before leaving it to end on its own.
    static let stopTimeout = 1.0
    /// After failing to set up the socket, try again this much later.
    static let retryInterval = 2.0

    let registry: Registry
    /// This server's mark in the registry: only the server whose id is current touches the entries.
    let id: Int
    let directory: String
    let path: String
    let wake: (read: Int32, write: Int32)
    let store: StateStore
    let uid = getuid()
    let pid = getpid()
    var listener: Listener?
    private var nextListenAttempt = 0.0
    private var lastSetupError = ""
    var acceptPausedUntil = 0.0
    var clients: [Client] = []
    var nextMeter = 0.0
    private let stopping = Atomic<Bool>(false)
    private var thread = pthread_t()

    private init(registry: Registry, id: Int, directory: String, wake: (read: Int32, write: Int32), store: StateStore) {
        self.registry = registry
        self.id = id
        self.directory = directory
        path = directory + "/" + SocketPath.socketName(pid: getpid())
        self.wake = wake
        self.store = store
    }

    static func environment(_ name: String) -> String? { getenv(name).map { String(cString: $0) } }

    /// Creates the thread and returns: no file system is touched here (the thread sets up the socket).
    static func start(registry: Registry, id: Int) throws(SystemError) -> ControlServer {
        let directory = SocketPath.directory(environment: environment, uid: getuid())
        let wake = try Syscall.pipe()
        let store = StateStore(directory: SettingsPath.stateDirectory(environment: environment), notify: wake.write)
        let server = ControlServer(registry: registry, id: id, directory: directory, wake: wake, store: store)
        do {
            server.thread = try Threads.start(name: "hear-control") { server.serve() }
        } catch {
            Syscall.close(wake.read)
            Syscall.close(wake.write)
            throw error
        }
        return server
    }

    /// Wakes the thread and waits (at most `stopTimeout`) for it to save settings and finish. A
    /// thread stuck in a file system is left to finish on its own: the library is pinned, and it
    /// touches no instance once the registry has moved on.
    func stop() {
        stopping.store(true, ordering: .releasing)
        var byte: UInt8 = 1
        _ = Glibc.write(wake.write, &byte, 1)
        if Threads.join(thread, within: Self.stopTimeout) {
            Syscall.close(wake.read)
            Syscall.close(wake.write)
        } else {
            Syscall.log("the control thread is still busy (a slow file system?); it will finish on its own")
        }
    }

    /// Runs `body` under the registry lock if this server is still the registry's; nil otherwise.
    func withEntries<T>(_ body: (inout Registry.State) -> T) -> T? {
        registry.state.withLock { state in state.server == id ? body(&state) : nil }
    }

    // MARK: the socket

    /// The socket directory (0700, ours), stale sockets of processes that are gone, and our socket.
    private func setUp() throws(SystemError) -> Listener {
        try Trust.prepareServerDirectory(directory, uid: uid)
        Self.removeStaleSockets(in: directory, uid: uid, pid: pid)
        switch Syscall.probeSocket(path, uid: uid) {
        case .absent: break
        case .stale: try Syscall.unlink(path)
        case .live:
            throw SystemError(call: path, code: EADDRINUSE, detail: "already answers: another copy of libhear.so in this process serves it")
        case .notASocket(let kind):
            throw SystemError(call: path, code: EEXIST, detail: "is a \(kind), not a socket; not removing it")
        case .foreign(let owner):
            throw SystemError(call: path, code: EPERM, detail: "is a socket of uid \(owner); not removing it")
        case .unreachable(let error):
            throw error
        }
        return try Syscall.listen(at: path, backlog: 32)
    }

    /// Removes sockets nobody listens on any more. Staleness is decided by connecting, never by pid
    /// (a live server in another PID namespace has a pid that means nothing here); only sockets of
    /// ours that refuse connections are removed. A `.new` socket is another process's socket being
    /// set up: removed only when it refuses connections and is more than a minute old.
    static func removeStaleSockets(in directory: String, uid: uid_t, pid: pid_t) {
        for name in (try? Syscall.list(directory)) ?? [] {
            let setUp = name.hasSuffix(".sock.new")
            let socketName = setUp ? String(name.dropLast(4)) : name
            guard let owner = SocketPath.pid(socketName: socketName), owner != pid || setUp else { continue }
            let path = directory + "/" + name
            guard Syscall.probeSocket(path, uid: uid) == .stale else { continue }
            if setUp {
                guard let info = try? Syscall.status(path), Double(time(nil) - info.st_ctim.tv_sec) > 60 else { continue }
            }
            try? Syscall.unlink(path)
        }
    }

    // MARK: the server thread

    private func serve() {
        if let note = SocketPath.ignoredSetting(environment: Self.environment, uid: uid) { store.report(note) }
        while !stopping.load(ordering: .acquiring) {
            let now = Syscall.now()
            if listener == nil && now >= nextListenAttempt {
                do {
                    listener = try setUp()
                    lastSetupError = ""
                    store.clear("control socket")
                } catch {
                    nextListenAttempt = now + Self.retryInterval
                    let message = "control socket unavailable, hearctl cannot reach this process: \(error)"
                    if message != lastSetupError {
                        lastSetupError = message
                        store.report(message, topic: "control socket")
                    }
                }
            }
            var fds = [pollfd(fd: wake.read, events: Int16(POLLIN), revents: 0)]
            let listening = listener != nil && now >= acceptPausedUntil
            fds.append(pollfd(fd: listening ? listener!.fd : -1, events: Int16(POLLIN), revents: 0))
            for client in clients {
                var events: Int16 = 0
                if client.wantsInput { events |= Int16(POLLIN) }
                if client.pending > 0 { events |= Int16(POLLOUT) }
                fds.append(pollfd(fd: client.fd, events: events, revents: 0))
            }
            do {
                _ = try Syscall.poll(&fds, timeoutMilliseconds: timeout(now: now))
            } catch {
                store.report("control server: \(error)")
                usleep(100_000)
                continue
            }
            if fds[0].revents != 0 { drainWake() }
            let later = Syscall.now()
            // The saver's reports, and the syncs they answer.
            store.collect(now: later)
            resumeSyncs(now: later)
            if fds[1].revents & Int16(POLLIN) != 0 { acceptClients(now: later) }
            for index in clients.indices where index + 2 < fds.count && fds[index + 2].fd == clients[index].fd {
                service(&clients[index], revents: fds[index + 2].revents, now: later)
                if clients[index].closed { Syscall.close(clients[index].fd) }
            }
            clients.removeAll { $0.closed }
            maintain(now: later)
        }
        store.close(now: Syscall.now(), within: Self.stopTimeout * 0.8)
        for client in clients { Syscall.close(client.fd) }
        clients.removeAll()
        listener?.close()
        listener = nil
    }

    private func timeout(now: Double) -> Int32 {
        var wait = Self.meterInterval
        // An instance that has not run yet does not know its chain: look often enough to restore its
        // saved settings within a few blocks of its start, without spinning while a host keeps it idle.
        let starting = withEntries { state in state.entries.contains { $0.chain < 0 || $0.restoredChain != $0.chain } } ?? false
        if starting { wait = min(wait, 0.02) }
        // Requests already received and room to answer them: no waiting.
        if clients.contains(where: { !$0.closing && $0.awaitingSave == nil && $0.hasCompleteRequest && $0.pending < Self.outputHighWater }) { wait = 0 }
        if let deadline = store.deadline { wait = min(wait, max(0, deadline - now)) }
        if listener == nil { wait = min(wait, max(0, nextListenAttempt - now)) }
        wait = min(wait, max(0, nextMeter - now))
        return Int32(wait * 1000) + 1
    }

    private func drainWake() {
        var buffer = [UInt8](repeating: 0, count: 64)
        while buffer.withUnsafeMutableBytes({ Glibc.read(wake.read, $0.baseAddress, $0.count) }) > 0 {}
    }
}
