// The learned mode (`ns.mode learned`, the default): the classical estimator keeps running, its
// state is the model's input, and the applied mask is the geometric mean of the model's band gains
// (spread to the bins) and the estimator's per-bin gains, lowered further where the model asks for
// a band well below the estimator (see `blendLearnedGains`).
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
    static let levelFloorDB: Float = -100
    /// How far (log2 of a gain: 0.25 is 1.5 dB) the model's band gain may lie below the estimator's
    /// band mean before the model sets the band's level alone (`blendLearnedGains`).
    static let modelLead: Float = 0.25

    /// Band powers from the last model step, as levels at 48 kHz (linear; see the header).
    public var bandPowers: UnsafePointer<Float> { UnsafePointer(bandEnergy) }
    /// Every bin's power in the last frame (`bins` values; in stereo the channels' mean).
    public var framePower: UnsafePointer<Float> { UnsafePointer(binPower) }
    /// The features of the last model step (`featureCount` values).
    public var features: UnsafePointer<Float> { UnsafePointer(model.features) }

    /// A statistics bin's value spread to every spectrum bin it stands for.
    @inline(__always) func expand(_ stats: UnsafeMutablePointer<Float>, into perBin: UnsafeMutablePointer<Float>) {
        for k in upTo(statsSplit) { perBin[k] = stats[k] }
        for j in loop(from: statsSplit, upTo: statsBins) {
            let v = stats[j]
            for k in loop(from: statsFirst[j], upTo: statsFirst[j + 1]) { perBin[k] = v }
        }
    }

    /// Writes the features into the model's input; needs this update's `computeGain` (clean estimate).
    @inline(__always) mutating func computeFeatures() {
        let count = SpeechBandLayout.count
        expand(noise, into: binScratch)
        bands.average(binScratch, into: bandNoise)
        expand(cleanPower, into: binScratch)
        bands.average(binScratch, into: bandClean)
        bands.average(binPower, into: bandEnergy)
        let f = model.features
        let toDB: Float = 3.0103  // 10 log10(x) = 3.0103 log2(x)
        for b in upTo(count) {
            let has: Float = bands.inverseWeight[b] > 0 ? 1 : 0
            let power = bandEnergy[b]
            let level = levelScale * power
            bandEnergy[b] = level
            let levelDB = max(toDB * FastMath.log2(max(level, 1e-30)), Self.levelFloorDB)
            let feature = (levelDB + 50) * 0.05
            f[b] = feature
            f[count + b] = has * min(max(feature - previousLevel[b], -2), 2)
            previousLevel[b] = feature
            let noiseFloor = max(bandNoise[b], 1e-30)
            let posterior = toDB * FastMath.log2(max(power, 1e-30) / noiseFloor) * 0.05
            let priori = toDB * FastMath.log2(max(bandClean[b], 1e-30) / noiseFloor) * 0.05
            f[2 * count + b] = has * min(max(posterior, -1), 3)
            f[3 * count + b] = has * min(max(priori, -1.25), 3)
        }
        f[4 * count] = activity.openness
        f[4 * count + 1] = activity.periodicity
    }

    /// One model step: the band gains spread to the bins, applied to this very frame. No hold
    /// delays a falling gain: a click is lowered in the frame it arrives in.
    @inline(__always) mutating func stepModel() {
        model.step()
        let count = SpeechBandLayout.count
        let result = model.result
        for b in upTo(count) { bandGain[b] = result[b] }
        bands.interpolate(bandGain, into: learnedBinGain)
        modelSpeech = count < model.outputs ? result[count] : 0
    }

    /// Blends the learned mask into `appliedGain` (which holds the classical one) by `learnedMix`.
    /// The learned mask is the geometric mean of the model's gain and the classical estimator's
    /// (before its gate): in dB, the mean of the two attenuations. The model knows what speech is
    /// (clicks, babble, a voice's onset), but its 32 bands cannot reach between a voice's harmonics;
    /// the estimator resolves every bin. Where the model's band gain lies more than `modelLead`
    /// below the estimator's mean gain over that band (a key click the slow noise tracking takes for
    /// speech), the mean alone would keep half of that difference: there the estimator's per-bin
    /// gains are lowered by the whole difference instead, so the model sets the band's level and the
    /// estimator keeps its shape between harmonics. On the held-out recorded voices of `make eval`
    /// this took key clicks from 1.31 to 1.36 PESQ-WB against the mean alone, for 0.02 on white
    /// noise and 0.3 dB of clean-speech SI-SDR; a smaller lead traded more clean speech for clicks,
    /// a larger one fewer clicks (EVALUATION.md).
    @inline(__always) func blendLearnedGains() {
        let floor = floorGain, strength = mix, weight = learnedMix
        let tiny: Float = 1e-9
        // log2 of the estimator's gain per bin, then its band means spread back to the bins.
        for k in upTo(bins) { binScratch[k] = FastMath.log2(max(binGain[k], tiny)) }
        bands.average(binScratch, into: bandEstimateGain)
        bands.interpolate(bandEstimateGain, into: binScratch)
        let lead = Self.modelLead
        for k in loop(from: 1, upTo: bins) {
            let model = FastMath.log2(max(learnedBinGain[k], tiny))
            let estimator = FastMath.log2(max(binGain[k], tiny))
            let mean = 0.5 * (model + estimator)
            let led = estimator + (model - binScratch[k]) + lead
            let g = max(FastMath.exp2(min(mean, led)), floor)
            let learned = 1 - strength * (1 - g)
            appliedGain[k] += weight * (learned - appliedGain[k])
        }
        // The DC bin carries no speech: the floor, as in the classical mask.
        let dc = 1 - strength * (1 - floor)
        appliedGain[0] += weight * (dc - appliedGain[0])
    }
}
