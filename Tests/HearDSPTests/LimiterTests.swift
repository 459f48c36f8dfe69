import Foundation
import HearDSP
import Testing
import TestSupport

@Suite struct LimiterTests {
    @Test(arguments: allRates)
    func lookaheadIsAtMostOneMillisecond(rate: Double) {
        let limiter = Limiter(sampleRate: rate, channels: 1, values: values())
        #expect(limiter.lookahead >= 1)
        #expect(Double(limiter.lookahead) <= rate * 0.001)
    }

    @Test func aMinuteOfSpeechDriven12dBIntoItNeverExceedsTheCeiling() {
        let rate = 48000.0
        // Speech peaking at -1 dBFS, +12 dB of gain ahead of the limiter: peaks 11 dB over the ceiling.
        var chain = Chain(sampleRate: rate, channels: 2, values: values(allOff: true, [.limitEnable: 1, .gain: 12]))
        let left = Signals.speechLike(rate: rate, seconds: 60, peak: 0.89, seed: 11)
        let right = Signals.speechLike(rate: rate, seconds: 60, peak: 0.89, seed: 12)
        let (outLeft, outRight) = process(&chain, left, right, blocks: Signals.blocks(total: left.count, size: 0))
        let ceiling = Float(pow(10, -1.0 / 20))
        let top = max(Signals.peak(outLeft[...]), Signals.peak(outRight[...]))
        #expect(top <= ceiling)
        // And it limits rather than silences: loud passages sit near the ceiling.
        #expect(top > ceiling * 0.97)
        print("limiter: input peak +11 dB over the ceiling, output peak \(20 * log10(Double(top))) dBFS")
    }

    @Test(arguments: allRates)
    func everyRateHoldsTheCeilingOnPeakyInput(rate: Double) {
        var limiter = Limiter(sampleRate: rate, channels: 1, values: values([.limitCeiling: -6]))
        var signal = Signals.whiteNoise(count: Int(rate), amplitude: 0.2, seed: 3)
        for k in stride(from: 100, to: signal.count, by: 997) { signal[k] = k % 2 == 0 ? 8 : -8 }
        signal.withUnsafeMutableBufferPointer { limiter.process($0.baseAddress!, nil, count: $0.count) }
        #expect(Signals.peak(signal[...]) <= Float(pow(10, -6.0 / 20)))
    }

    @Test func belowTheCeilingItIsAPureDelay() {
        var limiter = Limiter(sampleRate: 48000, channels: 1, values: values())
        let input = Signals.whiteNoise(count: 48000, amplitude: 0.5, seed: 4)
        var output = input
        output.withUnsafeMutableBufferPointer { limiter.process($0.baseAddress!, nil, count: $0.count) }
        #expect(Array(output[48...]) == Array(input[..<(input.count - 48)]))
        #expect(limiter.lookahead == 48)
    }
}
