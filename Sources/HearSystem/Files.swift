// Small files read and replaced safely in directories other processes (and other users' symlinks)
// may have touched: nothing here follows a symbolic link at the final component, blocks on a FIFO
// or device, reads more than it was told, or writes through a file it did not create itself.

import CHearSys
import Glibc

extension Syscall {
    /// The whole of a regular file, or nil if there is none. A symbolic link, FIFO, socket, device
    /// or directory at `path` is refused (EINVAL/ELOOP, with a detail) without waiting on it; so is
    /// a file longer than `limit` (EFBIG).
    public static func readRegularFile(_ path: String, limit: Int) throws(SystemError) -> [UInt8]? {
        let fd: Int32
        do throws(SystemError) {
            // O_NONBLOCK: opening a FIFO returns at once instead of waiting for a writer.
            fd = try retrying("open \(path)") { open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY) }
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
    /// renamed over `path`, then the directory fsynced so the rename itself is on disk.
    public static func writeFileAtomically(_ path: String, directory: String, bytes: [UInt8]) throws(SystemError) {
        var temporary = ""
        var fd: Int32 = -1
        for _ in 0..<8 {
            temporary = path + ".tmp-\(getpid())-\(UInt32.random(in: .min ... .max))"
            do throws(SystemError) {
                fd = try retrying("create \(temporary)") {
                    open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0o600)
                }
                break
            } catch where error.code == EEXIST {
                continue
            }
        }
        guard fd >= 0 else { throw SystemError(call: "create \(path).tmp-*", code: EEXIST) }
        do throws(SystemError) {
            var written = 0
            while written < bytes.count {
                written += try bytes[written...].withUnsafeBytes { raw in write(fd, raw) }.get()
            }
            _ = try retrying("fsync \(temporary)") { fsync(fd) }
            // close can report a deferred write error (NFS): a file that may be incomplete is not renamed into place.
            let closed = Glibc.close(fd)
            fd = -1
            if closed != 0 && errno != EINTR { throw SystemError.last("close \(temporary)") }
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
