// Child processes for the tests, started with posix_spawn rather than Foundation's Process: the
// child gets only stdin (/dev/null), stdout and stderr (Process hands it a descriptor it watches
// for the child's end, which a daemon such as the tmux server would keep open for ever), an empty
// signal mask and default handlers (the test runner's threads block signals, and a child, or the
// programs it starts, would inherit that).

import Foundation
import Glibc

public enum Spawn {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// Starts `path` with `arguments` and exactly `environment`; stdout and stderr go to the given
    /// descriptors (they may be the same one). `closeOthers` also closes every other descriptor
    /// of this process in the child (glibc 2.34's closefrom action), for children that outlive
    /// the test and must not hold its files open. Returns the child's pid.
    public static func start(_ path: String, _ arguments: [String], environment: [String: String],
                             stdout: Int32, stderr: Int32, closeOthers: Bool = false) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, stdout, 1)
        posix_spawn_file_actions_adddup2(&actions, stderr, 2)
        if closeOthers {
            // Not in Swift's Glibc module (_GNU_SOURCE only).
            typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
            guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np") else {
                throw Failure(description: "this glibc has no posix_spawn_file_actions_addclosefrom_np (2.34 or later needed)")
            }
            _ = unsafeBitCast(symbol, to: CloseFrom.self)(&actions, 3)
        }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var empty = sigset_t(), defaults = sigset_t()
        sigemptyset(&empty)
        sigemptyset(&defaults)
        for signal in [SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGPIPE, SIGCHLD, SIGWINCH, SIGUSR1, SIGUSR2] {
            sigaddset(&defaults, signal)
        }
        posix_spawnattr_setsigmask(&attributes, &empty)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for pointer in argv + envp { free(pointer) } }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, path, &actions, &attributes, argv, envp)
        guard result == 0 else { throw Failure(description: "posix_spawn \(path): \(String(cString: strerror(result)))") }
        return pid
    }
}
