// The control thread: created with explicit attributes (SCHED_OTHER, priority 0, niceness >= 0,
// every signal blocked) whatever thread asks for it, joined with a deadline, and the library that
// runs it pinned in memory so its code outlives any dlclose.

import CHearSys
import Glibc

public enum Threads {
    final class Body {
        let run: () -> Void
        init(_ run: @escaping () -> Void) { self.run = run }
    }

    /// Starts `body` on a new thread named `name` (at most 15 bytes) that does not inherit the
    /// caller's real-time scheduling or signal handling.
    public static func start(name: String, _ body: @escaping () -> Void) throws(SystemError) -> pthread_t {
        var thread = pthread_t()
        let context = Unmanaged.passRetained(Body(body)).toOpaque()
        let result = hear_thread_create(&thread, { context in
            let body = Unmanaged<Body>.fromOpaque(context!).takeRetainedValue()
            body.run()
            return nil
        }, context, String(name.utf8.prefix(15))!)
        guard result == 0 else {
            Unmanaged<Body>.fromOpaque(context).release()
            throw SystemError(call: "pthread_create \(name)", code: result)
        }
        return thread
    }

    /// Waits up to `seconds` for the thread to end; false (and the thread detached) if it has not.
    public static func join(_ thread: pthread_t, within seconds: Double) -> Bool {
        if hear_join(thread, seconds) == 0 { return true }
        pthread_detach(thread)
        return false
    }

    /// Keeps the shared object holding this code loaded for the rest of the process: later
    /// dlclose calls leave it mapped, so a thread it started can finish safely and repeated
    /// dlopen/dlclose cycles reuse it instead of loading (and leaking) a fresh copy each time.
    @discardableResult
    public static func pinLibrary() -> Bool { hear_pin_self() == 1 }
}
