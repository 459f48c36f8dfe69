// The shared socket, file and thread layer (Sources/HearSystem), tested once for both of its
// users (the plugin's control server and hearctl): typed errors, deadlines, line caps, safe file
// reads and writes, stale-socket probes and the ownership rules.

import Foundation
import Glibc
import HearSystem
import Testing

/// A fresh 0700 directory, removed at the end.
final class Scratch {
    let path: String
    init() throws {
        var template = Array("/tmp/hear-system-test-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw SystemError.last("mkdtemp") }
        path = String(cString: made)
    }
    deinit { try? FileManager.default.removeItem(atPath: path) }
    func file(_ name: String) -> String { path + "/" + name }
}

/// A listening socket at a path, for LineConnection.
final class Server {
    let listener: Listener
    private var open = true
    init(_ path: String) throws { listener = try Syscall.listen(at: path, backlog: 4) }
    /// Once: a second close would close whatever descriptor got the number since (another test's,
    /// running beside this one).
    func close() {
        if open { listener.close() }
        open = false
    }
    deinit { close() }
    func accept() -> Int32? {
        for _ in 0..<200 {
            if let fd = try? Syscall.accept(listener.fd) { return fd }
            usleep(5_000)
        }
        return nil
    }
}

@Suite struct SystemTests {
    @Test func errorsAreTypedAndNameTheCall() throws {
        let scratch = try Scratch()
        let missing = scratch.file("none.sock")
        do {
            _ = try Syscall.connect(missing, deadline: Deadline(seconds: 1))
            Issue.record("connected to nothing")
        } catch {
            #expect(error.code == ENOENT && error.notFound)
            #expect(error.call == "connect \(missing)")
            #expect(error.description.hasSuffix("No such file or directory"), "\(error)")
        }
        #expect(throws: SystemError.self) { try Syscall.status(missing) }
        try Syscall.unlink(missing)  // already gone is not an error
    }

    @Test func readLineHasADeadlineAndACap() throws {
        let scratch = try Scratch()
        let path = scratch.file("s.sock")
        let server = try Server(path)
        let connection = try LineConnection(path: path, deadline: Deadline(seconds: 1))
        let peer = try #require(server.accept())
        defer { close(peer) }
        #expect(try connection.peerCredentials().uid == getuid())
        // A line split over two writes.
        _ = Array("hel".utf8).withUnsafeBytes { send(peer, $0.baseAddress, $0.count, 0) }
        _ = Array("lo\nrest".utf8).withUnsafeBytes { send(peer, $0.baseAddress, $0.count, 0) }
        #expect(try connection.readLine(deadline: Deadline(seconds: 1), limit: 100) == Array("hello".utf8))
        // "rest" never ends: the deadline holds even though bytes keep coming.
        let started = Syscall.now()
        let trickle = Thread { for _ in 0..<10 { _ = send(peer, "x", 1, Int32(MSG_NOSIGNAL)); usleep(100_000) } }
        trickle.start()
        #expect(throws: LineError.timedOut(seconds: 0.5)) { try connection.readLine(deadline: Deadline(seconds: 0.5), limit: 100) }
        #expect(Syscall.now() - started < 0.8)
        usleep(600_000)
        // An endless line is cut off at the limit.
        let flood = [UInt8](repeating: 0x41, count: 5000)
        _ = flood.withUnsafeBytes { send(peer, $0.baseAddress, $0.count, 0) }
        #expect(throws: LineError.tooLong(limit: 1000)) { try connection.readLine(deadline: Deadline(seconds: 1), limit: 1000) }
    }

    @Test func readLineSeesTheEnd() throws {
        let scratch = try Scratch()
        let path = scratch.file("e.sock")
        let server = try Server(path)
        let connection = try LineConnection(path: path, deadline: Deadline(seconds: 1))
        let peer = try #require(server.accept())
        close(peer)
        #expect(throws: LineError.closed) { try connection.readLine(deadline: Deadline(seconds: 1), limit: 100) }
    }

    @Test func socketsAreJudgedByConnecting() throws {
        let scratch = try Scratch()
        let live = scratch.file("live.sock"), stale = scratch.file("stale.sock"), plain = scratch.file("plain.sock")
        let server = try Server(live)
        #expect(Syscall.probeSocket(live, uid: getuid()) == .live)
        let listener = try Syscall.listen(at: stale, backlog: 1)
        Syscall.close(listener.fd)  // closed without unlinking: what a kill -9 leaves
        #expect(Syscall.probeSocket(stale, uid: getuid()) == .stale)
        FileManager.default.createFile(atPath: plain, contents: nil)
        #expect(Syscall.probeSocket(plain, uid: getuid()) == .notASocket(kind: "regular file"))
        #expect(Syscall.probeSocket(scratch.file("none"), uid: getuid()) == .absent)
        #expect(Syscall.probeSocket(live, uid: getuid() &+ 1) == .foreign(owner: getuid()))
        // A listener removes its path only while the path is still its socket.
        let moved = scratch.file("moved.sock")
        try Syscall.rename(live, moved)
        server.close()
        #expect(FileManager.default.fileExists(atPath: moved))
    }

    @Test func regularFilesOnlyAndNeverWaiting() throws {
        let scratch = try Scratch()
        let fifo = scratch.file("fifo")
        #expect(mkfifo(fifo, 0o600) == 0)
        let started = Syscall.now()
        #expect(throws: SystemError.self) { try Syscall.readRegularFile(fifo, limit: 100) }
        #expect(Syscall.now() - started < 0.5)
        do { _ = try Syscall.readRegularFile(fifo, limit: 100) } catch { #expect(error.description.contains("not a regular file (FIFO)")) }
        let target = scratch.file("target")
        try "gain = 1\n".write(toFile: target, atomically: false, encoding: .utf8)
        #expect(try Syscall.readRegularFile(target, limit: 100) == Array("gain = 1\n".utf8))
        #expect(try Syscall.readRegularFile(scratch.file("absent"), limit: 100) == nil)
        let link = scratch.file("link")
        symlink(target, link)
        #expect(throws: SystemError(call: "open \(link)", code: ELOOP, detail: "is a symbolic link; not following it")) {
            try Syscall.readRegularFile(link, limit: 100)
        }
        #expect(throws: SystemError.self) { try Syscall.readRegularFile(target, limit: 4) }
    }

    /// Output to a path a person named: a device or a FIFO there is written in place and stays
    /// what it was (hear-host --out /dev/null as root renamed a regular file over /dev/null); a
    /// regular file is replaced whole; a link to one is followed and its target replaced.
    @Test func outputNeverReplacesADeviceOrAFIFO() throws {
        let scratch = try Scratch()
        // A null device of the test's own (root can make one; elsewhere the FIFO still tests the rule).
        let null = scratch.file("null")
        let made = mknod(null, S_IFCHR | 0o666, dev_t((1 << 8) | 3)) == 0  // makedev(1, 3), a macro Swift does not see
        if made {
            try Syscall.writeOutput(null, bytes: Array(repeating: 7, count: 100_000))
            var info = stat()
            #expect(lstat(null, &info) == 0 && info.st_mode & S_IFMT == S_IFCHR, "the device was replaced")
        } else {
            print("no device node could be made here (not root): the FIFO below tests the rule")
        }
        let fifo = scratch.file("fifo")
        #expect(mkfifo(fifo, 0o600) == 0)
        // A reader that reads to the end (one that stops early would leave the writer a SIGPIPE),
        // with its own descriptor, finished before anything else opens one.
        let finished = DispatchSemaphore(value: 0)
        final class Received: @unchecked Sendable { var bytes = 0 }
        let received = Received()
        let reader = Thread {
            let fd = open(fifo, O_RDONLY | O_CLOEXEC)
            var buffer = [UInt8](repeating: 0, count: 4096)
            while fd >= 0, case let count = read(fd, &buffer, buffer.count), count > 0 { received.bytes += count }
            if fd >= 0 { close(fd) }
            finished.signal()
        }
        reader.start()
        try Syscall.writeOutput(fifo, bytes: Array("through the pipe\n".utf8))
        finished.wait()
        #expect(received.bytes == 17)
        var info = stat()
        #expect(lstat(fifo, &info) == 0 && info.st_mode & S_IFMT == S_IFIFO, "the FIFO was replaced")
        let file = scratch.file("out.bin")
        try Syscall.writeOutput(file, bytes: Array("first, longer\n".utf8))
        try Syscall.writeOutput(file, bytes: Array("second\n".utf8))
        #expect(try String(contentsOfFile: file, encoding: .utf8) == "second\n")
        let link = scratch.file("link")
        symlink(file, link)
        try Syscall.writeOutput(link, bytes: Array("third\n".utf8))
        #expect(try String(contentsOfFile: file, encoding: .utf8) == "third\n" && lstat(link, &info) == 0 && info.st_mode & S_IFMT == S_IFLNK)
        #expect(throws: SystemError.self) { try Syscall.writeOutput(scratch.path, bytes: [1]) }
    }

    @Test func atomicWritesNeverWriteThroughALink() throws {
        let scratch = try Scratch()
        let victim = scratch.file("victim")
        try "precious".write(toFile: victim, atomically: false, encoding: .utf8)
        let path = scratch.file("state.conf")
        // A link at the final path is replaced, not followed.
        symlink(victim, path)
        try Syscall.writeFileAtomically(path, directory: scratch.path, bytes: Array("new\n".utf8))
        #expect(try String(contentsOfFile: victim, encoding: .utf8) == "precious")
        var info = stat()
        #expect(lstat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFREG && info.st_mode & 0o777 == 0o600)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "new\n")
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.path).sorted() == ["state.conf", "victim"])
    }

    @Test func locksExcludeOtherHolders() throws {
        let scratch = try Scratch()
        let first = try #require(try Syscall.tryLock(scratch.file("a.lock")))
        // flock locks belong to the open file description: a second open conflicts even in one process.
        #expect(try Syscall.tryLock(scratch.file("a.lock")) == nil)
        Syscall.unlock(first)
        let again = try #require(try Syscall.tryLock(scratch.file("a.lock")))
        Syscall.unlock(again)
        #expect(mkfifo(scratch.file("fifo.lock"), 0o600) == 0)
        #expect(throws: SystemError.self) { try Syscall.tryLock(scratch.file("fifo.lock")) }
    }

    @Test func ownershipRules() throws {
        let scratch = try Scratch()
        let created = scratch.file("run/hear")
        let saved = umask(0o077)
        defer { umask(saved) }
        try Trust.prepareServerDirectory(created, uid: getuid())
        #expect(try Syscall.status(created).st_mode & 0o7777 == 0o700)
        let open = scratch.file("open")
        mkdir(open, 0o755)
        chmod(open, 0o755)
        #expect(throws: SystemError.self) { try Trust.prepareServerDirectory(open, uid: getuid()) }
        #expect(try Syscall.status(open).st_mode & 0o7777 == 0o755, "the server changed a directory it refused")
        do { try Trust.prepareServerDirectory(open, uid: getuid()) } catch { #expect(error.description.contains("must be 0700")) }
        try Trust.checkClientDirectory(open, uid: getuid())  // readable by others is fine for a client, writable is not
        chmod(open, 0o777)
        #expect(throws: SystemError.self) { try Trust.checkClientDirectory(open, uid: getuid()) }
        #expect(throws: SystemError.self) { try Trust.checkClientDirectory(created, uid: getuid() &+ 1) }
        #expect(Trust.acceptablePeer(PeerCredentials(uid: 0, pid: 1), uid: 1000))
        #expect(!Trust.acceptablePeer(PeerCredentials(uid: 1001, pid: 1), uid: 1000))
        #expect(Trust.octal(0o755) == "0755" && Trust.octal(0o700) == "0700")
    }

    @Test func directoryListingsAndEntryNames() throws {
        let scratch = try Scratch()
        for index in 0..<50 { FileManager.default.createFile(atPath: scratch.file("hear-\(index).sock"), contents: nil) }
        let names = try Syscall.list(scratch.path)
        #expect(Set(names) == Set((0..<50).map { "hear-\($0).sock" }))
        let empty = try Scratch()
        #expect(try Syscall.list(empty.path).isEmpty)
    }
}
