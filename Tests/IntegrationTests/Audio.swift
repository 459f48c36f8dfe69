// Test audio on disk: WAV files to play (32-bit float) and to read back from pw-record and parec
// (float or 16-bit, plain or extensible headers, sizes possibly unset by a recorder that was
// stopped by a signal), and the level of what came back.

import Foundation
import Testing
import TestSupport

struct Recording {
    var rate: Int
    var channels: Int
    /// Interleaved samples.
    var samples: [Float]

    func channel(_ index: Int) -> [Float] {
        stride(from: index, to: samples.count, by: channels).map { samples[$0] }
    }
}

enum WAVFile {
    static func write(_ channels: [[Float]], rate: Int, to url: URL) throws {
        let frames = channels[0].count, count = channels.count
        var data = Data()
        func append<T: FixedWidthInteger>(_ value: T) { withUnsafeBytes(of: value.littleEndian) { data.append(contentsOf: $0) } }
        let bytes = frames * count * 4
        data.append(contentsOf: Array("RIFF".utf8)); append(UInt32(36 + bytes))
        data.append(contentsOf: Array("WAVEfmt ".utf8)); append(UInt32(16)); append(UInt16(3)); append(UInt16(count))
        append(UInt32(rate)); append(UInt32(rate * count * 4)); append(UInt16(count * 4)); append(UInt16(32))
        data.append(contentsOf: Array("data".utf8)); append(UInt32(bytes))
        for frame in 0..<frames {
            for channel in 0..<count { append(channels[channel][frame].bitPattern) }
        }
        try data.write(to: url)
    }

    static func read(_ url: URL) throws -> Recording {
        let data = try Data(contentsOf: url)
        func u16(_ at: Int) -> Int { Int(data[at]) | Int(data[at + 1]) << 8 }
        func u32(_ at: Int) -> Int { u16(at) | u16(at + 2) << 16 }
        guard data.count >= 44, data[0..<4].elementsEqual("RIFF".utf8), data[8..<12].elementsEqual("WAVE".utf8) else {
            throw IntegrationError("\(url.path) is not a WAV file (\(data.count) bytes)")
        }
        var offset = 12, format = 0, channels = 0, rate = 0, bits = 0
        while offset + 8 <= data.count {
            let id = String(decoding: data[offset..<offset + 4], as: UTF8.self), size = u32(offset + 4)
            let body = offset + 8
            if id == "fmt " {
                format = u16(body); channels = u16(body + 2); rate = u32(body + 4); bits = u16(body + 14)
                if format == 0xFFFE { format = u16(body + 24) }  // WAVE_FORMAT_EXTENSIBLE: the sub-format's tag
            } else if id == "data" {
                // A recorder stopped by a signal may leave the size at 0 or "unknown": take the rest of the file.
                let end = (size == 0 || size == 0xFFFF_FFFF || body + size > data.count) ? data.count : body + size
                guard channels > 0 else { throw IntegrationError("\(url.path): data before fmt") }
                var samples: [Float] = []
                switch (format, bits) {
                case (3, 32):
                    samples.reserveCapacity((end - body) / 4)
                    var at = body
                    while at + 4 <= end { samples.append(Float(bitPattern: UInt32(u32(at)))); at += 4 }
                case (1, 16):
                    samples.reserveCapacity((end - body) / 2)
                    var at = body
                    while at + 2 <= end { samples.append(Float(Int16(truncatingIfNeeded: u16(at))) / 32768); at += 2 }
                default:
                    throw IntegrationError("\(url.path): unsupported WAV format \(format)/\(bits) bits")
                }
                samples.removeLast(samples.count % channels)
                return Recording(rate: rate, channels: channels, samples: samples)
            }
            offset = body + size + (size & 1)
        }
        throw IntegrationError("\(url.path): no data chunk")
    }
}

enum Level {
    /// The steady level of a recorded tone, in dBFS RMS: the span where the signal is present,
    /// less 0.5 s at each end, cut into 50 ms windows; the median window, so that a dropout on a
    /// busy machine does not move the result.
    static func steady(_ samples: [Float], rate: Int) throws -> Double {
        let threshold: Float = 0.001  // -60 dBFS
        guard let first = samples.firstIndex(where: { abs($0) > threshold }),
              let last = samples.lastIndex(where: { abs($0) > threshold }) else {
            throw IntegrationError("the recording is silent (\(samples.count) samples)")
        }
        let start = first + rate / 2, end = last - rate / 2, window = rate / 20
        guard end - start >= window * 4 else {
            throw IntegrationError("the recording holds only \(Double(last - first) / Double(rate)) s of signal")
        }
        let levels = stride(from: start, to: end - window, by: window).map {
            Signals.rms(samples[$0..<($0 + window)])
        }.sorted()
        return Signals.dB(levels[levels.count / 2])
    }

    /// dBFS RMS of everything between the first and last 0.5 s.
    static func overall(_ samples: [Float], rate: Int) -> Double {
        guard samples.count > rate * 2 else { return -.infinity }
        return Signals.dB(Signals.rms(samples[(rate / 2)..<(samples.count - rate / 2)]))
    }
}

extension Recording {
    /// Expects `processed` to be `gain` dB louder than this bypassed recording (steady levels), on
    /// every channel or the given ones. The stand-in devices pass the -20 dBFS-peak test tone
    /// untouched, so the bypassed level itself is known: -23.01 dBFS RMS.
    func expectLouder(_ processed: Recording, by gain: Double, _ what: String, onChannels: [Int]? = nil,
                      sourceLocation: SourceLocation = #_sourceLocation) throws {
        for channel in onChannels ?? Array(0..<channels) {
            let reference = try Level.steady(self.channel(channel), rate: rate)
            let level = try Level.steady(processed.channel(channel), rate: processed.rate)
            #expect(abs(reference - -23.01) < 0.5, "channel \(channel) bypassed: \(reference) dBFS",
                    sourceLocation: sourceLocation)
            #expect(abs(level - reference - gain) < 0.5,
                    "channel \(channel): bypassed \(reference) dBFS, \(what): \(level) dBFS", sourceLocation: sourceLocation)
        }
    }
}
