// hear-features, the tool that computes the learned model's training features with the suppressor
// itself, as the accelerator runs it (training/accelerator.sh): one small file that needs nothing
// from the Swift toolchain, several processes sharing a set by `--shard I/N`, the rate read from the
// set's manifest; and `denoise`, which runs the suppressor with a model blob of train.py's (pick.py
// scores the checkpoints so).

import Foundation
import Testing
import TestSupport

@Suite struct FeatureToolTests {
    static let tool = Repository.url(".build/release/hear-features").path
    static let rowFloats = 5 * 32 + 3 + 3 * 32

    /// A set of `clips` one-second clips at `rate` (a seeded buzz with a moving pitch as the speech,
    /// seeded noise), with data.py's manifest, in a fresh directory.
    static func makeSet(clips: Int, rate: Int, in directory: URL) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try "{\n \"split\": \"train\",\n \"seed\": 1,\n \"rate\": \(rate),\n \"clips\": []\n}\n"
            .write(to: directory.appendingPathComponent("manifest.json"), atomically: true, encoding: .utf8)
        var random = SeededRandom(seed: 3)
        for clip in 0..<clips {
            var clean = [Float](repeating: 0, count: rate), noise = clean
            var phase = 0.0
            for i in 0..<rate {
                phase += 2 * Double.pi * (120 + 40 * Double(clip) + 30 * sin(Double(i) / Double(rate) * 5)) / Double(rate)
                clean[i] = Float(0.1 * sin(phase) + 0.05 * sin(3 * phase))
                noise[i] = 0.02 * random.bipolar()
            }
            let name = String(format: "%06d", clip)
            try clean.withUnsafeBytes { Data($0) }.write(to: directory.appendingPathComponent("\(name)-clean.f32"))
            try noise.withUnsafeBytes { Data($0) }.write(to: directory.appendingPathComponent("\(name)-noise.f32"))
        }
    }

    static func features(_ directory: URL) throws -> [String: Data] {
        var result: [String: Data] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: directory.path) where name.hasSuffix(".feat") {
            result[name] = try Data(contentsOf: directory.appendingPathComponent(name))
        }
        return result
    }

    static func temporary() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("hear-features-\(getpid())-\(UUID())")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// Only the C and C++ runtimes and libspeexdsp: the Swift runtime is linked in and Foundation is
    /// not used, so the file runs where no toolchain is (the accelerator).
    @Test func needsNoLibraryOfTheToolchain() throws {
        let result = try Command.run("/usr/bin/ldd", [Self.tool])
        try #require(result.status == 0, "\(result.output)")
        let libraries = result.stdout.split(separator: "\n").compactMap {
            $0.split(whereSeparator: { $0 == " " || $0 == "\t" }).first.map(String.init)
        }
        let allowed = ["linux-vdso.so.1", "libc.so.6", "libm.so.6", "libstdc++.so.6", "libgcc_s.so.1", "libspeexdsp.so.1"]
        let others = libraries.filter { name in !allowed.contains(name) && !name.contains("ld-linux") }
        #expect(libraries.contains("libc.so.6"), "\(result.stdout)")
        #expect(others.isEmpty, "hear-features needs \(others)")
    }

    /// Shards together write what one process writes, byte for byte, and each clip once; the rows
    /// follow the manifest's rate (a model step per hop: 375 a second, whole hops of the clip).
    @Test func shardsTogetherWriteWhatOneProcessWrites() throws {
        let base = try Self.temporary()
        defer { try? FileManager.default.removeItem(at: base) }
        let whole = base.appendingPathComponent("whole"), sharded = base.appendingPathComponent("sharded")
        try Self.makeSet(clips: 5, rate: 16000, in: whole)
        try Self.makeSet(clips: 5, rate: 16000, in: sharded)
        let one = try Command.run(Self.tool, [whole.path], timeout: 120)
        try #require(one.status == 0, "\(one.output)")
        #expect(one.stdout.contains("5 clips written"), "\(one.stdout)")
        // Clips 0 and 3, 1 and 4, then 2: each shard its own, none seen by another.
        for (shard, clips) in [2, 2, 1].enumerated() {
            let part = try Command.run(Self.tool, ["--shard", "\(shard)/3", sharded.path], timeout: 120)
            try #require(part.status == 0, "\(part.output)")
            #expect(part.stdout.contains("\(clips) clips written, 0 up to date"), "shard \(shard)/3: \(part.stdout)")
        }
        let expected = try Self.features(whole), got = try Self.features(sharded)
        #expect(expected.count == 5 && got == expected)
        // 16 kHz: a hop of 42 samples (rate / 375, truncated), 380 whole hops in a second.
        let rows = (expected["000000.feat"]?.count ?? 0) / 4 / Self.rowFloats
        #expect(rows == 16000 / 42, "\(rows) rows")
        // Run again: every clip is up to date.
        let again = try Command.run(Self.tool, [whole.path], timeout: 120)
        #expect(again.stdout.contains("0 clips written, 5 up to date"), "\(again.stdout)")
    }

    @Test func aShardOutsideItsCountIsRefused() throws {
        let base = try Self.temporary()
        defer { try? FileManager.default.removeItem(at: base) }
        try Self.makeSet(clips: 1, rate: 8000, in: base)
        for bad in ["2/2", "1/0", "x", "-1/3"] {
            let result = try Command.run(Self.tool, ["--shard", bad, base.path])
            #expect(result.status == 2, "--shard \(bad): \(result.output)")
            #expect(result.stderr.contains("--shard"), "--shard \(bad): \(result.stderr)")
        }
        #expect(try Self.features(base).isEmpty)
    }

    /// Debian's python3 with its PyTorch (python3-torch, which `make test` installs): the one
    /// training/hear_training/features.py runs on.
    static let torchPython = "/usr/bin/python3"
    static let hasTorch = (try? Command.run(torchPython, ["-c", "import torch, numpy"], timeout: 120).status == 0) ?? false

    /// Four-second clips at `rate` that take the feature path through its branches: digital silence
    /// first (the noise estimate relearns when the noise starts), syllables of a buzz with a moving
    /// pitch (the gate opens, holds and closes; the pitch correlation follows), seeded noise that
    /// jumps by 20 dB in the second clip and is a hum in the third.
    static func makeBranchingSet(rate: Int, in directory: URL) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try "{\n \"split\": \"valid\",\n \"seed\": 1,\n \"rate\": \(rate),\n \"clips\": []\n}\n"
            .write(to: directory.appendingPathComponent("manifest.json"), atomically: true, encoding: .utf8)
        var random = SeededRandom(seed: 11)
        let count = 4 * rate
        for clip in 0..<3 {
            var clean = [Float](repeating: 0, count: count), noise = clean
            var phase = 0.0
            for i in 0..<count {
                let seconds = Double(i) / Double(rate)
                phase += 2 * Double.pi * (110 + 50 * Double(clip) + 40 * sin(seconds * 3)) / Double(rate)
                let syllable = (seconds > 1.0 && seconds < 1.6) || (seconds > 1.9 && seconds < 2.3) || seconds > 3.2
                clean[i] = syllable ? Float(0.08 * sin(phase) + 0.05 * sin(2 * phase) + 0.03 * sin(5 * phase)) : 0
                let level: Float = seconds < 0.5 ? 0 : clip == 1 && seconds > 2.6 ? 0.1 : 0.01
                noise[i] = clip == 2 ? level * Float(sin(2 * Double.pi * 50 * seconds) + 0.3 * sin(2 * Double.pi * 150 * seconds))
                    + 0.1 * level * random.bipolar() : level * random.bipolar()
            }
            let name = String(format: "%06d", clip)
            try clean.withUnsafeBytes { Data($0) }.write(to: directory.appendingPathComponent("\(name)-clean.f32"))
            try noise.withUnsafeBytes { Data($0) }.write(to: directory.appendingPathComponent("\(name)-noise.f32"))
        }
    }

    /// training/hear_training/features.py (the accelerator computes the features with it) gives
    /// what hear-features gives, row for row, at 48, 16 and 8 kHz: every feature group and band
    /// level 99.9 % within 0.005 (dB for the levels), at most 0.1 % of values more than 0.01 apart
    /// (a frame at a decision's edge: the pitch's peak), the gate's openness nowhere. On 400 clips
    /// of `make train`'s sets (`--check`, training/README.md) at most 0.041 % were.
    @Test(.enabled(if: hasTorch, "needs python3-torch (make test installs it)"))
    func theTorchFeaturesAreTheSuppressors() throws {
        let base = try Self.temporary()
        defer { try? FileManager.default.removeItem(at: base) }
        var environment = ProcessInfo.processInfo.environment
        environment["PYTHONPATH"] = Repository.url("training").path
        environment["HEAR_FEATURES"] = Self.tool
        for rate in [48000, 16000, 8000] {
            let directory = base.appendingPathComponent("\(rate)"), report = base.appendingPathComponent("\(rate).json")
            try Self.makeBranchingSet(rate: rate, in: directory)
            let result = try Command.run(Self.torchPython, ["-m", "hear_training.features", "--check", "--threads", "2",
                                                            "--json", report.path, directory.path],
                                         environment: environment, timeout: 300)
            try #require(result.status == 0, "\(rate) Hz: \(result.output)")
            let reports = try JSONSerialization.jsonObject(with: Data(contentsOf: report)) as? [[String: Any]]
            let first = try #require(reports?.first)
            #expect(first["clips"] as? Int == 3 && first["rows"] as? Int == 3 * (4 * rate / (rate / 375)), "\(first)")
            let groups = try #require(first["groups"] as? [String: [String: Double]])
            #expect(groups.count == 11, "\(groups.keys.sorted())")
            for (name, figures) in groups {
                let p999 = figures["p999"] ?? .infinity, over = figures["over"] ?? .infinity
                #expect(p999 <= 0.005, "\(rate) Hz, \(name): 99.9 % within \(p999)")
                #expect(over <= (name == "gate openness" ? 0 : 0.001), "\(rate) Hz, \(name): \(100 * over) % over 0.01")
            }
        }
    }

    /// Two seconds of a buzz with a moving pitch in seeded noise, 48 kHz, written to `url`.
    static func writeMixture(to url: URL) throws {
        var random = SeededRandom(seed: 5)
        var samples = [Float](repeating: 0, count: 96000)
        var phase = 0.0
        for i in samples.indices {
            phase += 2 * Double.pi * (140 + 30 * sin(Double(i) / 48000 * 4)) / 48000
            let syllable = sin(Double(i) / 48000 * 2 * Double.pi * 3) > 0 ? 1.0 : 0.0
            samples[i] = Float(syllable * (0.1 * sin(phase) + 0.05 * sin(3 * phase))) + 0.02 * random.bipolar()
        }
        try samples.withUnsafeBytes { Data($0) }.write(to: url)
    }

    static func floats(_ url: URL) throws -> [Float] {
        let data = try Data(contentsOf: url)
        return data.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
    }

    static func fnv1a(_ bytes: some Sequence<UInt8>) -> UInt32 {
        var h: UInt32 = 0x811C_9DC5
        for byte in bytes { h = (h ^ UInt32(byte)) &* 0x0100_0193 }
        return h
    }

    /// The compiled-in model and the same blob given by `--model` sound the same to the bit; a
    /// blob whose band gains are pushed down (its output layer's 32 band biases at -4, checksum
    /// made again) takes the level down: the tool runs the model it is given.
    @Test func denoiseRunsTheModelItIsGiven() throws {
        let base = try Self.temporary()
        defer { try? FileManager.default.removeItem(at: base) }
        let input = base.appendingPathComponent("in.f32")
        try Self.writeMixture(to: input)
        let blob = Repository.url("Sources/CHearModel/hear-model.bin")
        var bytes = [UInt8](try Data(contentsOf: blob))
        let header = 40, outputs = 33
        let biases = bytes.count - 2 * outputs
        for band in 0..<32 { (bytes[biases + 2 * band], bytes[biases + 2 * band + 1]) = (0x00, 0xC4) }  // float16 -4
        let checksum = Self.fnv1a(bytes[header...])
        for i in 0..<4 { bytes[36 + i] = UInt8(truncatingIfNeeded: checksum >> (8 * i)) }
        let quiet = base.appendingPathComponent("quiet.bin")
        try Data(bytes).write(to: quiet)

        let outputs3 = ["compiled", "given", "quiet"].map { base.appendingPathComponent("\($0).f32") }
        for (arguments, output) in [([], outputs3[0]), (["--model", blob.path], outputs3[1]), (["--model", quiet.path], outputs3[2])] {
            let result = try Command.run(Self.tool, ["denoise"] + arguments + [input.path, output.path], timeout: 120)
            try #require(result.status == 0, "\(arguments): \(result.output)")
        }
        let compiled = try Self.floats(outputs3[0]), given = try Self.floats(outputs3[1]), pushed = try Self.floats(outputs3[2])
        #expect(compiled.count == 96000 && given == compiled)
        let level = { (x: [Float]) in 10 * log10(x.reduce(0) { $0 + Double($1 * $1) } / Double(x.count) + 1e-30) }
        #expect(level(pushed) < level(compiled) - 10, "\(level(pushed)) dB against \(level(compiled)) dB")
    }

    /// OUT lines up with IN: with the suppressor switched off (ns.enable=0) its filter bank gives
    /// the input back, sample for sample.
    @Test func denoiseOutputLinesUpWithItsInput() throws {
        let base = try Self.temporary()
        defer { try? FileManager.default.removeItem(at: base) }
        let input = base.appendingPathComponent("in.f32"), output = base.appendingPathComponent("out.f32")
        try Self.writeMixture(to: input)
        let result = try Command.run(Self.tool, ["denoise", "ns.enable=0", input.path, output.path], timeout: 120)
        try #require(result.status == 0, "\(result.output)")
        let x = try Self.floats(input), y = try Self.floats(output)
        try #require(y.count == x.count)
        var error = 0.0, power = 0.0
        for i in x.indices {
            error += Double((y[i] - x[i]) * (y[i] - x[i]))
            power += Double(x[i] * x[i])
        }
        #expect(10 * log10(error / power) < -100, "\(10 * log10(error / power)) dB")
    }

    /// A file that is not a model, an odd count of files, a NAME=VALUE that names nothing: refused,
    /// nothing written.
    @Test func denoiseRefusesWhatItCannotRun() throws {
        let base = try Self.temporary()
        defer { try? FileManager.default.removeItem(at: base) }
        let input = base.appendingPathComponent("in.f32"), output = base.appendingPathComponent("out.f32")
        try Self.writeMixture(to: input)
        let cases: [([String], Int32, String)] = [
            (["--model", Repository.url("Package.swift").path, input.path, output.path], 1, "--model"),
            (["--model", base.appendingPathComponent("absent.bin").path, input.path, output.path], 1, "--model"),
            ([input.path], 2, "usage"),
            (["ns.nothing=1", input.path, output.path], 2, "ns.nothing"),
            (["--rate", "4000", input.path, output.path], 2, "--rate"),
        ]
        for (arguments, status, message) in cases {
            let result = try Command.run(Self.tool, ["denoise"] + arguments)
            #expect(result.status == status, "\(arguments): \(result.output)")
            #expect(result.stderr.contains(message), "\(arguments): \(result.stderr)")
        }
        #expect(!FileManager.default.fileExists(atPath: output.path))
    }
}
