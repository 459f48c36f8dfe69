// docs/OTHER-HOSTS.md's command lines for ffmpeg, sox and ecasound, read from the page and run as
// they are written (bash, in a folder holding in.wav, LADSPA_PATH at the built plugin, a private
// HOME, state and runtime dir so no saved settings apply): a 1 kHz tone at -30 dBFS peak comes
// out finite, as long as it went in, at the input's rate, and 6 +/- 0.5 dB louder (the lines set
// gain 6 and switch noise suppression off), at 8 to 192 kHz.

import Foundation
import Testing
import TestSupport

@Suite struct OtherHostsTests {
    static func onPath(_ tool: String) -> Bool { (try? Processes.which(tool)) != nil }

    /// The page's command lines that start with `tool`, in its ```sh blocks.
    static func lines(for tool: String) throws -> [String] {
        var lines: [String] = [], inBlock = false
        for line in try Repository.text("docs/OTHER-HOSTS.md").split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("```") { inBlock = line == "```sh"; continue }
            if inBlock && line.hasPrefix(tool + " ") { lines.append(String(line)) }
        }
        return lines
    }

    static let rates = [8000, 16000, 44100, 48000, 96000, 192000]

    /// Runs the page's `tool` line at every rate and measures what comes out.
    func checkTheDocumentedLine(of tool: String) throws {
        let lines = try Self.lines(for: tool)
        try #require(lines.count == 1, "docs/OTHER-HOSTS.md has \(lines.count) \(tool) lines")
        let processes = try Processes(name: "hosts-\(tool)")
        defer { processes.stopAll() }
        processes.environment["LADSPA_PATH"] = URL(fileURLWithPath: Repository.plugin).deletingLastPathComponent().path
        processes.environment["HOME"] = try processes.directory("home").path
        processes.environment["XDG_STATE_HOME"] = try processes.directory("state").path
        processes.environment["XDG_CONFIG_HOME"] = try processes.directory("config").path
        processes.environment["XDG_RUNTIME_DIR"] = try processes.directory("run").path
        for rate in Self.rates {
            let folder = try processes.directory("\(rate)")
            let seconds = 3
            let tone = (0..<(rate * seconds)).map { Float(0.0316 * sin(2 * Double.pi * 1000 * Double($0) / Double(rate))) }
            try WAVFile.write([tone], rate: rate, to: folder.appendingPathComponent("in.wav"))
            let result = try processes.run("bash", ["-c", "cd '\(folder.path)' && " + lines[0]], timeout: 120, check: false)
            try #require(result.status == 0, "\(tool) at \(rate) Hz exited \(result.status):\n\(result.output)")
            let out = try WAVFile.read(folder.appendingPathComponent("out.wav"))
            #expect(out.rate == rate && out.channels == 1, "\(tool) at \(rate) Hz: \(out.rate) Hz, \(out.channels) channels")
            #expect(abs(out.samples.count - tone.count) <= rate / 20, "\(tool) at \(rate) Hz: \(out.samples.count) samples for \(tone.count)")
            #expect(out.samples.allSatisfy { $0.isFinite }, "\(tool) at \(rate) Hz: non-finite samples")
            let input = try Level.steady(tone, rate: rate), output = try Level.steady(out.samples, rate: rate)
            #expect(abs(output - input - 6) <= 0.5, "\(tool) at \(rate) Hz: \(input) dBFS in, \(output) dBFS out (expected +6 dB)")
        }
    }

    @Test(.enabled(if: onPath("ffmpeg"), "needs ffmpeg (make test installs it)"))
    func ffmpeg() throws { try checkTheDocumentedLine(of: "ffmpeg") }

    @Test(.enabled(if: onPath("sox"), "needs sox (make test installs it)"))
    func sox() throws { try checkTheDocumentedLine(of: "sox") }

    @Test(.enabled(if: onPath("ecasound"), "needs ecasound (make test installs it)"))
    func ecasound() throws { try checkTheDocumentedLine(of: "ecasound") }
}
