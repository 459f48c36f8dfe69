// The control server: one per process, on its own thread, serving hear/1 (HearControl/Protocol.swift)
// on `<dir>/hear-<pid>.sock`. It never runs on, waits for or allocates on the audio thread: it only
// stores to and loads from each instance's ControlBlock. Sockets are non-blocking and served from
// one poll() loop; requests are bounded in size, clients in number and in idle time, and a client
// that does not read its replies is dropped, so no client can stall the others.

import CHearSys
import Glibc
import HearControl
import HearDSP
import Synchronization

final class ControlServer: @unchecked Sendable {
    static let maximumClients = 16
    /// A client that sends nothing for this long is disconnected (hearctl meter polls far faster).
    static let idleTimeout = 10.0
    /// Replies a client has not read; past this it is too slow and is dropped.
    static let maximumPendingOutput = 1 << 18
    static let meterInterval = 0.1

    struct Client {
        let fd: Int32
        var input: [UInt8] = []
        var output: [UInt8] = []
        var lastActivity: Double
        /// Close once the pending output is written (after a fatal request error).
        var closing = false
        var closed = false
    }

    let registry: Registry
    let directory: String
    let path: String
    let listener: Int32
    let wake: (read: Int32, write: Int32)
    let store: StateStore
    let uid = getuid()
    let pid = getpid()
    private var clients: [Client] = []
    private var nextMeter = 0.0
    private let stopping = Atomic<Bool>(false)
    private var thread = pthread_t()

    private init(registry: Registry, directory: String, path: String, listener: Int32, wake: (read: Int32, write: Int32), store: StateStore) {
        self.registry = registry
        self.directory = directory
        self.path = path
        self.listener = listener
        self.wake = wake
        self.store = store
    }

    static func environment(_ name: String) -> String? { getenv(name).map { String(cString: $0) } }

    static func start(registry: Registry) throws(SystemError) -> ControlServer {
        let directory = SocketPath.directory(environment: environment, uid: getuid())
        try prepare(directory: directory)
        let path = directory + "/" + SocketPath.socketName(pid: getpid())
        try Syscall.unlink(path)  // ours from an earlier load in this process
        let listener = try Syscall.listen(at: path, backlog: 32)
        let wake: (read: Int32, write: Int32)
        do { wake = try Syscall.pipe() } catch { Syscall.close(listener); try? Syscall.unlink(path); throw error }
        let store = StateStore(directory: SettingsPath.stateDirectory(environment: environment))
        let server = ControlServer(registry: registry, directory: directory, path: path, listener: listener, wake: wake, store: store)
        let context = Unmanaged.passRetained(server).toOpaque()
        let result = pthread_create(&server.thread, nil, { context in
            let server = Unmanaged<ControlServer>.fromOpaque(context!).takeRetainedValue()
            server.serve()
            return nil
        }, context)
        guard result == 0 else {
            Unmanaged<ControlServer>.fromOpaque(context).release()
            server.closeAll()
            throw SystemError(call: "pthread_create", code: result)
        }
        _ = hear_set_thread_name(server.thread, "hear-control")
        return server
    }

    /// The socket directory: created 0700, ours, and holding no sockets of dead processes.
    static func prepare(directory: String) throws(SystemError) {
        try Syscall.makeDirectories(directory, mode: 0o700)
        let info = try Syscall.status(directory)
        guard info.st_mode & S_IFMT == S_IFDIR else { throw SystemError(call: "\(directory) is not a directory", code: ENOTDIR) }
        guard info.st_uid == getuid() else { throw SystemError(call: "\(directory) belongs to uid \(info.st_uid)", code: EPERM) }
        if info.st_mode & 0o077 != 0 { _ = try Syscall.retrying("chmod \(directory)") { chmod(directory, 0o700) } }
        for name in (try? Syscall.list(directory)) ?? [] {
            // Sockets, and sockets still being set up (`.new`), of processes that are gone.
            let socketName = name.hasSuffix(".sock.new") ? String(name.dropLast(4)) : name
            guard let owner = SocketPath.pid(socketName: socketName), owner != getpid(), !Syscall.processExists(owner) else { continue }
            try? Syscall.unlink(directory + "/" + name)
        }
    }

    /// Wakes the thread, waits for it to flush settings and finish, and removes the socket.
    func stop() {
        stopping.store(true, ordering: .releasing)
        var byte: UInt8 = 1
        _ = write(wake.write, &byte, 1)
        pthread_join(thread, nil)
        closeAll()
    }

    private func closeAll() {
        // Unlinked before it stops listening, so no client sees a refusing socket and takes it for stale.
        try? Syscall.unlink(path)
        Syscall.close(listener)
        Syscall.close(wake.read)
        Syscall.close(wake.write)
    }

    // MARK: the server thread

    private func serve() {
        while !stopping.load(ordering: .acquiring) {
            var fds = [pollfd(fd: wake.read, events: Int16(POLLIN), revents: 0), pollfd(fd: listener, events: Int16(POLLIN), revents: 0)]
            for client in clients {
                var events = Int16(POLLIN)
                if !client.output.isEmpty { events |= Int16(POLLOUT) }
                fds.append(pollfd(fd: client.fd, events: events, revents: 0))
            }
            do {
                _ = try Syscall.poll(&fds, timeoutMilliseconds: timeout(now: Syscall.now()))
            } catch {
                store.report("control server: \(error)")
                usleep(100_000)
                continue
            }
            if fds[0].revents != 0 { drainWake() }
            let now = Syscall.now()
            if fds[1].revents & Int16(POLLIN) != 0 { acceptClients(now: now) }
            for index in clients.indices {
                let revents = fds.first { $0.fd == clients[index].fd }?.revents ?? 0
                if revents & Int16(POLLIN | POLLHUP | POLLERR) != 0 { receive(&clients[index], now: now) }
                if !clients[index].output.isEmpty { transmit(&clients[index]) }
                if clients[index].closing && clients[index].output.isEmpty { clients[index].closed = true }
                if now - clients[index].lastActivity > Self.idleTimeout { clients[index].closed = true }
                if clients[index].closed { Syscall.close(clients[index].fd) }
            }
            clients.removeAll { $0.closed }
            maintain(now: now)
        }
        store.flush(now: Syscall.now(), force: true)
        for client in clients { Syscall.close(client.fd) }
        clients.removeAll()
    }

    private func timeout(now: Double) -> Int32 {
        var wait = Self.meterInterval
        // An instance that has not run yet does not know its chain: look often enough to restore its
        // saved settings within a few blocks of its start, without spinning while a host keeps it idle.
        let starting = registry.state.withLock { state in state.entries.contains { $0.chain < 0 || $0.restoredChain != $0.chain } }
        if starting { wait = min(wait, 0.02) }
        if let deadline = store.deadline { wait = min(wait, max(0, deadline - now)) }
        wait = min(wait, max(0, nextMeter - now))
        return Int32(wait * 1000) + 1
    }

    private func drainWake() {
        var buffer = [UInt8](repeating: 0, count: 64)
        while buffer.withUnsafeMutableBytes({ read(wake.read, $0.baseAddress, $0.count) }) > 0 {}
    }

    private func acceptClients(now: Double) {
        while let fd = try? Syscall.accept(listener) {
            var client = Client(fd: fd, lastActivity: now)
            let peer = try? Syscall.peerUID(fd)
            if peer != uid {
                client.output = Array((ReplyLine.error(ProtocolError(.denied, "peer uid \(peer.map { String($0) } ?? "unknown") is not the server's uid \(uid)")).line + "\n").utf8)
                client.closing = true
            } else if clients.count >= Self.maximumClients {
                client.output = Array((ReplyLine.error(ProtocolError(.busy, "the server already serves \(Self.maximumClients) clients; try again")).line + "\n").utf8)
                client.closing = true
            } else {
                client.output = Array((Greeting(pid: pid).line + "\n").utf8)
            }
            if client.closing {
                // Best effort, never waiting: refused peers get one line and the door.
                transmit(&client)
                Syscall.close(fd)
                continue
            }
            clients.append(client)
        }
    }

    private func receive(_ client: inout Client, now: Double) {
        var buffer = [UInt8](repeating: 0, count: 4096)
        // At most this many reads per client per round, so a fast talker cannot starve the others.
        var budget = 16
        while !client.closing && budget > 0 {
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
            if count == 0 { client.closing = true; if client.output.isEmpty { client.closed = true }; return }
            client.lastActivity = now
            client.input += buffer[0..<count]
            while let newline = client.input.firstIndex(of: 0x0A) {
                let line = client.input[..<newline]
                let request = Request.parse(line)
                client.input.removeSubrange(...newline)
                answer(request, to: &client, now: now)
                if client.output.count > Self.maximumPendingOutput { client.closed = true; return }
            }
            if client.input.count >= Protocol.maximumLine {
                answer(.failure(ProtocolError(.tooLong, "request longer than \(Protocol.maximumLine - 1) bytes; closing")), to: &client, now: now)
                client.input.removeAll()
                client.closing = true
            }
        }
    }

    private func transmit(_ client: inout Client) {
        while !client.output.isEmpty {
            do throws(SystemError) {
                let sent = try client.output.withUnsafeBytes { raw in Syscall.send(client.fd, raw) }.get()
                client.output.removeFirst(sent)
            } catch where error.wouldBlock {
                return
            } catch {
                client.output.removeAll()
                client.closed = true
                return
            }
        }
    }

    private func answer(_ request: Result<Request, ProtocolError>, to client: inout Client, now: Double) {
        let lines: [ReplyLine]
        switch request {
        case .failure(let error): lines = [.error(error)]
        case .success(let request): lines = handle(request, now: now)
        }
        for line in lines { client.output += Array((line.line + "\n").utf8) }
    }

    // MARK: requests

    func handle(_ request: Request, now: Double) -> [ReplyLine] {
        switch request {
        case .ping:
            return [.ok([])]
        case .status:
            var lines = registry.state.withLock { state in state.entries.map { ReplyLine.record(status($0, now: now).record) } }
            lines += store.notices.map { .notice($0) }
            return lines + [.ok([("instances", String(lines.count - store.notices.count))])]
        case .get(let chain, let parameters):
            let wanted = parameters.isEmpty ? Parameter.allCases : parameters
            return registry.state.withLock { state -> [ReplyLine] in
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
            }
        case .set(let chain, let assignments):
            return change(chain: chain, assignments: assignments, now: now) { settings in
                for assignment in assignments { settings[assignment.parameter] = assignment.value }
            }
        case .reset(let chain, let parameters):
            let reset = (parameters.isEmpty ? Parameter.allCases : parameters).map { Assignment($0, $0.spec.defaultValue) }
            return change(chain: chain, assignments: reset, now: now) { settings in
                // Forgotten, not pinned: after a restart the config's value (if it sets one) applies.
                for assignment in reset { settings[assignment.parameter] = nil }
            }
        }
    }

    private func change(chain: Int?, assignments: [Assignment], now: Double, save: (inout Settings) -> Void) -> [ReplyLine] {
        let published = assignments.map { (index: $0.parameter.rawValue, value: $0.value) }
        return registry.state.withLock { state -> [ReplyLine] in
            let targets = Self.targets(state.entries, chain: chain)
            guard !targets.isEmpty else { return [.error(noInstance(chain))] }
            var chains: [Int] = []
            for index in targets {
                state.entries[index].control.pointee.publish(published)
                let number = state.entries[index].chain
                if number >= 0 && !chains.contains(number) { chains.append(number) }
            }
            for number in chains { store.update(chain: number, save, now: now) }
            return [.ok([("instances", String(targets.count))])]
        }
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
            noiseFloor: meters.noiseFloor, speechProbability: meters.speechProbability, running: running)
    }

    // MARK: housekeeping

    /// Restores saved settings to instances whose chain became known, samples meters, saves settings.
    private func maintain(now: Double) {
        let sampleMeters = now >= nextMeter
        if sampleMeters { nextMeter = now + Self.meterInterval }
        registry.state.withLock { state in
            for index in state.entries.indices {
                let chain = state.entries[index].chain
                if chain >= 0 && state.entries[index].restoredChain != chain {
                    let saved = store.settings(chain: chain)
                    if !saved.isEmpty {
                        state.entries[index].control.pointee.publish(saved.assignments.map { (index: $0.parameter.rawValue, value: $0.value) })
                    }
                    state.entries[index].restoredChain = chain
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
