// The level of what came back from pw-record and parec (TestSupport's WAVFile reads it).

import Foundation
import Testing
import TestSupport

enum Level {
    /// The steady level of a recorded tone, in dBFS RMS: the span where the signal is present,
    /// less 0.5 s at each end, cut into 50 ms windows; the median window, so that a dropout on a
    /// busy machine does not move the result.
    static func steady(_ samples: [Float], rate: Int) throws -> Double {
        let threshold: Float = 0.001  // -60 dBFS
        guard let first = samples.firstIndex(where: { abs($0) > threshold }),
              let last = samples.lastIndex(where: { abs($0) > threshold }) else {
            throw TestFailure("the recording is silent (\(samples.count) samples)")
        }
        let start = first + rate / 2, end = last - rate / 2, window = rate / 20
        guard end - start >= window * 4 else {
            throw TestFailure("the recording holds only \(Double(last - first) / Double(rate)) s of signal")
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

extension WAVAudio {
    /// Expects `processed` to be `gain` dB louder than this bypassed recording (steady levels), on
    /// every channel or the given ones. The stand-in devices pass the -20 dBFS-peak test tone
    /// untouched, so the bypassed level itself is known: -23.01 dBFS RMS.
    func expectLouder(_ processed: WAVAudio, by gain: Double, _ what: String, onChannels: [Int]? = nil,
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
