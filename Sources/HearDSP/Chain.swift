// The whole filter for one plugin instance:
//   cancel echo -> denoise -> equalize -> compress -> output gain -> limit, with a click-free bypass.
// The echo canceller acts only on chunks that come with a reference (what the speakers play).
// Audio is handled in chunks on a fixed grid of control ticks counted from activation, so the
// output does not depend on how the host splits it into blocks; parameters glide once per tick
// (EQ, makeup) or per sample (gain, bypass). Inputs are read for a whole chunk before any output
// is written, so any aliasing of input and output buffers is safe.

public struct Chain: ~Copyable {
    public let sampleRate: Double
    public let channels: Int
    /// Samples per control tick: about 1.3 ms, at least 16.
    public let tickLength: Int
    public private(set) var values: ParameterValues

    package var echoCanceller: EchoCanceller
    package var noiseSuppressor: NoiseSuppressor
    package var equalizer: Equalizer
    // The hearing profile (six-band compressor) sits after the EQ, which shapes the voice (cuts
    // rumble, say) before any level is measured, and before the broadband compressor: its band
    // levels must see the signal as it is, not after one loud band has pulled every band down. A
    // fit switches the broadband compressor off (the multiband one replaces it); it stays usable.
    var multiband: MultibandCompressor
    /// How far the summed bands can rise above the largest band gain (dB), for the gain cap.
    let multibandOvershootDB: Double
    var compressor: Compressor
    var limiter: Limiter
    package var outputGain: Glide
    /// The maximum output (mb.mpo) as a sample magnitude: the last clamp, whatever else is set.
    var maximumOutput: Float = 1
    /// 1 = processed, 0 = bypassed.
    var wetMix: Glide
    /// Where the chain's own buffers below live (freed with it).
    let arena: Arena
    /// The input delayed by the chain's latency, per channel, for the bypass crossfade.
    let dryDelayLeft: FixedBuffer<Float>
    let dryDelayRight: FixedBuffer<Float>
    var dryPosition = 0
    /// One chunk per channel: the signal being processed, and the input kept for bypass.
    let workLeft: FixedBuffer<Float>
    let workRight: FixedBuffer<Float>
    let dryLeft: FixedBuffer<Float>
    let dryRight: FixedBuffer<Float>
    /// Where in its control tick the next sample falls.
    var phase = 0
    /// What the stages measured since the meters were last cleared (the plugin clears them when it publishes them).
    public var meters = Meters()
    /// Chunks silenced because the chain itself produced a non-finite sample (since init).
    public private(set) var internalFaults: UInt64 = 0

    /// Samples between a sample entering and leaving the chain; fixed at init, whatever the settings.
    public let latency: Int

    public init(sampleRate: Double, channels: Int, values: ParameterValues = ParameterValues()) {
        let rate = min(max(sampleRate, 1000), 768_000)
        self.sampleRate = rate
        self.channels = min(max(channels, 1), 2)
        tickLength = max(16, truncatedInt(rate / 750))
        let ticksPerSecond = rate / Double(tickLength)
        self.values = values
        echoCanceller = EchoCanceller(sampleRate: rate, channels: self.channels, values: values)
        noiseSuppressor = NoiseSuppressor(sampleRate: rate, channels: self.channels, values: values)
        equalizer = Equalizer(sampleRate: rate, channels: self.channels, ticksPerSecond: ticksPerSecond, values: values)
        multiband = MultibandCompressor(sampleRate: rate, channels: self.channels, ticksPerSecond: ticksPerSecond,
                                        values: values)
        multibandOvershootDB = multiband.design.overshootBoundDB()
        compressor = Compressor(sampleRate: rate, ticksPerSecond: ticksPerSecond, values: values)
        limiter = Limiter(sampleRate: rate, channels: self.channels, values: values)
        outputGain = Glide(1, timeConstant: 0.01, stepsPerSecond: rate, tolerance: 1e-7)
        wetMix = Glide(1, timeConstant: 0.005, stepsPerSecond: rate, tolerance: 1e-5)
        latency = held(noiseSuppressor.latency) + held(limiter.lookahead)
        var arena = Arena()
        dryDelayLeft = arena.buffer(latency, 0)
        dryDelayRight = arena.buffer(latency, 0)
        workLeft = arena.buffer(tickLength, 0)
        workRight = arena.buffer(tickLength, 0)
        dryLeft = arena.buffer(tickLength, 0)
        dryRight = arena.buffer(tickLength, 0)
        self.arena = arena
        apply(values)
        multiband.snap()
        outputGain.jump(to: outputGain.target)
        wetMix.jump(to: wetMix.target)
    }

    /// Takes a new parameter set (already clamped); every stage glides to it from where it is.
    @_noLocks public mutating func apply(_ next: ParameterValues) {
        values = next
        echoCanceller.set(next)
        noiseSuppressor.set(next)
        equalizer.set(next)
        // The gain cap (mb.maxgain), on a worst-case bound: the EQ adds at most the peak of its
        // designed response (Equalizer.targetPeakDB), the compressor at most its makeup, the
        // hearing stage at most its largest band gain plus the crossover's overshoot. What the
        // other stages add beyond the cap comes off the output gain; the band gains are held to
        // what is left.
        let cap = Double(next[.mbMaxGain])
        var added = Double(next[.gain])
        if next[.compEnable] != 0 { added += Double(max(next[.compMakeup], 0)) }
        added += equalizer.targetPeakDB()
        let excess = max(added - cap, 0)
        multiband.set(next, gainCeilingDB: cap - multibandOvershootDB - (added - excess))
        compressor.set(next)
        limiter.set(next)
        // Rounded down to a Float, so no sample can exceed the MPO by even a rounding step.
        let mpo = Decibels.toGain(Double(next[.mbMPO]))
        let level = Float(mpo)
        maximumOutput = Double(level) > mpo ? level.nextDown : level
        outputGain.target = Decibels.toGain(Double(next[.gain]) - excess)
        wetMix.target = next[.bypass] != 0 ? 0 : 1
    }

    /// Back to silence, as after activation; parameters are kept and settled.
    @_noLocks public mutating func reset() {
        echoCanceller.reset()
        noiseSuppressor.reset()
        equalizer.reset()
        multiband.reset()
        compressor.reset()
        limiter.reset()
        dryDelayLeft.fill(0)
        dryDelayRight.fill(0)
        dryPosition = 0
        phase = 0
    }

    /// Processes `frames` samples per channel. `right` buffers are used only in stereo. `reference`
    /// (mono, `frames` samples) is what the speakers played meanwhile, for the echo canceller; nil
    /// when nothing is known of them.
    @_noLocks public mutating func process(inLeft: UnsafePointer<Float>, inRight: UnsafePointer<Float>?,
                                           outLeft: UnsafeMutablePointer<Float>, outRight: UnsafeMutablePointer<Float>?,
                                           frames: Int, reference: UnsafePointer<Float>? = nil) {
        let stereo = channels == 2 && inRight != nil && outRight != nil
        let left = workLeft.base, right = workRight.base
        var pieces = GridPieces(count: frames, period: tickLength, phase: phase)
        while let piece = pieces.next() {
            if piece.startsPeriod { tick() }
            let start = piece.start, count = piece.count
            var fault = readInput(inLeft + start, into: left, dry: dryLeft.base, count: count)
            if stereo, let inRight {
                fault = readInput(inRight + start, into: right, dry: dryRight.base, count: count) || fault
            }
            processChunk(left, stereo ? right : nil, reference: reference.map { $0 + start }, count: count)
            // A non-finite sample made inside the chain (a stage's state gone bad, not the input)
            // would pass the final clamps (min and max keep NaN): count it and treat it like
            // garbage in. Every stage restarts, the offending one among them.
            let produced = Self.holdsNonFinite(left, count: count) || (stereo && Self.holdsNonFinite(right, count: count))
            if produced && !fault { internalFaults &+= 1 }
            if fault || produced {
                // Garbage in (NaN, Inf, absurd levels): drop this chunk and start clean from the next,
                // keeping the tick grid where it was (the phase is set below).
                reset()
                var i = 0
                while i < count { left[i] = 0; right[i] = 0; i += 1 }
            }
            let outLeftPiece = outLeft + start
            var i = 0
            while i < count { outLeftPiece[i] = left[i]; i += 1 }
            if stereo, let outRight {
                let outRightPiece = outRight + start
                i = 0
                while i < count { outRightPiece[i] = right[i]; i += 1 }
            }
            phase = pieces.phase
        }
    }

    /// True if any of `count` samples is NaN or infinite (branch-free, so the loop vectorizes).
    @inline(__always) private static func holdsNonFinite(_ samples: UnsafeMutablePointer<Float>, count: Int) -> Bool {
        var finite = true
        var i = 0
        while i < count {
            finite = finite && abs(samples[i]) <= .greatestFiniteMagnitude
            i += 1
        }
        return !finite
    }

    /// Copies and sanitizes one channel's input; true if it held a sample no audio can have.
    @inline(__always) private func readInput(_ source: UnsafePointer<Float>, into target: UnsafeMutablePointer<Float>,
                                             dry: UnsafeMutablePointer<Float>, count: Int) -> Bool {
        var fault = false
        var i = 0
        while i < count {
            let x = source[i]
            let magnitude = abs(x)
            let audio = magnitude <= 64  // false for NaN too
            fault = fault || !audio
            // Subnormals and their neighbours never enter the filters.
            let kept = audio && magnitude >= 1e-20 ? x : 0
            target[i] = kept
            dry[i] = kept
            i += 1
        }
        return fault
    }

    @inline(__always) mutating func tick() {
        equalizer.tick()
        multiband.tick()
        compressor.tick()
        limiter.tick()
    }

    @inline(__always) private mutating func processChunk(_ left: UnsafeMutablePointer<Float>, _ right: UnsafeMutablePointer<Float>?,
                                                         reference: UnsafePointer<Float>?, count: Int) {
        let count = held(count)
        measure(left, right, count: count, peak: .inputPeak, squares: .inputRMS)
        noiseSuppressor.process(left, right, count: count, cancelling: &echoCanceller, reference: reference)
        equalizer.process(left, right, count: count)
        multiband.process(left, right, count: count)
        compressor.process(left, right, count: count)
        applyOutputGain(left, right, count: count)
        limiter.process(left, right, count: count)
        mixWithDry(left, right, count: count)
        clampToMaximumOutput(left, right, count: count)
        measure(left, right, count: count, peak: .outputPeak, squares: .outputRMS)
        meters.samples &+= right == nil ? count : 2 &* count
        // Stages keep their deepest reduction since last asked; the meters keep it until cleared.
        meters.record(.compressorReduction, Double(max(compressor.peakReductionDB, multiband.peakReductionDB)))
        meters.record(.limiterReduction, Double(limiter.peakReductionDB))
        multiband.peakReductionDB = 0
        compressor.peakReductionDB = 0
        limiter.peakReductionDB = 0
        // The suppressor's estimates mean something only while it runs.
        let suppressing = values[.nsEnable] != 0
        meters.record(.speechProbability, suppressing ? Double(noiseSuppressor.speechProbability) : .nan)
        meters.record(.noiseFloor, suppressing ? Double(noiseSuppressor.noiseFloorDB) : .nan)
        meters.record(.echoReturnLossEnhancement, Double(echoCanceller.enhancementDB))
        meters.record(.echoDelay, Double(echoCanceller.echoDelayMilliseconds))
    }

    @inline(__always) private mutating func applyOutputGain(_ left: UnsafeMutablePointer<Float>,
                                                            _ right: UnsafeMutablePointer<Float>?, count: Int) {
        if outputGain.isSettled && outputGain.value == 1 { return }
        if outputGain.isSettled {
            let gain = Float(outputGain.value)
            var i = 0
            while i < count { left[i] *= gain; right?[i] *= gain; i += 1 }
            return
        }
        var i = 0
        while i < count {
            outputGain.step()
            let gain = Float(outputGain.value)
            left[i] *= gain
            right?[i] *= gain
            i += 1
        }
    }

    /// Crossfades with the input delayed by the chain's latency, so bypass neither clicks nor shifts in time.
    @inline(__always) private mutating func mixWithDry(_ left: UnsafeMutablePointer<Float>,
                                                       _ right: UnsafeMutablePointer<Float>?, count: Int) {
        let start = dryPosition
        dryPosition = mixChannel(left, dry: dryLeft, delay: dryDelayLeft, count: count, from: start)
        if let right { _ = mixChannel(right, dry: dryRight, delay: dryDelayRight, count: count, from: start) }
        if !wetMix.isSettled {
            var i = 0
            while i < count { wetMix.step(); i += 1 }
        }
    }

    /// Pushes one channel's dry input through its delay and, while bypass moves, mixes it in.
    @inline(__always) private func mixChannel(_ samples: UnsafeMutablePointer<Float>, dry: FixedBuffer<Float>,
                                              delay: FixedBuffer<Float>, count: Int, from start: Int) -> Int {
        var position = start
        var mix = wetMix
        let settledWet = mix.isSettled && mix.value == 1
        var i = 0
        while i < count {
            defer { i += 1 }
            let delayed = delay[position]
            delay[position] = dry[i]
            position = delay.slot(after: position)
            if settledWet { continue }
            mix.step()
            let wet = Float(mix.value)
            samples[i] = delayed + wet * (samples[i] - delayed)
        }
        return position
    }

    /// The last step of every chunk: the MPO holds even where the limiter cannot (limit.enable 0,
    /// bypass, the bypass crossfade).
    @inline(__always) private func clampToMaximumOutput(_ left: UnsafeMutablePointer<Float>,
                                                        _ right: UnsafeMutablePointer<Float>?, count: Int) {
        let top = maximumOutput
        var i = 0
        while i < count {
            left[i] = max(min(left[i], top), -top)
            if let right { right[i] = max(min(right[i], top), -top) }
            i += 1
        }
    }

    /// Records the peak magnitude and the sum of squares of a chunk's samples as the two meters.
    @inline(__always) mutating func measure(_ left: UnsafeMutablePointer<Float>, _ right: UnsafeMutablePointer<Float>?,
                                            count: Int, peak: Meter, squares: Meter) {
        let count = held(count)
        // Four partial sums and maxima break the add chain, so the loop runs at the adder's throughput.
        var t0: Float = 0, t1: Float = 0, t2: Float = 0, t3: Float = 0
        var s0: Float = 0, s1: Float = 0, s2: Float = 0, s3: Float = 0
        // A `while` over the channels: a `for` over a computed range keeps an overflow check here.
        let channels = right == nil ? 1 : 2
        var channel = 0
        while channel < channels {
            let samples = channel == 0 ? left : right ?? left
            channel += 1
            var i = 0
            // Wrapping steps of four: the optimizer does not carry `count <= 2^31` into this loop's
            // `i + 4`, so a checked add would leave a trap here.
            while i &+ 4 <= count {
                let a = samples[i], b = samples[i &+ 1], c = samples[i &+ 2], d = samples[i &+ 3]
                t0 = max(t0, abs(a)); t1 = max(t1, abs(b)); t2 = max(t2, abs(c)); t3 = max(t3, abs(d))
                s0 += a * a; s1 += b * b; s2 += c * c; s3 += d * d
                i &+= 4
            }
            while i < count {
                t0 = max(t0, abs(samples[i]))
                s0 += samples[i] * samples[i]
                i += 1
            }
        }
        meters.record(peak, Double(max(max(t0, t1), max(t2, t3))))
        meters.record(squares, Double((s0 + s1) + (s2 + s3)))
    }

    /// The echo canceller's filter length now (samples), and the one aec.filter asks for: where
    /// they differ, new filters are due, made off the audio thread for `installEchoFilters`.
    public var echoFilterLength: Int { echoCanceller.filterLength }
    public var wantedEchoFilterLength: Int { echoCanceller.wantedFilterLength }

    /// Swaps in echo filters made off the audio thread; `filters` then holds the old ones (to be
    /// freed off it). False, and nothing swapped, when they were made for another rate or channels.
    @_noLocks public mutating func installEchoFilters(_ filters: inout EchoFilters) -> Bool {
        echoCanceller.install(&filters)
    }

    /// Counts one realignment of the echo canceller's reference (the plugin's tap reader finds them).
    @_noLocks public mutating func recordReferenceRealignment() {
        meters.record(.referenceRealignments, 1)
    }

    /// True when a filter register holds a subnormal number (a test hook for the denormal guard).
    public var holdsSubnormalState: Bool {
        for i in 0..<12 where equalizer.state[i].s1.isSubnormal || equalizer.state[i].s2.isSubnormal { return true }
        return compressor.smoothedDB.isSubnormal || multiband.holdsSubnormalState
    }
}
