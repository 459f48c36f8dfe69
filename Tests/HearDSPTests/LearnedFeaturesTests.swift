// The learned model's inputs that do not come from the classical estimator (LearnedGains.swift):
// each band's pitch correlation (a voice's harmonics repeat after one period, noise does not) and
// its level read against its running mean (a microphone's gain does not move it for long).

import Testing
import TestSupport
import HearDSP

@Suite struct LearnedFeaturesTests {
    static let bands = SpeechBandLayout.count

    /// The features of every model step over `signal` (mono, at `rate`), as hear-features records them.
    static func features(_ signal: [Float], rate: Double) -> [[Float]] {
        var suppressor = NoiseSuppressor(sampleRate: rate, channels: 1, values: ParameterValues())
        suppressor.recordsFeatures = true
        var rows: [[Float]] = []
        var samples = signal
        let hop = suppressor.hop
        var steps = 0
        samples.withUnsafeMutableBufferPointer { buffer in
            var start = 0
            while start + hop <= buffer.count {
                suppressor.process(buffer.baseAddress! + start, nil, count: hop)
                if suppressor.modelSteps != steps {
                    steps = suppressor.modelSteps
                    rows.append(Array(UnsafeBufferPointer(start: suppressor.features, count: NoiseSuppressor.featureCount)))
                }
                start += hop
            }
        }
        return rows
    }

    /// The bands whose centres lie from `low` to `high` Hz.
    static func bands(from low: Double, to high: Double) -> [Int] {
        (0..<bands).filter { SpeechBandLayout.centre($0) >= low && SpeechBandLayout.centre($0) <= high }
    }

    /// Mean pitch correlation over `bandList` and over the rows after `skip` seconds where `keep` holds.
    static func meanCorrelation(_ rows: [[Float]], rate: Double, bands bandList: [Int], skipSeconds: Double = 0.5,
                                keep: (Int) -> Bool = { _ in true }) -> Float {
        let hopSeconds = Double(NoiseSuppressor.hop(sampleRate: rate)) / rate
        let first = Int(skipSeconds / hopSeconds)
        var sum: Float = 0, count = 0
        for (index, row) in rows.enumerated() where index >= first && keep(index) {
            for b in bandList { sum += row[4 * bands + b]; count += 1 }
        }
        return sum / Float(max(count, 1))
    }

    /// A voice gliding between 110 and 190 Hz (SignalMaker.speech) against white noise: the voice's
    /// bands to 2 kHz correlate at its pitch while it sounds (0.90-0.96 measured), the noise's far
    /// less (0.17-0.19: frames a pitch period apart share most of their samples, and the lag is the
    /// best of several).
    @Test(arguments: [16000.0, 48000.0, 96000.0])
    func aVoicesHarmonicsCorrelateAtItsPitchAndNoiseDoesNot(rate: Double) {
        let count = Int(rate * 4)
        let (voice, envelope) = SignalMaker.speech(rate: rate, count: count)
        var maker = SignalMaker(seed: 5)
        let noise = maker.white(count).map { 0.05 * $0 }
        let low = Self.bands(from: 200, to: 2000)
        let hop = NoiseSuppressor.hop(sampleRate: rate)
        // Frames in the middle of a syllable (the envelope above 0.7 at the frame's end).
        let voiced = { (index: Int) in envelope[min((index + 1) * hop - 1, count - 1)] > 0.7 }
        let voiceCorrelation = Self.meanCorrelation(Self.features(voice, rate: rate), rate: rate, bands: low, keep: voiced)
        let noiseCorrelation = Self.meanCorrelation(Self.features(noise, rate: rate), rate: rate, bands: low)
        print("pitch correlation at \(rate) Hz, 200 Hz-2 kHz: voice \(voiceCorrelation), white noise \(noiseCorrelation)")
        #expect(voiceCorrelation > 0.8, "voice \(voiceCorrelation) at \(rate) Hz")
        #expect(abs(noiseCorrelation) < 0.3, "noise \(noiseCorrelation) at \(rate) Hz")
    }

    /// Pink noise that steps up by 20 dB: each band's level feature jumps by 20 dB / 20 = 1 and goes
    /// back to 0 over the running mean's 3 s; the frame's level feature moves by 1 and stays.
    @Test(arguments: [16000.0, 48000.0])
    func aLevelStepIsReadAgainstTheRunningMeanAndForgotten(rate: Double) {
        let count = Int(rate * 24)
        var maker = SignalMaker(seed: 9)
        let pink = maker.pink(count)
        let step = count / 2
        let signal = pink.enumerated().map { $0.offset < step ? 0.01 * $0.element : 0.1 * $0.element }
        let rows = Self.features(signal, rate: rate)
        let hopSeconds = Double(NoiseSuppressor.hop(sampleRate: rate)) / rate
        func row(at seconds: Double) -> [Float] { rows[Int(seconds / hopSeconds)] }
        // Bands with bins at both rates and enough of them that one frame's level varies little.
        let checked = Self.bands(from: 1000, to: 6000)
        func mean(_ values: [Float]) -> Float { values.reduce(0, +) / Float(values.count) }
        func bandLevels(at seconds: Double) -> Float {
            mean((0..<20).flatMap { i in checked.map { row(at: seconds + Double(i) * 0.01)[$0] } })
        }
        func frameLevel(at seconds: Double) -> Float { mean((0..<20).map { row(at: seconds + Double($0) * 0.01)[5 * Self.bands + 2] }) }
        let settled = bandLevels(at: 11.5), jumped = bandLevels(at: 12.05), forgotten = bandLevels(at: 23.5)
        let frameRise = frameLevel(at: 12.5) - frameLevel(at: 11.5)
        print("level feature at \(rate) Hz: settled \(settled), after the step \(jumped), 11.5 s later \(forgotten); frame level +\(frameRise)")
        #expect(abs(settled) < 0.1, "settled \(settled)")
        #expect(abs(jumped - 1) < 0.15, "after the step \(jumped)")
        #expect(abs(forgotten) < 0.1, "11.5 s later \(forgotten)")
        #expect(abs(frameRise - 1) < 0.05, "frame level rose \(frameRise)")
    }
}
