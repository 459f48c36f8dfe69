// The learned mode (`ns.mode learned`, the default): the classical estimator keeps running, its
// state is the model's input, and the applied mask takes each band's level from the model's band
// gains and the shape within the band from the estimator's per-bin gains, never above the model's
// and never more than 3 dB above the estimator's; its floor lies ns.reduction below the noise, not
// below each transient, and as far again where the noise is steady (see `blend`).
//
// Features, once per model step (every statistics update: every frame, 2.67 ms), per band b of
// SpeechBands (32), each scaled to about -2.5...2.5:
//   [b]       level against its own running mean (3 s): the band's level in dB minus that mean,
//             / 20, -2...3. A microphone's response and gain shift a band's level and its mean
//             alike, so the feature does not depend on the recording chain (0 in a band without bins)
//   [32 + b]  the level's change since the last step, dB / 20, within ±2 (0 in a band without bins)
//   [64 + b]  posterior SNR: band power over the classical noise estimate, dB / 20, -1...3
//   [96 + b]  a-priori SNR: the classical clean-speech estimate (LSA gain² · power) over the noise
//             estimate, dB / 20, -1.25...3
//   [128 + b] pitch correlation: the band's normalized correlation between this frame and the
//             signal one pitch period (the lag the gate found) earlier, Σ Re(X P*) / √(Σ|X|² Σ|P|²)
//             over the band's bins, -1...1, as RNNoise computes it. A voice's harmonics repeat
//             after one period (0.9 and more below 2 kHz in LearnedFeaturesTests), noise between
//             them and noise without a pitch far less (white noise about 0.2: frames a period
//             apart share most of their samples). P is the
//             spectrum of the frame j hops earlier (j = the lag in hops, rounded; kept for that),
//             moved by the remaining fraction of a hop as a phase ramp, not a transform of its own
//   [160]     the classical gate's openness (SpeechActivity), [161] its periodicity,
//   [162]     the frame's level: the mean over bands with bins of (dB + 50) / 20, where a band's
//             power is read as a level at 48 kHz (a band-limited signal gives the same level at every
//             rate), floored at -100 dB (digital silence reads -2.5).
// The estimate is read unscaled: ns.sensitivity moves the model's input only through the clean
// estimate. Training (training/) computes the same features with this very code
// (hear-features), so the model never sees features from another implementation.

extension NoiseSuppressor {
    public static let featureCount = 5 * SpeechBandLayout.count + 3
}

struct LearnedGains: ~Copyable {
    static let levelFloorDB: Float = -100
    /// The running mean that a band's level is read against (feature [b]).
    static let levelMeanSeconds = 3.0
    /// The smallest gain the blend reads (-180 dB): log2 of it stays finite.
    static let tiny: Float = 1e-9
    /// How far (log2 of a gain: 0.25 is 1.5 dB) the estimator's shape may lift a bin above the
    /// model's band level before the model's own gain caps it (`blend`).
    static let modelLead: Float = 0.25
    /// How far (log2 of a gain: 0.5 is 3 dB) the learned mask may rise above the estimator's own
    /// gain in a bin (`blend`). On the deciding set (family a, steady floor in place) 6 dB gave
    /// PESQ-WB 1.873, 3 dB 1.883, 1.5 dB 1.885 and 0 dB 1.886, STOI 0.836, 0.835, 0.835, 0.834:
    /// 3 dB takes most of the gain and keeps STOI.
    static let estimatorLift: Float = 0.5
    /// How far (a power ratio: 8 is 9 dB) a statistics bin's power must stand above the noise
    /// estimate before its floor is lowered, so that the random peaks of steady noise and of other
    /// voices keep the floor (`blend`). On the deciding set (family a) 6 dB raised keyboard's PESQ-WB
    /// by 0.024 but took babble's STOI to 0.022 below the input's.
    static let transientMargin: Float = 8
    /// How far below ns.reduction (a power gain: 0.01 is 20 dB) the floor of a transient may go,
    /// and never further than ns.reduction itself: at 0 dB nothing is lowered. 30 dB moved the
    /// deciding set (family a) by 0.001 PESQ-WB (keyboard 0.009).
    static let transientDepth: Float = 0.01
    /// How long (s) the running mean of each statistics bin's power over the noise estimate runs,
    /// which tells steady noise from what fluctuates (`blend`): longer than a syllable, so a voice's
    /// last 0.3 s keep the floor up.
    static let steadySeconds = 0.3
    /// Where that mean reaches this (3 dB above the estimate: a voice, other voices, a café, which
    /// the estimator does not follow) the floor is ns.reduction; at 1 (the power the estimate
    /// predicts: hiss, a fan, a hum) it drops by `steadyDepthDB` more; linear in dB between (linear
    /// in the gain kept only a few dB of the depth where the mean sits between: family a's white
    /// noise PESQ-WB 2.042 against 2.093 in dB, pink 1.740 against 1.762). In `make eval` 2 kept
    /// babble's STOI where it was (-0.019 against the input), 3 cost it 0.003.
    static let steadyLimit: Float = 2
    /// How far (dB) below ns.reduction the floor of steady noise goes, and never further than
    /// ns.reduction itself: the residual of a steady noise is what PESQ-WB marks down most under a
    /// voice (white noise 1.82 -> 2.04 in `make eval` at 25), while other voices at that depth lose
    /// the cues a listener follows them by (babble STOI -0.018 -> -0.032 with the whole floor at 40).
    static let steadyDepthDB: Float = 25

    let stats: StatisticsBins
    let bands: SpeechBands
    var model: GainModel
    /// Whether the model can run (the compiled-in model loaded and fits this suppressor).
    let isAvailable: Bool
    /// Per band: mean noise and clean estimates, power (then level), the last level feature, the
    /// model's gains and the estimator's mean log2 gain; per bin: the learned gains and scratch.
    let bandNoise: UnsafeMutablePointer<Float>
    let bandClean: UnsafeMutablePointer<Float>
    let bandEnergy: UnsafeMutablePointer<Float>
    let previousLevel: UnsafeMutablePointer<Float>
    let bandGain: UnsafeMutablePointer<Float>
    let bandEstimateGain: UnsafeMutablePointer<Float>
    let binGain: UnsafeMutablePointer<Float>
    let binScratch: UnsafeMutablePointer<Float>
    /// The floor's factor, 1 for noise that fluctuates, lower under a transient and in steady
    /// noise (`blend`): per statistics bin, then spread to every bin.
    let statsFloor: UnsafeMutablePointer<Float>
    /// Per statistics bin: the running mean of power over the noise estimate (`steadySeconds`).
    let heardOverNoise: UnsafeMutablePointer<Float>
    let steadyRate: Float
    let steadyGain: Float
    let binFloor: UnsafeMutablePointer<Float>
    /// Per band: the running mean of the level feature; the cross power of this frame with the one
    /// a pitch period earlier, and that frame's power (scratch).
    let levelMean: UnsafeMutablePointer<Float>
    let bandCross: UnsafeMutablePointer<Float>
    let bandDelayed: UnsafeMutablePointer<Float>
    /// Per band: the pitch correlation of this frame (feature [128 + b]), which the pitch filter reads.
    let bandCorrelation: UnsafeMutablePointer<Float>
    /// The pitch filter, and where this frame's features found the frame a period earlier: its slot
    /// in the ring and the phase ramp's turn that lines it up.
    var pitchFilter: PitchFilter
    var delayedSlot: Int {
        get { Int(storedDelayedSlot) }
        set { storedDelayedSlot = UInt16(truncatingIfNeeded: newValue) }
    }
    var delayedTurn = 0.0
    /// The last `pastFrames` spectra of the first channel (a ring, `bins` each), for the pitch
    /// correlation: a lag reaches up to half the frame (SpeechActivity), N / 2M hops. The second
    /// channel's ring follows the first's (`pastFrames` · `bins` on), for the pitch filter in stereo.
    let pastReal: UnsafeMutablePointer<Float>
    let pastImaginary: UnsafeMutablePointer<Float>
    let secondPastReal: UnsafeMutablePointer<Float>
    let secondPastImaginary: UnsafeMutablePointer<Float>
    var pastFrames: Int { Int(storedPastFrames) }
    /// The cross spectrum's imaginary part (scratch), and the lag's refinement: ± samples, over the
    /// bins to 4 kHz.
    let crossImaginary: UnsafeMutablePointer<Float>
    /// The power of the frame a pitch period earlier, per bin (scratch).
    let delayedPower: UnsafeMutablePointer<Float>
    /// log2 of the estimator's per-bin gain (`blend`'s scratch).
    let estimateLog2: UnsafeMutablePointer<Float>
    /// The noise and clean-speech estimates spread to the bins (scratch).
    let noiseBins: UnsafeMutablePointer<Float>
    let cleanBins: UnsafeMutablePointer<Float>
    var refineRange: Int { Int(storedRefineRange) }
    var refineBins: Int { Int(storedRefineBins) }
    /// The ring's newest slot.
    var newestPast: Int {
        get { Int(storedNewestPast) }
        set { storedNewestPast = UInt16(truncatingIfNeeded: newValue) }
    }
    var hop: Int { Int(storedHop) }
    /// Band power to the level at 48 kHz (see the header).
    let levelScale: Float
    /// The level mean's step per model step, and whether it holds a level yet (it starts at the
    /// first frame's: a stream does not start from silence).
    let levelMeanRate: Float
    var levelMeanPrimed = false
    /// The transform length: the pitch lag's phase per bin is 2π lag / N.
    var frameLength: Int { Int(storedFrameLength) }
    // Sizes in 32 bits, the ring's in 16 (a few frames): loops up to them and arithmetic on them
    // need no overflow check.
    private let storedRefineRange: UInt32, storedRefineBins: UInt32, storedHop: UInt32, storedFrameLength: UInt32
    private let storedPastFrames: UInt16
    private var storedNewestPast: UInt16 = 0, storedDelayedSlot: UInt16 = 0
    /// The model's speech probability, last step.
    var speech: Float = 0
    /// Feature sets computed since init (one per model step, and one per frame while recording).
    private(set) var steps = 0
    /// Frames since the model's last step, counted up to its stride (0: it steps at this frame).
    var framesSinceStep = 0

    init(sampleRate: Double, frameLength n: Int, stepSeconds: Double, powerNormalization: Float, stats: StatisticsBins,
         model blob: UnsafeRawBufferPointer, arena: inout Arena) {
        self.stats = stats
        bands = SpeechBands(sampleRate: sampleRate, frameLength: n, arena: &arena)
        let gainModel = GainModel(blob: blob, arena: &arena)
        // A model steps at every `stride`-th statistics update (its blob's header; train.py --stride),
        // and the frames between apply the gains of its last step, as training's targets assume.
        isAvailable = gainModel.isAvailable
            && gainModel.inputs == NoiseSuppressor.featureCount && gainModel.outputs > SpeechBandLayout.count
        model = gainModel
        let count = SpeechBandLayout.count
        bandNoise = arena.floats(count)
        bandClean = arena.floats(count)
        bandEnergy = arena.floats(count)
        previousLevel = arena.floats(count, (Self.levelFloorDB + 50) * 0.05)
        bandGain = arena.floats(count, 1)
        bandEstimateGain = arena.floats(count)
        binGain = arena.floats(stats.bins, 1)
        binScratch = arena.floats(stats.bins)
        statsFloor = arena.floats(stats.count, 1)
        heardOverNoise = arena.floats(stats.count, Self.steadyLimit)
        steadyRate = Float(1 - LibM.exp(-stepSeconds / Self.steadySeconds))
        steadyGain = Float(Decibels.toGain(-Double(Self.steadyDepthDB)))
        binFloor = arena.floats(stats.bins, 1)
        levelMean = arena.floats(count)
        bandCross = arena.floats(count)
        bandDelayed = arena.floats(count)
        bandCorrelation = arena.floats(count)
        pitchFilter = PitchFilter(bins: stats.bins, arena: &arena)
        let frameLength = held(n)
        let m = min(max(1, truncatedInt(stepSeconds * sampleRate + 0.5)), 1 << 20)
        let pastFrames = min(frameLength / (2 * m) + 2, 1 << 15)
        storedHop = UInt32(m)
        storedPastFrames = UInt16(pastFrames)
        pastReal = arena.floats(2 * pastFrames * stats.bins)
        pastImaginary = arena.floats(2 * pastFrames * stats.bins)
        secondPastReal = pastReal + pastFrames * stats.bins
        secondPastImaginary = pastImaginary + pastFrames * stats.bins
        crossImaginary = arena.floats(stats.bins)
        delayedPower = arena.floats(stats.bins)
        estimateLog2 = arena.floats(stats.bins)
        noiseBins = arena.floats(stats.bins)
        cleanBins = arena.floats(stats.bins)
        storedRefineRange = UInt32(min(max(1, truncatedInt(sampleRate / 6000)), 1 << 16))
        storedRefineBins = UInt32(min(stats.bins, max(0, held(truncatedInt(4000 * Double(frameLength) / sampleRate)) + 1)))
        levelScale = powerNormalization * Float(frameLength) * Float(48000 / sampleRate)
        levelMeanRate = Float(1 - LibM.exp(-stepSeconds / Self.levelMeanSeconds))
        storedFrameLength = UInt32(frameLength)
    }

    mutating func reset() {
        restart()
        speech = 0
        previousLevel.fill((Self.levelFloorDB + 50) * 0.05, count: SpeechBandLayout.count)
        levelMean.fill(0, count: SpeechBandLayout.count)
        levelMeanPrimed = false
        // A stream starts as not steady: the floor goes deeper once the noise has shown it is.
        heardOverNoise.fill(Self.steadyLimit, count: stats.count)
        pastReal.fill(0, count: 2 * pastFrames * stats.bins)
        pastImaginary.fill(0, count: 2 * pastFrames * stats.bins)
        newestPast = 0
        binGain.fill(1, count: stats.bins)
    }

    /// The model starts fresh, as on a new stream (coming from the classical mode).
    mutating func restart() {
        model.reset()
        framesSinceStep = 0
        bandGain.fill(1, count: SpeechBandLayout.count)
    }

    /// Writes the features into the model's input, from this frame's power (every bin) and first
    /// channel's spectrum, the noise and clean-speech estimates (per statistics bin) and the gate's
    /// state and pitch lag (samples).
    @inline(__always) mutating func computeFeatures(framePower: UnsafePointer<Float>, spectrumReal: UnsafePointer<Float>,
                                                    spectrumImaginary: UnsafePointer<Float>, noise: UnsafePointer<Float>,
                                                    clean: UnsafePointer<Float>, openness: Float, periodicity: Float,
                                                    pitchSamples: Float) {
        let count = SpeechBandLayout.count
        let bins = stats.bins
        stats.expand(noise, into: noiseBins)
        stats.expand(clean, into: cleanBins)
        // The frame a pitch period earlier: `back` hops ago, moved by the rest of the lag (at most
        // half a hop either way) as a phase ramp of `turn` per bin, by a rotation per bin (one sin
        // and cos a frame; the rounding over 1,000 bins stays near 1e-5).
        let frames = pastFrames
        let back = min(max(truncatedInt(Double(pitchSamples) / Double(hop) + 0.5), 1), frames - 1)
        let rest = Double(pitchSamples) - Double(back) * Double(hop)
        let newest = newestPast
        let slot = newest - back + 1 < 0 ? newest - back + 1 + frames : newest - back + 1
        let re = pastReal + slot * bins, im = pastImaginary + slot * bins
        // X · conj(P e^{-i turn k}) = X · conj(P) · e^{i turn k}: the cross spectrum first, P's
        // power, and this frame into the ring (a slot `back` >= 1 frames from the one read).
        let newestSlot = newest < frames - 1 ? newest + 1 : 0
        let newestRe = pastReal + newestSlot * bins, newestIm = pastImaginary + newestSlot * bins
        for k in 0..<bins {
            let xr = spectrumReal[k], xi = spectrumImaginary[k], pr = re[k], pi = im[k]
            binScratch[k] = xr * pr + xi * pi
            crossImaginary[k] = xi * pr - xr * pi
            delayedPower[k] = pr * pr + pi * pi
            newestRe[k] = xr
            newestIm[k] = xi
        }
        newestPast = newestSlot
        // The gate's lag can be a few samples off (its correlation is that of the power in
        // 200 Hz-2 kHz): the lag within ±`refineRange` samples that correlates best to 4 kHz counts.
        var best = rest, bestSum = -Float.greatestFiniteMagnitude
        let range = refineRange
        var offset = -range
        while offset <= range {
            let candidate = rest + Double(offset)
            let sum = PhaseRamp.rotatedSum(binScratch, crossImaginary, count: refineBins,
                                      turn: 2 * Double.pi * candidate / Double(frameLength))
            if sum > bestSum { bestSum = sum; best = candidate }
            offset += 1
        }
        delayedSlot = slot
        delayedTurn = 2 * Double.pi * best / Double(frameLength)
        PhaseRamp.rotate(binScratch, crossImaginary, count: bins, turn: delayedTurn)
        bands.average(noiseBins, cleanBins, delayedPower, binScratch, framePower,
                      into: bandNoise, bandClean, bandDelayed, bandCross, bandEnergy)
        let f = model.features
        let meanRate = levelMeanPrimed ? levelMeanRate : 1
        levelMeanPrimed = true
        var levelSum: Float = 0, levelBands: Float = 0
        for b in 0..<count {
            let has: Float = bands.inverseWeight[b] > 0 ? 1 : 0
            let power = bandEnergy[b]
            let level = levelScale * power
            bandEnergy[b] = level
            let levelDB = max(Decibels.fastFromPower(max(level, 1e-30)), Self.levelFloorDB)
            let feature = (levelDB + 50) * 0.05
            levelSum += has * feature
            levelBands += has
            levelMean[b] += meanRate * (feature - levelMean[b])
            f[b] = has * min(max(feature - levelMean[b], -2), 3)
            f[count + b] = has * min(max(feature - previousLevel[b], -2), 2)
            previousLevel[b] = feature
            let noiseFloor = max(bandNoise[b], 1e-30)
            let posterior = Decibels.fastFromPower(max(power, 1e-30) / noiseFloor) * 0.05
            let priori = Decibels.fastFromPower(max(bandClean[b], 1e-30) / noiseFloor) * 0.05
            f[2 * count + b] = has * min(max(posterior, -1), 3)
            f[3 * count + b] = has * min(max(priori, -1.25), 3)
            let energies = power * bandDelayed[b]
            bandCorrelation[b] = energies > 1e-30 ? min(max(bandCross[b] / LibM.sqrt(energies), -1), 1) : 0
            f[4 * count + b] = bandCorrelation[b]
        }
        f[5 * count] = openness
        f[5 * count + 1] = periodicity
        f[5 * count + 2] = levelBands > 0 ? levelSum / levelBands : (Self.levelFloorDB + 50) * 0.05
        if steps < Int.max { steps += 1 }
    }

    /// One model step: the band gains spread to the bins, applied to this very frame and, with a
    /// stride above 1, to the frames up to the next step. With stride 1 no hold delays a falling
    /// gain: a click is lowered in the frame it arrives in.
    @inline(__always) mutating func step() {
        let due = framesSinceStep == 0
        let next = framesSinceStep &+ 1  // (below 8: no overflow check)
        framesSinceStep = next < model.stride ? next : 0
        if !due { return }
        model.step()
        let count = SpeechBandLayout.count
        let result = model.result
        // A gain the sigmoid took down to ~1e-38 would turn subnormal in the interpolation (and
        // every multiply on a subnormal costs an assist on x86): held at `tiny`, which the blend
        // reads it as anyway, far under any floor.
        for b in 0..<count { bandGain[b] = max(result[b], Self.tiny) }
        bands.interpolate(bandGain, into: binGain)
        speech = count < model.outputs ? result[count] : 0
    }

    /// The second channel's spectrum into its ring, in the slot this frame's features filled with
    /// the first channel's (after `computeFeatures`), for the pitch filter in stereo.
    @inline(__always) mutating func keepSecondChannel(real: UnsafePointer<Float>, imaginary: UnsafePointer<Float>) {
        let bins = stats.bins
        let ringReal = secondPastReal + newestPast * bins, ringImaginary = secondPastImaginary + newestPast * bins
        var k = 0
        while k < bins {
            ringReal[k] = real[k]
            ringImaginary[k] = imaginary[k]
            k += 1
        }
    }

    /// The pitch filter on a channel's spectrum (0, or 1 in stereo), from this frame's features
    /// and band gains (PitchFilter.swift); `weight` fades it with the learned mode's share, the
    /// mask's strength and ns.reduction. Both channels take the first channel's lag and the same
    /// shares, so the stereo image stays.
    @inline(__always) mutating func filterPitch(real: UnsafeMutablePointer<Float>, imaginary: UnsafeMutablePointer<Float>,
                                                channel: Int, weight: Float) {
        let bins = stats.bins
        if channel == 0 { pitchFilter.prepare(correlation: bandCorrelation, gains: bandGain, weight: weight) }
        let offset = delayedSlot * bins
        let ringReal = channel == 0 ? pastReal : secondPastReal, ringImaginary = channel == 0 ? pastImaginary : secondPastImaginary
        pitchFilter.apply(real: real, imaginary: imaginary, delayedReal: ringReal + offset,
                          delayedImaginary: ringImaginary + offset, turn: delayedTurn, bands: bands)
    }

    /// Per-bin gains from outside in place of the model's (hear-features' oracle).
    mutating func takeBinGains(_ gains: UnsafePointer<Float>) {
        for k in 0..<stats.bins { binGain[k] = gains[k] }
    }

    /// Band gains from outside in place of the model's output, spread to the bins as the model's are.
    mutating func takeBandGains(_ gains: UnsafePointer<Float>) {
        for b in 0..<SpeechBandLayout.count { bandGain[b] = gains[b] }
        bands.interpolate(bandGain, into: binGain)
    }

    /// Blends the learned mask into `mask` (which holds the classical one) by `weight`. The model
    /// sets each band's level; the classical estimator, which resolves every bin, shapes it within
    /// the band (between a voice's harmonics) and bounds it from above. Per bin, in log2: the
    /// estimator's gain moved by the difference between the model's band gain and the estimator's
    /// mean over that band, plus `modelLead`; never above the model's own gain, which is squared
    /// (the model estimates sqrt(S / (S + N)) per band, the squared gain is the band's Wiener gain);
    /// and never more than `estimatorLift` (3 dB) above the estimator's own gain. The model finds
    /// what the estimator misses (clicks, voices in the noise) and lowers it; where the estimator is
    /// sure of steady noise (a hum's lines, a fan between a voice's harmonics), the model's coarser
    /// bands cannot keep it. The lead and the squaring were chosen in `make eval` on the home
    /// recordings (group `home`), the lift's bound on the deciding set and confirmed on family b and
    /// the home recordings; EVALUATION.md's oracle section gives the blend with the
    /// true band gains in the model's place (hear-features oracle --place bands).
    /// Confirmed on the dry deciding set (PESQ-WB paired over each family's 288 clips, a / b, against
    /// the committed blend): the model's log gain times 1.5 instead of 2 -0.012 / -0.021, times 2.5
    /// -0.030 / -0.013, times 1.5 above 4 kHz (2 below 1.5 kHz, a ramp between) -0.017 / -0.011; a
    /// lift of 6 dB -0.009 / -0.009, of 1.5 dB +0.003 / +0.002; a lead of 0 -0.001 / -0.001, of 3 dB
    /// +0.001 / +0.000. The band gains smoothed over two steps (half the last) or held to fall at most
    /// 1 dB a step lost 0.02-0.04 on both.
    ///
    /// The floor (ns.reduction) is the level the residual noise keeps below the steady noise, not
    /// below whatever a frame holds: where a statistics bin's `power` stands more than
    /// `transientMargin` above the `noise` estimate (a key click the estimator does not track), the
    /// bin's floor drops by sqrt(margin · noise / power), by at most `transientDepth` and at most
    /// the floor itself, so a click the model takes for noise ends up about as low as the steady
    /// noise does instead of 25 dB under its own level, still audible above it. The margin and
    /// depth were chosen in `make eval` on the home recordings: the limit raised keyboard's PESQ-WB;
    /// a margin near 0 dB cost cafe's STOI, above 6 dB nothing changed. Where the noise is steady
    /// (a bin's power has stayed near the estimate for `steadySeconds`), the floor drops further,
    /// by up to `steadyDepthDB` (hiss, a fan, a hum), while noise that fluctuates (voices, a café)
    /// keeps ns.reduction. Only bins the model has already
    /// taken below the floor reach a lower one: a voice keeps its gains.
    ///
    /// Why the floor stays where other voices are: on the deciding set (family a) a floor that
    /// follows the model 30 % of the way below it (in dB), or ns.reduction 30, raised white noise and
    /// keyboard (keyboard PESQ-WB +0.07 to +0.10) and lowered babble and café (babble -0.05 to
    /// -0.07, its STOI 0.023 to 0.027 below the input's): the model errs deepest on other voices.
    /// A floor 25 dB deeper in the model's speech pauses (its speech probability held for 0.15 s)
    /// took the residual from -35 to -39 dB and the mean PESQ-WB down by 0.010.
    @inline(__always) mutating func blend(into mask: UnsafeMutablePointer<Float>, estimator: UnsafePointer<Float>,
                                 power: UnsafePointer<Float>, noise: UnsafePointer<Float>,
                                 floor: Float, strength: Float, weight: Float) {
        let tiny = Self.tiny
        let bins = stats.bins
        let margin = Self.transientMargin, depth = Self.transientDepth
        // The steady part: the floor's factor from 1 (the mean at `steadyLimit` and above) down to
        // steadyGain (the mean at 1), linear in dB, never below the floor itself (at ns.reduction
        // 0, nothing).
        let deepestLog2 = FastMath.log2(max(steadyGain, floor)), rate = steadyRate, limit = Self.steadyLimit
        for j in 0..<stats.count {
            let level = max(power[j], 1e-30), noiseHere = max(noise[j], 1e-30)
            heardOverNoise[j] += rate * (level / noiseHere - heardOverNoise[j])
            let fluctuation = min(max((heardOverNoise[j] - 1) / (limit - 1), 0), 1)
            let steady = FastMath.exp2((1 - fluctuation) * deepestLog2)
            let transient = max(LibM.sqrt(min(max(margin * noiseHere / level, depth), 1)), floor)
            statsFloor[j] = transient * steady
        }
        stats.expand(statsFloor, into: binFloor)
        // log2 of the estimator's gain per bin, then its band means spread back to the bins.
        let tinyLanes = SIMD8<Float>(repeating: tiny)
        var k = 0
        while k < bins - 7 {
            store8(estimateLog2 + k, FastMath.log2(lanesMax(load8(estimator + k), tinyLanes)))
            k += 8
        }
        while k < bins {
            estimateLog2[k] = FastMath.log2(max(estimator[k], tiny))
            k += 1
        }
        bands.average(estimateLog2, into: bandEstimateGain)
        bands.interpolate(bandEstimateGain, into: binScratch)
        let lead = Self.modelLead, lift = Self.estimatorLift
        // Eight bins at a time, then the rest one by one: the same operations either way. The model
        // estimates sqrt(S / (S + N)) per band (its training target); squared, the band's Wiener
        // gain S / (S + N).
        k = 1
        let floorLanes = SIMD8<Float>(repeating: floor)
        while k < bins - 7 {
            let model = 2 * FastMath.log2(lanesMax(load8(binGain + k), tinyLanes))
            let estimate = load8(estimateLog2 + k)
            let shaped = estimate + (model - load8(binScratch + k)) + lead
            let g = lanesMax(FastMath.exp2(lanesMin(lanesMin(model, shaped), estimate + lift)), floorLanes * load8(binFloor + k))
            let learned = 1 - strength * (1 - g)
            let previous = load8(mask + k)
            store8(mask + k, previous + weight * (learned - previous))
            k += 8
        }
        while k < bins {
            let model = 2 * FastMath.log2(max(binGain[k], tiny))
            let estimate = estimateLog2[k]
            let shaped = estimate + (model - binScratch[k]) + lead
            let g = max(FastMath.exp2(min(min(model, shaped), estimate + lift)), floor * binFloor[k])
            let learned = 1 - strength * (1 - g)
            mask[k] += weight * (learned - mask[k])
            k += 1
        }
        // The DC bin carries no speech: the floor, as in the classical mask.
        let dc = 1 - strength * (1 - floor)
        mask[0] += weight * (dc - mask[0])
    }
}
