// The daemons of a private PipeWire session, one way for every test that needs one (IntegrationTests'
// PipeWireSession with the repository's drop-ins, HearPluginTests' ControlPipeWireTests with a
// drop-in of its own): a session bus (wireplumber does not start without one), pipewire, then
// wireplumber without its Bluetooth monitor, which needs systemd-logind (scripts/wireplumber-session.lua).
// Each starts through `Processes`, so each is stopped by pid, also when the test fails.

import Foundation

public enum PipeWireDaemons {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The tools a session needs, on PATH.
    public static let tools = ["dbus-daemon", "pipewire", "wireplumber", "pw-cli", "pw-dump", "pw-link", "pw-play"]
    public static var installed: Bool { tools.allSatisfy { (try? Command.which($0)) != nil } }

    /// Points `processes`' environment at a private runtime directory (XDG_RUNTIME_DIR, where
    /// pipewire puts its socket and hear its control sockets) and config (XDG_CONFIG_HOME); writes
    /// WirePlumber's session script there, and `sessionConfig` as pipewire.conf (nil: the system's).
    public static func prepare(_ processes: Processes, runtime: URL, config: URL, sessionConfig: String? = nil) throws {
        processes.environment["XDG_RUNTIME_DIR"] = runtime.path
        processes.environment["XDG_CONFIG_HOME"] = config.path
        let fm = FileManager.default
        try fm.createDirectory(at: config.appendingPathComponent("pipewire/pipewire.conf.d"), withIntermediateDirectories: true)
        if let sessionConfig {
            try sessionConfig.write(to: config.appendingPathComponent("pipewire/pipewire.conf"), atomically: true, encoding: .utf8)
        }
        let wireplumber = config.appendingPathComponent("wireplumber/bluetooth.lua.d")
        try fm.createDirectory(at: wireplumber, withIntermediateDirectories: true)
        try String(contentsOf: repository.appendingPathComponent("scripts/wireplumber-session.lua"), encoding: .utf8)
            .write(to: wireplumber.appendingPathComponent("80-hear-session.lua"), atomically: true, encoding: .utf8)
    }

    /// The session bus, its address in DBUS_SESSION_BUS_ADDRESS once it listens. (Not --fork: the
    /// test owns the pid.)
    @discardableResult
    public static func startBus(_ processes: Processes, runtime: URL) throws -> ChildProcess {
        let bus = runtime.appendingPathComponent("bus")
        let daemon = try processes.start("dbus-daemon", ["--session", "--nofork", "--address=unix:path=\(bus.path)"], log: "dbus")
        processes.environment["DBUS_SESSION_BUS_ADDRESS"] = "unix:path=\(bus.path)"
        try waitFor("the session bus") {
            guard daemon.isRunning else { throw TestFailure("dbus-daemon exited: \(processes.log("dbus"))") }
            return FileManager.default.fileExists(atPath: bus.path)
        }
        return daemon
    }

    /// pipewire, once its socket is there, then wireplumber (the caller waits for what it needs
    /// wireplumber to have done: links, a default device).
    public static func startDaemons(_ processes: Processes, runtime: URL) throws -> (pipewire: ChildProcess, wireplumber: ChildProcess) {
        let socket = runtime.appendingPathComponent("pipewire-0").path
        let pipewire = try processes.start("pipewire", [], log: "pipewire")
        try waitFor("the PipeWire socket") {
            guard pipewire.isRunning else { throw TestFailure("pipewire exited: \(processes.log("pipewire"))") }
            return FileManager.default.fileExists(atPath: socket)
        }
        let wireplumber = try processes.start("wireplumber", [], log: "wireplumber")
        return (pipewire, wireplumber)
    }
}
