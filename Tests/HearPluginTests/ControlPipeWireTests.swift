// The control server inside a real PipeWire daemon: a private pipewire + wireplumber session (its
// own XDG_RUNTIME_DIR and D-Bus) loads libhear.so through filter-chain, pw-play feeds it a tone,
// and hearctl finds the daemon's socket in $XDG_RUNTIME_DIR/hear (no HEAR_RUNTIME_DIR), tunes it,
// meets pw-cli's control writes (last writer wins), and finds the tuning again after a restart.

import Foundation
import Glibc
import HearControl
import Testing
import TestSupport

@Suite(.serialized) struct ControlPipeWireTests {
    /// A private PipeWire session (TestSupport's PipeWireDaemons) with one hear filter in front of a
    /// null sink; every process it starts is stopped by pid when it goes.
    final class Session {
        let sandbox: Sandbox
        let processes: Processes
        let runtime: URL
        private var audio: [ChildProcess] = []

        init(_ sandbox: Sandbox) throws {
            self.sandbox = sandbox
            processes = try Processes(name: "control-pipewire")
            var environment = sandbox.environment
            // hearctl finds the daemon's sockets in $XDG_RUNTIME_DIR/hear, as on a desktop.
            for key in ["HEAR_RUNTIME_DIR", "PIPEWIRE_RUNTIME_DIR", "PIPEWIRE_REMOTE", "DBUS_SESSION_BUS_ADDRESS"] { environment[key] = nil }
            processes.environment = environment
            runtime = try processes.directory("xdg")
            let config = URL(fileURLWithPath: sandbox.config)
            try PipeWireDaemons.prepare(processes, runtime: runtime, config: config)
            try """
                context.objects = [
                  { factory = adapter
                    args = { factory.name = support.null-audio-sink  node.name = "hear-test-null"  media.class = Audio/Sink
                             audio.position = [ FL FR ]  priority.session = 2000 } }
                ]
                context.modules = [
                  { name = libpipewire-module-filter-chain
                    args = {
                      node.description = "hear control test"
                      filter.graph = {
                        nodes = [
                          { type = ladspa  name = hear  label = hear_mono  plugin = \(PluginPath.built)
                            control = { "chain" = 1  "gain" = 2.0  "ns.enable" = 0 } }
                        ]
                      }
                      audio.position = [ MONO ]
                      capture.props  = { node.name = "hear_test"  media.class = Audio/Sink }
                      playback.props = { node.name = "hear_test.playback"  node.passive = true  target.object = "hear-test-null" }
                    }
                  }
                ]
                """.write(to: config.appendingPathComponent("pipewire/pipewire.conf.d/hear.conf"), atomically: true, encoding: .utf8)
            try WAVFile.write([Signals.sine(frequency: 1000, rate: 48000, seconds: 60, amplitude: 0.05)], rate: 48000,
                              to: URL(fileURLWithPath: tone))
            try PipeWireDaemons.startBus(processes, runtime: runtime)
        }

        deinit { processes.stopAll() }

        var xdgRuntime: String { runtime.path }
        var tone: String { processes.root.appendingPathComponent("tone.wav").path }
        var environment: [String: String] { processes.environment }

        /// pipewire, then wireplumber, then pw-play into the filter.
        func startAudio() throws {
            let daemons = try PipeWireDaemons.startDaemons(processes, runtime: runtime)
            audio += [daemons.pipewire, daemons.wireplumber]
            audio.append(try processes.start("pw-play", ["--target", "hear_test", tone], log: "pw-play"))
        }

        /// The session's daemons and player end (the bus stays).
        func stopAudio() {
            for process in audio.reversed() { process.stop(signal: SIGTERM, timeout: 5) }
            audio.removeAll()
        }

        func hearctl(_ arguments: String...) throws -> CommandResult { try Command.run(Built.hearctl, arguments, environment: environment) }

        func json(_ arguments: String...) throws -> [String: Any] {
            let result = try Command.run(Built.hearctl, arguments + ["--json"], environment: environment)
            return (try? JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]) ?? [:]
        }

        func gain() throws -> Double? {
            let chains = try json("get", "gain", "--chain", "mic")["chains"] as? [[String: Any]]
            return (chains?.first?["values"] as? [String: Any])?["gain"] as? Double
        }

        /// The running instance's status once it has run and metered a signal (up to 20 s).
        func waitForRunningInstance() throws -> [String: Any] {
            let deadline = monotonicNow() + 20
            while monotonicNow() < deadline {
                if let instance = (try json("status")["instances"] as? [[String: Any]])?.first,
                   instance["running"] as? Bool == true,
                   ((instance["meters"] as? [String: Any])?["output"] as? [String: Any])?["peak"] is Double { return instance }
                usleep(200_000)
            }
            throw HostError.load("no running hear instance in the PipeWire session after 20 s")
        }

        func outputPeak() throws -> Double {
            usleep(400_000)
            let instance = try #require((try json("status")["instances"] as? [[String: Any]])?.first)
            return try #require(((instance["meters"] as? [String: Any])?["output"] as? [String: Any])?["peak"] as? Double)
        }

        func nodeID() throws -> Int {
            let dump = try Command.run("/usr/bin/pw-dump", [], environment: environment)
            let objects = try #require(try JSONSerialization.jsonObject(with: Data(dump.stdout.utf8)) as? [[String: Any]])
            let node = objects.first {
                (($0["info"] as? [String: Any])?["props"] as? [String: Any])?["node.name"] as? String == "hear_test"
            }
            return try #require(node?["id"] as? Int)
        }
    }

    @Test(.enabled(if: PipeWireDaemons.installed, "pipewire, wireplumber, dbus-daemon or pw-* tools are missing (`make deps` installs them)"))
    func hearctlTunesTheFilterInsideAPipeWireDaemon() throws {
        try exercise()
    }

    func exercise() throws {
        try Built.require()
        let sandbox = try Sandbox()
        let session = try Session(sandbox)
        try session.startAudio()
        let instance = try session.waitForRunningInstance()
        #expect(instance["chain"] as? Int == 1 && instance["name"] as? String == "mic" && instance["rate"] as? Int == 48000)
        let socket = ((try? FileManager.default.contentsOfDirectory(atPath: session.xdgRuntime + "/hear")) ?? []).filter { $0.hasSuffix(".sock") }
        #expect(socket.count == 1, "sockets in $XDG_RUNTIME_DIR/hear: \(socket)")

        // The config's control value, then hearctl's: the meters move by the 4 dB between them.
        #expect(try session.gain() == 2)
        let before = try session.outputPeak()
        #expect(try session.hearctl("set", "gain", "6").status == 0)
        #expect(try session.gain() == 6)
        let after = try session.outputPeak()
        #expect(abs(after - before - 4) <= 0.3, "output peak \(before) -> \(after) dBFS")

        // pw-cli writes the control port: it is the later writer, so it wins; then hearctl again.
        let node = try session.nodeID()
        let param = try Command.run("/usr/bin/pw-cli", ["set-param", String(node), "Props", "{ params = [ \"hear:gain\" 3.0 ] }"],
                            environment: session.environment)
        #expect(param.status == 0, "\(param.stderr)")
        usleep(300_000)
        #expect(try session.gain() == 3)
        #expect(try session.hearctl("set", "gain", "5").status == 0)
        #expect(try session.gain() == 5)

        // A restart of the whole session: the saved tuning comes back over the config's 2 dB.
        session.stopAudio()
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: session.xdgRuntime + "/hear")) ?? []).isEmpty,
                "the daemon left its socket behind")
        try session.startAudio()
        _ = try session.waitForRunningInstance()
        let deadline = monotonicNow() + 2
        while try session.gain() != 5 && monotonicNow() < deadline { usleep(100_000) }
        #expect(try session.gain() == 5)
        let restored = try session.outputPeak()
        #expect(abs(restored - before - 3) <= 0.3, "after the restart the output peak is \(restored) dBFS (config gain: \(before))")
    }
}
