// The noise suppressor's noise estimate, per statistics bin (StatisticsBins.swift): the
// speech-presence-probability tracker of Gerkmann & Hendriks (2012), which updates the estimate in
// proportion to how unlikely speech is in that bin and so follows noise that rises or falls within
// a second or two; capped by minimum statistics (Martin 2001) over the last 1.5 s, so that speech
// that lasts is not taken for noise. An estimate that sits far below a steady signal in nearly
// every bin for 0.4 s (learned on the digital silence before a stream starts) restarts from that
// signal's minimum (`relearnIfStuck`). Updated once per frame from that frame's power.

struct NoiseEstimate {
    let stats: StatisticsBins
    /// This frame's power per statistics bin.
    let power: UnsafeMutablePointer<Float>
    /// The estimate per statistics bin.
    let noise: UnsafeMutablePointer<Float>
    let presenceAverage: UnsafeMutablePointer<Float>
    /// Minimum statistics (Martin 2001) as a ceiling on the noise estimate: the smoothed power, the
    /// minimum of the current sub-window, and the minima of the last `minimumWindows` sub-windows.
    let smoothedPower: UnsafeMutablePointer<Float>
    let windowMinimum: UnsafeMutablePointer<Float>
    /// The maximum of the smoothed power in the current sub-window: with the minimum, whether a
    /// bin held steady (see `trackMinimum`, relearning).
    let windowMaximum: UnsafeMutablePointer<Float>
    let pastMinima: UnsafeMutablePointer<Float>
    let pastMinimum: UnsafeMutablePointer<Float>
    static let minimumWindows = 8
    var minimumWindowFrames: Int { Int(storedMinimumWindowFrames) }
    private let storedMinimumWindowFrames: UInt32
    var minimumFrame = 0
    /// The sub-window whose minima `pastMinima` holds next (0 ..< minimumWindows; in 8 bits, so
    /// that its product with the bin count needs no overflow check).
    var minimumSlot: UInt8 = 0
    /// Whether the last sub-window looked like a noise estimate learned on something else.
    var stuckBefore = false
    /// Frames since the reset, counted up to `warmupFrames`.
    var framesSinceReset = 0
    let powerSmoothing: Float
    let minimumBias: Float
    let presenceSmoothing: Float
    let noiseSmoothing: Float
    let warmupFrames: Int
    let powerNormalization: Float
    /// The estimate's total power, dB relative to a full-scale square wave (0 dBFS RMS).
    private(set) var noiseFloorDB: Float = -120

    /// `frameSeconds`: the time between updates; `powerNormalization` turns a sum of bin powers
    /// into mean power per sample (FilterBank).
    init(stats: StatisticsBins, frameSeconds: Double, powerNormalization: Float, arena: inout Arena) {
        self.stats = stats
        self.powerNormalization = powerNormalization
        let count = stats.count
        power = arena.floats(count)
        noise = arena.floats(count)
        presenceAverage = arena.floats(count)
        smoothedPower = arena.floats(count)
        windowMinimum = arena.floats(count, .greatestFiniteMagnitude)
        windowMaximum = arena.floats(count)
        pastMinima = arena.floats(Self.minimumWindows * count, .greatestFiniteMagnitude)
        pastMinimum = arena.floats(count, .greatestFiniteMagnitude)
        func perFrame(_ factor: Double, per seconds: Double) -> Float { Float(LibM.pow(factor, frameSeconds / seconds)) }
        presenceSmoothing = perFrame(0.9, per: 0.016)
        noiseSmoothing = perFrame(0.8, per: 0.016)
        warmupFrames = max(1, truncatedInt(0.03 / frameSeconds))
        // Minima over the sub-windows spanning about 1.5 s: longer than a word, shorter than a noise change may take.
        storedMinimumWindowFrames = UInt32(held(max(1, truncatedInt(1.5 / Double(Self.minimumWindows) / frameSeconds))))
        powerSmoothing = Float(LibM.exp(-frameSeconds / 0.05))
        // The minimum of a smoothed periodogram sits well below the noise's mean (Martin 2001 derives
        // the factor from its variance). 2.75 for this smoothing and overlap: on stationary noise the
        // ceiling stays near the tracker's estimate (noise alone still loses all of ns.reduction),
        // while on babble and cafe it keeps more of the talker; a lower factor keeps more STOI and
        // fails the CI test's 8 dB SNR improvement (NoiseSuppressorTests), a higher one loses STOI.
        minimumBias = 2.75
    }

    mutating func reset() {
        let count = stats.count
        noise.fill(0, count: count)
        presenceAverage.fill(0, count: count)
        smoothedPower.fill(0, count: count)
        windowMinimum.fill(.greatestFiniteMagnitude, count: count)
        windowMaximum.fill(0, count: count)
        pastMinima.fill(.greatestFiniteMagnitude, count: Self.minimumWindows * count)
        pastMinimum.fill(.greatestFiniteMagnitude, count: count)
        minimumFrame = 0
        minimumSlot = 0
        stuckBefore = false
        framesSinceReset = 0
        noiseFloorDB = -120
    }

    /// One frame: its power per statistics bin (from every bin's), then the tracker and the ceiling.
    @inline(__always) mutating func track(_ framePower: UnsafePointer<Float>) {
        stats.gather(framePower, into: power)
        let floorPower: Float = 1e-12
        if framesSinceReset < warmupFrames {
            // Start from the first frames' mean: they are taken as noise.
            let weight = 1 / Float(framesSinceReset + 1)
            for k in 0..<stats.count { noise[k] = max(noise[k] + weight * (power[k] - noise[k]), floorPower) }
        } else {
            // p(H1 | y) with a fixed a-priori SNR of 15 dB under speech presence.
            let xiH1: Float = 31.622776
            let c1 = 1 + xiH1, c2 = xiH1 / (1 + xiH1) * 1.442695041
            let alphaP = presenceSmoothing, alphaN = noiseSmoothing
            // (`while` loops where the body is large: FixedBuffer.swift.)
            var k = 0
            while k < stats.count {
                let lambda = noise[k]
                let ratio = power[k] / lambda
                var p = 1 / (1 + c1 * FastMath.exp2(-c2 * ratio))
                let average = alphaP * presenceAverage[k] + (1 - alphaP) * p
                presenceAverage[k] = average
                // Never certain of speech for long: the estimate must be able to rise.
                p = average > 0.99 ? min(p, 0.99) : p
                let expected = p * lambda + (1 - p) * power[k]
                noise[k] = max(alphaN * lambda + (1 - alphaN) * expected, floorPower)
                k += 1
            }
        }
        trackMinimum()
        var total: Float = 0
        for k in 0..<stats.count { total += stats.weight[k] * noise[k] }
        noiseFloorDB = Decibels.fastFromPower(max(total * powerNormalization, 1e-14))
        if framesSinceReset < warmupFrames { framesSinceReset += 1 }
    }

    /// The ceiling: the noise estimate never exceeds the bias-compensated minimum of the smoothed
    /// power over the last 1.5 s, so speech that lasts (a vowel held, a talker without pauses)
    /// cannot be taken for noise; noise that rises lifts the minimum within that span.
    @inline(__always) mutating func trackMinimum() {
        let alpha = powerSmoothing
        let bias = minimumBias
        if framesSinceReset < warmupFrames {
            for k in 0..<stats.count {
                smoothedPower[k] = noise[k]
                windowMinimum[k] = noise[k]
                windowMaximum[k] = noise[k]
            }
            return
        }
        // The ceiling: the minimum over the past sub-windows (kept up to date when one completes)
        // and the current one.
        var k = 0
        while k < stats.count {
            let smoothed = alpha * smoothedPower[k] + (1 - alpha) * power[k]
            smoothedPower[k] = smoothed
            let current = min(windowMinimum[k], smoothed)
            windowMinimum[k] = current
            windowMaximum[k] = max(windowMaximum[k], smoothed)
            noise[k] = max(min(noise[k], bias * min(current, pastMinimum[k])), 1e-12)
            k += 1
        }
        if minimumFrame < minimumWindowFrames - 1 {
            minimumFrame += 1
        } else {
            minimumFrame = 0
            relearnIfStuck()
            let slot = pastMinima + Int(minimumSlot) * stats.count
            for k in 0..<stats.count {
                slot[k] = windowMinimum[k]
                windowMinimum[k] = smoothedPower[k]
                windowMaximum[k] = smoothedPower[k]
            }
            minimumSlot = Int(minimumSlot) < Self.minimumWindows - 1 ? minimumSlot + 1 : 0
            for k in 0..<stats.count { pastMinimum[k] = pastMinima[k] }
            for w in 1..<Self.minimumWindows {
                let past = pastMinima + w * stats.count
                for k in 0..<stats.count { pastMinimum[k] = min(pastMinimum[k], past[k]) }
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
        // Counted as Floats (exact at these sizes).
        var stuck: Float = 0, active: Float = 0
        var k = 0
        while k < stats.count {
            let low = windowMinimum[k], high = windowMaximum[k]
            active += high > 0 ? 1 : 0
            stuck += low > margin * noise[k] && high < steadiness * low ? 1 : 0
            k += 1
        }
        // Nearly every bin that carries any signal (a band-limited stream leaves exact zeros above),
        // in two sub-windows in a row (a vowel is not held that steady for 0.4 s).
        guard active > 0, 5 * stuck >= 4 * active else {
            stuckBefore = false
            return
        }
        guard stuckBefore else {
            stuckBefore = true
            return
        }
        stuckBefore = false
        let bias = minimumBias
        k = 0
        while k < stats.count {
            let low = windowMinimum[k]
            if low > margin * noise[k] {
                noise[k] = bias * low
                // The past sub-windows held the silence: their minima would pull the ceiling back down.
                var past = pastMinima + k
                for _ in 0..<Self.minimumWindows {
                    past[0] = max(past[0], low)
                    past += stats.count
                }
                presenceAverage[k] = 0
            }
            k += 1
        }
    }
}
