// hear-features: the learned model's training features, computed by the suppressor itself.
//
//   hear-features DIR...
//
// For every clip DIR/NAME-clean.f32 + DIR/NAME-noise.f32 (raw little-endian float32, mono, equal
// length, at the rate DIR/manifest.json names, 48 kHz without one; training/hear_training/data.py writes
// them) it runs three noise suppressors at that rate and their defaults, on clean + noise, on the
// clean speech alone and on the noise alone, and at every model step writes one row of float32 to
// DIR/NAME.feat:
//   the noisy stream's features (NoiseSuppressor.featureCount), then the band powers
//   (SpeechBandLayout.count each) of the noisy stream, of the clean speech and of the noise.
// The three share framing and band layout, so the rows line up; train.py derives the targets
// (band gains, speech activity) from the band powers. Clips whose .feat is newer than the clip
// and than this program are skipped.

import Foundation
import HearDSP

let bands = SpeechBandLayout.count
let rowLength = NoiseSuppressor.featureCount + 3 * bands

func readFloats(_ path: String) throws -> [Float] {
    let data = try Data(contentsOf: URL(fileURLWithPath: path))
    return data.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
}

func modified(_ path: String) -> Date? {
    (try? FileManager.default.attributesOfItem(atPath: path))?[.modificationDate] as? Date
}

/// The clips' sample rate: manifest.json's "rate" (48 kHz without a manifest).
func sampleRate(of directory: String) -> Double {
    guard let data = FileManager.default.contents(atPath: directory + "/manifest.json") else { return 48000 }
    guard let manifest = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
          let rate = (manifest["rate"] as? NSNumber)?.doubleValue, rate >= 8000, rate <= 192000 else {
        FileHandle.standardError.write("\(directory)/manifest.json: no \"rate\" from 8000 to 192000\n".data(using: .utf8)!)
        exit(1)
    }
    return rate
}

func dump(clean: [Float], noise: [Float], rate: Double) -> [Float] {
    var values = ParameterValues()
    values[.nsMode] = 0
    var noisy = NoiseSuppressor(sampleRate: rate, channels: 1, values: values)
    var speech = NoiseSuppressor(sampleRate: rate, channels: 1, values: values)
    var alone = NoiseSuppressor(sampleRate: rate, channels: 1, values: values)
    noisy.recordsFeatures = true
    speech.recordsFeatures = true
    alone.recordsFeatures = true
    let hop = noisy.hop
    var rows: [Float] = []
    rows.reserveCapacity(clean.count / hop / 2 * rowLength)
    var a = [Float](repeating: 0, count: hop), b = a, c = a
    var steps = 0
    var start = 0
    while start + hop <= clean.count {
        for i in 0..<hop {
            a[i] = clean[start + i] + noise[start + i]
            b[i] = clean[start + i]
            c[i] = noise[start + i]
        }
        a.withUnsafeMutableBufferPointer { noisy.process($0.baseAddress!, nil, count: hop) }
        b.withUnsafeMutableBufferPointer { speech.process($0.baseAddress!, nil, count: hop) }
        c.withUnsafeMutableBufferPointer { alone.process($0.baseAddress!, nil, count: hop) }
        if noisy.modelSteps != steps {
            steps = noisy.modelSteps
            precondition(speech.modelSteps == steps && alone.modelSteps == steps)
            rows.append(contentsOf: UnsafeBufferPointer(start: noisy.features, count: NoiseSuppressor.featureCount))
            rows.append(contentsOf: UnsafeBufferPointer(start: noisy.bandPowers, count: bands))
            rows.append(contentsOf: UnsafeBufferPointer(start: speech.bandPowers, count: bands))
            rows.append(contentsOf: UnsafeBufferPointer(start: alone.bandPowers, count: bands))
        }
        start += hop
    }
    return rows
}

let directories = Array(CommandLine.arguments.dropFirst())
if directories.isEmpty || directories.contains(where: { $0.hasPrefix("-") }) {
    FileHandle.standardError.write("usage: hear-features DIR...  (NAME-clean.f32 + NAME-noise.f32 in, NAME.feat out; \(rowLength) floats a row)\n".data(using: .utf8)!)
    exit(2)
}
// A .feat is up to date when it is newer than its clip and than this program: a rebuilt suppressor
// (another model stride, other features) computes every clip again.
// (/proc/self/exe is a link whose own time is the process's start: the time of what it names.)
let program = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")).flatMap(modified) ?? .distantFuture
var written = 0, skipped = 0
for directory in directories {
    let rate = sampleRate(of: directory)
    let names = try FileManager.default.contentsOfDirectory(atPath: directory)
        .filter { $0.hasSuffix("-clean.f32") }.map { String($0.dropLast("-clean.f32".count)) }.sorted()
    for name in names {
        let base = directory + "/" + name
        if let out = modified(base + ".feat"), let input = modified(base + "-clean.f32"), out > input, out > program {
            skipped += 1
            continue
        }
        let clean = try readFloats(base + "-clean.f32"), noise = try readFloats(base + "-noise.f32")
        guard clean.count == noise.count else {
            FileHandle.standardError.write("\(base): clean and noise differ in length\n".data(using: .utf8)!)
            exit(1)
        }
        let rows = dump(clean: clean, noise: noise, rate: rate)
        let data = rows.withUnsafeBufferPointer { Data(buffer: $0) }
        try data.write(to: URL(fileURLWithPath: base + ".feat.tmp"))
        _ = rename(base + ".feat.tmp", base + ".feat")
        written += 1
    }
}
print("hear-features: \(written) clips written, \(skipped) up to date; \(rowLength) floats a row")
