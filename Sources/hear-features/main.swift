// hear-features: the learned model's training features, computed by the suppressor itself.
//
//   hear-features DIR...
//   hear-features oracle [--place model|mask] [--floor DB] [--rate HZ] [--frame-hops N] [--rise X] [NAME=VALUE...] CLEAN NOISE OUT
//   hear-features denoise [--model BLOB] [--rate HZ] [NAME=VALUE...] IN OUT [IN OUT...]
//
// `denoise` runs the noise suppressor alone at its defaults (learned mode) with NAME=VALUE set, on
// each IN (raw float32, mono), and writes OUT lined up with it (its latency taken out, as long as
// IN); `--model` runs an exported model blob (train.py) in place of the compiled-in one: pick.py
// scores train.py's checkpoints with it.
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
// and than this program are skipped. `--shard I/N` takes the clips whose place in their
// directory's sorted list is I modulo N, so that N processes share a set (the accelerator's
// training run, training/accelerator.sh).
//
// No Foundation: the program links the Swift runtime statically and runs, as one small file, on a
// machine without the toolchain (the accelerator's).

import Glibc
import HearDSP
import HearSystem

let bands = SpeechBandLayout.count
let rowLength = NoiseSuppressor.featureCount + 3 * bands

func readFloats(_ path: String) throws -> [Float] {
    guard let bytes = try Syscall.readRegularFile(path, limit: 1 << 32, followingLinks: true) else {
        throw SystemError(call: "open \(path)", code: ENOENT)
    }
    return bytes.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
}

func writeFloats(_ values: [Float], to path: String) throws {
    let bytes = values.withUnsafeBytes { Array($0) }
    try Syscall.writeOutput(path, bytes: bytes)
}

/// A file's modification time in nanoseconds since the epoch, or nil where there is none.
func modified(_ path: String) -> Int? {
    guard let info = try? Syscall.status(path) else { return nil }
    return info.st_mtim.tv_sec * 1_000_000_000 + info.st_mtim.tv_nsec
}

/// The names in a directory, sorted.
func names(in directory: String) -> [String] {
    guard let stream = opendir(directory) else { fail("\(directory): \(String(cString: strerror(errno)))", status: 1) }
    defer { closedir(stream) }
    var result: [String] = []
    while let entry = readdir(stream) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in String(cString: raw.bindMemory(to: CChar.self).baseAddress!) }
        if name != "." && name != ".." { result.append(name) }
    }
    return result.sorted()
}

/// The clips' sample rate: manifest.json's top-level "rate" (data.py writes it as the third key,
/// before any clip; 48 kHz without a manifest).
func sampleRate(of directory: String) -> Double {
    let path = directory + "/manifest.json"
    guard let bytes = try? Syscall.readRegularFile(path, limit: 1 << 30, followingLinks: true) else { return 48000 }
    let key = Array("\"rate\":".utf8)
    guard let at = bytes.indices.first(where: { bytes[$0...].starts(with: key) }) else {
        fail("\(path): no \"rate\" from 8000 to 192000", status: 1)
    }
    let digits = bytes[(at + key.count)...].drop(while: { $0 == UInt8(ascii: " ") })
        .prefix(while: { ($0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9")) || $0 == UInt8(ascii: ".") })
    guard let rate = Double(String(decoding: digits, as: UTF8.self)), rate >= 8000, rate <= 192000 else {
        fail("\(path): no \"rate\" from 8000 to 192000", status: 1)
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
    rows.reserveCapacity(clean.count / hop * rowLength)
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

/// The oracle: what a perfect estimate gives through the suppressor's own framing. Three
/// suppressors run on the mixture, its speech and its noise, frame by frame; the speech and noise
/// instances' powers of a frame give its Wiener gain S / (S + N) per bin (at least `floorDB`),
/// which the mixture's instance applies to that same frame, in the model's place (`model`: blended
/// with the estimator and gated, as the model's gains are) or as the whole mask (`mask`).
func oracle(clean: [Float], noise: [Float], rate: Double, place: String, floorDB: Float, values: ParameterValues,
            shape: AnalysisShape) -> [Float] {
    var noisy = NoiseSuppressor(sampleRate: rate, channels: 1, values: values, shape: shape)
    var speech = NoiseSuppressor(sampleRate: rate, channels: 1, values: values, shape: shape)
    var alone = NoiseSuppressor(sampleRate: rate, channels: 1, values: values, shape: shape)
    let hop = noisy.hop, bins = noisy.bins
    let mask = UnsafeMutablePointer<Float>.allocate(capacity: bins)
    defer { mask.deallocate() }
    mask.initialize(repeating: 1, count: bins)
    let bandMask = UnsafeMutablePointer<Float>.allocate(capacity: bands)
    defer { bandMask.deallocate() }
    bandMask.initialize(repeating: 1, count: bands)
    noisy.suppliedGains = place == "mask" ? .mask(UnsafePointer(mask)) : place == "bands" ? .bands(UnsafePointer(bandMask)) : .model(UnsafePointer(mask))
    speech.recordsFeatures = place == "bands"
    alone.recordsFeatures = place == "bands"
    let floor = Float(Decibels.toGain(Double(floorDB)))
    var output = [Float](repeating: 0, count: clean.count)
    var a = [Float](repeating: 0, count: hop), b = a, c = a
    var start = 0
    while start < clean.count {
        let count = min(hop, clean.count - start)
        for i in 0..<hop {
            let s = i < count ? clean[start + i] : 0, n = i < count ? noise[start + i] : 0
            a[i] = s + n
            b[i] = s
            c[i] = n
        }
        b.withUnsafeMutableBufferPointer { speech.process($0.baseAddress!, nil, count: hop) }
        c.withUnsafeMutableBufferPointer { alone.process($0.baseAddress!, nil, count: hop) }
        for k in 0..<bins {
            let s = speech.framePower[k], n = alone.framePower[k]
            mask[k] = max(s / max(s + n, 1e-30), floor)
        }
        // The band target train.py derives: sqrt(S / (S + N)) from the band powers.
        for b in 0..<bands {
            let s = speech.bandPowers[b], n = alone.bandPowers[b]
            bandMask[b] = max((s / max(s + n, 1e-30)).squareRoot(), floor)
        }
        a.withUnsafeMutableBufferPointer { noisy.process($0.baseAddress!, nil, count: hop) }
        for i in 0..<count { output[start + i] = a[i] }
        start += hop
    }
    return output
}

func fail(_ message: String, status: Int32 = 2) -> Never {
    let bytes = Array((message + "\n").utf8)
    _ = bytes.withUnsafeBytes { Syscall.write(2, $0) }
    exit(status)
}

/// A hear parameter's NAME=VALUE (the control protocol's names), or nil where `argument` is not one.
func setting(_ argument: String) -> (Parameter, Float)? {
    guard let equals = argument.firstIndex(of: "="), !argument.hasPrefix("-") else { return nil }
    let name = String(argument[..<equals]), text = String(argument[argument.index(after: equals)...])
    guard let parameter = Parameter(key: name), let value = Double(text) else {
        fail("\(argument): not NAME=VALUE of a hear parameter")
    }
    return (parameter, Float(value))
}

/// An argument that is not an option: a NAME=VALUE setting or a file; an unknown option fails.
func take(_ argument: String, values: inout ParameterValues, files: inout [String], usage: String) {
    if let (parameter, value) = setting(argument) {
        values[parameter] = value
    } else if argument.hasPrefix("-") {
        fail(usage)
    } else {
        files.append(argument)
    }
}

func parsedRate(_ value: String) -> Double {
    guard let v = Double(value), v >= 8000, v <= 192000 else { fail("--rate: 8000 to 192000 Hz, not \(value)") }
    return v
}

/// The suppressor on `input` in blocks of its hop, its latency's worth of zeros after it; the
/// output from that latency on, so that it lines up with the input.
func denoise(_ input: [Float], suppressor: inout NoiseSuppressor) -> [Float] {
    let hop = suppressor.hop, latency = NoiseSuppressor.latency(sampleRate: suppressor.sampleRate)
    var output: [Float] = []
    output.reserveCapacity(input.count + latency + hop)
    var block = [Float](repeating: 0, count: hop)
    var start = 0
    while output.count < input.count + latency {
        for i in 0..<hop { block[i] = start + i < input.count ? input[start + i] : 0 }
        block.withUnsafeMutableBufferPointer { suppressor.process($0.baseAddress!, nil, count: hop) }
        output.append(contentsOf: block)
        start += hop
    }
    return Array(output[latency..<(latency + input.count)])
}

if CommandLine.arguments.dropFirst().first == "denoise" {
    var arguments = Array(CommandLine.arguments.dropFirst(2))
    let usage = "usage: hear-features denoise [--model BLOB] [--rate HZ] [NAME=VALUE...] IN.f32 OUT.f32 [IN.f32 OUT.f32...]"
    var sampleRate = 48000.0
    var values = ParameterValues()
    var model: UnsafeRawBufferPointer? = nil  // the blob's bytes, for the process's life
    var files: [String] = []
    while !arguments.isEmpty {
        let argument = arguments.removeFirst()
        switch argument {
        case "--model", "--rate":
            guard let value = arguments.first else { fail(usage) }
            arguments.removeFirst()
            if argument == "--rate" {
                sampleRate = parsedRate(value)
            } else {
                do {
                    guard let bytes = try Syscall.readRegularFile(value, limit: 1 << 24, followingLinks: true) else {
                        fail("--model: \(value) is not a regular file", status: 1)
                    }
                    let copy = UnsafeMutableRawBufferPointer.allocate(byteCount: bytes.count, alignment: 16)
                    copy.copyBytes(from: bytes)
                    model = UnsafeRawBufferPointer(copy)
                } catch {
                    fail("--model: \(value): \(error)", status: 1)
                }
            }
        default:
            take(argument, values: &values, files: &files, usage: usage)
        }
    }
    guard !files.isEmpty, files.count % 2 == 0 else { fail(usage) }
    do {
        for pair in stride(from: 0, to: files.count, by: 2) {
            var suppressor = NoiseSuppressor(sampleRate: sampleRate, channels: 1, values: values, model: model)
            guard suppressor.modelAvailable else {
                fail("--model: not a model this suppressor runs (train.py's export: header, sizes, checksum)", status: 1)
            }
            try writeFloats(denoise(try readFloats(files[pair]), suppressor: &suppressor), to: files[pair + 1])
        }
    } catch {
        fail("hear-features denoise: \(error)", status: 1)
    }
    exit(0)
}

if CommandLine.arguments.dropFirst().first == "oracle" {
    // hear-features oracle [--place model|mask] [--floor DB] [--rate HZ] [--frame-hops N] [--rise X] [NAME=VALUE...] CLEAN NOISE OUT
    var arguments = Array(CommandLine.arguments.dropFirst(2))
    var place = "model", floorDB: Float = -20, rate = 48000.0
    var shape = AnalysisShape()
    var values = ParameterValues()
    var files: [String] = []
    let usage = "usage: hear-features oracle [--place model|mask] [--floor DB] [--rate HZ] [--frame-hops 8|16] [--rise EXPONENT] [NAME=VALUE...] CLEAN.f32 NOISE.f32 OUT.f32"
    while !arguments.isEmpty {
        let argument = arguments.removeFirst()
        switch argument {
        case "--place", "--floor", "--rate", "--frame-hops", "--rise":
            guard let value = arguments.first else { fail(usage) }
            arguments.removeFirst()
            if argument == "--place" {
                guard ["model", "mask", "bands"].contains(value) else { fail("--place: model, mask or bands, not \(value)") }
                place = value
            } else if argument == "--frame-hops" {
                guard let v = Int(value), [4, 8, 16, 32].contains(v) else { fail("--frame-hops: 4, 8, 16 or 32, not \(value)") }
                shape.frameHops = v
            } else if argument == "--rise" {
                guard let v = Double(value), v > 0, v <= 8 else { fail("--rise: an exponent above 0 up to 8, not \(value)") }
                shape.riseExponent = v
            } else if argument == "--floor" {
                guard let v = Float(value), v <= 0 else { fail("--floor: a level in dB at most 0, not \(value)") }
                floorDB = v
            } else {
                rate = parsedRate(value)
            }
        default:
            take(argument, values: &values, files: &files, usage: usage)
        }
    }
    guard files.count == 3 else { fail(usage) }
    do {
        let clean = try readFloats(files[0]), noise = try readFloats(files[1])
        guard clean.count == noise.count else { fail("\(files[0]) and \(files[1]) differ in length", status: 1) }
        let output = oracle(clean: clean, noise: noise, rate: rate, place: place, floorDB: floorDB, values: values, shape: shape)
        try writeFloats(output, to: files[2])
    } catch {
        fail("hear-features oracle: \(error)", status: 1)
    }
    exit(0)
}

var arguments = Array(CommandLine.arguments.dropFirst())
var shard = 0, shards = 1
if let at = arguments.firstIndex(of: "--shard") {
    let value = at + 1 < arguments.count ? arguments[at + 1] : ""
    let parts = value.split(separator: "/")
    guard parts.count == 2, let i = Int(parts[0]), let n = Int(parts[1]), n >= 1, n <= 1024, i >= 0, i < n else {
        fail("--shard: I/N with 0 <= I < N <= 1024, not \(value)")
    }
    (shard, shards) = (i, n)
    arguments.removeSubrange(at...at + 1)
}
let directories = arguments
if directories.isEmpty || directories.contains(where: { $0.hasPrefix("-") }) {
    fail("usage: hear-features [--shard I/N] DIR...  (NAME-clean.f32 + NAME-noise.f32 in, NAME.feat out; \(rowLength) floats a row)")
}
// A .feat is up to date when it is newer than its clip and than this program: a rebuilt suppressor
// (another model stride, other features) computes every clip again.
// (/proc/self/exe is a link whose own time is the process's start: the time of what it names.)
var link = [CChar](repeating: 0, count: 4096)
let length = readlink("/proc/self/exe", &link, link.count - 1)
let program = length > 0 ? modified(String(cString: link)) ?? Int.max : Int.max
var written = 0, skipped = 0
do {
    for directory in directories {
        let rate = sampleRate(of: directory)
        let clips = names(in: directory).filter { $0.hasSuffix("-clean.f32") }.map { String($0.dropLast("-clean.f32".count)) }
        for (index, name) in clips.enumerated() where index % shards == shard {
            let base = directory + "/" + name
            if let out = modified(base + ".feat"), let input = modified(base + "-clean.f32"), out > input, out > program {
                skipped += 1
                continue
            }
            let clean = try readFloats(base + "-clean.f32"), noise = try readFloats(base + "-noise.f32")
            guard clean.count == noise.count else { fail("\(base): clean and noise differ in length", status: 1) }
            try writeFloats(dump(clean: clean, noise: noise, rate: rate), to: base + ".feat")
            written += 1
        }
    }
} catch {
    fail("hear-features: \(error)", status: 1)
}
print("hear-features: \(written) clips written, \(skipped) up to date; \(rowLength) floats a row")
