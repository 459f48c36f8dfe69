// The control server's clients (ControlServer.swift), served from one poll() loop on non-blocking
// sockets, each bounded:
//   - a request line must be complete within `requestTimeout` of its first byte (slow senders are
//     answered `error timeout` and closed);
//   - requests are answered in order; while a client has `outputHighWater` bytes of replies
//     unread the server stops reading its requests (backpressure), so a pipeline of any length
//     is answered in full, and a client whose replies do not drain for `writeTimeout` is dropped;
//   - end of input (SHUT_WR) stops reading but the replies already owed still go out;
//   - a peer that has closed both ways (POLLHUP, or a failed write) is gone, not forgotten: what it
//     sent before closing is still read and applied to the last request, in turns like anyone's
//     (a closed pipeline of 400 set+sync pairs held other clients up for seconds and lost its tail
//     when it was answered all at once); its replies are dropped, since nobody reads them, and its
//     `sync`s cost nothing (the debounced save writes its changes); no event is left pending, so
//     the loop never spins;
//   - each poll round answers at most `requestsPerTurn` requests of a client and at most one
//     `sync` (a write and an fsync, milliseconds each): a client that pipelines thousands of
//     set+sync pairs waits its turn like everyone else, and a ping from another client is
//     answered within one round;
//   - a request line of `Protocol.maximumLine` bytes or more is answered `error too-long` and the
//     connection closed, however the line arrived (in one read or many);
//   - a client silent for `idleTimeout` is told `error timeout` and closed; with every slot taken,
//     a newcomer evicts the client idle the longest (at least `evictAfter`), else it is told
//     `error busy`;
//   - a peer that closed with our greeting unread (the kernel then reports an error on the
//     socket, ECONNRESET) still has the requests it sent read and applied before it is dropped.
//     (Linux keeps a closed Unix socket's unread data readable; the read that reports the reset
//     comes after it.)

import Glibc
import HearControl
import HearSystem

extension ControlServer {
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
        /// Requests answered in this poll round, and whether one of them was a `sync`.
        var answeredThisTurn = 0
        var syncedThisTurn = false
        /// The peer closed both ways: its requests are still read and applied in turns, its replies dropped.
        var gone = false
        /// A `sync` waiting for the saver: the batch it waits on, and the last batch complete when it
        /// came. Its later requests wait behind it (replies go out in order).
        var awaitingSave: (generation: UInt64, since: UInt64)?

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
        var idle: Bool { pending == 0 && !hasCompleteRequest && awaitingSave == nil }

        mutating func queue(_ text: String) {
            if gone { return }
            if pending == 0 { lastWrite = Syscall.now() }
            output += Array(text.utf8)
        }

        /// Nobody reads the replies any more; what it sent is still served.
        mutating func leave() {
            gone = true
            output.removeAll()
            sent = 0
            closing = false
        }
    }

    func acceptClients(now: Double) {
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
            // The greeting goes out with the next round's writes, after what the client sent is read:
            // a client that wrote a request and closed before we accepted it would make this send
            // fail (EPIPE) and lose the request.
            var client = Client(fd: fd, now: now)
            client.queue(Greeting(pid: pid).line + "\n")
            clients.append(client)
        }
    }

    /// Makes room by closing the client idle the longest, if one has been idle `evictAfter`.
    func evictIdleClient(now: Double) -> Bool {
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
    func service(_ client: inout Client, revents: Int16, now: Double) {
        client.answeredThisTurn = 0
        client.syncedThisTurn = false
        if revents & Int16(POLLNVAL) != 0 { client.closed = true; return }
        if revents & Int16(POLLHUP | POLLERR) != 0 && !client.gone { client.leave() }
        if revents & Int16(POLLIN | POLLHUP | POLLERR) != 0 && client.wantsInput { receive(&client, now: now) }
        if client.gone {
            // Served in turns like anyone (a `set` followed at once by close() still applies), and
            // dropped once everything it sent has been read and answered.
            answerRequests(&client, now: now)
            if client.closing || (client.readClosed && !client.hasCompleteRequest) { client.closed = true }
            return
        }
        answerRequests(&client, now: now)
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
        } else if client.readClosed && !client.hasCompleteRequest && client.awaitingSave == nil {
            client.closed = true
        } else if client.lineStarted == nil && !client.hasCompleteRequest && client.awaitingSave == nil
                    && now - client.lastRequest > Self.idleTimeout {
            client.queue(ReplyLine.error(ProtocolError(.timeout, "no request for \(Int(Self.idleTimeout)) s; closing")).line + "\n")
            client.closing = true
            transmit(&client, now: now)
            if client.pending == 0 { client.closed = true }
        }
    }

    func receive(_ client: inout Client, now: Double) {
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
                // A reset: what could be read has been; the requests already in are still answered.
                client.leave()
                client.readClosed = true
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

    /// Answers complete requests in order while the client's unread replies stay under the
    /// high-water mark and its turn lasts (`requestsPerTurn`, one `sync`).
    func answerRequests(_ client: inout Client, now: Double) {
        var consumed = false
        while !client.closing && client.awaitingSave == nil && client.pending < Self.outputHighWater,
              let newline = client.input.firstIndex(of: 0x0A) {
            if client.answeredThisTurn >= Self.requestsPerTurn { break }
            let request = Request.parse(client.input[..<newline])
            let isSync = if case .success(.sync) = request { true } else { false }
            // A gone peer's sync costs nothing (it is not saved for anyone): no turn ends at it.
            if isSync && client.syncedThisTurn && !client.gone { break }
            client.input.removeSubrange(...newline)
            client.lastRequest = now
            client.answeredThisTurn += 1
            if isSync { client.syncedThisTurn = true }
            consumed = true
            answer(request, to: &client, now: now)
            if newline >= Protocol.maximumLine {
                // Parse answered too-long: the connection ends however the line arrived.
                client.input.removeAll()
                client.closing = true
            }
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

    /// Answers the syncs whose batch the saver has finished, and serves what waited behind them.
    func resumeSyncs(now: Double) {
        for index in clients.indices {
            guard let waiting = clients[index].awaitingSave, let result = store.syncResult(waiting.generation, since: waiting.since)
            else { continue }
            clients[index].awaitingSave = nil
            switch result {
            case .failed(let message): clients[index].queue(ReplyLine.error(ProtocolError(.saveFailed, message)).line + "\n")
            default: clients[index].queue(ReplyLine.ok([]).line + "\n")
            }
            answerRequests(&clients[index], now: now)
            if clients[index].pending > 0 { transmit(&clients[index], now: now) }
        }
    }

    func transmit(_ client: inout Client, now: Double) {
        while client.pending > 0 {
            do throws(SystemError) {
                let count = try client.output[client.sent...].withUnsafeBytes { raw in Syscall.send(client.fd, raw) }.get()
                client.sent += count
                client.lastWrite = now
            } catch where error.wouldBlock {
                break
            } catch {
                // The peer is gone (EPIPE): its requests are still served, its replies dropped.
                client.leave()
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

    func answer(_ request: Result<Request, ProtocolError>, to client: inout Client, now: Double) {
        let lines: [ReplyLine]
        switch request {
        case .failure(let error): lines = [.error(error)]
        // Nobody waits for a gone peer's `sync`: the debounced save writes its changes.
        case .success(.sync) where client.gone: return
        case .success(.sync):
            switch store.sync(now: now) {
            case .saved: lines = [.ok([])]
            case .failed(let message): lines = [.error(ProtocolError(.saveFailed, message))]
            case .waiting(let generation):
                client.awaitingSave = (generation, store.completed)
                return
            }
        case .success(let request): lines = handle(request, now: now)
        }
        var text = ""
        for line in lines { text += line.line + "\n" }
        client.queue(text)
    }
}
