// The chain's gain cap (mb.maxgain) against the equalizer's boosts.

import HearDSP
import Testing
import TestSupport

/// The gain cap (mb.maxgain) is set on the equalizer's real peak, not on the sum of its boosts:
/// boosting bands never makes a tone quieter than the flat equalizer leaves it, and whatever the
/// boosts, the EQ's peak plus the output gain stays within the cap.
@Suite struct GainCapTests {
    static func toneLevelDB(_ settings: ParameterValues, frequency: Double, rate: Double) -> Double {
        var chain = Chain(sampleRate: rate, channels: 1, values: settings)
        let tone = Signals.sine(frequency: frequency, rate: rate, seconds: 0.5, amplitude: 0.01)
        let (out, _) = process(&chain, tone)
        return Signals.dB(Signals.amplitude(of: out[Int(rate * 0.25)...], frequency: frequency, rate: rate) / 0.01)
    }

    @Test(arguments: [6.0, 12, 18])
    func boostingTheEqualizerNeverMakesAToneQuieter(boost: Double) {
        let rate = 48000.0
        let flat = values(allOff: true, [.eqEnable: 1])
        var boosted = flat
        for band in [Parameter.eqLowShelfGain, .eqPeak1Gain, .eqPeak2Gain, .eqPeak3Gain, .eqHighShelfGain] { boosted[band] = Float(boost) }
        for frequency in [250.0, 1000, 2000, 4000, 8000] {
            let before = Self.toneLevelDB(flat, frequency: frequency, rate: rate)
            let after = Self.toneLevelDB(boosted, frequency: frequency, rate: rate)
            #expect(after >= before - 0.1, "+\(boost) dB on five bands: \(frequency) Hz from \(before) to \(after) dB")
        }
        let chain = Chain(sampleRate: rate, channels: 1, values: boosted)
        let peak = chain.equalizer.targetPeakDB()
        let outputDB = Signals.dB(chain.outputGain.target)
        #expect(peak + outputDB <= Double(boosted[.mbMaxGain]) + 0.01, "EQ peak \(peak) dB, output gain \(outputDB) dB")
    }

    @Test func theEqualizerPeakIsItsDesignedResponse() {
        var settings = values(allOff: true, [.eqEnable: 1, .eqHighPassEnable: 0])
        settings[.eqPeak2Gain] = 12
        settings[.eqPeak2Q] = 4
        let chain = Chain(sampleRate: 48000, channels: 1, values: settings)
        // One narrow band: its peak is its gain, at its frequency (between grid points).
        #expect(abs(chain.equalizer.targetPeakDB() - 12) < 0.01)
        #expect(abs(chain.equalizer.responseDB(atFrequency: 1500) - 12) < 0.01)
    }
}
