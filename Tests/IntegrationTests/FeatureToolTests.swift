// hear-features, the tool that computes the learned model's training features with the suppressor
// itself, as the accelerator runs it (training/accelerator.sh): one small file that needs nothing
// from the Swift toolchain, several processes sharing a set by `--shard I/N`, the rate read from the
// set's manifest.

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
}
