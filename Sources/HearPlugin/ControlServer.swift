// The control server: one per process, on its own thread, serving hear/1 (HearControl/Protocol.swift)
// on `<dir>/hear-<pid>.sock`. It never runs on, waits for or allocates on the audio thread: it only
// stores to and loads from each instance's ControlBlock, under the registry lock, and never does
// file or socket I/O while it holds that lock (instantiate and cleanup, on the host's main thread,
// take it too). Starting it only creates the thread; the socket is set up on that thread, so
// instantiate never waits on a file system.
//
// Clients are served from one poll() loop on non-blocking sockets, and each is bounded:
//   - a request line must be complete within `requestTimeout` of its first byte (slow senders are
//     answered `error timeout` and closed);
//   - requests are answered in order; while a client has `outputHighWater` bytes of replies
//     unread the server stops reading its requests (backpressure), so a pipeline of any length
//     is answered in full, and a client whose replies do not drain for `writeTimeout` is dropped;
//   - end of input (SHUT_WR) stops reading but the replies already owed still go out; a peer that
//     has closed both ways (POLLHUP) is dropped at once; no event is left pending, so the loop
//     never spins;
//   - a client silent for `idleTimeout` is closed; with every slot taken, a newcomer evicts the
//     client idle the longest (at least `evictAfter`), else it is told `error busy`.

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
    static let meterInterval = 0.1
    /// How long cleanup waits for the thread to finish (its last save included) before leaving it to end on its own.
    static let stopTimeout = 1.0
    /// After failing to set up the socket, try again this much later.
    static let retryInterval = 2.0

    struct Client {
        let fd: Int32
        var input: [UInt8] = []
        var output: [UInt8] = []
        /// Bytes of `output` already sent.
        var sent = 0
        /// The peer shut down its sending side: no more requests, but the replies owed still go out.
        var readClosed = false
        /// Close once the pending output is written (after a fatal request error).
        var closing = false
        var closed = false
        /// When the first byte of the unfinished request line arrived.
        var lineStarted: Double?
        /// The last complete request (or the connection).
        var lastRequest: Double
        /// The last progress in writing replies (or when replies started to wait).
        var lastWrite: Double

        init(fd: Int32, now: Double) {
            self.fd = fd
            lastRequest = now
            lastWrite = now
        }

        var pending: Int { output.count - sent }
        var hasCompleteRequest: Bool { input.contains(0x0A) }
        var wantsInput: Bool {
            !readClosed && !closing && !closed && input.count < Protocol.maximumLine && pending < ControlServer.outputHighWater
        }
        var idle: Bool { pending == 0 && !hasCompleteRequest }

        mutating func queue(_ text: String) {
            if pending == 0 { lastWrite = Syscall.now() }
            output += Array(text.utf8)
        }
    }

    let registry: Registry
    /// This server's mark in the registry: only the server whose id is current touches the entries.
    let id: Int
    let directory: String
    let path: String
    let wake: (read: Int32, write: Int32)
    let store: StateStore
    let uid = getuid()
    let pid = getpid()
    private var listener: Listener?
    private var nextListenAttempt = 0.0
    private var lastSetupError = ""
    private var acceptPausedUntil = 0.0
    private var clients: [Client] = []
    private var nextMeter = 0.0
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
        let store = StateStore(directory: SettingsPath.stateDirectory(environment: environment))
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
    private func withEntries<T>(_ body: (inout Registry.State) -> T) -> T? {
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
            if fds[1].revents & Int16(POLLIN) != 0 { acceptClients(now: later) }
            for index in clients.indices where index + 2 < fds.count && fds[index + 2].fd == clients[index].fd {
                service(&clients[index], revents: fds[index + 2].revents, now: later)
                if clients[index].closed { Syscall.close(clients[index].fd) }
            }
            clients.removeAll { $0.closed }
            maintain(now: later)
        }
        store.flush(now: Syscall.now(), force: true)
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
        if clients.contains(where: { !$0.closing && $0.hasCompleteRequest && $0.pending < Self.outputHighWater }) { wait = 0 }
        if let deadline = store.deadline { wait = min(wait, max(0, deadline - now)) }
        if listener == nil { wait = min(wait, max(0, nextListenAttempt - now)) }
        wait = min(wait, max(0, nextMeter - now))
        return Int32(wait * 1000) + 1
    }

    private func drainWake() {
        var buffer = [UInt8](repeating: 0, count: 64)
        while buffer.withUnsafeMutableBytes({ Glibc.read(wake.read, $0.baseAddress, $0.count) }) > 0 {}
    }

    private func acceptClients(now: Double) {
        guard let listener else { return }
        while true {
            let fd: Int32
            do throws(SystemError) {
                guard let accepted = try Syscall.accept(listener.fd) else { return }
                fd = accepted
            } catch {
                // Out of descriptors, say: the listener stays readable, so stop polling it a moment instead of spinning.
                store.report("control server: \(error)")
                acceptPausedUntil = now + 0.1
                return
            }
            var refusal: ReplyLine?
            let peer = try? Syscall.peerCredentials(fd)
            if peer?.uid != uid {
                refusal = .error(ProtocolError(.denied, "peer uid \(peer.map { String($0.uid) } ?? "unknown") is not the server's uid \(uid)"))
            } else if clients.count >= Self.maximumClients && !evictIdleClient(now: now) {
                refusal = .error(ProtocolError(.busy, "the server already serves \(Self.maximumClients) clients; try again"))
            }
            if let refusal {
                // Best effort, never waiting: refused peers get one line and the door.
                let bytes = Array((refusal.line + "\n").utf8)
                _ = bytes.withUnsafeBytes { raw in Syscall.send(fd, raw) }
                Syscall.close(fd)
                continue
            }
            var client = Client(fd: fd, now: now)
            client.queue(Greeting(pid: pid).line + "\n")
            transmit(&client, now: now)
            clients.append(client)
        }
    }

    /// Makes room by closing the client idle the longest, if one has been idle `evictAfter`.
    private func evictIdleClient(now: Double) -> Bool {
        let candidates = clients.indices.filter { clients[$0].idle && !clients[$0].closed && now - clients[$0].lastRequest >= Self.evictAfter }
        guard let victim = candidates.min(by: { clients[$0].lastRequest < clients[$1].lastRequest }) else { return false }
        let line = ReplyLine.error(ProtocolError(.busy, "closing this connection, idle for \(Int(now - clients[victim].lastRequest)) s, to serve a new client"))
        let bytes = Array((line.line + "\n").utf8)
        _ = bytes.withUnsafeBytes { raw in Syscall.send(clients[victim].fd, raw) }
        Syscall.close(clients[victim].fd)
        clients.remove(at: victim)
        return true
    }

    /// One client's turn: read what it sent, answer complete requests while its replies drain,
    /// write, and apply the deadlines.
    private func service(_ client: inout Client, revents: Int16, now: Double) {
        if revents & Int16(POLLERR | POLLNVAL) != 0 { client.closed = true; return }
        if revents & Int16(POLLIN | POLLHUP) != 0 && client.wantsInput { receive(&client, now: now) }
        answerRequests(&client, now: now)
        if revents & Int16(POLLHUP) != 0 {
            // Closed both ways: nobody will read the replies (requests it sent are answered above, so a `set` still applies).
            client.closed = true
            return
        }
        // Written, then more queued requests answered into the room that made, then written again.
        if client.pending > 0 { transmit(&client, now: now) }
        if !client.closed && client.hasCompleteRequest {
            answerRequests(&client, now: now)
            if client.pending > 0 { transmit(&client, now: now) }
        }
        if client.closed { return }
        if let started = client.lineStarted, now - started > Self.requestTimeout, !client.closing {
            client.input.removeAll()
            client.lineStarted = nil
            client.queue(ReplyLine.error(ProtocolError(.timeout, "request not completed within \(Int(Self.requestTimeout)) s; closing")).line + "\n")
            client.closing = true
            transmit(&client, now: now)
        }
        if client.pending > 0 {
            if now - client.lastWrite > Self.writeTimeout { client.closed = true }
        } else if client.closing {
            client.closed = true
        } else if client.readClosed && !client.hasCompleteRequest {
            client.closed = true
        } else if client.lineStarted == nil && !client.hasCompleteRequest && now - client.lastRequest > Self.idleTimeout {
            client.closed = true
        }
    }

    private func receive(_ client: inout Client, now: Double) {
        var buffer = [UInt8](repeating: 0, count: 4096)
        // At most this many reads per client per round, so a fast talker cannot starve the others.
        var budget = 16
        while client.wantsInput && budget > 0 {
            budget -= 1
            let count: Int
            do throws(SystemError) {
                count = try buffer.withUnsafeMutableBytes { raw in Syscall.read(client.fd, into: raw) }.get()
            } catch where error.wouldBlock {
                return
            } catch {
                client.closed = true
                return
            }
            if count == 0 {
                client.readClosed = true
                return
            }
            client.input += buffer[0..<count]
            answerRequests(&client, now: now)
        }
    }

    /// Answers complete requests in order while the client's unread replies stay under the high-water mark.
    private func answerRequests(_ client: inout Client, now: Double) {
        var consumed = false
        while !client.closing && client.pending < Self.outputHighWater, let newline = client.input.firstIndex(of: 0x0A) {
            let request = Request.parse(client.input[..<newline])
            client.input.removeSubrange(...newline)
            client.lastRequest = now
            consumed = true
            answer(request, to: &client, now: now)
        }
        if client.closing { return }
        if client.input.isEmpty || client.hasCompleteRequest {
            client.lineStarted = nil  // nothing unfinished, or requests waiting on us rather than on the client
        } else {
            if consumed || client.lineStarted == nil { client.lineStarted = now }
            if client.input.count >= Protocol.maximumLine {
                client.input.removeAll()
                client.lineStarted = nil
                answer(.failure(ProtocolError(.tooLong, "request longer than \(Protocol.maximumLine - 1) bytes; closing")), to: &client, now: now)
                client.closing = true
            }
        }
    }

    private func transmit(_ client: inout Client, now: Double) {
        while client.pending > 0 {
            do throws(SystemError) {
                let count = try client.output[client.sent...].withUnsafeBytes { raw in Syscall.send(client.fd, raw) }.get()
                client.sent += count
                client.lastWrite = now
            } catch where error.wouldBlock {
                break
            } catch {
                client.output.removeAll()
                client.sent = 0
                client.closed = true
                return
            }
        }
        if client.sent == client.output.count {
            client.output.removeAll(keepingCapacity: client.output.count <= 1 << 16)
            client.sent = 0
        } else if client.sent >= 1 << 16 {
            client.output.removeFirst(client.sent)
            client.sent = 0
        }
    }

    private func answer(_ request: Result<Request, ProtocolError>, to client: inout Client, now: Double) {
        let lines: [ReplyLine]
        switch request {
        case .failure(let error): lines = [.error(error)]
        case .success(let request): lines = handle(request, now: now)
        }
        var text = ""
        for line in lines { text += line.line + "\n" }
        client.queue(text)
    }

    // MARK: requests

    func handle(_ request: Request, now: Double) -> [ReplyLine] {
        switch request {
        case .ping:
            return [.ok([])]
        case .status:
            let records = withEntries { state in state.entries.map { ReplyLine.record(status($0, now: now).record) } } ?? []
            return records + store.notices.map { .notice($0) } + [.ok([("instances", String(records.count))])]
        case .get(let chain, let parameters):
            let wanted = parameters.isEmpty ? Parameter.allCases : parameters
            return withEntries { state -> [ReplyLine] in
                var targets = Self.targets(state.entries, chain: chain)
                guard !targets.isEmpty else { return [.error(noInstance(chain))] }
                // Instances that have not run yet do not know their chain; report them only if nothing else runs.
                if targets.contains(where: { state.entries[$0].chain >= 0 }) { targets.removeAll { state.entries[$0].chain < 0 } }
                var seen: [Int] = []
                var lines: [ReplyLine] = []
                for index in targets.sorted(by: { state.entries[$0].chain < state.entries[$1].chain }) {
                    let entry = state.entries[index]
                    let chain = entry.chain
                    if seen.contains(chain) { continue }
                    seen.append(chain)
                    for parameter in wanted {
                        lines.append(.record(ValueRecord(chain: chain, parameter: parameter, value: entry.control.pointee.current(parameter.rawValue)).record))
                    }
                }
                return lines + [.ok([])]
            } ?? [.error(noInstance(chain))]
        case .set(let chain, let assignments):
            var changes: SettingsFile.Changes = [:]
            for assignment in assignments { changes[assignment.parameter] = .some(assignment.value) }
            return change(chain: chain, assignments: assignments, now: now, saving: changes)
        case .reset(let chain, let parameters, let values):
            let reset = (parameters.isEmpty ? Parameter.allCases : parameters).map { parameter in
                Assignment(parameter, values.last { $0.parameter == parameter }?.value ?? parameter.spec.defaultValue)
            }
            // Forgotten, not pinned: after a restart the config's value (if it sets one) applies.
            var changes: SettingsFile.Changes = [:]
            for assignment in reset { changes[assignment.parameter] = .some(nil) }
            return change(chain: chain, assignments: reset, now: now, saving: changes)
        case .sync:
            if let failure = store.sync(now: now) { return [.error(ProtocolError(.saveFailed, failure))] }
            return [.ok([])]
        }
    }

    private func change(chain: Int?, assignments: [Assignment], now: Double, saving changes: SettingsFile.Changes) -> [ReplyLine] {
        let published = assignments.map { (index: $0.parameter.rawValue, value: $0.value) }
        let result = withEntries { state -> (count: Int, chains: [Int]) in
            let targets = Self.targets(state.entries, chain: chain)
            var chains: [Int] = []
            for index in targets {
                state.entries[index].control.pointee.publish(published)
                let number = state.entries[index].chain
                if number >= 0 && !chains.contains(number) { chains.append(number) }
            }
            return (targets.count, chains)
        }
        guard let result, result.count > 0 else { return [.error(noInstance(chain))] }
        // Recorded for saving outside the lock (the store may touch the file system).
        for number in result.chains { store.update(chain: number, changes, now: now) }
        return [.ok([("instances", String(result.count))])]
    }

    static func targets(_ entries: [RegistryEntry], chain: Int?) -> [Int] {
        entries.indices.filter { chain == nil || entries[$0].chain == chain }
    }

    private func noInstance(_ chain: Int?) -> ProtocolError {
        guard let chain else { return ProtocolError(.noInstance, "no instance runs in process \(pid)") }
        return ProtocolError(.noInstance, "no instance of chain \(chain) (\(ChainName.name(chain))) runs in process \(pid)")
    }

    private func status(_ entry: RegistryEntry, now: Double) -> InstanceStatus {
        let running = entry.running(now: now)
        let meters = running ? entry.meters : MeterWindow()
        return InstanceStatus(
            id: entry.id, chain: entry.chain, label: entry.label, sampleRate: entry.sampleRate, channels: entry.channels,
            latency: entry.latency, uptime: now - entry.created,
            bypassed: entry.control.pointee.current(Parameter.bypass.rawValue) >= 0.5,
            inputPeak: meters.inputPeak, inputRMS: meters.inputRMS, outputPeak: meters.outputPeak, outputRMS: meters.outputRMS,
            compressorReduction: meters.compressorReduction, limiterReduction: meters.limiterReduction,
            noiseFloor: meters.noiseFloor, speechProbability: meters.speechProbability, running: running,
            faults: Int(truncatingIfNeeded: entry.control.pointee.faults.load(ordering: .relaxed)))
    }

    // MARK: housekeeping

    /// Restores saved settings to instances whose chain became known, samples meters, saves settings.
    /// The state files are read between two short holds of the registry lock, never under it.
    private func maintain(now: Double) {
        let sampleMeters = now >= nextMeter
        if sampleMeters { nextMeter = now + Self.meterInterval }
        let starting = withEntries { state -> [(id: Int, chain: Int)] in
            state.entries.filter { $0.chain >= 0 && $0.restoredChain != $0.chain }.map { ($0.id, $0.chain) }
        } ?? []
        var saved: [Int: Settings] = [:]
        for (_, chain) in starting where saved[chain] == nil { saved[chain] = store.settings(chain: chain) }
        _ = withEntries { state in
            for index in state.entries.indices {
                let entry = state.entries[index]
                if let settings = saved[entry.chain], entry.restoredChain != entry.chain,
                   starting.contains(where: { $0.id == entry.id && $0.chain == entry.chain }) {
                    if !settings.isEmpty {
                        entry.control.pointee.publish(settings.assignments.map { (index: $0.parameter.rawValue, value: $0.value) })
                    }
                    state.entries[index].restoredChain = entry.chain
                }
                if sampleMeters { Self.sampleMeters(&state.entries[index], now: now) }
            }
        }
        store.flush(now: now)
    }

    private static func sampleMeters(_ entry: inout RegistryEntry, now: Double) {
        let block = entry.control
        let frames = block.pointee.frames.load(ordering: .relaxed)
        if frames != entry.lastFrames {
            entry.lastFrames = frames
            entry.lastProgress = now
        }
        let request = block.pointee.meterRequest.load(ordering: .relaxed)
        guard block.pointee.meterAnswer.load(ordering: .acquiring) == request else { return }  // audio not running
        if request > 0 {
            func decibels(_ amplitude: Float) -> Float { amplitude > 0 ? 20 * log10f(amplitude) : -.infinity }
            func meanDecibels(_ squaresBits: UInt64, _ frames: UInt64) -> Float {
                let squares = Double(bitPattern: squaresBits)
                return frames > 0 && squares > 0 ? Float(10 * log10(squares / Double(frames))) : -.infinity
            }
            let frames = block.pointee.meterFrames.load(ordering: .relaxed)
            entry.meters.inputPeak = decibels(Float(bitPattern: block.pointee.inputPeak.load(ordering: .relaxed)))
            entry.meters.outputPeak = decibels(Float(bitPattern: block.pointee.outputPeak.load(ordering: .relaxed)))
            entry.meters.inputRMS = meanDecibels(block.pointee.inputSquares.load(ordering: .relaxed), frames)
            entry.meters.outputRMS = meanDecibels(block.pointee.outputSquares.load(ordering: .relaxed), frames)
            entry.meters.compressorReduction = Float(bitPattern: block.pointee.compressorReduction.load(ordering: .relaxed))
            entry.meters.limiterReduction = Float(bitPattern: block.pointee.limiterReduction.load(ordering: .relaxed))
            let floor = Float(bitPattern: block.pointee.noiseFloor.load(ordering: .relaxed))
            let speech = Float(bitPattern: block.pointee.speechProbability.load(ordering: .relaxed))
            entry.meters.noiseFloor = floor.isNaN ? nil : floor
            entry.meters.speechProbability = speech.isNaN ? nil : speech
        }
        block.pointee.meterRequest.store(request &+ 1, ordering: .releasing)
    }
}
