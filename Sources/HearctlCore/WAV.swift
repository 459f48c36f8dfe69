// The one WAV writer: the hearing test's tones (hearctl), and every file the tests play or feed a
// host. No Foundation (HearctlCore links into hearctl's static build): bytes out, the caller writes them.

public enum WAV {
    public enum Encoding: Sendable {
        /// IEEE float, 32 bits (format 3): what PipeWire and PulseAudio play without conversion loss.
        case float32
        /// 16-bit PCM (format 1), rounded and clipped: what ladspa-sdk's applyplugin reads.
        case pcm16
    }

    /// A whole WAV file: `samples` as interleaved frames of `channels`, little-endian.
    public static func bytes(_ samples: [Float], channels: Int, rate: Int, encoding: Encoding = .float32) -> [UInt8] {
        let width = encoding == .float32 ? 4 : 2
        let size = samples.count * width
        var out: [UInt8] = []
        out.reserveCapacity(44 + size)
        func append<T: FixedWidthInteger>(_ value: T) { withUnsafeBytes(of: value.littleEndian) { out.append(contentsOf: $0) } }
        out.append(contentsOf: Array("RIFF".utf8)); append(UInt32(36 + size)); out.append(contentsOf: Array("WAVEfmt ".utf8))
        append(UInt32(16)); append(UInt16(encoding == .float32 ? 3 : 1)); append(UInt16(channels))
        append(UInt32(rate)); append(UInt32(rate * channels * width)); append(UInt16(channels * width)); append(UInt16(width * 8))
        out.append(contentsOf: Array("data".utf8)); append(UInt32(size))
        switch encoding {
        case .float32:
            for x in samples { append(x.bitPattern) }
        case .pcm16:
            for x in samples { append(Int16(max(-32768, min(32767, (x * 32768).rounded())))) }
        }
        return out
    }
}
