import Foundation
import HearDSP
import Testing
import TestSupport

@Suite struct ChainTests {
    /// A signal that keeps every stage busy: speech-like bursts with a loud passage and a hum.
    static func busySignal(rate: Double, seconds: Double, seed: UInt64) -> [Float] {
        let speech = Signals.speechLike(rate: rate, seconds: seconds, peak: 0.9, seed: seed)
        let noise = Signals.whiteNoise(count: speech.count, amplitude: 0.01, seed: seed + 1)
        return zip(speech, noise).enumerated().map { n, pair in
            let loud: Float = n > speech.count / 3 && n < speech.count / 2 ? 3 : 1
            return (pair.0 * loud + pair.1 + 0.05 * Float(sin(2 * .pi * 50 * Double(n) / rate)))
        }
    }

    @Test(arguments: [1, 2])
    func outputDoesNotDependOnBlockSizes(channels: Int) {
        let rate = 48000.0
        let left = Self.busySignal(rate: rate, seconds: 3, seed: 21)
        let right = channels == 2 ? Self.busySignal(rate: rate, seconds: 3, seed: 31) : nil
        var reference: ([Float], [Float])?
        for size in [1, 7, 64, 256, 1000, 4096, 0] {
            var chain = Chain(sampleRate: rate, channels: channels, values: values([.eqLowShelfGain: 3, .compMakeup: 4]))
            let result = process(&chain, left, right, blocks: Signals.blocks(total: left.count, size: size))
            guard let reference else { reference = result; continue }
            #expect(result.0 == reference.0, "block size \(size)")
            #expect(result.1 == reference.1, "block size \(size)")
        }
    }

    @Test(arguments: allRates)
    func everyRateRunsWithItsLatency(rate: Double) {
        var chain = Chain(sampleRate: rate, channels: 2)
        #expect(chain.latency == NoiseSuppressor.latency(sampleRate: rate) + Int(rate * 0.001))
        let left = Self.busySignal(rate: rate, seconds: 1, seed: 41)
        let (out, outRight) = process(&chain, left, left)
        #expect(out.allSatisfy { $0.isFinite })
        #expect(out == outRight)
        #expect(Signals.peak(out[...]) <= Float(pow(10, -1.0 / 20)))
        #expect(Signals.rms(out[...]) > Signals.rms(left[...]) / 10)
    }

    @Test func gainOf6dBRaisesASineBy6dB() {
        let rate = 48000.0
        var chain = Chain(sampleRate: rate, channels: 1, values: values(allOff: true, [.gain: 6]))
        let input = Signals.sine(frequency: 1000, rate: rate, seconds: 1, amplitude: 0.1)
        let (out, _) = process(&chain, input)
        let gain = Signals.dB(Signals.amplitude(of: out[4800...], frequency: 1000, rate: rate)
            / Signals.amplitude(of: input[4800...], frequency: 1000, rate: rate))
        #expect(abs(gain - 6) <= 0.05, "\(gain) dB")
    }

    @Test func a12dBGainJumpMakesNoClick() {
        let rate = 48000.0
        var chain = Chain(sampleRate: rate, channels: 1, values: values(allOff: true))
        let input = Signals.sine(frequency: 1000, rate: rate, seconds: 1, amplitude: 0.1)
        var (out, _) = process(&chain, Array(input[..<24000]))
        chain.apply(values(allOff: true, [.gain: 12]))
        out += process(&chain, Array(input[24000...])).0
        let steady = Signals.largestStep(out[(out.count - 4800)...])
        #expect(Signals.largestStep(out[...]) <= steady * 1.001)
        #expect(abs(Signals.dB(Double(Signals.peak(out[(out.count - 4800)...])) / 0.1) - 12) < 0.05)
    }

    @Test func bypassCrossfadesWithoutAClickOrATimeShift() {
        let rate = 48000.0
        let shaped = values([.gain: 9, .eqPeak2Gain: 9, .compEnable: 0, .nsEnable: 0])  // a steady tone is noise to the suppressor
        var chain = Chain(sampleRate: rate, channels: 1, values: shaped)
        let input = Signals.sine(frequency: 1500, rate: rate, seconds: 1.5, amplitude: 0.05)
        var (out, _) = process(&chain, Array(input[..<24000]))
        var bypassed = shaped
        bypassed[.bypass] = 1
        chain.apply(bypassed)
        out += process(&chain, Array(input[24000...])).0
        let processedStep = Signals.largestStep(out[12000..<24000])
        #expect(Signals.largestStep(out[...]) <= processedStep * 1.001)
        // Fully bypassed: the input itself, delayed by exactly the reported latency.
        let tail = (out.count - 4800)..<out.count
        #expect(Array(out[tail]) == Array(input[(tail.lowerBound - chain.latency)..<(tail.upperBound - chain.latency)]))
    }

    @Test func garbageInputNeverReachesTheOutputAndTheChainRecovers() {
        let rate = 48000.0
        let clean = Signals.sine(frequency: 440, rate: rate, seconds: 2, amplitude: 0.3)
        // The classical suppressor: a restarted learned model treats a steady tone differently for
        // its first 100 ms than one that has heard it for a second, which is not what this measures
        // (LearnedSuppressorTests covers garbage in learned mode).
        let settings = classicalValues()
        var reference = Chain(sampleRate: rate, channels: 1, values: settings)
        let (expected, _) = process(&reference, clean)
        for bad in [Float.nan, .infinity, -.infinity, 1e30, -1e30, .signalingNaN] {
            var dirty = clean
            for k in 48000..<48100 { dirty[k] = bad }
            var chain = Chain(sampleRate: rate, channels: 1, values: settings)
            let (out, _) = process(&chain, dirty)
            #expect(out.allSatisfy { $0.isFinite && abs($0) <= Float(pow(10, -1.0 / 20)) }, "\(bad)")
            // Within one 256-sample block after the garbage stops the signal is back at its level.
            let after = (48100 + 256)..<(48100 + 256 + 4800)
            let level = Signals.dB(Signals.rms(out[after]) / Signals.rms(expected[after]))
            #expect(abs(level) < 3, "\(bad): \(level) dB")
        }
    }

    @Test func decayToSilenceLeavesNoSubnormals() {
        let rate = 48000.0
        var chain = Chain(sampleRate: rate, channels: 2, values: values([.eqLowShelfGain: 6, .eqPeak1Gain: -6]))
        // 10 s of a tone decaying by 1 dB per 10 ms: below the smallest Float in about 8 s.
        let count = Int(10 * rate)
        var input = [Float](repeating: 0, count: count)
        var level = 0.5
        for n in 0..<count {
            input[n] = Float(level * sin(2 * .pi * 220 * Double(n) / rate))
            level *= pow(10, -1.0 / 20 / 480)
        }
        #expect(input[(count - 48000)...].contains { $0 != 0 && $0.isSubnormal } || input.last == 0)
        var subnormalOutputs = 0, subnormalStates = 0
        var offset = 0
        while offset < count {
            let block = Array(input[offset..<min(offset + 256, count)])
            let (out, outRight) = process(&chain, block, block, blocks: [block.count])
            subnormalOutputs += (out + outRight).filter(\.isSubnormal).count
            if chain.holdsSubnormalState { subnormalStates += 1 }
            offset += 256
        }
        #expect(subnormalOutputs == 0)
        #expect(subnormalStates == 0)
    }
}

@Suite struct MeterTests {
    @Test func metersReportLevelsAndReductionSinceTheyWereLastCleared() {
        let rate = 48000.0
        var chain = Chain(sampleRate: rate, channels: 1, values: values([.compThreshold: -30, .compRatio: 4, .eqHighPassEnable: 0, .nsEnable: 0]))
        let loud = Signals.square(frequency: 100, rate: rate, seconds: 0.5, amplitude: 0.5)  // -6 dBFS
        _ = process(&chain, loud)
        #expect(abs(20 * log10(chain.meters[.inputPeak]) + 6.02) < 0.01)
        #expect(abs(chain.meters[.compressorReduction] - 18) < 0.1)  // (1/4 - 1)(-6 + 30)
        #expect(abs(10 * log10(chain.meters[.inputRMS] / Double(chain.meters.samples)) + 6.02) < 0.01)
        #expect(chain.meters.samples == loud.count)
        chain.meters = Meters()
        _ = process(&chain, [Float](repeating: 0, count: 48000))
        #expect(chain.meters[.inputPeak] == 0)
        // Released after a second of silence: the meter shows only what happened since the clear.
        #expect(chain.meters[.compressorReduction] > 17)
        chain.meters = Meters()
        _ = process(&chain, [Float](repeating: 0, count: 4800))
        #expect(chain.meters[.compressorReduction] < 0.001)
    }
}
