// Test signals and measurements shared by the test targets. Deterministic: every generator is seeded.

import Foundation
import HearctlCore
import HearControl
import HearDSP

/// The tests' one random generator: a 32-bit linear congruential generator (Numerical Recipes'
/// constants), small and the same on every machine. An LCG's low bits repeat with short periods,
/// so only the high bits of each step are used. The noise suppressor's bounds were measured on
/// this sequence (`bipolar()`), so a different generator would move them.
public struct SeededRandom: RandomNumberGenerator {
    var state: UInt32
    public init(seed: UInt64) { state = UInt32(truncatingIfNeeded: seed) }

    mutating func step() -> UInt32 {
        state = state &* 1_664_525 &+ 1_013_904_223
        return state
    }

    /// 64 bits from four steps, the high 16 bits of each.
    public mutating func next() -> UInt64 {
        var value: UInt64 = 0
        for _ in 0..<4 { value = value << 16 | UInt64(step() >> 16) }
        return value
    }

    /// Uniform in [0, 1), in steps of 2^-24.
    public mutating func unit() -> Double { Double(step() >> 8) / Double(1 << 24) }

    /// Uniform in [-1, 1), in steps of 2^-23.
    public mutating func bipolar() -> Float { Float(step() >> 8) / Float(1 << 24) * 2 - 1 }
}

public enum Signals {
    public static func sine(frequency: Double, rate: Double, seconds: Double, amplitude: Float) -> [Float] {
        let count = Int(seconds * rate)
        return (0..<count).map { amplitude * Float(sin(2 * .pi * frequency * Double($0) / rate)) }
    }

    /// Square wave: its magnitude is constant, so a peak detector sees one steady level.
    public static func square(frequency: Double, rate: Double, seconds: Double, amplitude: Float) -> [Float] {
        let count = Int(seconds * rate)
        let period = rate / frequency
        return (0..<count).map { (Double($0).truncatingRemainder(dividingBy: period) < period / 2) ? amplitude : -amplitude }
    }

    public static func whiteNoise(count: Int, amplitude: Float, seed: UInt64) -> [Float] {
        var random = SeededRandom(seed: seed)
        return (0..<count).map { _ in amplitude * random.bipolar() }
    }

    /// A voiced, speech-like signal: a gliding harmonic source (f0 100-220 Hz) with falling
    /// harmonic weights, shaped by a syllable-rate envelope (about 4 Hz) with pauses, peaking
    /// near `peak` (linear).
    public static func speechLike(rate: Double, seconds: Double, peak: Float, seed: UInt64) -> [Float] {
        var random = SeededRandom(seed: seed)
        let count = Int(seconds * rate)
        var out = [Float](repeating: 0, count: count)
        var phase = 0.0
        var syllableStart = 0, syllableLength = Int(0.2 * rate), syllableLevel: Float = 1
        var f0 = 150.0
        for n in 0..<count {
            if n - syllableStart >= syllableLength {
                syllableStart = n
                syllableLength = Int((0.12 + 0.2 * Double(random.bipolar() + 1) / 2) * rate)
                syllableLevel = random.bipolar() < -0.6 ? 0 : 0.3 + 0.7 * (random.bipolar() + 1) / 2
                f0 = 100 + 120 * Double(random.bipolar() + 1) / 2
            }
            let position = Double(n - syllableStart) / Double(syllableLength)
            let envelope = Float(sin(.pi * position)) * syllableLevel
            phase += 2 * .pi * f0 * (1 + 0.03 * sin(2 * .pi * 5 * Double(n) / rate)) / rate
            var x = 0.0
            var harmonic = 1.0
            while harmonic * f0 < min(4000, rate * 0.45) {
                x += sin(harmonic * phase) / harmonic
                harmonic += 1
            }
            out[n] = Float(x) * envelope
        }
        let top = out.map(abs).max() ?? 1
        return out.map { $0 / top * peak }
    }

    /// Amplitude of the `frequency` component (a sine and cosine fit; see HearctlCore's ToneLevel).
    public static func amplitude(of samples: ArraySlice<Float>, frequency: Double, rate: Double) -> Double {
        ToneLevel.amplitude(of: samples, frequency: frequency, rate: rate)
    }

    public static func rms(_ samples: ArraySlice<Float>) -> Double {
        guard !samples.isEmpty else { return 0 }
        return (samples.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(samples.count)).squareRoot()
    }

    public static func peak(_ samples: ArraySlice<Float>) -> Float { samples.map(abs).max() ?? 0 }

    public static func dB(_ ratio: Double) -> Double { 20 * log10(ratio) }

    /// The largest step between neighbouring samples: a click shows up as a step no smooth signal makes.
    public static func largestStep(_ samples: ArraySlice<Float>) -> Float {
        var top: Float = 0
        var previous = samples.first ?? 0
        for x in samples.dropFirst() {
            top = max(top, abs(x - previous))
            previous = x
        }
        return top
    }

    /// Block sizes that cover `total`: the given size repeated, or seeded random sizes in 1...4096 for 0.
    public static func blocks(total: Int, size: Int, seed: UInt64 = 7) -> [Int] {
        var random = SeededRandom(seed: seed)
        var sizes: [Int] = []
        var left = total
        while left > 0 {
            let next = size > 0 ? size : 1 + Int(random.next() % 4096)
            sizes.append(min(next, left))
            left -= next
        }
        return sizes
    }
}
