// End to end: hear-host runs libhear.so in real time, the real hearctl binary talks to it.

import Foundation
import Glibc
import HearControl
import Testing
import TestSupport

@Suite(.serialized) struct ControlEndToEndTests {
    /// `hearctl set gain 6` moves the running output by 6 dB within 50 ms without a click; `get`
    /// reads 6; a restarted host comes back at 6.
    @Test func setGainIsHeardWithin50msAndSurvivesARestart() throws {
        let sandbox = try Sandbox()
        let rate = 48000.0
        let first = try HostProcess(sandbox, chain: 1)
        try sandbox.waitForInstance(chain: 1)
        usleep(300_000)
        let before = monotonicNow()
        let set = try sandbox.hearctl("set", "gain", "6")
        let replied = monotonicNow()
        #expect(set.status == 0, "\(set.stderr)")
        let get = try sandbox.hearctl("get", "gain")
        #expect(get.status == 0 && get.stdout == "gain = 6 dB\n", "\(get.stdout)\(get.stderr)")
        #expect(try sandbox.value("gain", chain: 1) == 6)
        usleep(300_000)
        let recording = try first.stop()
        #expect(recording.summary["nonfinite"] == 0)

        let baseline = Signals.rms(recording.samples(from: before - 0.2, to: before - 0.01))
        #expect(baseline > 0.01, "the host's output is silent")
        // Level over two periods of the 1 kHz sine (96 samples), every 16 samples from the request on.
        let start = recording.firstSample(atOrAfter: before)
        var settled = recording.samples.count
        var index = recording.samples.count - 96
        while index >= start {
            let change = Signals.dB(Signals.rms(recording.samples[index..<(index + 96)]) / baseline)
            if abs(change - 6) > 0.2 { break }
            settled = index + 96  // the first window end from which the level stays at +6 +/- 0.2 dB
            index -= 16
        }
        #expect(settled < recording.samples.count, "the level never settled at +6 dB")
        // Counted in audio time, from the first block the host ran after hearctl returned, so that a
        // host thread the scheduler delays (two shared cores) does not count as the filter's lag.
        let latency = Double(settled - recording.firstSample(atOrAfter: replied)) / rate
        let wallClock = recording.time(ofSample: min(settled, recording.samples.count - 1))
        print("set gain 6: hearctl took \(Int((replied - before) * 1000)) ms; the level is within 0.2 dB of +6 dB \(Int(latency * 1000)) ms of audio after its reply (wall clock: \(Int((wallClock - replied) * 1000)) ms after the reply, \(Int((wallClock - before) * 1000)) ms after hearctl started)")
        #expect(latency <= 0.050, "level settled \(latency * 1000) ms after hearctl returned")
        let end = recording.samples.suffix(Int(rate / 10))
        let final = Signals.dB(Signals.rms(end) / baseline)
        #expect(abs(final - 6) <= 0.2, "final change \(final) dB")
        // No click: no step between samples larger than the settled sine's own largest step.
        let ownStep = Signals.largestStep(end)
        let transition = recording.samples[start..<min(recording.samples.count, settled + 960)]
        #expect(Signals.largestStep(transition) <= ownStep * 1.01, "step \(Signals.largestStep(transition)) vs the signal's \(ownStep)")
        #expect(recording.summary["allocations"] == 0)

        // Saved (debounced) and restored by a new host process.
        let saved = try String(contentsOfFile: sandbox.stateFile(chain: 1), encoding: .utf8)
        #expect(saved.contains("\ngain = 6\n"), "\(saved)")
        let second = try HostProcess(sandbox, chain: 1)
        try sandbox.waitForInstance(chain: 1)
        #expect(try sandbox.value("gain", chain: 1) == 6)
        usleep(400_000)
        let restarted = try second.stop()
        let restartedLevel = Signals.dB(Signals.rms(restarted.samples.suffix(Int(rate / 10))) / baseline)
        #expect(abs(restartedLevel - 6) <= 0.2, "after the restart the output is \(restartedLevel) dB from the first baseline")
    }

    /// Garbage over the socket: every malformed request gets an error reply, nothing changes, and
    /// the server keeps serving everyone else.
    @Test func malformedRequestsChangeNothingAndTheServerOutlivesThem() throws {
        let sandbox = try Sandbox()
        let host = try sandbox.startHost(chain: 1)
        let before = try sandbox.hearctl("get", "--json")
        let path = try sandbox.socket()

        let client = try RawClient.greeted(path: path)
        var random = SeededRandom(seed: 21)
        var replies: [String] = []
        for _ in 0..<500 {
            let bytes = (0..<Int.random(in: 0..<200, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }.filter { $0 != 0x0A }
            client.send(bytes + [0x0A])
            replies += client.reply()
        }
        #expect(replies.count == 500 && replies.allSatisfy { $0.hasPrefix("error ") }, "\(replies.filter { !$0.hasPrefix("error ") })")
        for line in ["set gain 6\u{0}", "\u{0}", "launch missiles", "set gain nan", "set gain NaN", "set gain inf", "set gain 1e39",
                     "set gain 99", "set gain 6 comp.ratio 99", "set nope 1", "get chain=x", "reset chain=-1", "set gain"] {
            client.send(line)
            let reply = client.reply()
            #expect(reply.count == 1 && reply[0].hasPrefix("error "), "\(line.debugDescription): \(reply)")
        }
        client.send("ping")
        #expect(client.reply() == ["ok"])

        // A 1 MB line: an error reply, then the server hangs up on that client only.
        let flood = try RawClient.greeted(path: path)
        flood.send([UInt8]("set gain ".utf8) + [UInt8](repeating: 0x37, count: 1 << 20) + [0x0A])
        #expect(flood.readLine()?.hasPrefix("error too-long") == true)
        #expect(flood.readLine() == nil)

        // A silent client and a half-sent line do not hold anyone up.
        let silent = try RawClient(path: path)
        let partial = try RawClient(path: path)
        partial.send(Array("set gain 1".utf8))
        let started = monotonicNow()
        client.send("ping")
        #expect(client.reply() == ["ok"])
        #expect(monotonicNow() - started < 1)

        // A client that never reads its replies is dropped, not waited for.
        let greedy = try RawClient(path: path, timeout: 2)
        let request = Array(String(repeating: "get\n", count: 1000).utf8)
        var flooded = 0
        while flooded < 200 && greedy.send(request) { flooded += 1 }
        client.send("ping")
        #expect(client.reply() == ["ok"])

        // More clients than the server serves: each extra one is served (in the place of a client
        // idle for a second or more) or told it is busy; none is met with silence.
        var crowd: [RawClient] = []
        var busy = 0
        for _ in 0..<20 {
            let extra = try RawClient(path: path)
            let first = extra.readLine() ?? "nothing"
            if first.hasPrefix("error busy") { busy += 1 }
            #expect(first.hasPrefix("hear/1") || first.hasPrefix("error busy"), "\(first)")
            crowd.append(extra)
        }
        #expect(busy >= 1, "\(busy) of 20 extra clients were refused as busy")
        crowd.removeAll()
        withExtendedLifetime((silent, partial, greedy)) {}

        let after = try sandbox.hearctl("get", "--json")
        #expect(after.status == 0 && after.stdout == before.stdout)
        #expect(!FileManager.default.fileExists(atPath: sandbox.stateFile(chain: 1)), "a rejected request was saved")
        #expect(try sandbox.hearctl("status").status == 0)
        let recording = try host.stop()
        #expect(recording.summary["nonfinite"] == 0)
        #expect(recording.summary["allocations"] == 0)
    }

    /// 1,000 sets from 4 concurrent clients while audio runs: finite output, no allocation on the
    /// audio thread, and the last value wins (in the instance, in `get`, in the state file, in the sound).
    @Test func concurrentSetsKeepTheAudioThreadCleanAndTheLastValueWins() throws {
        let sandbox = try Sandbox()
        let host = try sandbox.startHost(chain: 2)
        usleep(200_000)
        let baselineEnd = monotonicNow()
        let path = try sandbox.socket()

        final class Results: @unchecked Sendable {
            var last = [Float](repeating: .nan, count: 4)
            var failures = [String]()
            let lock = NSLock()
        }
        let results = Results()
        let started = monotonicNow()
        DispatchQueue.concurrentPerform(iterations: 4) { worker in
            do {
                let client = try RawClient.greeted(path: path)
                var generator = SeededRandom(seed: UInt64(worker + 1))
                for _ in 0..<250 {
                    let gain = Float(Int.random(in: -120...120, using: &generator)) / 10
                    let ratio = Float(Int.random(in: 10...160, using: &generator)) / 10
                    client.send("set chain=2 gain \(gain) comp.ratio \(ratio) comp.attack \(Int.random(in: 1...100, using: &generator))")
                    let reply = client.reply()
                    if reply != ["ok instances=1"] { results.lock.withLock { results.failures.append("\(reply)") } }
                    results.lock.withLock { results.last[worker] = gain }
                }
            } catch {
                results.lock.withLock { results.failures.append("\(error)") }
            }
        }
        let elapsed = monotonicNow() - started
        print("1,000 sets from 4 concurrent clients (each waiting for its reply) in \(Int(elapsed * 1000)) ms: \(Int(1000 / elapsed)) sets/s")
        #expect(results.failures.isEmpty, "\(results.failures.prefix(3))")
        let winner = try #require(try sandbox.value("gain", chain: 2))
        #expect(results.last.contains(Float(winner)), "get reads \(winner), the clients' last values were \(results.last)")
        usleep(600_000)  // the debounced save
        let saved = try String(contentsOfFile: sandbox.stateFile(chain: 2), encoding: .utf8)
        #expect(saved.contains("\ngain = \(ParameterValue.format(Float(winner)))\n"), "\(saved)")

        #expect(try sandbox.hearctl("set", "--chain", "speaker", "gain", "3.5", "comp.ratio", "2").status == 0)
        #expect(try sandbox.value("gain", chain: 2) == 3.5)
        usleep(300_000)
        let recording = try host.stop()
        #expect(recording.summary["nonfinite"] == 0)
        #expect(recording.summary["allocations"] == 0, "allocations on the audio thread: \(recording.summary)")
        let baseline = Signals.rms(recording.samples(from: baselineEnd - 0.15, to: baselineEnd))
        let final = Signals.dB(Signals.rms(recording.samples.suffix(4800)) / baseline)
        #expect(abs(final - 3.5) <= 0.2, "final level change \(final) dB")
        #expect(recording.samples.allSatisfy { $0.isFinite })
    }

    /// Peers of another uid are refused by SO_PEERCRED even when the file system would let them in.
    @Test(.enabled(if: getuid() == 0, "refusing another uid needs root to run a client as uid 65534 (setpriv)"))
    func aClientOfAnotherUserIsRefused() throws {
        let sandbox = try Sandbox()
        let host = try sandbox.startHost(chain: 1)
        let path = try sandbox.socket()
        // Open the doors the file system guards, so that only the server's own check remains.
        chmod(sandbox.base, 0o755)
        chmod(sandbox.runtime, 0o755)
        chmod(path, 0o666)
        // A bare client as uid 65534 reaches the socket; the server answers `denied` and hangs up.
        let tools = sandbox.base + "/hear-host"
        try copyExecutable(Built.testHost, to: tools)
        chmod(tools, 0o755)
        let raw = try Command.run("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", tools, "--connect", path,
                                               "--send", "set gain 12"], environment: sandbox.environment)
        #expect(raw.status == 0, "\(raw.stderr)")
        #expect(raw.stdout == "error denied peer uid 65534 is not the server's uid 0\n", "\(raw.stdout)")
        // hearctl as that user does not even trust a socket directory that is not its own.
        let binary = sandbox.base + "/hearctl"
        try copyExecutable(Built.hearctl, to: binary)
        chmod(binary, 0o755)
        var environment = sandbox.environment
        environment["HOME"] = "/nonexistent"
        let result = try Command.run("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", binary, "set", "gain", "12"],
                             environment: environment)
        #expect(result.status == 1 && result.stderr.contains("is not a directory of yours"), "\(result.status) \(result.stderr)")
        #expect(try sandbox.value("gain", chain: 1) == 0)
        #expect(try sandbox.hearctl("status").status == 0)
        _ = try host.stop()
    }

    /// Two processes host the plugin: hearctl finds both, addresses chains across them, and
    /// removes the socket a dead process left behind instead of trusting it.
    @Test func twoHostProcessesAndAStaleSocket() throws {
        let sandbox = try Sandbox()
        let mic = try HostProcess(sandbox, chain: 1)
        let speaker = try HostProcess(sandbox, chain: 2)
        try sandbox.waitForInstance(chain: 1)
        try sandbox.waitForInstance(chain: 2)
        #expect(sandbox.sockets.count == 2)
        // A socket nobody listens on, as a process killed with -9 leaves behind.
        let stale = sandbox.runtime + "/" + SocketPath.socketName(pid: 999_999)
        try Plant.staleSocket(at: stale)
        let status = try sandbox.hearctlJSON("status")
        #expect((status["instances"] as? [[String: Any]])?.count == 2)
        #expect(!FileManager.default.fileExists(atPath: stale))
        #expect(try sandbox.hearctl("set", "--chain", "mic", "gain", "=-3").status == 0)
        #expect(try sandbox.value("gain", chain: 1) == -3)
        #expect(try sandbox.value("gain", chain: 2) == 0)
        let missing = try sandbox.hearctl("set", "--chain", "7", "gain", "1")
        #expect(missing.status == 3 && missing.stderr.contains("chain 7 (chain7) neither runs nor is configured"), "\(missing.stderr)")
        _ = try mic.stop()
        _ = try speaker.stop()
        #expect(sandbox.sockets.isEmpty, "sockets left behind: \(sandbox.sockets)")
    }

    /// Instances that share a chain number (filter-chain's per-channel copies) move together, and
    /// `get` speaks for the chain once.
    @Test func instancesOfOneChainMoveTogether() throws {
        let sandbox = try Sandbox()
        let host = try HostProcess(sandbox, chain: 2, label: "hear_stereo", instances: 3)
        try sandbox.waitForInstance(chain: 2, count: 3)
        usleep(300_000)
        func outputLevels() throws -> [Double] {
            let instances = try #require(try sandbox.hearctlJSON("status", "--chain", "speaker")["instances"] as? [[String: Any]])
            return instances.compactMap { (($0["meters"] as? [String: Any])?["output"] as? [String: Any])?["rms"] as? Double }
        }
        let before = try outputLevels()
        #expect(before.count == 3)
        let set = try sandbox.hearctl("set", "--chain", "2", "gain", "=-6")
        #expect(set.status == 0, "\(set.stderr)")
        usleep(400_000)
        let after = try outputLevels()
        #expect(after.count == 3)
        for (old, new) in zip(before, after) { #expect(abs(new - old + 6) <= 0.3, "\(old) -> \(new) dBFS") }
        let get = try sandbox.hearctlJSON("get", "gain")
        #expect((get["chains"] as? [[String: Any]])?.count == 1)
        let recording = try host.stop()
        #expect(recording.summary["allocations"] == 0 && recording.summary["nonfinite"] == 0)
    }

    /// An instance the host stops running (a suspended node) shows as idle with silent meters, and
    /// still takes settings, which it applies when it runs again.
    @Test func aSuspendedInstanceShowsIdleAndStillTakesSettings() throws {
        let sandbox = try Sandbox()
        let host = try sandbox.startHost(chain: 1)
        usleep(300_000)
        func instance() throws -> [String: Any] {
            try #require((try sandbox.hearctlJSON("status"))["instances"] as? [[String: Any]]).first ?? [:]
        }
        #expect(try instance()["running"] as? Bool == true)
        kill(host.pid, SIGUSR1)
        usleep(800_000)
        let idle = try instance()
        #expect(idle["running"] as? Bool == false)
        #expect(((idle["meters"] as? [String: Any])?["output"] as? [String: Any])?["rms"] is NSNull)
        #expect(try sandbox.hearctl("set", "gain", "=-6").status == 0)
        #expect(try sandbox.value("gain", chain: 1) == -6)  // pending, reported as set
        kill(host.pid, SIGUSR1)
        usleep(400_000)
        #expect(try instance()["running"] as? Bool == true)
        #expect(try sandbox.value("gain", chain: 1) == -6)
        let recording = try host.stop()
        #expect(recording.summary["allocations"] == 0)
    }

    /// A state file with nothing usable in it is reported and moved aside; the instance starts at its defaults.
    @Test func aCorruptStateFileIsReportedAndMovedAside() throws {
        let sandbox = try Sandbox()
        try FileManager.default.createDirectory(atPath: sandbox.state + "/hear", withIntermediateDirectories: true)
        try Data([0x00, 0xFF, 0x0A, 0x67, 0x61, 0x69, 0x6E, 0x0A]).write(to: URL(fileURLWithPath: sandbox.stateFile(chain: 1)))
        let host = try sandbox.startHost(chain: 1)
        usleep(100_000)
        #expect(try sandbox.value("gain", chain: 1) == 0)
        let status = try sandbox.hearctl("status")
        #expect(status.status == 0)
        #expect(status.stdout.contains("had bad lines") && status.stdout.contains("line 1") && status.stdout.contains(".bad"), "\(status.stdout)")
        #expect(FileManager.default.fileExists(atPath: sandbox.stateFile(chain: 1) + ".bad"))
        _ = try host.stop()
    }
}
