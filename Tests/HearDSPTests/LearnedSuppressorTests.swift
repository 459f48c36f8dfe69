// The noise suppressor in its learned mode (ns.mode learned): the committed model on the test
// signals of NoiseSuppressorTests (a gliding harmonic source; white + pink noise) and on key
// clicks over that source, at every rate the issue names. Each bound is checked against the same
// measure with the mask replaced by unit gains, so a model that does nothing fails it.

import Testing
import TestSupport
import HearDSP

func learnedValues(_ changes: [Parameter: Float] = [:]) -> ParameterValues {
    var values = ParameterValues()
    values[.nsMode] = 1
    for (parameter, value) in changes { values[parameter] = value }
    return values
}

extension SignalMaker {
    /// Key clicks: decaying bursts of noise (2-6 ms), about 7 a second with a softer release click
    /// after each, band-passed to 0.8-9 kHz (below 0.4 x the rate) as a keyboard sounds at every
    /// rate, over a faint hiss.
    mutating func keyboard(rate: Double, count: Int) -> [Float] {
        var out = [Float](repeating: 0, count: count)
        var position = Int(0.05 * rate)
        while position < count {
            let decay = Float(rate) * (0.002 + 0.002 * (uniform() + 1))
            let length = min(Int(0.03 * rate), count - position)
            let level = 0.6 + 0.2 * uniform()
            for i in 0..<length {
                let click = uniform() * level * FastMath.exp(-Float(i) / decay)
                out[position + i] += click
                let release = position + Int(0.08 * rate) + i
                if release < count { out[release] += 0.4 * click }
            }
            position += Int(rate * (0.1 + 0.05 * Double(uniform() + 1)))
        }
        let highPass = Biquad.highPass(frequency: 800, q: 0.7071, sampleRate: rate)
        var state = BiquadState()
        let pole = Float(LibM.exp(-2 * Double.pi * min(9000, 0.4 * rate) / rate))
        var low1: Float = 0, low2: Float = 0
        for i in 0..<count {
            low1 += (1 - pole) * (Float(state.filter(Double(out[i]), highPass)) - low1)
            low2 += (1 - pole) * (low1 - low2)
            out[i] = low2
        }
        let hiss = white(count)
        return zip(out, hiss).map { $0 + 0.01 * $1 }
    }
}

/// SNR improvement (dB) of the suppressor on `noise` under the harmonic source, scaled to `snr` dB,
/// measured after `skip` seconds; `unitGains` replaces the mask by ones, `delayedByOneHop` applies
/// each frame's mask to the next frame (the bounds' controls: both must fail them).
func snrImprovement(rate: Double, noise makeNoise: (inout SignalMaker, Int) -> [Float], snr: Double = 5,
                    seconds: Double = 4, skip: Double = 1, values: ParameterValues, unitGains: Bool = false,
                    delayedByOneHop: Bool = false) -> Double {
    let count = Int(rate * seconds)
    let (speech, _) = SignalMaker.speech(rate: rate, count: count)
    var maker = SignalMaker(seed: 29)
    var noise = makeNoise(&maker, count)
    let first = Int(rate * skip)
    let gain = Float(LibM.sqrt(meanSquare(speech[first...]) / meanSquare(noise[first...]) / LibM.pow(10, snr / 10)))
    noise = noise.map { $0 * gain }
    let bins = NoiseSuppressor(sampleRate: rate, channels: 1, values: values).bins
    let ones = UnsafeMutablePointer<Float>.allocate(capacity: bins)
    ones.initialize(repeating: 1, count: bins)
    defer { ones.deallocate() }
    let out = separate(speech: speech, noise: noise, rate: rate, values: values, mask: unitGains ? ones : nil,
                       delayedByOneHop: delayedByOneHop)
    let inputSNR = decibels(meanSquare(speech[first...]) / meanSquare(noise[first...]))
    let outputSNR = decibels(meanSquare(out.speech[first...]) / meanSquare(out.noise[first...]))
    return outputSNR - inputSNR
}

@Suite struct LearnedSuppressorTests {
    static let rates = [8000.0, 16000, 44100, 48000, 96000]
    static func whiteAndPink(_ maker: inout SignalMaker, _ count: Int) -> [Float] {
        let white = maker.white(count), pink = maker.pink(count)
        return zip(white, pink).map { $0 + 4 * $1 }
    }
    static func keys(rate: Double) -> (inout SignalMaker, Int) -> [Float] {
        { maker, count in maker.keyboard(rate: rate, count: count) }
    }

    /// A model whose blob says it steps every S frames (the committed weights, the header's stride
    /// set to 1, 2 and 4) computes new band gains at frames 0, S, 2S, ... of the stream and holds
    /// them between, as train.py --stride trains it; at stride 1 they change at every frame.
    @Test(arguments: [1, 2, 4])
    func aModelStepsAtItsStride(stride: Int) throws {
        var patched = GainModelTests.compiledBlob
        for i in 0..<4 { patched[28 + i] = UInt8(truncatingIfNeeded: stride >> (8 * i)) }  // header word 5
        let rate = 16000.0, count = Int(rate)
        let (speech, _) = SignalMaker.speech(rate: rate, count: count)
        var maker = SignalMaker(seed: 7)
        let noise = maker.white(count)
        var signal = zip(speech, noise).map { $0 + 0.05 * $1 }
        // (The blob is read at init and not kept.)
        let blob = UnsafeMutableRawBufferPointer.allocate(byteCount: patched.count, alignment: 8)
        defer { blob.deallocate() }
        blob.copyBytes(from: patched)
        var suppressor = NoiseSuppressor(sampleRate: rate, channels: 1, values: learnedValues(), model: UnsafeRawBufferPointer(blob))
        let available = suppressor.modelAvailable
        try #require(available)
        let hop = suppressor.hop, bands = SpeechBandLayout.count
        var previous = [Float](repeating: -1, count: bands)
        var changedAtStep = 0, changedBetween = 0, frames = 0
        var start = 0
        while start + hop <= count {
            signal.withUnsafeMutableBufferPointer { suppressor.process($0.baseAddress! + start, nil, count: hop) }
            let gains = Array(UnsafeBufferPointer(start: suppressor.modelBandGains, count: bands))
            if gains != previous {
                if frames % stride == 0 { changedAtStep += 1 } else { changedBetween += 1 }
            }
            previous = gains
            frames += 1
            start += hop
        }
        let steps = (frames + stride - 1) / stride
        #expect(changedBetween == 0, "stride \(stride): the gains changed at \(changedBetween) frames between steps")
        #expect(changedAtStep == steps, "stride \(stride): new gains at \(changedAtStep) of \(steps) steps")
    }

    @Test func theModelIsCompiledInAndUsed() {
        let suppressor = NoiseSuppressor(sampleRate: 48000, channels: 1, values: learnedValues())
        let available = suppressor.modelAvailable, mix = suppressor.learnedMix
        #expect(available)
        #expect(mix == 1)
    }

    /// Per rate: the least SNR improvement (dB) of the learned mode that passes, on white + pink
    /// noise and on key clicks under the harmonic source at 5 dB SNR, each below what was measured
    /// (printed by the tests; ns.reduction 25) and above the controls. Measured with the committed
    /// model, on time / one hop late: white + pink 7.06 / 7.21, 7.54 / 7.73, 7.48 / 7.56, 7.58 /
    /// 7.74, 7.77 / 7.83 dB at 8 / 16 / 44.1 / 48 / 96 kHz (steady noise does not care when its mask
    /// comes, so the late control is not asked to fail there); key clicks 8.98 / 8.29, 8.41 / 7.14,
    /// 11.29 / 9.36, 11.36 / 9.17, 11.70 / 9.43, so the late mask fails every clicks bound. Unit
    /// gains give 0.01 dB or less.
    static let bounds: [Double: (noise: Double, clicks: Double)] = [
        8000: (6.9, 8.6), 16000: (7.4, 7.8), 44100: (7.3, 10.3), 48000: (7.4, 10.3), 96000: (7.6, 10.5),
    ]

    @Test(arguments: rates)
    func improvesSNROfNoisySpeech(rate: Double) throws {
        let bound = try #require(Self.bounds[rate]).noise
        let learned = snrImprovement(rate: rate, noise: Self.whiteAndPink, values: learnedValues())
        let unit = snrImprovement(rate: rate, noise: Self.whiteAndPink, values: learnedValues(), unitGains: true)
        let late = snrImprovement(rate: rate, noise: Self.whiteAndPink, values: learnedValues(), delayedByOneHop: true)
        print("learned, white + pink at \(Int(rate)) Hz: SNR improvement \(learned) dB (one hop late \(late) dB, unit gains \(unit) dB)")
        #expect(learned >= bound, "white + pink noise at \(rate) Hz: SNR improvement \(learned) dB")
        #expect(unit < bound, "unit gains pass the bound at \(rate) Hz: \(unit) dB")
    }

    @Test(arguments: rates)
    func improvesSNROfKeyClicksOverSpeech(rate: Double) throws {
        let bound = try #require(Self.bounds[rate])
        let learned = snrImprovement(rate: rate, noise: Self.keys(rate: rate), values: learnedValues())
        let unit = snrImprovement(rate: rate, noise: Self.keys(rate: rate), values: learnedValues(), unitGains: true)
        let late = snrImprovement(rate: rate, noise: Self.keys(rate: rate), values: learnedValues(), delayedByOneHop: true)
        print("learned, key clicks at \(Int(rate)) Hz: SNR improvement \(learned) dB (one hop late \(late) dB, unit gains \(unit) dB)")
        #expect(learned >= bound.clicks, "key clicks at \(rate) Hz: SNR improvement \(learned) dB")
        #expect(unit < bound.clicks, "unit gains pass the bound at \(rate) Hz: \(unit) dB")
        #expect(late < bound.clicks, "the mask one hop late passes the bound at \(rate) Hz: \(late) dB")
    }

    /// Noise alone is down by at least ns.reduction - 3 dB from 0.2 s after the stream starts, and
    /// key clicks alone further: their floor lies ns.reduction below the steady noise (here a faint
    /// hiss), not below each click (LearnedGains.blend).
    @Test(arguments: [8000.0, 48000])
    func noiseAloneSettlesWithinAFifthOfASecond(rate: Double) {
        let attenuation = steadyNoiseAloneAttenuation(rate: rate, seed: 31, seconds: 3, from: 0.2, values: learnedValues())
        // ns.reduction - 3 dB at both rates: measured 27.5 at 8 and 30.0 at 48 kHz (25.0 at both
        // before the steady noise went further, LearnedGains.steadyDepthDB).
        #expect(attenuation >= 22, "steady noise alone from 0.2 s at \(rate) Hz: \(attenuation) dB down (ns.reduction 25)")
        let keyAttenuation = Self.keyClicksAloneAttenuation(rate: rate, seconds: 3, values: learnedValues())
        print("learned, noise alone from 0.2 s at \(rate) Hz: steady \(attenuation) dB, key clicks \(keyAttenuation) dB down")
        // Measured 35.4 dB at 8 kHz and 33.6 at 48 kHz; with the floor at ns.reduction below each
        // click instead of below the steady noise, 25.0 at both.
        #expect(keyAttenuation >= 30, "key clicks alone from 0.2 s at \(rate) Hz: \(keyAttenuation) dB down (ns.reduction 25)")
    }

    /// Steady noise goes further below ns.reduction once it has shown it is steady (a bin's power
    /// near the noise estimate for 0.3 s: LearnedGains.steadyDepthDB). Measured from 1 s: 28.9 dB
    /// down at 48 kHz and 32.4 at 16 kHz; 24.4 and 25.0 with the steady depth at 0 dB. The estimate
    /// sits below the mean power of steady noise (minimum statistics), so the mean ratio that the
    /// depth reads is above 1 and the depth reached is a part of the 25 dB.
    @Test(arguments: [16000.0, 48000])
    func steadyNoiseGoesFurtherThanNsReduction(rate: Double) {
        let attenuation = steadyNoiseAloneAttenuation(rate: rate, seed: 41, seconds: 4, from: 1, values: learnedValues())
        print("learned, steady noise alone from 1 s at \(rate) Hz: \(attenuation) dB down")
        #expect(attenuation >= 27, "steady noise at \(rate) Hz: \(attenuation) dB down (ns.reduction 25)")
    }

    /// At ns.reduction 0 the learned mode lowers nothing, key clicks included: a transient's floor
    /// goes below ns.reduction by at most ns.reduction itself.
    @Test func noReductionLeavesKeyClicksAlone() {
        let attenuation = Self.keyClicksAloneAttenuation(rate: 48000, seconds: 2, values: learnedValues([.nsReduction: 0]))
        #expect(abs(attenuation) < 0.1, "key clicks alone at ns.reduction 0: \(attenuation) dB down")
    }

    /// How far (dB) key clicks alone go down from 0.2 s after the stream starts.
    static func keyClicksAloneAttenuation(rate: Double, seconds: Double, values: ParameterValues) -> Double {
        let count = Int(rate * seconds)
        var keyMaker = SignalMaker(seed: 37)
        let keys = keyMaker.keyboard(rate: rate, count: count)
        let out = separate(speech: [Float](repeating: 0, count: count), noise: keys, rate: rate, values: values)
        let first = Int(rate * 0.2), last = count - out.latency
        return decibels(meanSquare(keys[first..<last]) / meanSquare(out.mixture[first..<last]))
    }

    /// Clean speech passes: the output against the input, aligned, SI-SDR-like (scale-invariant).
    @Test(arguments: [16000.0, 48000])
    func cleanSpeechIsLeftAlone(rate: Double) {
        let count = Int(rate * 3)
        let (speech, _) = SignalMaker.speech(rate: rate, count: count)
        let out = separate(speech: speech, noise: [Float](repeating: 0, count: count), rate: rate, values: learnedValues())
        let first = Int(rate * 0.5), last = count - out.latency
        var dot = 0.0, energy = 0.0
        for i in first..<last { dot += Double(out.mixture[i]) * Double(speech[i]); energy += Double(speech[i]) * Double(speech[i]) }
        let scale = dot / energy
        var error = 0.0
        for i in first..<last { let e = Double(out.mixture[i]) - scale * Double(speech[i]); error += e * e }
        let sdr = decibels(scale * scale * energy / error)
        #expect(sdr >= 20, "clean speech through the learned suppressor at \(rate) Hz: \(sdr) dB")
        print("learned, clean speech at \(Int(rate)) Hz: SI-SDR \(sdr) dB")
    }

    /// classical -> learned -> classical under noisy speech: no sample-to-sample step beyond what
    /// the input itself makes (a crossfade of masks, never a jump), and the model reset on entry.
    @Test func switchingModesIsClickFree() {
        let rate = 48000.0
        let count = Int(rate * 6)
        let (speech, _) = SignalMaker.speech(rate: rate, count: count)
        var maker = SignalMaker(seed: 41)
        let noise = Self.whiteAndPink(&maker, count).map { $0 * 0.01 }
        let input = zip(speech, noise).map { $0 + $1 }
        var suppressor = NoiseSuppressor(sampleRate: rate, channels: 1, values: classicalValues())
        var output = input
        output.withUnsafeMutableBufferPointer { buffer in
            var done = 0
            while done < count {
                let n = min(480, count - done)
                if done == Int(rate * 2) { suppressor.set(learnedValues()) }
                if done == Int(rate * 4) { suppressor.set(classicalValues()) }
                suppressor.process(buffer.baseAddress! + done, nil, count: n)
                done += n
            }
        }
        let steepest = Signals.largestStep(output[Int(rate * 0.5)...]), inputSteepest = Signals.largestStep(input[Int(rate * 0.5)...])
        #expect(steepest <= inputSteepest, "largest step \(steepest) against the input's \(inputSteepest)")
        let mix = suppressor.learnedMix
        #expect(mix == 0)
    }

    @Test func nonFiniteInputNeverReachesOutput() {
        var chain = Chain(sampleRate: 48000, channels: 1, values: learnedValues())
        var maker = SignalMaker(seed: 43)
        var signal = maker.white(48000).map { $0 * 0.1 }
        for i in stride(from: 1000, to: 48000, by: 7919) { signal[i] = .nan; signal[i + 1] = .infinity; signal[i + 2] = -.infinity }
        signal.withUnsafeMutableBufferPointer {
            chain.process(inLeft: $0.baseAddress!, inRight: nil, outLeft: $0.baseAddress!, outRight: nil, frames: 48000)
        }
        #expect(signal.allSatisfy { $0.isFinite && abs($0) <= 1 })
    }
}
