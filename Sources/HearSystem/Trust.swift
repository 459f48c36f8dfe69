// Who may be trusted with the control socket: the directory it lives in, the socket file, and the
// process on the other end. The server and hearctl apply the same rules from here.

import Glibc

public enum Trust {
    /// The runtime directory for the server: created 0700 if missing; an existing one must be a
    /// real directory (not a symbolic link) owned by `uid` with no access for group or others. It is
    /// never chmod'ed: a directory someone made readable was made so on purpose, or by someone else.
    public static func prepareServerDirectory(_ path: String, uid: uid_t) throws(SystemError) {
        if try Syscall.makeDirectories(path, mode: 0o700) {
            // Ours, just made: the umask may have taken bits away, never added any; make it exactly 0700.
            _ = try Syscall.retrying("chmod \(path)") { chmod(path, 0o700) }
        }
        let info = try Syscall.status(path)
        guard info.st_mode & S_IFMT == S_IFDIR else {
            throw SystemError(call: path, code: ENOTDIR, detail: "is a \(Syscall.kind(info.st_mode)), not a directory; refusing to use it for the control socket")
        }
        guard info.st_uid == uid else {
            throw SystemError(call: path, code: EPERM, detail: "belongs to uid \(info.st_uid), not to uid \(uid); refusing to use it for the control socket")
        }
        guard info.st_mode & 0o077 == 0 else {
            throw SystemError(call: path, code: EPERM, detail: "has mode \(octal(info.st_mode & 0o7777)); it must be 0700 (`chmod 700 \(path)`), "
                                  + "since anyone who can enter it can reach the control socket; refusing to use it")
        }
    }

    /// The runtime directory for a client: a real directory owned by `uid` that neither group nor
    /// others can write to, so nobody else can have planted a socket in it.
    public static func checkClientDirectory(_ path: String, uid: uid_t) throws(SystemError) {
        let info = try Syscall.status(path)
        guard info.st_mode & S_IFMT == S_IFDIR else {
            throw SystemError(call: path, code: ENOTDIR, detail: "is a \(Syscall.kind(info.st_mode)), not a directory of yours; refusing to use it")
        }
        guard info.st_uid == uid else {
            throw SystemError(call: path, code: EPERM, detail: "is not a directory of yours (owner uid \(info.st_uid)); refusing to use it")
        }
        guard info.st_mode & 0o022 == 0 else {
            throw SystemError(call: path, code: EPERM, detail: "is writable by \(info.st_mode & 0o002 != 0 ? "others" : "its group") "
                                  + "(mode \(octal(info.st_mode & 0o7777))), so anyone could have put a socket there; refusing to use it "
                                  + "(`chmod 700 \(path)` if it is yours)")
        }
    }

    /// A peer a client may talk to: the same user, or root.
    public static func acceptablePeer(_ peer: PeerCredentials, uid: uid_t) -> Bool { peer.uid == uid || peer.uid == 0 }

    public static func octal(_ mode: mode_t) -> String {
        var digits = ""
        var value = UInt32(mode)
        repeat {
            digits = String(value & 7) + digits
            value >>= 3
        } while value > 0
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }
}
