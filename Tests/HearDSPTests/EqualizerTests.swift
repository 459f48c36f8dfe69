import Foundation
import HearDSP
import Testing
import TestSupport

/// The cookbook's transfer functions, written out independently of the plugin, as the reference.
enum Reference {
    /// |H(e^jw)| in dB of b0 + b1 z^-1 + b2 z^-2 over a0 + a1 z^-1 + a2 z^-2.
    static func magnitudeDB(_ b: [Double], _ a: [Double], _ w: Double) -> Double {
        func power(_ c: [Double]) -> Double {
            let re = c[0] + c[1] * cos(w) + c[2] * cos(2 * w)
            let im = c[1] * sin(w) + c[2] * sin(2 * w)
            return re * re + im * im
        }
        return 10 * log10(power(b) / power(a))
    }

    static func highPassDB(f0: Double, f: Double, rate: Double) -> Double {
        let w0 = 2 * .pi * f0 / rate, alpha = sin(w0) / (2 * sqrt(0.5)), c = cos(w0)
        return magnitudeDB([(1 + c) / 2, -(1 + c), (1 + c) / 2], [1 + alpha, -2 * c, 1 - alpha], 2 * .pi * f / rate)
    }

    static func peakDB(f0: Double, gain: Double, q: Double, f: Double, rate: Double) -> Double {
        let a = pow(10, gain / 40), w0 = 2 * .pi * f0 / rate, alpha = sin(w0) / (2 * q), c = cos(w0)
        return magnitudeDB([1 + alpha * a, -2 * c, 1 - alpha * a], [1 + alpha / a, -2 * c, 1 - alpha / a], 2 * .pi * f / rate)
    }

    static func shelfDB(high: Bool, f0: Double, gain: Double, f: Double, rate: Double) -> Double {
        let a = pow(10, gain / 40), w0 = 2 * .pi * f0 / rate, c = cos(w0)
        let alpha = sin(w0) / 2 * sqrt(2.0), r = 2 * sqrt(a) * alpha, s: Double = high ? -1 : 1
        let b = [a * ((a + 1) - s * (a - 1) * c + r), s * 2 * a * ((a - 1) - s * (a + 1) * c), a * ((a + 1) - s * (a - 1) * c - r)]
        let den = [(a + 1) + s * (a - 1) * c + r, -s * 2 * ((a - 1) + s * (a + 1) * c), (a + 1) + s * (a - 1) * c - r]
        return magnitudeDB(b, den, 2 * .pi * f / rate)
    }
}

@Suite struct EqualizerTests {
    static let shaped: [Parameter: Float] = [
        .eqHighPassFrequency: 100, .eqLowShelfFrequency: 250, .eqLowShelfGain: 4,
        .eqPeak1Frequency: 600, .eqPeak1Gain: -5, .eqPeak1Q: 1.4, .eqPeak2Frequency: 1800, .eqPeak2Gain: 6,
        .eqPeak2Q: 2, .eqPeak3Frequency: 3500, .eqPeak3Gain: 3, .eqPeak3Q: 0.7,
        .eqHighShelfFrequency: 7000, .eqHighShelfGain: -4,
    ]

    /// The analytic response of the shaped EQ at `f` (corners held below 0.45 x rate, as the EQ does).
    static func analyticDB(_ f: Double, rate: Double) -> Double {
        func corner(_ p: Parameter) -> Double { min(Double(shaped[p]!), 0.45 * rate) }
        func value(_ p: Parameter) -> Double { Double(shaped[p]!) }
        return Reference.highPassDB(f0: corner(.eqHighPassFrequency), f: f, rate: rate)
            + Reference.shelfDB(high: false, f0: corner(.eqLowShelfFrequency), gain: value(.eqLowShelfGain), f: f, rate: rate)
            + Reference.peakDB(f0: corner(.eqPeak1Frequency), gain: value(.eqPeak1Gain), q: value(.eqPeak1Q), f: f, rate: rate)
            + Reference.peakDB(f0: corner(.eqPeak2Frequency), gain: value(.eqPeak2Gain), q: value(.eqPeak2Q), f: f, rate: rate)
            + Reference.peakDB(f0: corner(.eqPeak3Frequency), gain: value(.eqPeak3Gain), q: value(.eqPeak3Q), f: f, rate: rate)
            + Reference.shelfDB(high: true, f0: corner(.eqHighShelfFrequency), gain: value(.eqHighShelfGain), f: f, rate: rate)
    }

    @Test(arguments: allRates)
    func measuredResponseMatchesTheAnalyticResponse(rate: Double) {
        let top = 0.45 * rate, bottom = 30.0
        let frequencies = (0..<20).map { bottom * pow(top / bottom, Double($0) / 19) }
        var worst = 0.0
        for f in frequencies {
            var eq = Equalizer(sampleRate: rate, channels: 1, ticksPerSecond: 1500, values: values(Self.shaped))
            // Settle for 0.3 s (the 30 Hz high-pass skirt rings longest), then measure over 0.2 s.
            var signal = Signals.sine(frequency: f, rate: rate, seconds: 0.5, amplitude: 0.25)
            signal.withUnsafeMutableBufferPointer { eq.process($0.baseAddress!, nil, count: $0.count) }
            let settled = Int(0.3 * rate)
            let measured = Signals.dB(Signals.amplitude(of: signal[settled...], frequency: f, rate: rate) / 0.25)
            let expected = Self.analyticDB(f, rate: rate)
            #expect(abs(measured - expected) < 0.1, "at \(f) Hz: measured \(measured) dB, analytic \(expected) dB")
            #expect(abs(eq.responseDB(atFrequency: f) - expected) < 0.01)
            worst = max(worst, abs(measured - expected))
        }
        print("EQ at \(rate) Hz: worst deviation from the analytic response \(worst) dB")
    }

    @Test func flatSettingsPassAudioThroughUntouched() {
        var eq = Equalizer(sampleRate: 48000, channels: 1, ticksPerSecond: 1500, values: values([.eqHighPassEnable: 0]))
        #expect(eq.isFlat)
        let input = Signals.whiteNoise(count: 4800, amplitude: 0.5, seed: 1)
        var output = input
        output.withUnsafeMutableBufferPointer { eq.process($0.baseAddress!, nil, count: $0.count) }
        #expect(output == input)
    }

    @Test func coefficientsAreRecomputedOnlyWhileAParameterMoves() {
        var eq = Equalizer(sampleRate: 48000, channels: 1, ticksPerSecond: 1500, values: values([.eqHighPassEnable: 0]))
        #expect(eq.isSettled)
        eq.set(values([.eqHighPassEnable: 0, .eqPeak2Gain: 12]))
        eq.tick()
        #expect(!eq.isSettled)
        // One step of a 20 ms glide at 1500 ticks/s, not the whole 12 dB at once.
        let firstStep = eq.responseDB(atFrequency: 1500)
        #expect(firstStep > 0.2 && firstStep < 1.0, "\(firstStep)")
        var ticks = 1
        while !eq.isSettled && ticks < 10_000 { eq.tick(); ticks += 1 }
        #expect(eq.isSettled)
        #expect(abs(eq.responseDB(atFrequency: 1500) - 12) < 1e-6)
        // 12 dB down to 1e-4 dB with a 20 ms time constant: about 0.23 s.
        #expect(ticks > 250 && ticks < 500, "\(ticks) ticks")
    }

    @Test func aLargeEQChangeMakesNoClick() {
        let rate = 48000.0
        var chain = Chain(sampleRate: rate, channels: 1, values: values(allOff: true, [.eqEnable: 1, .eqHighPassEnable: 0]))
        let input = Signals.sine(frequency: 1500, rate: rate, seconds: 1, amplitude: 0.1)
        let half = input.count / 2
        var (before, _) = process(&chain, Array(input[..<half]))
        chain.apply(values(allOff: true, [.eqEnable: 1, .eqHighPassEnable: 0, .eqPeak2Gain: 12, .eqPeak2Frequency: 1500]))
        let (after, _) = process(&chain, Array(input[half...]))
        before += after
        // The largest step anywhere is no larger than the boosted sine's own largest step.
        let steady = Signals.largestStep(before[(before.count - 4800)...])
        #expect(Signals.largestStep(before[...]) <= steady * 1.001)
        #expect(abs(Signals.dB(Double(Signals.peak(before[(before.count - 4800)...])) / 0.1) - 12) < 0.1)
    }
}
