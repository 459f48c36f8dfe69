// Noise suppression, the chain's first stage: a short-time spectral gain that keeps speech and
// lowers everything the noise estimate explains. Two modes (`ns.mode`): classical, the estimator
// below alone; learned (the default), where a trained model reads the estimator's state and its
// band gains are combined with the estimator's (LearnedGains.swift, GainModel.swift). This file is
// the framing and the classical estimator.
//
// Analysis and synthesis (low delay, after Mauler & Martin): frames of N samples advance by a hop
// of M; the analysis window is long and asymmetric (a slow sqrt-Hann rise over N - M samples, a
// short sqrt-Hann fall over the last M), the synthesis window covers only the last 2M samples,
// and their product there is a Hann window of 2M, which overlap-adds to exactly one. Frequency
// resolution comes from N, delay only from M: a sample leaves 2M - 1 samples after it entered.
// M is rate / 375 (128 at 48 kHz: 255 samples, 5.3 ms); N is the power of two >= 8M (1024).
//
// Statistics and gains are updated every frame from that frame's own power, so the mask a frame
// applies was computed from the frame itself: a key click meets its own gain, not the one of the
// frame before. They run on every bin up to 4 kHz, on pairs of
// bins up to 8 kHz and on bands of 8 bins (375 Hz at 48 kHz) above, from the band's mean power; a
// band's gain goes to each of its bins. The ear resolves far less than a bin up there, and this
// takes 40 % of the per-bin work at 48 kHz (`make eval`: unchanged). Per bin or band (in stereo,
// one mask from both channels' mean power, applied to each, so the stereo image stays):
// 1. Noise power: the speech-presence-probability tracker of Gerkmann & Hendriks (2012), which
//    updates the estimate in proportion to how unlikely speech is in that bin and so follows noise
//    that rises or falls within a second or two; capped by minimum statistics (Martin 2001) over
//    the last 1.5 s, so that speech that lasts is not taken for noise. An estimate that sits far
//    below a steady signal in nearly every bin for 0.4 s (learned on the digital silence before a
//    stream starts) restarts from that signal's minimum (`relearnIfStuck`).
// 2. Gain: decision-directed a-priori SNR (Ephraim & Malah) refined by one more step through the
//    gain rule (two-step, Plapous et al. 2006), into the log-spectral amplitude gain, combined with
//    the speech presence probability into the OM-LSA gain (Cohen & Berdugo 2001):
//    G = G_LSA^p · G_min^(1-p), G_min from `ns.reduction`. The a-priori absence probability comes
//    from the smoothed a-priori SNR over three bins, about 1 kHz, and the whole speech band.
// 3. Against musical noise: a gain rises at once where the smoothed SNR says speech, slowly
//    (30 ms) where it does not, so isolated noise peaks never open; the floor is a gain, never zero.
//    The mask is applied as computed, bin by bin: widening it toward the synthesis window's
//    resolution (a bin keeping a quarter of its neighbours' gains) kept no more of the speech in
//    `make eval` and let more noise through between harmonics (EVALUATION.md).
// 4. The gate (SpeechActivity.swift): while nobody speaks, the whole mask goes to the floor, so
//    what the per-bin rule lets through without speech (random peaks of steady noise, key clicks)
//    goes too; ns.reduction is then the attenuation. The per-bin state runs on underneath, so the
//    gains are ready the moment the gate opens.
// Everything is sized in init; `process` buffers internally by hop, so the output does not depend
// on how the audio is split into calls.

/// Gains that take the place of the model's or of the whole mask (`NoiseSuppressor.suppliedGains`).
public enum SuppliedGains {
    case none
    case model(UnsafePointer<Float>)
    case mask(UnsafePointer<Float>)
}

public struct NoiseSuppressor: ~Copyable {
    public let sampleRate: Double
    public let channels: Int
    /// Samples per frame advance; also half the synthesis window (M).
    public let hop: Int
    /// Analysis frame and transform length (N).
    public let frameLength: Int
    /// Spectrum bins 0...N/2.
    public let bins: Int
    /// Samples between a sample entering and leaving the stage: 2M - 1.
    public let latency: Int

    let fft: RealFFT
    /// Whether anybody speaks, for the gate (step 4).
    package var activity: SpeechActivity
    let analysisWindow: UnsafeMutablePointer<Float>
    /// For the last 2M samples of a frame.
    let synthesisWindow: UnsafeMutablePointer<Float>
    /// Analysis · synthesis over the last 2M samples (a Hann window): the frame's share of the
    /// output when no gain is applied, which skips the inverse transform while the stage is off.
    let overlapWindow: UnsafeMutablePointer<Float>

    /// Per channel: the last N input samples; the overlap-add accumulator (2M); finished output (M).
    /// The current frame is input[inputStart..<inputStart + N] (per channel, `inputCapacity` apart):
    /// it advances by M a frame and moves back to the start only when the buffer is used up.
    let input: UnsafeMutablePointer<Float>
    let inputCapacity: Int
    var inputStart = 0
    let accumulator: UnsafeMutablePointer<Float>
    let ready: UnsafeMutablePointer<Float>
    /// Scratch: one windowed frame, and each channel's spectrum.
    let frame: UnsafeMutablePointer<Float>
    let spectrumReal: UnsafeMutablePointer<Float>
    let spectrumImaginary: UnsafeMutablePointer<Float>
    /// Per bin state (see the numbered steps above).
    let power: UnsafeMutablePointer<Float>
    let noise: UnsafeMutablePointer<Float>
    let presenceAverage: UnsafeMutablePointer<Float>
    let cleanPower: UnsafeMutablePointer<Float>
    let prioriSNR: UnsafeMutablePointer<Float>
    let posterioriSNR: UnsafeMutablePointer<Float>
    let prioriAverage: UnsafeMutablePointer<Float>
    let absence: UnsafeMutablePointer<Float>
    let bandAverage: UnsafeMutablePointer<Float>
    let presence: UnsafeMutablePointer<Float>
    let gain: UnsafeMutablePointer<Float>
    /// Minimum statistics (Martin 2001) as a ceiling on the noise estimate: the smoothed power, the
    /// minimum of the current sub-window, and the minima of the last `minimumWindows` sub-windows.
    let smoothedPower: UnsafeMutablePointer<Float>
    let windowMinimum: UnsafeMutablePointer<Float>
    /// The maximum of the smoothed power in the current sub-window: with the minimum, whether a
    /// bin held steady (see `trackMinimum`, relearning).
    let windowMaximum: UnsafeMutablePointer<Float>
    let pastMinima: UnsafeMutablePointer<Float>
    let pastMinimum: UnsafeMutablePointer<Float>
    let minimumWindows = 8
    let minimumWindowFrames: Int
    var minimumFrame = 0
    var minimumSlot = 0
    /// Sub-windows in a row that looked like a noise estimate learned on something else.
    var stuckWindows = 0
    let powerSmoothing: Float
    let minimumBias: Float
    package let appliedGain: UnsafeMutablePointer<Float>
    /// Every bin's power in this frame and gain (from its statistics bin).
    let binPower: UnsafeMutablePointer<Float>
    let binGain: UnsafeMutablePointer<Float>
    /// The statistics run on every bin below `statsSplit` (4 kHz) and on bands above it (2 bins up
    /// to 8 kHz, 8 above): `statsBins` in all. The arrays of steps 1-3 are indexed by these;
    /// statistics bin j covers spectrum bins statsFirst[j] ..< statsFirst[j + 1].
    let statsSplit: Int
    let statsBins: Int
    let statsFirst: UnsafeMutablePointer<Int>
    /// How many one-sided spectrum bins each statistics bin stands for, doubled (DC and Nyquist once).
    let statsWeight: UnsafeMutablePointer<Float>
    /// Bin range where speech probability is metered and the frame's speech presence is judged.
    let speechLow: Int
    let speechHigh: Int
    /// Converts a sum of bin powers (one-sided, doubled) into mean power per sample.
    let powerNormalization: Float

    var fill = 0
    var framesSinceReset = 0
    /// The learned mode (LearnedGains.swift): bands, the model, and per band: mean noise and clean
    /// estimates, power (then level), the last level feature, the model's gains and the estimator's
    /// mean log2 gain; per bin: the learned gains and scratch.
    let bands: SpeechBands
    var model: GainModel
    let bandNoise: UnsafeMutablePointer<Float>
    let bandClean: UnsafeMutablePointer<Float>
    let bandEnergy: UnsafeMutablePointer<Float>
    let previousLevel: UnsafeMutablePointer<Float>
    let bandGain: UnsafeMutablePointer<Float>
    let bandEstimateGain: UnsafeMutablePointer<Float>
    let learnedBinGain: UnsafeMutablePointer<Float>
    let binScratch: UnsafeMutablePointer<Float>
    /// Band power to the level at 48 kHz (see LearnedGains.swift).
    let levelScale: Float
    /// Statistics updates since the last model step.
    var modelPhase = 0
    /// The model's speech probability, last step.
    var modelSpeech: Float = 0
    /// How much of the mask is the learned one: glides to 1 in learned mode, to 0 in classical.
    package var learnedMix: Float = 0
    var learned = false
    /// Whether the learned mode can run (the compiled-in model loaded and fits this suppressor).
    public let modelAvailable: Bool
    /// Training (hear-features): compute the features at every model step, in either mode.
    public var recordsFeatures = false
    /// Model steps taken (or, with `recordsFeatures`, feature sets computed) since init.
    public private(set) var modelSteps = 0

    /// Gains from outside, per bin (`bins` long), read at every frame in place of the model's
    /// (`.model`: through the blend with the estimator and the gate, as the model's would go) or of
    /// the whole mask (`.mask`). hear-features' oracle feeds the true mask of a mixture here, to
    /// measure what a perfect model would give through this very framing.
    public var suppliedGains: SuppliedGains = .none

    // Per-frame smoothing constants (from time constants, so every rate behaves alike).
    let presenceSmoothing: Float
    let noiseSmoothing: Float
    let prioriSmoothing: Float
    let decisionDirected: Float
    let riseMinimum: Float
    let mixRate: Float
    let meterRate: Float
    let learnedRate: Float
    let warmupFrames: Int

    // Settings.
    var floorGain: Float = 0.1
    var noiseScale: Float = 1
    var enabled = true
    /// How much of the mask is applied: glides to 1 when enabled, to 0 when not.
    var mix: Float = 1

    /// Mean speech presence probability over the speech band, 0...1 (smoothed over ~50 ms); 0 while
    /// the gate is shut.
    public private(set) var speechProbability: Float = 0
    /// Estimated noise power, dB relative to a full-scale square wave (0 dBFS RMS).
    public private(set) var noiseFloorDB: Float = -120

    /// The hop (M) this stage uses at `sampleRate`: 1/375 s, so latency 2M - 1 stays within 5.33 ms.
    public static func hop(sampleRate: Double) -> Int { max(4, truncatedInt(sampleRate / 375)) }
    public static func latency(sampleRate: Double) -> Int { 2 &* hop(sampleRate: sampleRate) &- 1 }

    public init(sampleRate: Double, channels: Int, values: ParameterValues) {
        self.sampleRate = sampleRate
        self.channels = min(max(channels, 1), 2)
        let m = Self.hop(sampleRate: sampleRate)
        hop = m
        fft = RealFFT(size: 8 &* m)
        let n = fft.size
        frameLength = n
        bins = n / 2 &+ 1
        latency = 2 &* m &- 1
        // The noncopyable members first: the optimizer must never see them uninitialized while
        // the initializer reads self (it then freed garbage here).
        bands = SpeechBands(sampleRate: sampleRate, frameLength: n)
        let gainModel = GainModel()
        modelAvailable = gainModel.isAvailable && gainModel.stride == Self.modelStride
            && gainModel.inputs == Self.featureCount && gainModel.outputs > SpeechBandLayout.count
        model = gainModel

        analysisWindow = allocateBuffer(n, repeating: 0)
        synthesisWindow = allocateBuffer(2 &* m, repeating: 0)
        overlapWindow = allocateBuffer(2 &* m, repeating: 0)
        func hann(_ j: Int) -> Double { 0.5 - 0.5 * LibM.cos(Double.pi * Double(j) / Double(m)) }  // period 2M
        let rise = n &- m
        for i in upTo(rise) {
            analysisWindow[i] = Float(LibM.sqrt(0.5 - 0.5 * LibM.cos(Double.pi * Double(i) / Double(rise))))
        }
        for i in loop(from: rise, upTo: n) { analysisWindow[i] = Float(LibM.sqrt(hann(i &- (n &- 2 &* m)))) }
        for j in upTo(2 &* m) {
            let a = Double(analysisWindow[n &- 2 &* m &+ j])
            synthesisWindow[j] = a > 0 ? Float(hann(j) / a) : 0
            overlapWindow[j] = Float(hann(j))
        }
        var windowEnergy = 0.0
        for i in upTo(n) { windowEnergy += Double(analysisWindow[i]) * Double(analysisWindow[i]) }
        powerNormalization = Float(1 / (Double(n) * windowEnergy))

        func buffer(_ count: Int, _ value: Float = 0) -> UnsafeMutablePointer<Float> {
            allocateBuffer(count, repeating: value)
        }
        inputCapacity = n &+ 8 &* m
        input = buffer(2 &* inputCapacity)
        accumulator = buffer(4 &* m)
        ready = buffer(2 &* m)
        frame = buffer(n)
        spectrumReal = buffer(2 &* bins)
        spectrumImaginary = buffer(2 &* bins)
        power = buffer(bins)
        noise = buffer(bins)
        presenceAverage = buffer(bins)
        cleanPower = buffer(bins)
        prioriSNR = buffer(bins)
        posterioriSNR = buffer(bins)
        prioriAverage = buffer(bins)
        absence = buffer(bins)
        bandAverage = buffer(bins)
        presence = buffer(bins)
        gain = buffer(bins, 1)
        smoothedPower = buffer(bins)
        windowMinimum = buffer(bins, .greatestFiniteMagnitude)
        windowMaximum = buffer(bins)
        pastMinima = buffer(8 &* bins, .greatestFiniteMagnitude)
        pastMinimum = buffer(bins, .greatestFiniteMagnitude)
        appliedGain = buffer(bins, 1)

        let binWidth = sampleRate / Double(n)
        speechLow = max(1, min(bins &- 1, truncatedInt(300 / binWidth)))
        speechHigh = max(speechLow &+ 1, min(bins, truncatedInt(4000 / binWidth) &+ 1))
        statsSplit = min(bins, speechHigh)
        // Every bin below the split, then pairs of bins up to 8 kHz, then eights: counted, then written.
        let pairsEnd = min(bins, max(statsSplit, truncatedInt(8000 / binWidth) &+ 1))
        let binCount = bins  // a local: the function below must not capture a half-built self
        func nextFirst(_ first: Int) -> Int { min(first &+ (first < pairsEnd ? 2 : 8), binCount) }
        var firstCount = statsSplit
        var next = statsSplit
        while next < binCount {
            firstCount &+= 1
            next = nextFirst(next)
        }
        statsBins = firstCount
        statsFirst = allocateBuffer(statsBins &+ 1, repeating: 0)
        for j in upTo(statsSplit) { statsFirst[j] = j }
        next = statsSplit
        for j in loop(from: statsSplit, upTo: firstCount) {
            statsFirst[j] = next
            next = nextFirst(next)
        }
        statsFirst[statsBins] = bins
        activity = SpeechActivity(sampleRate: sampleRate, frameLength: n, analysisWindow: analysisWindow,
                                  updateSeconds: Double(m) / sampleRate, statsFirst: statsFirst, statsBins: statsBins)
        binPower = buffer(bins)
        binGain = buffer(bins, 1)
        statsWeight = buffer(statsBins)
        for j in upTo(statsBins) {
            for k in loop(from: statsFirst[j], upTo: statsFirst[j &+ 1]) { statsWeight[j] += k == 0 || k == bins &- 1 ? 1 : 2 }
        }

        let frameSeconds = Double(m) / sampleRate  // statistics run every frame
        func perFrame(_ factor: Double, per seconds: Double) -> Float { Float(LibM.pow(factor, frameSeconds / seconds)) }
        presenceSmoothing = perFrame(0.9, per: 0.016)
        noiseSmoothing = perFrame(0.8, per: 0.016)
        prioriSmoothing = perFrame(0.7, per: 0.008)
        decisionDirected = 0.9
        riseMinimum = Float(1 - LibM.exp(-frameSeconds / 0.030))
        mixRate = Float(1 - LibM.exp(-frameSeconds / 0.010))
        meterRate = Float(1 - LibM.exp(-frameSeconds / 0.050))
        learnedRate = Float(1 - LibM.exp(-frameSeconds / 0.050))
        warmupFrames = max(1, truncatedInt(0.03 / frameSeconds))
        // Minima over 8 sub-windows spanning about 1.5 s: longer than a word, shorter than a noise change may take.
        minimumWindowFrames = max(1, truncatedInt(1.5 / 8 / frameSeconds))
        powerSmoothing = Float(LibM.exp(-frameSeconds / 0.05))
        // The minimum of a smoothed periodogram sits well below the noise's mean (Martin 2001 derives
        // the factor from its variance). 2.75 for this smoothing and overlap: on stationary noise the
        // ceiling stays near the tracker's estimate (noise alone still loses the full 20 dB), while
        // on babble and cafe it keeps more of the talker. 3 / 2.75 / 2.5 give a mean STOI change of
        // -0.0005 / +0.0001 / +0.0008 in `make eval`, and the CI test's SNR improvement at its worst
        // rate 8.11 / 8.03 / 7.85 dB (EVALUATION.md): the two targets meet only near 2.75.
        minimumBias = 2.75

        bandNoise = buffer(SpeechBandLayout.count)
        bandClean = buffer(SpeechBandLayout.count)
        bandEnergy = buffer(SpeechBandLayout.count)
        previousLevel = buffer(SpeechBandLayout.count, (Self.levelFloorDB + 50) * 0.05)
        bandGain = buffer(SpeechBandLayout.count, 1)
        bandEstimateGain = buffer(SpeechBandLayout.count)
        learnedBinGain = buffer(bins, 1)
        binScratch = buffer(bins)
        levelScale = powerNormalization * Float(n) * Float(48000 / sampleRate)
        set(values)
        mix = enabled ? 1 : 0
        learnedMix = learned && modelAvailable ? 1 : 0
    }

    deinit {
        analysisWindow.deallocate()
        synthesisWindow.deallocate()
        overlapWindow.deallocate()
        input.deallocate()
        accumulator.deallocate()
        ready.deallocate()
        frame.deallocate()
        spectrumReal.deallocate()
        spectrumImaginary.deallocate()
        power.deallocate()
        noise.deallocate()
        presenceAverage.deallocate()
        cleanPower.deallocate()
        prioriSNR.deallocate()
        posterioriSNR.deallocate()
        prioriAverage.deallocate()
        absence.deallocate()
        bandAverage.deallocate()
        presence.deallocate()
        gain.deallocate()
        smoothedPower.deallocate()
        windowMinimum.deallocate()
        windowMaximum.deallocate()
        pastMinima.deallocate()
        pastMinimum.deallocate()
        appliedGain.deallocate()
        binPower.deallocate()
        binGain.deallocate()
        statsWeight.deallocate()
        statsFirst.deallocate()
        bandNoise.deallocate()
        bandClean.deallocate()
        bandEnergy.deallocate()
        previousLevel.deallocate()
        bandGain.deallocate()
        bandEstimateGain.deallocate()
        learnedBinGain.deallocate()
        binScratch.deallocate()
    }

    @_noLocks public mutating func set(_ values: ParameterValues) {
        enabled = values[.nsEnable] != 0
        learned = values[.nsMode] != 0
        floorGain = Float(Decibels.toGain(-Double(values[.nsReduction])))
        // Sensitivity 0...100 % scales the noise estimate by -6...+6 dB: more of the signal counts as
        // noise. At 50 the gain rule reads the estimate 1.25 dB low: quiet parts of speech keep more
        // of themselves (`make eval`: STOI +0.005, PESQ +0.007; EVALUATION.md). Lower still fails
        // the CI test's 8 dB SNR improvement at 48 and 96 kHz.
        noiseScale = Float(LibM.exp(((Double(values[.nsSensitivity]) - 50) / 50 * 6 - 1.25) * 0.23025850929940458))
    }

    @_noLocks public mutating func reset() {
        input.fill(0, count: 2 &* inputCapacity)
        inputStart = 0
        accumulator.fill(0, count: 4 &* hop)
        ready.fill(0, count: 2 &* hop)
        noise.fill(0, count: bins)
        presenceAverage.fill(0, count: bins)
        cleanPower.fill(0, count: bins)
        prioriAverage.fill(0, count: bins)
        gain.fill(1, count: bins)
        smoothedPower.fill(0, count: bins)
        windowMinimum.fill(.greatestFiniteMagnitude, count: bins)
        windowMaximum.fill(0, count: bins)
        pastMinima.fill(.greatestFiniteMagnitude, count: minimumWindows &* bins)
        pastMinimum.fill(.greatestFiniteMagnitude, count: bins)
        minimumFrame = 0
        minimumSlot = 0
        stuckWindows = 0
        appliedGain.fill(1, count: bins)
        fill = 0
        framesSinceReset = 0
        mix = enabled ? 1 : 0
        speechProbability = 0
        noiseFloorDB = -120
        activity.reset()
        model.reset()
        modelPhase = 0
        modelSpeech = 0
        learnedMix = learned && modelAvailable ? 1 : 0
        previousLevel.fill((Self.levelFloorDB + 50) * 0.05, count: SpeechBandLayout.count)
        bandGain.fill(1, count: SpeechBandLayout.count)
        learnedBinGain.fill(1, count: bins)
    }

    /// Processes `count` samples in place; `right` is used only in stereo. Output is the input
    /// `latency` samples earlier, cleaned.
    @_noLocks public mutating func process(_ left: UnsafeMutablePointer<Float>, _ right: UnsafeMutablePointer<Float>?,
                                           count: Int) {
        let stereo = channels == 2 && right != nil
        let n = frameLength, m = hop
        var done = 0
        while done < count {
            let chunk = min(count &- done, m &- fill)
            // Read the chunk's input before writing any output (in place).
            let base = inputStart &+ n &- m &+ fill
            let bytes = max(0, chunk &* MemoryLayout<Float>.stride)  // max: copyMemory traps on a negative count
            UnsafeMutableRawPointer(input + base).copyMemory(from: left + done, byteCount: bytes)
            if stereo, let right { UnsafeMutableRawPointer(input + inputCapacity + base).copyMemory(from: right + done, byteCount: bytes) }
            let completes = fill &+ chunk == m
            // Output for sample at fill f is ready[f + 1]; the one completing a hop reads the new frame's first.
            let direct = completes ? chunk &- 1 : chunk
            let directBytes = max(0, direct &* MemoryLayout<Float>.stride)
            UnsafeMutableRawPointer(left + done).copyMemory(from: ready + fill + 1, byteCount: directBytes)
            if stereo, let right { UnsafeMutableRawPointer(right + done).copyMemory(from: ready + m + fill + 1, byteCount: directBytes) }
            if completes {
                processFrame(stereo: stereo)
                left[done &+ chunk &- 1] = ready[0]
                if stereo, let right { right[done &+ chunk &- 1] = ready[m] }
                fill = 0
            } else {
                fill &+= chunk
            }
            done &+= chunk
        }
    }

    /// Transforms the frame and updates the statistics from its power, and the on/off glide.
    @inline(__always) mutating func analyze(stereo: Bool) {
        let n = frameLength
        let channelCount = stereo ? 2 : 1
        for c in upTo(channelCount) {
            let samples = input + (c &* inputCapacity &+ inputStart)
            for i in upTo(n) { frame[i] = samples[i] * analysisWindow[i] }
            fft.forward(frame, real: spectrumReal + c &* bins, imaginary: spectrumImaginary + c &* bins)
        }
        if stereo {
            let r2 = spectrumReal + bins, i2 = spectrumImaginary + bins
            for k in upTo(bins) {
                let a = spectrumReal[k] * spectrumReal[k] + spectrumImaginary[k] * spectrumImaginary[k]
                let b = r2[k] * r2[k] + i2[k] * i2[k]
                binPower[k] = 0.5 * (a + b)
            }
        } else {
            for k in upTo(bins) { binPower[k] = spectrumReal[k] * spectrumReal[k] + spectrumImaginary[k] * spectrumImaginary[k] }
        }
        // The statistics' bins: every bin up to `statsSplit`, the bands' mean power above.
        for k in upTo(statsSplit) { power[k] = binPower[k] }
        for j in loop(from: statsSplit, upTo: statsBins) {
            let from = statsFirst[j], to = statsFirst[j &+ 1]
            var sum: Float = 0
            for i in loop(from: from, upTo: to) { sum += binPower[i] }
            power[j] = sum / Float(to &- from)
        }
        trackNoise()
        // The unscaled estimate: ns.sensitivity shapes the gains, not whether somebody speaks.
        activity.update(power: power, noise: noise)
        framesSinceReset &+= 1
        // Glide the mask strength toward on/off (click-free switching).
        let target: Float = enabled ? 1 : 0
        mix += mixRate * (target - mix)
        if abs(target - mix) < 1e-4 { mix = target }
    }

    @inline(__always) mutating func processFrame(stereo: Bool) {
        let n = frameLength, m = hop
        let channelCount = stereo ? 2 : 1
        // Switched off and faded out: no analysis at all, so an unused suppressor costs only the
        // delay line. Its statistics pick up again where they were when it is switched back on.
        let analyzed = !(mix == 0 && !enabled)
        if analyzed { analyze(stereo: stereo) }

        if mix == 0 {
            // Off and settled: the frame passes unchanged, so its share of the output is x · Hann.
            for c in upTo(channelCount) {
                let samples = input + (c &* inputCapacity &+ inputStart &+ (n &- 2 &* m)), acc = accumulator + c &* 2 &* m
                for j in upTo(2 &* m) { acc[j] += samples[j] * overlapWindow[j] }
            }
            if analyzed {
                for k in upTo(bins) { appliedGain[k] = 1 }
                for k in upTo(statsBins) { gain[k] = 1; cleanPower[k] = power[k] }
            }
        } else {
            computeGain()
            learnedStep()
            if case .mask(let supplied) = suppliedGains {
                for k in upTo(bins) { appliedGain[k] = supplied[k] }
            }
            for c in upTo(channelCount) {
                let re = spectrumReal + c &* bins, im = spectrumImaginary + c &* bins
                for k in upTo(bins) {
                    re[k] *= appliedGain[k]
                    im[k] *= appliedGain[k]
                }
                fft.inverse(real: re, imaginary: im, output: frame, first: n &- 2 &* m)
                let tail = frame + (n &- 2 &* m), acc = accumulator + c &* 2 &* m
                for j in upTo(2 &* m) { acc[j] += tail[j] * synthesisWindow[j] }
            }
        }

        // The first M accumulated samples are complete: hand them out and shift the rest down.
        for c in upTo(channelCount) {
            let acc = accumulator + c &* 2 &* m, out = ready + c &* m
            for j in upTo(m) {
                out[j] = acc[j]
                acc[j] = acc[j &+ m]
                acc[j &+ m] = 0
            }
        }
        // The next frame starts M later; when it would run past the buffer, its first N - M samples move to the start.
        if inputStart &+ n &+ m <= inputCapacity {
            inputStart &+= m
        } else {
            for c in upTo(channelCount) {
                let channel = input + c &* inputCapacity
                UnsafeMutableRawPointer(channel).copyMemory(from: channel + (inputStart &+ m), byteCount: max(0, (n &- m) &* MemoryLayout<Float>.stride))
            }
            inputStart = 0
        }
    }

    /// After the classical gain: the model's step when one is due, the learned mask blended in, and
    /// the glide between the modes (about 50 ms: no click, and the model has begun to settle).
    @inline(__always) mutating func learnedStep() {
        let available = modelAvailable
        let target: Float = learned && available ? 1 : 0
        if target > 0 && learnedMix == 0 {
            // Coming from the classical mode: the model starts fresh, as on a new stream.
            model.reset()
            bandGain.fill(1, count: SpeechBandLayout.count)
            modelPhase = 0
        }
        let running = available && (target > 0 || learnedMix > 0)
        if running || recordsFeatures {
            modelPhase &+= 1
            if modelPhase >= Self.modelStride {
                modelPhase = 0
                computeFeatures()
                if running { stepModel() }
                modelSteps &+= 1
            }
        }
        if case .model(let supplied) = suppliedGains {
            for k in upTo(bins) { learnedBinGain[k] = supplied[k] }
        }
        if learnedMix > 0 {
            blendLearnedGains()
            speechProbability += learnedMix * meterRate * (modelSpeech - speechProbability)
        }
        learnedMix += learnedRate * (target - learnedMix)
        if abs(target - learnedMix) < 1e-3 { learnedMix = target }
    }

    /// Step 1: speech-presence-probability noise tracking (Gerkmann & Hendriks 2012).
    @inline(__always) mutating func trackNoise() {
        let floorPower: Float = 1e-12
        if framesSinceReset < warmupFrames {
            // Start from the first frames' mean: they are taken as noise.
            let weight = 1 / Float(framesSinceReset + 1)
            for k in upTo(statsBins) { noise[k] = max(noise[k] + weight * (power[k] - noise[k]), floorPower) }
        } else {
            // p(H1 | y) with a fixed a-priori SNR of 15 dB under speech presence.
            let xiH1: Float = 31.622776
            let c1 = 1 + xiH1, c2 = xiH1 / (1 + xiH1) * 1.442695041
            let alphaP = presenceSmoothing, alphaN = noiseSmoothing
            for k in upTo(statsBins) {
                let lambda = noise[k]
                let ratio = power[k] / lambda
                var p = 1 / (1 + c1 * FastMath.exp2(-c2 * ratio))
                let average = alphaP * presenceAverage[k] + (1 - alphaP) * p
                presenceAverage[k] = average
                // Never certain of speech for long: the estimate must be able to rise.
                p = average > 0.99 ? min(p, 0.99) : p
                let expected = p * lambda + (1 - p) * power[k]
                noise[k] = max(alphaN * lambda + (1 - alphaN) * expected, floorPower)
            }
        }
        trackMinimum()
        var total: Float = 0
        for k in upTo(statsBins) { total += statsWeight[k] * noise[k] }
        noiseFloorDB = 10 * 0.30103 * FastMath.log2(max(total * powerNormalization, 1e-14))
    }

    /// The ceiling: the noise estimate never exceeds the bias-compensated minimum of the smoothed
    /// power over the last 1.5 s, so speech that lasts (a vowel held, a talker without pauses)
    /// cannot be taken for noise; noise that rises lifts the minimum within that span.
    @inline(__always) mutating func trackMinimum() {
        let alpha = powerSmoothing
        let bias = minimumBias
        if framesSinceReset < warmupFrames {
            for k in upTo(statsBins) {
                smoothedPower[k] = noise[k]
                windowMinimum[k] = noise[k]
                windowMaximum[k] = noise[k]
            }
            return
        }
        // The ceiling: the minimum over the past sub-windows (kept up to date when one completes)
        // and the current one.
        for k in upTo(statsBins) {
            let smoothed = alpha * smoothedPower[k] + (1 - alpha) * power[k]
            smoothedPower[k] = smoothed
            let current = min(windowMinimum[k], smoothed)
            windowMinimum[k] = current
            windowMaximum[k] = max(windowMaximum[k], smoothed)
            noise[k] = max(min(noise[k], bias * min(current, pastMinimum[k])), 1e-12)
        }
        minimumFrame &+= 1
        if minimumFrame >= minimumWindowFrames {
            minimumFrame = 0
            relearnIfStuck()
            let slot = pastMinima + minimumSlot &* statsBins
            for k in upTo(statsBins) {
                slot[k] = windowMinimum[k]
                windowMinimum[k] = smoothedPower[k]
                windowMaximum[k] = smoothedPower[k]
            }
            minimumSlot = minimumSlot &+ 1 == minimumWindows ? 0 : minimumSlot &+ 1
            for k in upTo(statsBins) { pastMinimum[k] = pastMinima[k] }
            for w in loop(from: 1, upTo: minimumWindows) {
                let past = pastMinima + w &* statsBins
                for k in upTo(statsBins) { pastMinimum[k] = min(pastMinimum[k], past[k]) }
            }
        }
    }

    /// At the end of a minimum sub-window (190 ms): if nearly every bin held steady through it and
    /// the one before, far above the noise estimate, the estimate was learned on something else:
    /// digital silence before a stream starts (PipeWire hands a starting source zeros), or a noise
    /// that jumped by 15 dB or more. The tracker would take seconds to climb (its speech probability
    /// saturates), the minima of the silent past would hold the ceiling down, and meanwhile the gate
    /// opens on the noise and passes it (3 s after a second of zeros, before this). Such bins restart
    /// from this sub-window's minimum. Speech does not look like this: within 190 ms its power swings
    /// by far more than 6 dB in most bins, and bins between its harmonics come near the estimate.
    @inline(__always) mutating func relearnIfStuck() {
        let margin: Float = 8  // the sub-window's minimum at least 9 dB above the estimate
        let steadiness: Float = 4  // and its maximum within 6 dB of its minimum
        var stuck = 0, active = 0
        for k in upTo(statsBins) {
            let low = windowMinimum[k], high = windowMaximum[k]
            active &+= high > 0 ? 1 : 0
            stuck &+= low > margin * noise[k] && high < steadiness * low ? 1 : 0
        }
        // Nearly every bin that carries any signal (a band-limited stream leaves exact zeros above),
        // in two sub-windows in a row (a vowel is not held that steady for 0.4 s).
        guard active > 0, 5 &* stuck >= 4 &* active else {
            stuckWindows = 0
            return
        }
        stuckWindows &+= 1
        guard stuckWindows >= 2 else { return }
        stuckWindows = 0
        let bias = minimumBias
        for k in upTo(statsBins) where windowMinimum[k] > margin * noise[k] {
            let low = windowMinimum[k]
            noise[k] = bias * low
            // The past sub-windows held the silence: their minima would pull the ceiling back down.
            for w in upTo(minimumWindows) {
                let past = pastMinima + w &* statsBins
                past[k] = max(past[k], low)
            }
            presenceAverage[k] = 0
        }
    }

    /// Steps 2 and 3: the OM-LSA gain with decision-directed a-priori SNR, smoothed against musical noise.
    /// The per-bin loops are branch-free so that they vectorize.
    @inline(__always) mutating func computeGain() {
        let xiMin: Float = 0.0031622777  // -25 dB
        let alpha = decisionDirected
        let beta = prioriSmoothing
        let scale = noiseScale
        for k in upTo(statsBins) {
            let inverseNoise = 1 / (noise[k] * scale)
            let gamma = power[k] * inverseNoise
            let xi = max(alpha * cleanPower[k] * inverseNoise + (1 - alpha) * max(gamma - 1, 0), xiMin)
            posterioriSNR[k] = gamma
            prioriSNR[k] = xi
            prioriAverage[k] = beta * prioriAverage[k] + (1 - beta) * xi
        }

        // A-priori speech absence from the smoothed a-priori SNR: local (3 statsBins), global (about 1 kHz), frame.
        var frameSum: Float = 0
        for k in loop(from: speechLow, upTo: speechHigh) { frameSum += prioriAverage[k] }
        let framePresence = Self.presence(frameSum / Float(speechHigh &- speechLow))
        let globalHalf = max(1, truncatedInt(500 / (sampleRate / Double(frameLength))))
        // Sliding window [k - globalHalf, k + globalHalf], cut at the ends of the spectrum.
        var globalSum: Float = 0
        var globalCount = 0
        for k in upTo(min(statsBins, globalHalf &+ 1)) { globalSum += prioriAverage[k]; globalCount &+= 1 }
        bandAverage[0] = globalSum / Float(globalCount)
        for k in loop(from: 1, upTo: statsBins) {
            let entering = k &+ globalHalf, leaving = k &- globalHalf &- 1
            if entering < statsBins { globalSum += prioriAverage[entering]; globalCount &+= 1 }
            if leaving >= 0 { globalSum -= prioriAverage[leaving]; globalCount &-= 1 }
            bandAverage[k] = globalSum / Float(globalCount)
        }
        absence[0] = 1 - Self.presence(prioriAverage[0]) * Self.presence(bandAverage[0]) * framePresence
        absence[statsBins &- 1] = 1 - Self.presence(prioriAverage[statsBins &- 1]) * Self.presence(bandAverage[statsBins &- 1]) * framePresence
        for k in loop(from: 1, upTo: statsBins &- 1) {
            let local = (prioriAverage[k &- 1] + prioriAverage[k] + prioriAverage[k &+ 1]) * (1 / 3)
            absence[k] = 1 - Self.presence(local) * Self.presence(bandAverage[k]) * framePresence
        }

        let floorLog2 = FastMath.log2(floorGain)
        let floor = floorGain
        let qMax: Float = 0.95
        let rise = riseMinimum
        let strength = mix
        for k in upTo(statsBins) {
            let gamma = posterioriSNR[k]
            // Two-step a-priori SNR (Plapous et al.): the decision-directed estimate lags a frame
            // behind onsets; one more step through the gain rule removes that lag.
            let first = Self.lsa(xi: prioriSNR[k], gamma: gamma)
            let xi = max(first.gain * first.gain * gamma, xiMin)
            let second = Self.lsa(xi: xi, gamma: gamma)
            let lsa = second.gain, expMinusV = second.expMinusV
            cleanPower[k] = lsa * lsa * power[k]
            // Speech presence probability given this frame.
            let q = min(absence[k], qMax)
            let p = 1 / (1 + q / (1 - q) * (1 + xi) * expMinusV)
            presence[k] = p
            // OM-LSA: G = G_LSA^p · G_min^(1-p), never below G_min.
            let combined = max(FastMath.exp2(p * FastMath.log2(max(lsa, 1e-6)) + (1 - p) * floorLog2), floor)
            // Gains rise at once where speech is likely (by the smoothed SNR, not by this frame alone),
            // slowly where it is not: isolated noise peaks fade in and out before they are heard.
            let previous = gain[k]
            let step = combined > previous ? rise + (1 - rise) * (1 - q) : 1
            let smoothed = previous + step * (combined - previous)
            gain[k] = smoothed
        }
        // Back to every bin: a band above `statsSplit` gives its gain to each of its bins.
        for k in upTo(statsSplit) { binGain[k] = gain[k] }
        for j in loop(from: statsSplit, upTo: statsBins) {
            let g = gain[j]
            for k in loop(from: statsFirst[j], upTo: statsFirst[j &+ 1]) { binGain[k] = g }
        }
        let open = activity.openness
        for k in loop(from: 1, upTo: bins &- 1) {
            let gated = floor + open * (binGain[k] - floor)
            appliedGain[k] = 1 - strength * (1 - gated)
        }
        // The DC and Nyquist bins are real: their powers do not follow the complex statistics the
        // rules assume, and they carry no speech. The Nyquist bin takes its neighbour's gain. The DC
        // bin (below 25-47 Hz, under any voice) takes the floor: the synthesis window smears a
        // harmonic's gain over about three bins, so the lowest harmonic held the rumble beneath it
        // open (in the CI test, a fifth of the noise left while somebody spoke at 48 kHz was there).
        // Not the next bin too (47 Hz at 48 kHz, 31 Hz at 8 kHz): a fundamental near 100 Hz would
        // lose 1 dB and turn 15 degrees through the same smear (clean-speech SI-SDR 24 dB in
        // `make eval`, 25 dB for speech at 8 kHz in the tests).
        gain[0] = gain[1]
        appliedGain[0] = 1 - strength * (1 - floor)
        gain[statsBins &- 1] = gain[statsBins &- 2]
        appliedGain[bins &- 1] = appliedGain[bins &- 2]
        var presenceSum: Float = 0
        for k in loop(from: speechLow, upTo: speechHigh) { presenceSum += presence[k] }
        // While the gate is shut the suppressor treats everything as noise, and the meter says so.
        let frameProbability = presenceSum / Float(speechHigh &- speechLow) * open
        speechProbability += meterRate * (frameProbability - speechProbability)
    }

    /// The log-spectral amplitude gain ξ/(1+ξ) · exp(E1(v)/2), v = γξ/(1+ξ), at most 1; and e^-v.
    /// E1 by Abramowitz & Stegun 5.1.53 (v <= 1) and 5.1.56 (v > 1), both branch-free.
    @inline(__always) static func lsa(xi: Float, gamma: Float) -> (gain: Float, expMinusV: Float) {
        let ratio = xi / (1 + xi)
        let v = max(ratio * gamma, 1e-6)
        let expMinusV = FastMath.exp(-min(v, 80))
        // E1 below 1 is the series minus ln v; its exp(-ln v / 2) = 1/sqrt(v) is applied outside the exp2.
        let series = ((((0.00107857 * v - 0.00976004) * v + 0.05519968) * v - 0.24991055) * v + 0.99999193) * v
            - 0.57721566
        let large = expMinusV / v * ((v + 2.334733) * v + 0.250621) / ((v + 3.330657) * v + 1.681534)
        let small = v <= 1
        let e1 = small ? series : large
        let factor = small ? 1 / LibM.sqrt(v) : 1
        return (min(ratio * factor * FastMath.exp2(e1 * 0.7213475204), 1), expMinusV)  // exp(E1/2) = 2^(E1 · log2(e) / 2)
    }

    /// Cohen's mapping of a smoothed a-priori SNR to a presence likelihood: 0 below -10 dB, 1 above -5 dB.
    @inline(__always) static func presence(_ zeta: Float) -> Float {
        let zetaMinLog2: Float = -3.321928  // log2(0.1)
        let zetaSpanLog2: Float = 1.660964  // log2(0.316 / 0.1)
        return min(max((FastMath.log2(max(zeta, 1e-10)) - zetaMinLog2) * (1 / zetaSpanLog2), 0), 1)
    }
}
