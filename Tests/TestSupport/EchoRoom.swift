// A synthetic room for the echo-cancellation tests: recorded speech (Debian's
// pocketsphinx-testdata: LibriVox sentences for the far end, another talker's read card numbers for
// the near end) played through a reverberant room into a microphone. Deterministic: the room's
// response comes from the seeded generator, the speech from fixed files resampled by sox.

import Foundation
import HearDSP

public enum EchoRoom {
    static let data = "/usr/share/pocketsphinx/test/data"
    /// The far end: one reader's LibriVox sentences (about 17 s together).
    public static let farEndFiles = ["0870", "0880", "0890", "0920", "0930"].map {
        "\(data)/librivox/sense_and_sensibility_01_austen_64kb-\($0).wav"
    }
    /// The near end: another talker reading card numbers.
    public static let nearEndFiles = ["001", "002", "003", "004", "005"].map { "\(data)/cards/\($0).wav" }

    /// Whether the recordings are installed (pocketsphinx-testdata) and sox can read them.
    public static var available: Bool {
        (farEndFiles + nearEndFiles).allSatisfy { FileManager.default.fileExists(atPath: $0) }
            && FileManager.default.isExecutableFile(atPath: "/usr/bin/sox")
    }

    /// `files` joined at `rate`, mono, scaled to an RMS of `levelDB` dBFS, at least `seconds` long (repeated).
    public static func speech(_ files: [String], rate: Int, seconds: Double, levelDB: Double) throws -> [Float] {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("hear-echo-\(getpid())-\(UUID()).wav")
        defer { try? FileManager.default.removeItem(at: output) }
        let result = try Command.run("sox", files + ["-r", "\(rate)", "-c", "1", "-b", "32", "-e", "floating-point", output.path],
                                     timeout: 60, mergingOutput: true)
        guard result.status == 0 else { throw WAVError("sox: \(result.output)") }
        let once = try WAVFile.read(output).channel(0)
        let count = Int(seconds * Double(rate))
        var joined: [Float] = []
        while joined.count < count { joined += once }
        joined = Array(joined.prefix(count))
        let scale = Float(pow(10, levelDB / 20) / max(Signals.rms(joined[...]), 1e-9))
        return joined.map { $0 * scale }
    }

    /// A room's response at `rate`: `delay` seconds of nothing (the desktop's output and input
    /// buffers and the way to the microphone), a direct path, then reverberation decaying by 60 dB
    /// in `reverberation` seconds, the whole scaled to `gainDB` of energy.
    public static func response(rate: Int, delay: Double = 0.02, reverberation: Double = 0.4, gainDB: Double = -6,
                                seed: UInt64 = 36) -> [Float] {
        var random = SeededRandom(seed: seed)
        let start = Int(delay * Double(rate))
        let length = start + Int(1.2 * reverberation * Double(rate))
        var h = [Float](repeating: 0, count: length)
        h[start] = 4
        for i in (start + 1)..<length {
            let t = Double(i - start) / Double(rate)
            h[i] = random.bipolar() * Float(exp(-6.9 * t / reverberation))
        }
        let energy = h.reduce(0) { $0 + Double($1) * Double($1) }
        let scale = Float(pow(10, gainDB / 20) / sqrt(energy))
        return h.map { $0 * scale }
    }

    /// `x` through the response `h` (FFT overlap-add), as long as `x`.
    public static func convolve(_ x: [Float], _ h: [Float]) -> [Float] {
        var block = 1
        while block < h.count { block *= 2 }
        let size = 2 * block
        let fft = RealFFT(size: size)
        let bins = size / 2 + 1
        var hRe = [Float](repeating: 0, count: bins), hIm = hRe
        var frame = [Float](repeating: 0, count: size)
        for i in 0..<h.count { frame[i] = h[i] }
        fft.forward(frame, real: &hRe, imaginary: &hIm)
        var output = [Float](repeating: 0, count: x.count + size)
        var re = hRe, im = hIm, piece = frame
        var start = 0
        while start < x.count {
            for i in 0..<size { frame[i] = i < block && start + i < x.count ? x[start + i] : 0 }
            fft.forward(frame, real: &re, imaginary: &im)
            for k in 0..<bins {
                let r = re[k] * hRe[k] - im[k] * hIm[k], j = re[k] * hIm[k] + im[k] * hRe[k]
                re[k] = r
                im[k] = j
            }
            fft.inverse(real: re, imaginary: im, output: &piece)
            for i in 0..<size { output[start + i] += piece[i] }
            start += block
        }
        return Array(output.prefix(x.count))
    }
}
