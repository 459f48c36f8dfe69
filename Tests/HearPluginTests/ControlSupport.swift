// Support for the control tests: a sandbox of fresh directories (runtime, state, config), the
// real hearctl binary run as a subprocess, the hear-host process that runs libhear.so in real
// time, a raw protocol client, and level measurements on recordings. Processes start through
// TestSupport's `Command` and `ChildProcess`, so each one a test starts is stopped by pid, also when
// the test fails.

import Foundation
import Glibc
import HearControl
import TestSupport

enum Built {
    static var root: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }

    /// `HEARCTL`, else the release build in this package.
    static var hearctl: String {
        ProcessInfo.processInfo.environment["HEARCTL"].flatMap { $0.isEmpty ? nil : $0 }
            ?? root.appendingPathComponent(".build/release/hearctl").path
    }

    static var testHost: String { root.appendingPathComponent(".build/release/hear-host").path }

    static func require() throws {
        for path in [hearctl, testHost, PluginPath.built] where !FileManager.default.isExecutableFile(atPath: path) && !FileManager.default.fileExists(atPath: path) {
            throw HostError.load("\(path) is missing: run `swift build -c release` first")
        }
    }
}

func monotonicNow() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return Double(time.tv_sec) + Double(time.tv_nsec) * 1e-9
}

/// Fresh runtime, state and config directories, removed at the end.
final class Sandbox {
    let base: String
    /// More variables for the processes this sandbox starts (HEAR_TEST_SAVE_DELAY, ...).
    var extraEnvironment: [String: String] = [:]
    var runtime: String { base + "/run" }
    var state: String { base + "/state" }
    var config: String { base + "/config" }

    init() throws {
        var template = Array("/tmp/hear-control-test-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw HostError.load("mkdtemp failed") }
        base = String(cString: made)
    }

    deinit { try? FileManager.default.removeItem(atPath: base) }

    var environment: [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["HEAR_RUNTIME_DIR"] = runtime
        environment["XDG_STATE_HOME"] = state
        environment["XDG_CONFIG_HOME"] = config
        environment["HOME"] = base
        // No PipeWire of the machine's session: hearctl status sees none, whoever runs the tests.
        environment["XDG_RUNTIME_DIR"] = base
        environment["PIPEWIRE_REMOTE"] = nil
        environment.merge(extraEnvironment) { _, extra in extra }
        return environment
    }

    func stateFile(chain: Int) -> String { state + "/hear/" + SettingsPath.stateFileName(chain: chain) }

    var sockets: [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: runtime)) ?? []).filter { $0.hasSuffix(".sock") }.map { runtime + "/" + $0 }
    }

    /// The control socket of the one instance running (startHost waited for it).
    func socket() throws -> String {
        guard let first = sockets.first else { throw HostError.load("no control socket in \(runtime)") }
        return first
    }
}

extension Sandbox {
    func hearctl(_ arguments: String...) throws -> CommandResult {
        try Command.run(Built.hearctl, arguments, environment: environment)
    }

    func hearctlJSON(_ arguments: String...) throws -> [String: Any] {
        let result = try Command.run(Built.hearctl, arguments + ["--json"], environment: environment)
        guard result.status == 0, let object = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any] else {
            throw HostError.load("hearctl \(arguments.joined(separator: " ")) --json failed (\(result.status)): \(result.stderr)\(result.stdout)")
        }
        return object
    }

    /// A filter-chain drop-in for `chain` in $XDG_CONFIG_HOME/pipewire/pipewire.conf.d, as a desktop has
    /// one: hearctl reads it to know the chain while PipeWire has it suspended, and `reset` goes back to its values.
    @discardableResult
    func writeDropIn(chain: Int, label: String = "hear_mono", controls: [String: Float]) throws -> String {
        let directory = config + "/pipewire/pipewire.conf.d"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let lines = controls.sorted { $0.key < $1.key }.map { "                \"\($0.key)\" = \($0.value)" }.joined(separator: "\n")
        let path = directory + "/hear-chain\(chain).conf"
        try """
            # hear chain \(chain), as a test writes it
            context.modules = [
              { name = libpipewire-module-filter-chain
                args = {
                  node.description = "hear test chain \(chain)"
                  filter.graph = { nodes = [ { type = ladspa  name = hear  plugin = "\(PluginPath.built)"  label = \(label)
                    control = {
                        "chain" = \(chain)
            \(lines)
                    } } ] }
                }
              }
            ]
            """.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// The value of one parameter on one chain, as `hearctl get --json` reports it.
    func value(_ key: String, chain: Int) throws -> Double? {
        let object = try hearctlJSON("get", key, "--chain", String(chain))
        let chains = object["chains"] as? [[String: Any]] ?? []
        return (chains.first { $0["chain"] as? Int == chain }?["values"] as? [String: Any])?[key] as? Double
    }

    /// Waits until `hearctl status` lists an instance of `chain` that has run (up to 10 s).
    func waitForInstance(chain: Int, count: Int = 1) throws {
        let deadline = monotonicNow() + 10
        var last = ""
        while monotonicNow() < deadline {
            let result = try Command.run(Built.hearctl, ["status", "--json"], environment: environment)
            if result.status == 0, let object = try? JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any],
               let instances = object["instances"] as? [[String: Any]],
               instances.filter({ $0["chain"] as? Int == chain }).count >= count { return }
            last = "status \(result.status): \(result.stderr)\(result.stdout)"
            usleep(50_000)
        }
        let logs = ((try? FileManager.default.contentsOfDirectory(atPath: base)) ?? []).filter { $0.hasSuffix(".log") }
            .map { (try? String(contentsOfFile: base + "/" + $0, encoding: .utf8)) ?? "" }
        throw HostError.load("no instance of chain \(chain) appeared in 10 s; hearctl said: \(last); host logs: \(logs)")
    }

    /// hear-host running one mono instance of `chain` (HostProcess's defaults), once `hearctl
    /// status` lists it; if it never does, the host is killed as the error leaves.
    func startHost(chain: Int) throws -> HostProcess {
        let host = try HostProcess(self, chain: chain)
        try waitForInstance(chain: chain)
        return host
    }
}

/// hear-host running libhear.so in real time; killed by pid at the latest when this goes.
final class HostProcess {
    struct Recording {
        let samples: [Float]
        let blockTimes: [Double]
        let block: Int
        let rate: Double
        let summary: [String: Int]

        func time(ofSample index: Int) -> Double { blockTimes[index / block] + Double(index % block) / rate }
        func firstSample(atOrAfter time: Double) -> Int {
            guard let blockIndex = blockTimes.firstIndex(where: { $0 >= time }) else { return samples.count }
            return blockIndex * block
        }
        func samples(from start: Double, to end: Double) -> ArraySlice<Float> {
            samples[firstSample(atOrAfter: start)..<max(firstSample(atOrAfter: start), firstSample(atOrAfter: end))]
        }
    }

    let process: ChildProcess
    let recordingPath: String
    let block: Int
    let rate: Int

    init(_ sandbox: Sandbox, chain: Int, amplitude: Float = 0.02, block: Int = 256, rate: Int = 48000, label: String = "hear_mono",
         instances: Int = 1, controls: [String: Float] = [:], arguments extraArguments: [String] = []) throws {
        try Built.require()
        recordingPath = sandbox.base + "/recording-\(UUID().uuidString).bin"
        self.block = block
        self.rate = rate
        // Noise suppression off: a steady sine is exactly what a noise suppressor is built to remove.
        var allControls = ["ns.enable": Float(0)]
        for (key, value) in controls { allControls[key] = value }
        let arguments = ["--plugin", PluginPath.built, "--out", recordingPath, "--label", label, "--rate", String(rate),
                         "--block", String(block), "--chain", String(chain), "--amplitude", String(amplitude), "--seconds", "60",
                         "--instances", String(instances)]
            + allControls.sorted { $0.key < $1.key }.flatMap { ["--control", "\($0.key)=\($0.value)"] } + extraArguments
        process = try ChildProcess(Built.testHost, arguments, environment: sandbox.environment,
                                   stdout: recordingPath + ".out", stderr: recordingPath + ".log")
    }

    var pid: Int32 { process.pid }

    /// What the host (and the plugin in it) wrote to stderr so far.
    var log: String { (try? String(contentsOfFile: recordingPath + ".log", encoding: .utf8)) ?? "" }

    /// Stops the host cleanly (SIGKILL after 30 s) and reads what it recorded.
    func stop() throws -> Recording {
        process.stop(signal: SIGTERM, timeout: 30)
        let text = (try? String(contentsOfFile: recordingPath + ".out", encoding: .utf8)) ?? ""
        guard process.status == 0 else { throw HostError.load("hear-host exited with \(process.status ?? -1): \(text)") }
        var summary: [String: Int] = [:]
        for line in text.split(separator: "\n") where line.hasPrefix("done ") {
            for field in line.split(separator: " ").dropFirst() {
                let parts = field.split(separator: "=")
                if parts.count == 2, let value = Int(parts[1]) { summary[String(parts[0])] = value }
            }
        }
        let data = try Data(contentsOf: URL(fileURLWithPath: recordingPath))
        let blocks = summary["blocks"] ?? 0
        guard data.count == blocks * block * 4 + blocks * 8 else { throw HostError.load("recording has \(data.count) bytes for \(blocks) blocks") }
        let samples = data.prefix(blocks * block * 4).withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        let times = data.suffix(blocks * 8).withUnsafeBytes { raw in (0..<blocks).map { raw.loadUnaligned(fromByteOffset: $0 * 8, as: Double.self) } }
        return Recording(samples: samples, blockTimes: times, block: block, rate: Double(rate), summary: summary)
    }
}

/// A hear/1 client on a raw socket, for what hearctl would never send.
final class RawClient {
    let fd: Int32
    private var buffer: [UInt8] = []

    init(path: String, timeout: Int = 5) throws {
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var time = timeval(tv_sec: timeout, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in for (i, byte) in path.utf8.enumerated() { raw[i] = byte } }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        if result != 0 { close(fd); throw HostError.load("connect \(path): \(String(cString: strerror(errno)))") }
    }

    deinit { close(fd) }

    /// Connected, its greeting read: what nearly every test wants before its first request.
    /// Throws when the server hangs up or answers something else (`error busy`, a timeout).
    static func greeted(path: String, timeout: Int = 5) throws -> RawClient {
        let client = try RawClient(path: path, timeout: timeout)
        let greeting = client.readLine() ?? "nothing"
        guard greeting.hasPrefix("hear/1 pid=") else { throw HostError.load("\(path) greeted with \(greeting)") }
        return client
    }

    /// Sends everything it can; false if the server closed the connection first.
    @discardableResult func send(_ bytes: [UInt8]) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if count < 0 { if errno == EINTR { continue }; return false }
            sent += count
        }
        return true
    }

    func send(_ line: String) { send(Array((line + "\n").utf8)) }

    /// The next line, or nil at end of stream or timeout.
    func readLine() -> String? {
        while true {
            if let newline = buffer.firstIndex(of: 0x0A) {
                let line = String(decoding: buffer[..<newline], as: UTF8.self)
                buffer.removeSubrange(...newline)
                return line
            }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { return nil }
            buffer += chunk[0..<count]
        }
    }

    /// Lines up to and including the final `ok` or `error` line.
    func reply() -> [String] {
        var lines: [String] = []
        while let line = readLine() {
            lines.append(line)
            if line.hasPrefix("ok") || line.hasPrefix("error") { break }
        }
        return lines
    }
}
