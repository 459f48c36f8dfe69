// Noise suppression, the chain's first stage: a short-time spectral gain that keeps speech and
// lowers everything the noise estimate explains. Two modes (`ns.mode`): classical, the estimator
// alone; learned (the default), where a trained model reads the estimator's state and its band
// gains are combined with the estimator's. The parts, one file each, take their buffers, their
// FFTs' tables and the model's weights from one arena (Arena.swift), one allocation held here:
//   FilterBank        the low-delay framing: analysis, synthesis, a hop of 2.67 ms, latency 2M - 1
//   StatisticsBins    where the statistics run: every bin to 4 kHz, pairs to 8 kHz, eights above
//   NoiseEstimate     the noise power per statistics bin (speech-presence tracking, minimum ceiling)
//   SpectralGain      the OM-LSA gain rule against that estimate
//   SpeechActivity    the gate: whether anybody speaks at all; and the pitch the model's features read
//   LearnedGains      the model's features (levels, pitch correlation, the estimator's SNRs), its step
//                     and the blend of its gains with the rule's
//   GainModel         the model itself (a GRU)
//   PitchFilter       in learned mode: the frame a pitch period earlier added where the band is
//                     periodic, so the mask's band gains take the noise between the harmonics
//   KeyClickLimit     in learned mode, while somebody types: a bin's power rises 3 dB a frame at most
//   ResidualEcho      with aec.suppress: what the echo canceller left of the echo
// The echo canceller (EchoCanceller.swift) runs inside this framing: each hop, once complete and
// before it is analysed, goes through it in place (`process(_:_:count:cancelling:reference:)`),
// so cancelling echo adds no delay.
// Every frame (a hop of M samples) is analysed, its statistics and gains are updated from its own
// power, and the mask it applies was computed from the frame itself: a key click meets its own
// gain, not the one of the frame before. In stereo one mask comes from both channels' mean power
// and is applied to each, so the stereo image stays. While nobody speaks (the gate), the whole
// mask goes to the floor, so what the per-bin rule lets through without speech (random peaks of
// steady noise, key clicks) goes too; ns.reduction is then the attenuation. The per-bin state runs
// on underneath, so the gains are ready the moment the gate opens. `process` buffers internally
// by hop, so the output does not depend on how the audio is split into calls.

/// Gains that take the place of the model's or of the whole mask (`NoiseSuppressor.suppliedGains`).
public enum SuppliedGains {
    case none
    case model(UnsafePointer<Float>)
    case mask(UnsafePointer<Float>)
    /// Band gains (`SpeechBandLayout.count`) in place of the model's output.
    case bands(UnsafePointer<Float>)
}

public struct NoiseSuppressor: ~Copyable {
    public let sampleRate: Double
    public let channels: Int
    /// Samples per frame advance; also half the synthesis window (M).
    public var hop: Int { bank.hop }
    /// Analysis frame and transform length (N).
    public var frameLength: Int { bank.frameLength }
    /// Spectrum bins 0...N/2.
    public var bins: Int { bank.bins }
    /// Samples between a sample entering and leaving the stage: 2M - 1.
    public var latency: Int { 2 * hop - 1 }

    /// The parts (see the header), all in `arena`.
    var bank: FilterBank
    let stats: StatisticsBins
    var estimate: NoiseEstimate
    var spectralGain: SpectralGain
    package var activity: SpeechActivity
    var learnedGains: LearnedGains
    package var clickLimit: KeyClickLimit
    var residualEcho: ResidualEcho
    let arena: Arena
    /// Bytes of the arena, and whether they are one allocation (everyPartLivesInTheOneArena).
    package var arenaBytes: Int { arena.used }
    package var arenaIsWhole: Bool { arena.chunks == 1 }

    /// The mask this frame applies, per bin.
    package let appliedGain: UnsafeMutablePointer<Float>
    /// Whether the learned mode can run (the compiled-in model loaded and fits this suppressor).
    public let modelAvailable: Bool
    /// How much of the mask is the learned one: glides to 1 in learned mode, to 0 in classical
    /// (50 ms: no click, and the model has begun to settle).
    var learnedShare: Glide
    package var learnedMix: Float { Float(learnedShare.value) }
    var learned = false
    /// Training (hear-features): compute the features at every model step, in either mode.
    public var recordsFeatures = false
    /// Gains from outside, per bin (`bins` long), read at every frame in place of the model's
    /// (`.model`: through the blend with the estimator and the gate, as the model's would go) or of
    /// the whole mask (`.mask`). hear-features' oracle feeds the true mask of a mixture here, to
    /// measure what a perfect model would give through this very framing.
    public var suppliedGains: SuppliedGains = .none
    /// Whether learned mode runs the pitch filter (PitchFilter.swift); off only to measure it.
    package var filtersPitch = true

    /// The meter's smoothing per frame (from a time constant, so every rate behaves alike).
    let meterRate: Float

    // Settings (`set`).
    var floorGain: Float
    var noiseScale: Float = 1
    var enabled = true
    /// How much of the mask is applied: glides to 1 when enabled, to 0 when not (10 ms: click-free
    /// switching).
    var strength: Glide
    var mix: Float { Float(strength.value) }

    /// Mean speech presence probability over the speech band, 0...1 (smoothed over ~50 ms); 0 while
    /// the gate is shut.
    public private(set) var speechProbability: Float = 0
    /// Estimated noise power, dB relative to a full-scale square wave (0 dBFS RMS).
    public var noiseFloorDB: Float { estimate.noiseFloorDB }
    /// Model steps taken (or, with `recordsFeatures`, feature sets computed) since init.
    public var modelSteps: Int { learnedGains.steps }
    /// Band powers from the last model step, as levels at 48 kHz (linear; LearnedGains.swift).
    public var bandPowers: UnsafePointer<Float> { UnsafePointer(learnedGains.bandEnergy) }
    /// The model's band gains as this frame applies them (`SpeechBandLayout.count` values): from
    /// its last step, which with a stride above 1 may be a few frames back.
    package var modelBandGains: UnsafePointer<Float> { UnsafePointer(learnedGains.bandGain) }
    /// The features of the last model step (`featureCount` values).
    public var features: UnsafePointer<Float> { UnsafePointer(learnedGains.model.features) }
    /// Every bin's power in the last frame (`bins` values; in stereo the channels' mean).
    public var framePower: UnsafePointer<Float> { UnsafePointer(bank.binPower) }

    /// The hop (M) this stage uses at `sampleRate`: 1/375 s, so latency 2M - 1 stays within 5.33 ms.
    public static func hop(sampleRate: Double) -> Int { FilterBank.hop(sampleRate: sampleRate) }
    public static func latency(sampleRate: Double) -> Int { 2 * hop(sampleRate: sampleRate) - 1 }

    /// `shape`: the analysis window's (measurements only; the plugin uses the default). `model`: an
    /// exported model blob in place of the compiled-in one (train.py's candidates, scored by
    /// `hear-features denoise`; read at init and not kept).
    public init(sampleRate: Double, channels: Int, values: ParameterValues, shape: AnalysisShape = AnalysisShape(),
                model: UnsafeRawBufferPointer? = nil) {
        // The parts are built once to count the bytes they take, then for real in one allocation
        // of exactly that size.
        let bytes = NoiseSuppressor(sampleRate: sampleRate, channels: channels, values: values, shape: shape,
                                    model: model, arena: Arena()).arenaBytes
        self.init(sampleRate: sampleRate, channels: channels, values: values, shape: shape, model: model,
                  arena: Arena(capacity: bytes))
    }

    init(sampleRate: Double, channels: Int, values: ParameterValues, shape: AnalysisShape,
         model: UnsafeRawBufferPointer? = nil, arena: consuming Arena) {
        // Every part is built in a local and stored at the end: the initializer never reads a
        // half-built self (the optimizer once freed garbage here when it could).
        let bank = FilterBank(sampleRate: sampleRate, shape: shape, arena: &arena)
        let m = bank.hop, n = bank.frameLength, bins = bank.bins
        let frameSeconds = Double(m) / sampleRate  // statistics run every frame
        let stats = StatisticsBins(sampleRate: sampleRate, frameLength: n, arena: &arena)
        let estimate = NoiseEstimate(stats: stats, frameSeconds: frameSeconds, powerNormalization: bank.powerNormalization,
                                     arena: &arena)
        let spectralGain = SpectralGain(stats: stats, sampleRate: sampleRate, frameLength: n, frameSeconds: frameSeconds,
                                        arena: &arena)
        let activity = SpeechActivity(sampleRate: sampleRate, frameLength: n, analysisWindow: bank.analysisWindow,
                                      updateSeconds: frameSeconds, stats: stats, arena: &arena)
        let learnedGains = LearnedGains(sampleRate: sampleRate, frameLength: n, stepSeconds: frameSeconds,
                                        powerNormalization: bank.powerNormalization,
                                        stats: stats, model: model ?? GainModel.compiledBlob, arena: &arena)
        let clickLimit = KeyClickLimit(sampleRate: sampleRate, hop: m, frameLength: n, arena: &arena)
        let residualEcho = ResidualEcho(bins: bins, frameSeconds: frameSeconds, arena: &arena)
        appliedGain = arena.floats(bins, 1)
        self.sampleRate = sampleRate
        self.channels = min(max(channels, 1), 2)
        modelAvailable = learnedGains.isAvailable
        strength = Glide(1, timeConstant: 0.010, stepsPerSecond: 1 / frameSeconds, tolerance: 1e-4)
        learnedShare = Glide(1, timeConstant: 0.050, stepsPerSecond: 1 / frameSeconds, tolerance: 1e-3)
        meterRate = Float(1 - LibM.exp(-frameSeconds / 0.050))
        self.bank = bank
        self.stats = stats
        self.estimate = estimate
        self.spectralGain = spectralGain
        self.activity = activity
        self.learnedGains = learnedGains
        self.clickLimit = clickLimit
        self.residualEcho = residualEcho
        self.arena = arena
        floorGain = Self.floorGain(values)
        set(values)
        strength.jump(to: strength.target)
        learnedShare.jump(to: learnedShare.target)
    }

    /// The mask's floor: ns.reduction below unity.
    @inline(__always) static func floorGain(_ values: ParameterValues) -> Float {
        Float(Decibels.toGain(-Double(values[.nsReduction])))
    }

    @_noLocks public mutating func set(_ values: ParameterValues) {
        enabled = values[.nsEnable] != 0
        learned = values[.nsMode] != 0
        strength.target = enabled ? 1 : 0
        learnedShare.target = learned && modelAvailable ? 1 : 0
        floorGain = Self.floorGain(values)
        // Sensitivity 0...100 % scales the noise estimate by -6...+6 dB: more of the signal counts as
        // noise. At 50 the gain rule reads the estimate 1.25 dB low: quiet parts of speech keep more
        // of themselves (STOI and PESQ-WB in `make eval`). Lower still fails the CI test's 8 dB SNR
        // improvement at 48 and 96 kHz.
        noiseScale = Float(Decibels.toPower((Double(values[.nsSensitivity]) - 50) / 50 * 6 - 1.25))
    }

    @_noLocks public mutating func reset() {
        bank.reset()
        estimate.reset()
        spectralGain.reset()
        activity.reset()
        learnedGains.reset()
        clickLimit.reset()
        residualEcho.reset()
        appliedGain.fill(1, count: bins)
        strength.jump(to: strength.target)
        speechProbability = 0
        learnedShare.jump(to: learnedShare.target)
    }

    /// Processes `count` samples in place; `right` is used only in stereo. Output is the input
    /// `latency` samples earlier, cleaned.
    @_noLocks public mutating func process(_ left: UnsafeMutablePointer<Float>, _ right: UnsafeMutablePointer<Float>?,
                                           count: Int) {
        let stereo = channels == 2 && right != nil
        // The audio still to exchange, where it starts: the buffers advance by a chunk at a time
        // (at most the rest of a hop).
        var left = left, right = right, remaining = held(count)
        while remaining > 0 {
            let (chunk, completes) = bank.exchange(left, right, stereo: stereo, count: remaining)
            if completes {
                processFrame(stereo: stereo, echoRemoved: false)
                bank.finishHop(left, right, stereo: stereo, last: chunk - 1)
            }
            left += chunk
            right = right.map { $0 + chunk }
            remaining = held(remaining - chunk)
        }
    }

    /// As `process`, with `echo` cancelling each hop before it is analysed; `reference` (mono,
    /// `count` samples, nil when there is none) is what the speakers played meanwhile.
    @_noLocks public mutating func process(_ left: UnsafeMutablePointer<Float>, _ right: UnsafeMutablePointer<Float>?,
                                           count: Int, cancelling echo: inout EchoCanceller,
                                           reference: UnsafePointer<Float>?) {
        let stereo = channels == 2 && right != nil
        var left = left, right = right, reference = reference, remaining = held(count)
        while remaining > 0 {
            let position = bank.fill
            let (chunk, completes) = bank.exchange(left, right, stereo: stereo, count: remaining)
            echo.gather(reference, at: position, count: chunk)
            if completes {
                let removed = bank.newestRemoved()
                let cancelled = echo.cancel(bank.newestHop(channel: 0), stereo ? bank.newestHop(channel: 1) : nil,
                                            removed: removed)
                if !cancelled { removed.fill(0, count: hop) }
                processFrame(stereo: stereo, echoRemoved: cancelled && echo.suppress)
                bank.finishHop(left, right, stereo: stereo, last: chunk - 1)
            }
            left += chunk
            right = right.map { $0 + chunk }
            reference = reference.map { $0 + chunk }
            remaining = held(remaining - chunk)
        }
    }

    /// One hop's frame; `echoRemoved`: the echo canceller took echo out of it and its residual goes too.
    @inline(__always) mutating func processFrame(stereo: Bool, echoRemoved: Bool) {
        // Switched off and faded out: no analysis at all, so an unused suppressor costs only the
        // delay line. Its statistics pick up again where they were when it is switched back on.
        let masked = !(mix == 0 && !enabled)
        if masked || echoRemoved {
            bank.analyze(stereo: stereo)
        }
        if masked {
            estimate.track(bank.binPower)
            // The unscaled estimate: ns.sensitivity shapes the gains, not whether somebody speaks.
            activity.update(power: estimate.power, noise: estimate.noise)
            strength.step()
        }
        if mix == 0 {
            if masked {
                appliedGain.fill(1, count: bins)
                spectralGain.pass(power: estimate.power)
            }
        } else {
            let presence = spectralGain.compute(power: estimate.power, noise: estimate.noise, noiseScale: noiseScale,
                                                floorGain: floorGain)
            applyGate(presence: presence)
            learnedStep(stereo: stereo)
            clickLimit.listen(bank.frameTail(channel: 0), stereo ? bank.frameTail(channel: 1) : nil, openness: activity.openness)
            clickLimit.limit(appliedGain, power: bank.binPower, floorGain: floorGain, weight: learnedMix * mix)
            if case .mask(let supplied) = suppliedGains {
                for k in 0..<bins { appliedGain[k] = supplied[k] }
            }
        }
        if echoRemoved {
            if mix == 0 { appliedGain.fill(1, count: bins) }
            suppressResidualEcho(stereo: stereo)
            filterPitch(stereo: stereo)
            bank.synthesize(gains: appliedGain, stereo: stereo)
        } else if mix == 0 {
            bank.passThrough(stereo: stereo)
        } else {
            filterPitch(stereo: stereo)
            bank.synthesize(gains: appliedGain, stereo: stereo)
        }
        bank.advance(stereo: stereo)
    }

    /// In learned mode, with the model's gains: the pitch filter on the spectra the mask is applied
    /// to (PitchFilter.swift), as far as ns.reduction lets the suppressor lower anything (at 0 dB
    /// the stage changes nothing). Not with a whole mask supplied from outside, which is meant to be
    /// applied as it is.
    @inline(__always) mutating func filterPitch(stereo: Bool) {
        let weight = learnedMix * mix * (1 - floorGain)
        if weight <= 0 || !modelAvailable || !filtersPitch { return }
        if case .mask = suppliedGains { return }
        learnedGains.filterPitch(real: bank.spectrumReal, imaginary: bank.spectrumImaginary, channel: 0, weight: weight)
        if stereo {
            let (real, imaginary) = bank.spectrum(channel: 1)
            learnedGains.filterPitch(real: real, imaginary: imaginary, channel: 1, weight: weight)
        }
    }

    /// The residual echo's gains into the mask, from what the canceller took out over this frame.
    @inline(__always) mutating func suppressResidualEcho(stereo: Bool) {
        bank.analyzeRemoved(into: residualEcho.removedPower, real: residualEcho.real, imaginary: residualEcho.imaginary)
        // The hop's energies in time: the newest hop of the output, and of what was removed.
        let m = hop, hopStart = bank.newestHop(channel: 0), removed = bank.newestRemoved()
        var output: Float = 0, echo: Float = 0
        for j in 0..<m {
            output += hopStart[j] * hopStart[j]
            echo += removed[j] * removed[j]
        }
        residualEcho.update(output: bank.binPower, removedEnergy: echo, outputEnergy: output)
        residualEcho.apply(to: appliedGain, output: bank.binPower)
    }

    /// The classical mask: the rule's gains, pulled to the floor as the gate closes, applied by `mix`.
    @inline(__always) mutating func applyGate(presence: Float) {
        let floor = floorGain, strength = mix
        let open = activity.openness
        let binGain = spectralGain.binGain
        var k = 1
        while k < bins - 1 {
            let gated = floor + open * (binGain[k] - floor)
            appliedGain[k] = 1 - strength * (1 - gated)
            k += 1
        }
        // The DC and Nyquist bins are real: their powers do not follow the complex statistics the
        // rules assume, and they carry no speech. The Nyquist bin takes its neighbour's gain. The DC
        // bin (below 25-47 Hz, under any voice) takes the floor: the synthesis window smears a
        // harmonic's gain over about three bins, so the lowest harmonic held the rumble beneath it
        // open (in the CI test, a fifth of the noise left while somebody spoke at 48 kHz was there).
        // Not the next bin too (47 Hz at 48 kHz, 31 Hz at 8 kHz): a fundamental near 100 Hz would
        // lose 1 dB and turn 15 degrees through the same smear (clean-speech SI-SDR 24 dB in
        // `make eval`, 25 dB for speech at 8 kHz in the tests).
        appliedGain[0] = 1 - strength * (1 - floor)
        appliedGain[bins - 1] = appliedGain[bins - 2]
        // While the gate is shut the suppressor treats everything as noise, and the meter says so.
        speechProbability += meterRate * (presence * open - speechProbability)
    }

    /// After the classical mask: the model's step, the learned mask blended in, and the glide
    /// between the modes.
    @inline(__always) mutating func learnedStep(stereo: Bool) {
        let target = learnedShare.target
        if target > 0 && learnedMix == 0 { learnedGains.restart() }
        let running = modelAvailable && (target > 0 || learnedMix > 0)
        if running || recordsFeatures {
            activity.findPitch(power: estimate.power)
            learnedGains.computeFeatures(framePower: bank.binPower, spectrumReal: bank.spectrumReal,
                                         spectrumImaginary: bank.spectrumImaginary, noise: estimate.noise,
                                         clean: spectralGain.cleanPower,
                                         openness: activity.openness, periodicity: activity.periodicity,
                                         pitchSamples: activity.pitchSamples)
            if stereo {
                let (real, imaginary) = bank.spectrum(channel: 1)
                learnedGains.keepSecondChannel(real: real, imaginary: imaginary)
            }
            if running { learnedGains.step() }
        }
        if case .model(let supplied) = suppliedGains { learnedGains.takeBinGains(supplied) }
        if case .bands(let supplied) = suppliedGains { learnedGains.takeBandGains(supplied) }
        if learnedMix > 0 {
            learnedGains.blend(into: appliedGain, estimator: spectralGain.binGain, power: estimate.power, noise: estimate.noise,
                               floor: floorGain, strength: mix, weight: learnedMix)
            speechProbability += learnedMix * meterRate * (learnedGains.speech - speechProbability)
        }
        learnedShare.step()
    }
}
