// The hearing test's tones, played on the listener's own output device through PipeWire (pw-play),
// never through hear's chain.

import ArgumentParser
import Foundation
import Glibc
import HearctlCore
import HearControl
import HearDSP
import HearSystem

/// Plays the test's tones on one output device through PipeWire (pw-play), bypassing hear.
final class TonePlayer {
    let deviceName: String
    var notes: [String] = []
    private let directory: String
    private var playing: Process?

    init(device requested: String?, anyDevice: Bool) throws {
        let devices = Devices()
        guard devices.graph.running else {
            throw CLIError("PipeWire is not running here (\(devices.graph.error ?? "no daemon")): no device to play the tones on", code: ExitStatus.notRunning)
        }
        let node: PipeWireGraph.Node
        if let requested {
            node = try devices.resolve(requested, for: .speaker)
        } else if let linked = devices.graph.chains.first(where: { $0.node.mediaClass == "Audio/Sink" })?.device {
            node = linked
        } else if let name = devices.effectiveDefault(.speaker), let found = devices.candidates(.speaker).first(where: { $0.name == name }) {
            node = found
        } else {
            throw CLIError("PipeWire has no output device to play the tones on", code: ExitStatus.error)
        }
        deviceName = node.name
        let form = (node.props["device.form-factor"] ?? node.props["device.form_factor"] ?? "").lowercased()
        let headphones = ["headphone", "headset", "handset", "hands-free"].contains(form)
            || (node.props["device.profile.name"] ?? "").contains("headphones")
        if !headphones && ["speaker", "internal", "tv", "computer", "car"].contains(form) && !anyDevice {
            throw CLIError("\(node.name) is a \(form) device, not headphones: a test through speakers measures the room; use headphones, or --any-device")
        }
        notes.append("tones play on \(Devices.describe(node))" + (headphones ? "" : form.isEmpty
            ? "; hearctl cannot tell whether it is headphones: use headphones, one ear at a time needs them" : ""))
        directory = try Self.privateDirectory()
    }

    deinit {
        playing?.waitUntilExit()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// A directory of this run's own for the tone files: created exclusively (mkdtemp: a fresh name,
    /// mode 0700) in $XDG_RUNTIME_DIR, else $TMPDIR or /tmp; removed when the test ends.
    static func privateDirectory() throws -> String {
        let environment = ProcessInfo.processInfo.environment
        let candidates: [String?] = [environment["XDG_RUNTIME_DIR"], environment["TMPDIR"]]
        let base = candidates.compactMap { $0 }.first { (path: String) in path.hasPrefix("/") && access(path, W_OK | X_OK) == 0 } ?? "/tmp"
        var template = Array((SocketPath.trimmed(base) + "/hear-hearing-test.XXXXXX").utf8CString)
        guard template.withUnsafeMutableBufferPointer({ $0.baseAddress.flatMap(mkdtemp) != nil }) else {
            throw CLIError("cannot create a private directory for the tones in \(base): \(String(cString: strerror(errno)))")
        }
        return String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// A stereo float WAV of the pulsed tone at `level` dBFS peak in one ear, silence in the other.
    static func pulsedTone(_ frequency: Double, level: Double, ear: Ear, rate: Double = 48000) -> [Float] {
        let amplitude = Decibels.toGain(level)
        let pulse = Int(TestTiming.pulseSeconds * rate), gap = Int(TestTiming.gapSeconds * rate), ramp = Int(TestTiming.rampSeconds * rate)
        var samples: [Float] = []
        for index in 0..<TestTiming.pulses {
            for n in 0..<pulse {
                let edge = min(n, pulse - 1 - n)
                let envelope = edge >= ramp ? 1 : 0.5 - 0.5 * cos(Double.pi * Double(edge) / Double(ramp))
                let value = Float(amplitude * envelope * sin(2 * Double.pi * frequency * Double(n) / rate))
                samples += ear == .left ? [value, 0] : [0, value]
            }
            if index < TestTiming.pulses - 1 { samples += [Float](repeating: 0, count: 2 * gap) }
        }
        return samples + [Float](repeating: 0, count: 2 * Int(TestTiming.tailSeconds * rate))
    }

    /// Starts the tone and returns (the answer window runs while it plays).
    func play(_ frequency: Double, level: Double, ear: Ear) throws {
        waitForTone()
        let path = directory + "/tone.wav"
        try Data(WAV.bytes(Self.pulsedTone(frequency, level: level, ear: ear), channels: 2, rate: 48000)).write(to: URL(fileURLWithPath: path))
        playing = try Self.start(["--target", deviceName, path])
    }

    /// Speech-level noise for setting the volume: 2 s at -20 dBFS RMS in both ears.
    func playSample() throws {
        var random = SplitMix(seed: 7)
        var previous = 0.0
        let samples = (0..<96_000).flatMap { _ -> [Float] in
            previous = 0.9 * previous + 0.1 * (random.uniform() * 2 - 1)  // low-passed: speech-like weight on the lows
            let value = Float(previous * 0.55)
            return [value, value]
        }
        let path = directory + "/sample.wav"
        try Data(WAV.bytes(samples, channels: 2, rate: 48000)).write(to: URL(fileURLWithPath: path))
        let process = try Self.start(["--target", deviceName, path])
        process.waitUntilExit()
    }

    func waitForTone() { playing?.waitUntilExit() }

    static func start(_ arguments: [String]) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/pw-play")
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        do { try process.run() } catch { throw CLIError("cannot run pw-play (Debian package pipewire-bin): \(error.localizedDescription)") }
        return process
    }
}
