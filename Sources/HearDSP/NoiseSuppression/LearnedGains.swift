// The learned mode (`ns.mode learned`, the default): the classical estimator keeps running, its
// state is the model's input, and the applied mask takes each band's level from the model's band
// gains and the shape within the band from the estimator's per-bin gains, never above the model's
// and never more than 6 dB above the estimator's; its floor lies ns.reduction below the steady
// noise, not below each transient (see `blend`).
//
// Features, once per model step (every statistics update: every frame, 2.67 ms), per band b of
// SpeechBands (32), each scaled to about -2.5...2.5:
//   [b]       level: band power as dB, (dB + 50) / 20; the power is the band's mean bin power read as
//             a level at 48 kHz (a band-limited signal gives the same level at every rate), floored
//             at -100 dB, which is also what a band above the Nyquist frequency reads
//   [32 + b]  the level's change since the last step, within ±2 (0 in a band without bins)
//   [64 + b]  posterior SNR: band power over the classical noise estimate, dB / 20, -1...3
//   [96 + b]  a-priori SNR: the classical clean-speech estimate (LSA gain² · power) over the noise
//             estimate, dB / 20, -1.25...3
//   [128]     the classical gate's openness (SpeechActivity), [129] its periodicity.
// The estimate is read unscaled: ns.sensitivity moves the model's input only through the clean
// estimate. Training (training/) computes the same features with this very code
// (hear-features), so the model never sees features from another implementation.

extension NoiseSuppressor {
    public static let featureCount = 4 * SpeechBandLayout.count + 2
    /// Statistics updates per model step: every update, so every frame applies the gains computed
    /// from it (2.67 ms at every rate).
    public static let modelStride = 1
}

struct LearnedGains: ~Copyable {
    static let levelFloorDB: Float = -100
    /// The smallest gain the blend reads (-180 dB): log2 of it stays finite.
    static let tiny: Float = 1e-9
    /// How far (log2 of a gain: 0.25 is 1.5 dB) the estimator's shape may lift a bin above the
    /// model's band level before the model's own gain caps it (`blend`).
    static let modelLead: Float = 0.25
    /// How far (log2 of a gain: 1 is 6 dB) the learned mask may rise above the estimator's own gain
    /// in a bin (`blend`).
    static let estimatorLift: Float = 1
    /// How far (a power ratio: 8 is 9 dB) a statistics bin's power must stand above the noise
    /// estimate before its floor is lowered, so that the random peaks of steady noise and of other
    /// voices keep the floor (`blend`).
    static let transientMargin: Float = 8
    /// How far below ns.reduction (a power gain: 0.01 is 20 dB) the floor of a transient may go,
    /// and never further than ns.reduction itself: at 0 dB nothing is lowered.
    static let transientDepth: Float = 0.01

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
    /// The floor's factor, 1 for steady noise, lower under a transient (`blend`): per statistics
    /// bin, then spread to every bin.
    let statsFloor: UnsafeMutablePointer<Float>
    let binFloor: UnsafeMutablePointer<Float>
    /// Band power to the level at 48 kHz (see the header).
    let levelScale: Float
    /// The model's speech probability, last step.
    var speech: Float = 0
    /// Model steps taken (or feature sets computed) since init.
    var steps = 0

    init(sampleRate: Double, frameLength n: Int, powerNormalization: Float, stats: StatisticsBins, arena: inout Arena) {
        self.stats = stats
        bands = SpeechBands(sampleRate: sampleRate, frameLength: n, arena: &arena)
        let gainModel = GainModel(blob: GainModel.compiledBlob, allocate: { arena.floats($0) })
        isAvailable = gainModel.isAvailable && gainModel.stride == NoiseSuppressor.modelStride
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
        binFloor = arena.floats(stats.bins, 1)
        levelScale = powerNormalization * Float(n) * Float(48000 / sampleRate)
    }

    mutating func reset() {
        restart()
        speech = 0
        previousLevel.fill((Self.levelFloorDB + 50) * 0.05, count: SpeechBandLayout.count)
        binGain.fill(1, count: stats.bins)
    }

    /// The model starts fresh, as on a new stream (coming from the classical mode).
    mutating func restart() {
        model.reset()
        bandGain.fill(1, count: SpeechBandLayout.count)
    }

    /// Writes the features into the model's input, from this frame's power (every bin), the noise
    /// and clean-speech estimates (per statistics bin) and the gate's state.
    @inline(__always) func computeFeatures(framePower: UnsafePointer<Float>, noise: UnsafePointer<Float>,
                                           clean: UnsafePointer<Float>, openness: Float, periodicity: Float) {
        let count = SpeechBandLayout.count
        stats.expand(noise, into: binScratch)
        bands.average(binScratch, into: bandNoise)
        stats.expand(clean, into: binScratch)
        bands.average(binScratch, into: bandClean)
        bands.average(framePower, into: bandEnergy)
        let f = model.features
        for b in upTo(count) {
            let has: Float = bands.inverseWeight[b] > 0 ? 1 : 0
            let power = bandEnergy[b]
            let level = levelScale * power
            bandEnergy[b] = level
            let levelDB = max(Decibels.fastFromPower(max(level, 1e-30)), Self.levelFloorDB)
            let feature = (levelDB + 50) * 0.05
            f[b] = feature
            f[count + b] = has * min(max(feature - previousLevel[b], -2), 2)
            previousLevel[b] = feature
            let noiseFloor = max(bandNoise[b], 1e-30)
            let posterior = Decibels.fastFromPower(max(power, 1e-30) / noiseFloor) * 0.05
            let priori = Decibels.fastFromPower(max(bandClean[b], 1e-30) / noiseFloor) * 0.05
            f[2 * count + b] = has * min(max(posterior, -1), 3)
            f[3 * count + b] = has * min(max(priori, -1.25), 3)
        }
        f[4 * count] = openness
        f[4 * count + 1] = periodicity
    }

    /// One model step: the band gains spread to the bins, applied to this very frame. No hold
    /// delays a falling gain: a click is lowered in the frame it arrives in.
    @inline(__always) mutating func step() {
        model.step()
        let count = SpeechBandLayout.count
        let result = model.result
        // A gain the sigmoid took down to ~1e-38 would turn subnormal in the interpolation (and
        // every multiply on a subnormal costs an assist on x86): held at `tiny`, which the blend
        // reads it as anyway, far under any floor.
        for b in upTo(count) { bandGain[b] = max(result[b], Self.tiny) }
        bands.interpolate(bandGain, into: binGain)
        speech = count < model.outputs ? result[count] : 0
    }

    /// Blends the learned mask into `mask` (which holds the classical one) by `weight`. The model
    /// sets each band's level; the classical estimator, which resolves every bin, shapes it within
    /// the band (between a voice's harmonics) and bounds it from above. Per bin, in log2: the
    /// estimator's gain moved by the difference between the model's band gain and the estimator's
    /// mean over that band, plus `modelLead`; never above the model's own gain, which is squared
    /// (the model estimates sqrt(S / (S + N)) per band, the squared gain is the band's Wiener gain);
    /// and never more than `estimatorLift` (6 dB) above the estimator's own gain. The model finds
    /// what the estimator misses (clicks, voices in the noise) and lowers it; where the estimator is
    /// sure of steady noise (a hum's lines, a fan between a voice's harmonics), the model's coarser
    /// bands cannot keep it. The lift's bound, the lead and the squaring were chosen in `make eval`
    /// on the home recordings (group `home`); EVALUATION.md's oracle section gives the blend with the
    /// true band gains in the model's place (hear-features oracle --place bands).
    ///
    /// The floor (ns.reduction) is the level the residual noise keeps below the steady noise, not
    /// below whatever a frame holds: where a statistics bin's `power` stands more than
    /// `transientMargin` above the `noise` estimate (a key click the estimator does not track), the
    /// bin's floor drops by sqrt(margin · noise / power), by at most `transientDepth` and at most
    /// the floor itself, so a click the model takes for noise ends up about as low as the steady
    /// noise does instead of 25 dB under its own level, still audible above it. Steady noise keeps
    /// the floor. Only bins the model has already taken below the floor reach the lower one: a voice
    /// keeps its gains. The margin and depth were chosen in `make eval` on the home recordings: the
    /// limit raised keyboard's PESQ-WB; a margin near 0 dB cost cafe's STOI, above 6 dB nothing
    /// changed.
    @inline(__always) func blend(into mask: UnsafeMutablePointer<Float>, estimator: UnsafePointer<Float>,
                                 power: UnsafePointer<Float>, noise: UnsafePointer<Float>,
                                 floor: Float, strength: Float, weight: Float) {
        let tiny = Self.tiny
        let bins = stats.bins
        let margin = Self.transientMargin, depth = Self.transientDepth
        for j in upTo(stats.count) {
            let ratio = margin * noise[j] / max(power[j], 1e-30)
            statsFloor[j] = max(LibM.sqrt(min(max(ratio, depth), 1)), floor)
        }
        stats.expand(statsFloor, into: binFloor)
        // log2 of the estimator's gain per bin, then its band means spread back to the bins.
        for k in upTo(bins) { binScratch[k] = FastMath.log2(max(estimator[k], tiny)) }
        bands.average(binScratch, into: bandEstimateGain)
        bands.interpolate(bandEstimateGain, into: binScratch)
        let lead = Self.modelLead, lift = Self.estimatorLift
        for k in loop(from: 1, upTo: bins) {
            // The model estimates sqrt(S / (S + N)) per band (its training target); squared, the
            // band's Wiener gain S / (S + N).
            let model = 2 * FastMath.log2(max(binGain[k], tiny))
            let estimate = FastMath.log2(max(estimator[k], tiny))
            let shaped = estimate + (model - binScratch[k]) + lead
            let g = max(FastMath.exp2(min(min(model, shaped), estimate + lift)), floor * binFloor[k])
            let learned = 1 - strength * (1 - g)
            mask[k] += weight * (learned - mask[k])
        }
        // The DC bin carries no speech: the floor, as in the classical mask.
        let dc = 1 - strength * (1 - floor)
        mask[0] += weight * (dc - mask[0])
    }
}
