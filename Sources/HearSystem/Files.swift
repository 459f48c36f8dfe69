// Small files read and replaced safely in directories other processes (and other users' symlinks)
// may have touched: nothing here follows a symbolic link at the final component (unless a reader
// of the user's own files asks it to), blocks on a FIFO
// or device, reads more than it was told, overwrites a file it means to keep, or writes through a
// file it did not create itself.

import CHearSys
import Glibc

extension Syscall {
    /// The whole of a regular file, or nil if there is none. A symbolic link, FIFO, socket, device
    /// or directory at `path` is refused (EINVAL/ELOOP, with a detail) without waiting on it; so is
    /// a file longer than `limit` (EFBIG), by its size or, where the size says nothing (/proc's
    /// files stat as 0 bytes and can be endless), by what the read brings. `followingLinks`: a
    /// symbolic link is followed to what it names (the user's own files: a preset or a drop-in
    /// linked from a dotfiles folder); the rest holds for that file.
    public static func readRegularFile(_ path: String, limit: Int, followingLinks: Bool = false) throws(SystemError) -> [UInt8]? {
        let fd: Int32
        do throws(SystemError) {
            // O_NONBLOCK: opening a FIFO returns at once instead of waiting for a writer.
            let flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY | (followingLinks ? 0 : O_NOFOLLOW)
            fd = try retrying("open \(path)") { open(path, flags) }
        } catch where error.code == ENOENT {
            return nil
        } catch where error.code == ELOOP {
            throw SystemError(call: "open \(path)", code: ELOOP, detail: "is a symbolic link; not following it")
        }
        defer { close(fd) }
        let info = try status(descriptor: fd, path)
        guard info.st_mode & S_IFMT == S_IFREG else {
            throw SystemError(call: "open \(path)", code: EINVAL, detail: "is not a regular file (\(Self.kind(info.st_mode)))")
        }
        guard info.st_size <= limit else {
            throw SystemError(call: "read \(path)", code: EFBIG, detail: "is \(info.st_size) bytes, more than the \(limit) allowed")
        }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = try chunk.withUnsafeMutableBytes { raw in read(fd, into: raw) }.get()
            if count == 0 { return bytes }
            bytes += chunk[0..<count]
            if bytes.count > limit {
                throw SystemError(call: "read \(path)", code: EFBIG, detail: "grew past the \(limit) bytes allowed while being read")
            }
        }
    }

    /// Replaces `path` atomically: a temporary file of a fresh name beside it, created exclusively
    /// (O_EXCL|O_NOFOLLOW, mode 0600, so nothing planted there is written through), written, fsynced,
    /// renamed over `path`, then the directory fsynced so the rename itself is on disk. `mode`: the
    /// new file's permissions (0600 for state; 0644 for what other programs read, drop-ins, presets).
    public static func writeFileAtomically(_ path: String, directory: String, bytes: [UInt8], mode: mode_t = 0o600) throws(SystemError) {
        var temporary = ""
        var fd: Int32 = -1
        for _ in 0..<8 {
            temporary = temporaryPrefix(path) + "\(getpid())-\(UInt32.random(in: .min ... .max))"
            do throws(SystemError) {
                fd = try retrying("create \(temporary)") {
                    open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, mode)
                }
                break
            } catch where error.code == EEXIST {
                continue
            }
        }
        guard fd >= 0 else { throw SystemError(call: "create \(path).tmp-*", code: EEXIST) }
        do throws(SystemError) {
            // A file that may be incomplete (close can report a deferred write error) is not renamed into place.
            try writeSyncAndClose(&fd, bytes, name: temporary)
            try rename(temporary, path)
        } catch {
            close(fd)
            try? unlink(temporary)
            throw error
        }
        if let directoryFD = try? retrying("open \(directory)", { open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }) {
            _ = fsync(directoryFD)
            close(directoryFD)
        }
    }

    /// Output to a path a person named (`hear-host --out`): a new or regular file is replaced
    /// atomically (`writeFileAtomically`, through a symbolic link to where it points); anything else
    /// there, a device or a FIFO (/dev/null, a pipe to a reader), is written in place and never
    /// replaced: a rename over /dev/null as root leaves a regular file that breaks every program on
    /// the machine that opens it.
    public static func writeOutput(_ path: String, bytes: [UInt8], mode: mode_t = 0o644) throws(SystemError) {
        var info = stat()
        if fstatat(AT_FDCWD, path, &info, 0) == 0 && info.st_mode & S_IFMT != S_IFREG {
            guard info.st_mode & S_IFMT != S_IFDIR else { throw SystemError(call: "write \(path)", code: EISDIR) }
            let fd = try retrying("open \(path)") { open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY) }
            defer { close(fd) }
            try writeAll(fd, bytes)
            return
        }
        var target = path
        if let resolved = realpath(path, nil) {
            target = String(cString: resolved)
            free(resolved)
        }
        let slash = target.lastIndex(of: "/")
        let directory = slash.map { $0 == target.startIndex ? "/" : String(target[..<$0]) } ?? "."
        try writeFileAtomically(target, directory: directory, bytes: bytes, mode: mode)
    }

    /// `<path>.tmp-`: the temporary files of `writeFileAtomically` are this, the writer's pid, a
    /// dash and a random number.
    static func temporaryPrefix(_ path: String) -> String { path + ".tmp-" }

    /// Removes the temporary files `writeFileAtomically` left for `path` in `directory` when their
    /// writer died (killed between create and rename): those whose pid names no live process, and
    /// any older than `seconds` (a pid from another PID namespace means nothing here, and no save
    /// takes that long). Call it holding the lock every writer of `path` takes, so that no live
    /// writer of ours is mid-save. Returns the names removed; what cannot be listed or removed is
    /// left for the next time.
    public static func removeAbandonedTemporaries(of path: String, in directory: String, olderThan seconds: Double) -> [String] {
        let prefix = String(temporaryPrefix(path).split(separator: "/").last ?? "")
        guard !prefix.isEmpty, let names = try? list(directory) else { return [] }
        let now = Double(time(nil))
        var removed: [String] = []
        for name in names where name.hasPrefix(prefix) {
            let candidate = directory + "/" + name
            // lstat: a symbolic link is removed as a link, never followed; a directory is left alone.
            guard let info = try? status(candidate), info.st_mode & S_IFMT == S_IFREG || info.st_mode & S_IFMT == S_IFLNK else { continue }
            let pid = Int32(name.dropFirst(prefix.count).prefix { $0 >= "0" && $0 <= "9" })
            let dead = pid.map { !processExists($0) } ?? false
            let old = now - Double(info.st_mtim.tv_sec) > seconds
            guard dead || old, (try? unlink(candidate)) != nil else { continue }
            removed.append(name)
        }
        return removed.sorted()
    }

    /// Whether a process with this pid exists here (one of another user's counts: kill says EPERM).
    public static func processExists(_ pid: Int32) -> Bool {
        guard pid > 0 else { return false }
        return kill(pid, 0) == 0 || errno == EPERM
    }

    /// Keeps the file at `path` under the first name of `base`, `base.1`, `base.2`, ... that is not
    /// taken, and returns that name; an existing file is never overwritten. A hard link keeps the
    /// very file (nothing copied); on a file system without hard links, `bytes` (the file as read)
    /// are written to a new file instead. `path` itself stays where it is.
    public static func keepCopy(of path: String, as base: String, bytes: [UInt8]?, maximumCopies: Int) throws(SystemError) -> String {
        for number in 0..<maximumCopies {
            let candidate = number == 0 ? base : base + ".\(number)"
            do throws(SystemError) {
                _ = try retrying("link \(path) to \(candidate)") { link(path, candidate) }
                return candidate
            } catch where error.code == EEXIST {
                continue
            } catch {
                guard let bytes else { throw error }
                do throws(SystemError) {
                    try createFile(candidate, bytes: bytes)
                    return candidate
                } catch where error.code == EEXIST {
                    continue
                }
            }
        }
        throw SystemError(call: "keep a copy of \(path)", code: EEXIST,
                          detail: "\(base) and \(maximumCopies - 1) numbered copies exist already; remove some")
    }

    /// Writes all of `bytes` to `fd` (a short write goes on where it stopped).
    private static func writeAll(_ fd: Int32, _ bytes: [UInt8]) throws(SystemError) {
        var written = 0
        while written < bytes.count {
            written += try bytes[written...].withUnsafeBytes { raw in write(fd, raw) }.get()
        }
    }

    /// Writes all of `bytes` to `fd`, fsyncs and closes it; `fd` is -1 once closed. close can report
    /// a deferred write error (NFS), which is thrown like any other.
    private static func writeSyncAndClose(_ fd: inout Int32, _ bytes: [UInt8], name: String) throws(SystemError) {
        try writeAll(fd, bytes)
        _ = try retrying("fsync \(name)") { fsync(fd) }
        let closed = Glibc.close(fd)
        fd = -1
        if closed != 0 && errno != EINTR { throw SystemError.last("close \(name)") }
    }

    /// Creates `path`, which must not exist (O_EXCL|O_NOFOLLOW, mode 0600), with `bytes`, fsynced.
    public static func createFile(_ path: String, bytes: [UInt8]) throws(SystemError) {
        var fd = try retrying("create \(path)") { open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0o600) }
        do throws(SystemError) {
            try writeSyncAndClose(&fd, bytes, name: path)
        } catch {
            close(fd)
            try? unlink(path)
            throw error
        }
    }

    /// `tryLock`, tried again every 10 ms for up to `seconds`; nil if another process still holds it.
    public static func lock(_ path: String, waiting seconds: Double) throws(SystemError) -> Int32? {
        let giveUp = now() + seconds
        while true {
            if let fd = try tryLock(path) { return fd }
            if now() >= giveUp { return nil }
            usleep(10_000)
        }
    }

    /// An exclusive advisory lock (flock) on `path`, created 0600 if missing; nil while another
    /// process holds it (never waits). Release with `unlock`.
    public static func tryLock(_ path: String) throws(SystemError) -> Int32? {
        let fd = try retrying("open \(path)") { open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, 0o600) }
        let info: stat
        do { info = try status(descriptor: fd, path) } catch { close(fd); throw error }
        guard info.st_mode & S_IFMT == S_IFREG else {
            close(fd)
            throw SystemError(call: "open \(path)", code: EINVAL, detail: "is not a regular file (\(kind(info.st_mode)))")
        }
        do throws(SystemError) {
            _ = try retrying("flock \(path)") { flock(fd, LOCK_EX | LOCK_NB) }
            return fd
        } catch where error.wouldBlock {
            close(fd)
            return nil
        } catch {
            close(fd)
            throw error
        }
    }

    public static func unlock(_ fd: Int32) {
        _ = flock(fd, LOCK_UN)
        close(fd)
    }

    /// "FIFO", "socket", ... for messages.
    public static func kind(_ mode: mode_t) -> String {
        switch mode & S_IFMT {
        case S_IFREG: return "regular file"
        case S_IFDIR: return "directory"
        case S_IFLNK: return "symbolic link"
        case S_IFIFO: return "FIFO"
        case S_IFSOCK: return "socket"
        case S_IFCHR: return "character device"
        case S_IFBLK: return "block device"
        default: return "unknown file type"
        }
    }
}
