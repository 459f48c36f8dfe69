// What `hearctl fit` shows beside the prescription: the gain the chain delivers at each audiogram
// frequency, measured by running tones through the chain itself.

import ArgumentParser
import Foundation
import HearctlCore
import HearControl
import HearDSP
import HearSystem

/// One ear's fit with what the filter delivers, at the audiogram frequencies.
struct FittedEar {
    let name: String
    let fit: EarFit
    /// At `Audiogram.frequencies`: threshold (dB HL), prescribed and target gain, delivered gain
    /// (nil above the chain's Nyquist frequency).
    let thresholds: [Double]
    let prescribed: [Double]
    let targets: [Double]
    let delivered: [Double?]
}

enum Delivery {
    /// The gain (dB) the chain delivers at each audiogram frequency, per ear: one tone at each,
    /// -50 dBFS apiece, run through a Chain with `values` (noise suppression off: a steady tone is
    /// what it removes), each tone read back by a least-squares fit over 200 ms, a whole number of
    /// periods of all of them (they are multiples of 250 Hz), so they do not leak into each other.
    static func measure(_ values: ParameterValues, rate: Double) -> [(left: Double?, right: Double?)] {
        var settings = values
        settings[.nsEnable] = 0
        settings[.bypass] = 0
        var chain = Chain(sampleRate: rate, channels: 2, values: settings)
        let frequencies = Audiogram.frequencies.filter { $0 < 0.45 * rate }
        let level = Decibels.toGain(-50)
        let count = Int(0.35 * rate), window = Int(0.2 * rate)
        let input = (0..<count).map { n in
            Float(frequencies.reduce(0.0) { $0 + level * sin(2 * .pi * $1 * Double(n) / rate + $1 / 1000) })
        }
        var left = [Float](repeating: 0, count: count), right = [Float](repeating: 0, count: count)
        input.withUnsafeBufferPointer { x in
            left.withUnsafeMutableBufferPointer { l in
                right.withUnsafeMutableBufferPointer { r in
                    chain.process(inLeft: x.baseAddress!, inRight: x.baseAddress!, outLeft: l.baseAddress!,
                                  outRight: r.baseAddress!, frames: count)
                }
            }
        }
        let tail = (count - window)..<count
        return Audiogram.frequencies.map { frequency in
            guard frequencies.contains(frequency) else { return (nil, nil) }
            let reference = amplitude(of: input[tail], frequency, rate)
            return (Decibels.fromGain(amplitude(of: left[tail], frequency, rate) / reference),
                    Decibels.fromGain(amplitude(of: right[tail], frequency, rate) / reference))
        }
    }

    static func amplitude(of samples: ArraySlice<Float>, _ frequency: Double, _ rate: Double) -> Double {
        max(ToneLevel.amplitude(of: samples, frequency: frequency, rate: rate), 1e-30)
    }
}
