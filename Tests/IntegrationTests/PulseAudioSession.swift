// A private PulseAudio daemon for one test: its own XDG_RUNTIME_DIR and HOME, no system script
// (-n), two null sinks standing in for the hardware ("hear_test_out", the default output, and
// "hear_test_mic", whose monitor is the default microphone), then the repository's hear.pa.

import Foundation
import TestSupport

final class PulseAudioSession: @unchecked Sendable {
    let processes: Processes
    var root: URL { processes.root }

    /// `microphone`: the default source when hear.pa loads, which its microphone chain records.
    init(name: String, plugin: String = Repository.plugin, microphone: String = "hear_test_mic.monitor") throws {
        processes = try Processes(name: name)
        do { try start(plugin: plugin, microphone: microphone) } catch {
            let log = processes.log("pulseaudio")
            processes.stopAll()
            throw TestFailure("\(error)\npulseaudio: \(log)")
        }
    }

    private func start(plugin: String, microphone: String) throws {
        let runtime = try processes.directory("run")
        processes.environment["XDG_RUNTIME_DIR"] = runtime.path
        processes.environment["HOME"] = try processes.directory("home").path
        processes.environment["XDG_CONFIG_HOME"] = try processes.directory("config").path
        let hear = root.appendingPathComponent("hear.pa"), script = root.appendingPathComponent("session.pa")
        try Repository.configured("conf.d/pulseaudio/hear.pa", plugin: plugin).write(to: hear, atomically: true, encoding: .utf8)
        try """
            load-module module-native-protocol-unix
            load-module module-null-sink sink_name=hear_test_out channels=2 rate=48000
            load-module module-null-sink sink_name=hear_test_mic channels=1 channel_map=mono rate=48000
            set-default-sink hear_test_out
            set-default-source \(microphone)
            .include \(hear.path)

            """.write(to: script, atomically: true, encoding: .utf8)
        let daemon = try processes.start(
            "pulseaudio", ["-n", "-F", script.path, "--daemonize=no", "--exit-idle-time=-1", "--use-pid-file=no",
                           "--log-target=stderr", "--log-level=notice"], log: "pulseaudio")
        // hear.pa's last line makes the microphone source; a line that failed leaves its sink out.
        try waitFor("PulseAudio to load hear.pa") {
            guard daemon.isRunning else { throw TestFailure("pulseaudio exited") }
            return try processes.run("pactl", ["list", "short", "sources"], check: false).output.contains("\thear_microphone\t")
        }
        let sinks = try names("sinks")
        guard sinks.contains("hear_speaker"), sinks.contains("hear_microphone_filter") else {
            throw TestFailure("hear.pa did not load whole; sinks: \(sinks)")
        }
    }

    func stop() { processes.stopAll() }

    /// `pactl list short KIND`: the names in its second column.
    func names(_ kind: String) throws -> [String] {
        try processes.run("pactl", ["list", "short", kind]).output.split(separator: "\n").compactMap { line in
            let columns = line.split(separator: "\t")
            return columns.count > 1 ? String(columns[1]) : nil
        }
    }

    /// Records from `source` (a sink's monitor is `SINK.monitor`) while `file` plays into `sink`.
    func record(from source: String, channels: Int, playing file: URL, into sink: String, name: String) throws -> WAVAudio {
        let output = root.appendingPathComponent(name + ".wav")
        let recorder = try processes.start(
            "parec", ["-d", source, "--latency-msec=20", "--format=float32le", "--rate=48000", "--channels=\(channels)", "--file-format=wav",
                      output.path], log: "record-\(name)")
        defer { recorder.stop(signal: SIGINT) }
        let size = { ((try? FileManager.default.attributesOfItem(atPath: output.path)[.size]) as? Int) ?? 0 }
        // A monitor delivers silence from the start, so a growing file means the stream runs.
        try waitFor("parec to record from \(source)") {
            guard recorder.isRunning else { throw TestFailure("parec exited: \(processes.log("record-\(name)"))") }
            return size() > 8192
        }
        try processes.run("paplay", ["-d", sink, file.path], timeout: 120)
        let target = size() + 24_000 * channels * 4
        try waitFor("0.5 s more of the recording") { size() >= target }
        recorder.stop(signal: SIGINT)
        return try WAVFile.read(output)
    }

    @discardableResult
    func hearctl(_ arguments: String...) throws -> String {
        try processes.run(Repository.url(".build/release/hearctl").path, arguments).output
    }

    func file(_ name: String) -> URL { root.appendingPathComponent(name) }
}
