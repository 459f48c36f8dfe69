// WAV files the tests play and feed hosts (through HearctlCore's one writer, WAV.bytes) and read back
// from pw-record, parec and applyplugin.

import Foundation
import HearctlCore

public struct WAVError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

public struct WAVAudio: Sendable {
    public var rate: Int
    public var channels: Int
    /// Interleaved samples.
    public var samples: [Float]

    public init(rate: Int, channels: Int, samples: [Float]) {
        self.rate = rate
        self.channels = channels
        self.samples = samples
    }

    public func channel(_ index: Int) -> [Float] {
        stride(from: index, to: samples.count, by: channels).map { samples[$0] }
    }
}

public enum WAVFile {
    /// `channels` (each one's samples) as a WAV file at `url`, 32-bit float unless told otherwise.
    public static func write(_ channels: [[Float]], rate: Int, to url: URL, encoding: WAV.Encoding = .float32) throws {
        let frames = channels[0].count
        var interleaved = [Float](repeating: 0, count: frames * channels.count)
        for (c, samples) in channels.enumerated() {
            for frame in 0..<frames { interleaved[frame * channels.count + c] = samples[frame] }
        }
        try Data(WAV.bytes(interleaved, channels: channels.count, rate: rate, encoding: encoding)).write(to: url)
    }

    /// A WAV file read back: 32-bit float or 16-bit PCM, plain or extensible headers, a data size
    /// left unset by a recorder stopped by a signal (then the rest of the file).
    public static func read(_ url: URL) throws -> WAVAudio {
        let data = try Data(contentsOf: url)
        func u16(_ at: Int) -> Int { Int(data[at]) | Int(data[at + 1]) << 8 }
        func u32(_ at: Int) -> Int { u16(at) | u16(at + 2) << 16 }
        guard data.count >= 44, data[0..<4].elementsEqual("RIFF".utf8), data[8..<12].elementsEqual("WAVE".utf8) else {
            throw WAVError("\(url.path) is not a WAV file (\(data.count) bytes)")
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
                guard channels > 0 else { throw WAVError("\(url.path): data before fmt") }
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
                    throw WAVError("\(url.path): unsupported WAV format \(format)/\(bits) bits")
                }
                samples.removeLast(samples.count % channels)
                return WAVAudio(rate: rate, channels: channels, samples: samples)
            }
            offset = body + size + (size & 1)
        }
        throw WAVError("\(url.path): no data chunk")
    }
}
