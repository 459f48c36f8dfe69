// The hearing stage: wide-dynamic-range compression in six bands (Crossover), each with its own
// gain per ear, kneepoint, ratio per ear, attack and release, and low-level expansion.
//
// Levels and gains are computed once per step of a few samples (16 at 48 kHz, 0.33 ms;
// attack times are 0.5 ms and longer), and each ear's linear gain ramps across the step, so the
// per-sample work is a multiply-add per band and ear.
//
// Per band, the level is the band's peak held over one period of its lowest frequency (two
// alternating hold blocks, so a steady tone gives a steady level, ripple-free, without a queue);
// in stereo it is the louder channel's, so both ears see the same level and the image holds while
// each ear gets its own gain. Two amounts are smoothed from it in dB, with the attack time
// constant when the level rises and the release one when it falls:
//   over  = level above the kneepoint           (compression: gain += (1/ratio - 1) * over)
//   under = level below the expansion kneepoint (expansion:   gain -= under, at most 60 dB)
// so the gain in dB of a band follows exact exponentials between steady states, the static curve
// is exactly gain, gain + (1/ratio - 1)(L - knee) above the kneepoint, and onsets open the
// expansion as fast as compression sets in. Below the kneepoint (and above the expansion
// kneepoint) a band is linear: that gain is what a fit prescribes.
//
// Attack and release are per band: the schema's pair (mb.attack, mb.release) goes to every band,
// `setTimes` gives one band its own. A mono instance uses the left ear's settings.
//
// IIR crossovers and a hold without look-ahead: the stage adds no latency.


public struct MultibandCompressor: ~Copyable {
    static var bandCount: Int { 6 }
    static var scratchCapacity: Int { 256 }
    /// The most expansion may take away, in dB.
    static var expansionDepthDB: Double { 60 }

    let sampleRate: Double
    let channels: Int
    var crossover: Crossover
    /// Per ear and band, `[ear * 6 + band]`: gain below the kneepoint (dB), and output dB per
    /// input dB above the kneepoint minus one (1/ratio - 1). They glide once per control tick.
    var gainDB: InlineArray<12, Glide>
    var slope: InlineArray<12, Glide>
    var kneeDB: InlineArray<6, Glide>
    var expansionDB: Glide
    var moving = false
    /// How much of the stage is mixed in; glides per sample, so switching it never clicks.
    var amount: Glide
    var attackSeconds: InlineArray<6, Double> = InlineArray(repeating: 0)
    var releaseSeconds: InlineArray<6, Double> = InlineArray(repeating: 0)
    var attackCoefficient: InlineArray<6, Double> = InlineArray(repeating: 0)
    var releaseCoefficient: InlineArray<6, Double> = InlineArray(repeating: 0)
    /// How far into the current step (of `ramp.count` samples: one level and gain update) the audio is.
    var stepPosition = 0
    /// Level detector per band: the peak of the current step, hold length (in steps), steps left in
    /// the current hold, the current and the previous hold's peak.
    var stepPeak: InlineArray<6, Float> = InlineArray(repeating: 0)
    let holdLength: InlineArray<6, Int>
    var holdStepsLeft: InlineArray<6, Int>
    var holdCurrent: InlineArray<6, Float> = InlineArray(repeating: 0)
    var holdPrevious: InlineArray<6, Float> = InlineArray(repeating: 0)
    /// Smoothed dB above the kneepoint and below the expansion kneepoint, per band.
    var over: InlineArray<6, Double> = InlineArray(repeating: 0)
    var under: InlineArray<6, Double>
    /// Per ear and band, `[ear * 6 + band]`: the linear gain at the start of the current step, and
    /// its increment per sample until the end of the step. The gain at a sample depends only on
    /// its place in the step, so however the host splits the audio, the samples are the same.
    var linearGain: InlineArray<12, Float> = InlineArray(repeating: 0)
    var linearStep: InlineArray<12, Float> = InlineArray(repeating: 0)
    /// One piece of audio: six bands by two channels, the two channels' sums, a gain per sample
    /// and ear for the band being worked on; and 1, 2, 3, ... (the ramp across a step, one per sample).
    let bands: FixedBuffer<Float>
    let wet: FixedBuffer<Float>
    let gains: FixedBuffer<Float>
    let ramp: FixedBuffer<Float>
    /// The crossover's two branches between its passes.
    let branches: FixedBuffer<SIMD2<Double>>
    /// Where the buffers above live (freed with the stage).
    let arena: Arena
    var isReset = true
    /// Deepest compression (dB, >= 0, left ear) in any band since the meter last read it.
    public var peakReductionDB: Float = 0

    public init(sampleRate: Double, channels: Int, ticksPerSecond: Double, values: ParameterValues,
                gainCeilingDB: Double = .infinity) {
        self.sampleRate = sampleRate
        self.channels = min(max(channels, 1), 2)
        crossover = Crossover(sampleRate: sampleRate)
        func glide(_ tolerance: Double) -> Glide {
            Glide(0, timeConstant: 0.02, stepsPerSecond: ticksPerSecond, tolerance: tolerance)
        }
        gainDB = InlineArray(repeating: glide(1e-4))
        slope = InlineArray(repeating: glide(1e-6))
        kneeDB = InlineArray(repeating: glide(1e-4))
        expansionDB = glide(1e-4)
        amount = Glide(0, timeConstant: 0.02, stepsPerSecond: sampleRate, tolerance: 1e-5)
        let step = max(1, truncatedInt(sampleRate / 3000))
        // A hold spans one period of the band's lowest frequency: twice the period of the
        // rectified signal, so each hold block sees a peak.
        var hold = InlineArray<6, Int>(repeating: 1)
        for band in 0..<6 {
            let samples = band == 0 ? sampleRate / 100 : sampleRate / crossover.crossovers[band - 1]
            hold[band] = max(1, truncatedInt((samples / Double(step)).rounded(.up)))
        }
        holdLength = hold
        holdStepsLeft = hold
        // Open at the start: switching the stage on fades in the signal, not a gap that the expansion
        // has to release first; silence closes it within the release time.
        under = InlineArray(repeating: 0)
        let capacity = Self.scratchCapacity
        var arena = Arena()
        bands = arena.buffer(12 * capacity, 0)
        wet = arena.buffer(2 * capacity, 0)
        gains = arena.buffer(2 * capacity, 0)
        branches = arena.buffer(2 * capacity, .zero)
        ramp = arena.buffer(step, 0)
        self.arena = arena
        for k in 0..<ramp.count { ramp[k] = Float(k + 1) }
        set(values, gainCeilingDB: gainCeilingDB)
        snap()
    }

    /// Sets new targets, reached by gliding in `tick()`. Band gains are held at or below
    /// `gainCeilingDB` (the chain's gain cap, less what the other stages add).
    public mutating func set(_ values: ParameterValues, gainCeilingDB: Double = .infinity) {
        let firstGain = Parameter.mbLeftGain1.rawValue, firstRatio = Parameter.mbLeftRatio1.rawValue
        let firstKnee = Parameter.mbKnee1.rawValue
        for k in 0..<12 {
            gainDB[k].target = min(Double(values[firstGain + k]), gainCeilingDB)
            slope[k].target = 1 / Double(max(values[firstRatio + k], 1)) - 1
        }
        for band in 0..<Self.bandCount { kneeDB[band].target = Double(values[firstKnee + band]) }
        expansionDB.target = Double(values[.mbExpansion])
        amount.target = values[.mbEnable] != 0 ? 1 : 0
        let attack = Double(values[.mbAttack]) / 1000, release = Double(values[.mbRelease]) / 1000
        for band in 0..<Self.bandCount { setTimes(band: band, attack: attack, release: release) }
        moving = true
    }

    /// Attack and release of one band, in seconds; coefficients are recomputed only when they move.
    public mutating func setTimes(band: Int, attack: Double, release: Double) {
        guard band >= 0 && band < Self.bandCount else { return }
        if !(attack == attackSeconds[band]) {
            attackSeconds[band] = attack
            attackCoefficient[band] = LibM.exp(-Double(ramp.count) / (max(attack, 1e-5) * sampleRate))
        }
        if !(release == releaseSeconds[band]) {
            releaseSeconds[band] = release
            releaseCoefficient[band] = LibM.exp(-Double(ramp.count) / (max(release, 1e-5) * sampleRate))
        }
    }

    /// Jumps to the targets at once (at start-up, where there is nothing to glide from).
    public mutating func snap() {
        for k in 0..<12 {
            gainDB[k].jump(to: gainDB[k].target)
            slope[k].jump(to: slope[k].target)
        }
        for band in 0..<Self.bandCount { kneeDB[band].jump(to: kneeDB[band].target) }
        expansionDB.jump(to: expansionDB.target)
        amount.jump(to: amount.target)
        moving = false
    }

    /// True when the stage is off and faded out: processing would change nothing.
    public var isIdle: Bool { amount.isSettled && amount.value == 0 }

    /// Once per control period: glide the settings one step, flush decayed filter registers.
    @inline(__always) public mutating func tick() {
        if isIdle {
            // Off: start clean the next time it is switched on.
            if !isReset { reset() }
            return
        }
        crossover.flushTiny()
        guard moving else { return }
        var stillMoving = false
        for k in 0..<12 where !(gainDB[k].isSettled && slope[k].isSettled) {
            gainDB[k].step(); slope[k].step()
            stillMoving = true
        }
        for band in 0..<Self.bandCount where !kneeDB[band].isSettled {
            kneeDB[band].step()
            stillMoving = true
        }
        if !expansionDB.isSettled { expansionDB.step(); stillMoving = true }
        moving = stillMoving
    }

    /// Processes `count` samples of one or two channels in place.
    @_noLocks public mutating func process(_ left: UnsafeMutablePointer<Float>, _ right: UnsafeMutablePointer<Float>?,
                                           count: Int) {
        if isIdle { return }
        isReset = false
        var pieces = GridPieces(count: count, period: Self.scratchCapacity, phase: 0)
        while let piece = pieces.next() {
            processPiece(left + piece.start, channels == 2 ? right.map { $0 + piece.start } : nil, count: piece.count)
        }
    }

    @inline(__always) private mutating func processPiece(_ left: UnsafeMutablePointer<Float>,
                                                 _ right: UnsafeMutablePointer<Float>?, count: Int) {
        let capacity = Self.scratchCapacity
        // 1. Split into bands (both channels in one pass).
        crossover.split(left, right, count: count, into: bands.base, stride: capacity, scratch: branches.base)
        // 2. Per band: level, gain per ear, and the sum of the bands.
        let wetLeft = wet.base, wetRight = wet + capacity
        for i in 0..<count { wetLeft[i] = 0; wetRight[i] = 0 }
        var endPosition = stepPosition
        for band in 0..<Self.bandCount { endPosition = processBand(band, stereo: right != nil, count: count) }
        stepPosition = endPosition
        // 3. Out, crossfaded with the input while the stage switches on or off.
        if amount.isSettled {
            for i in 0..<count { left[i] = wetLeft[i] }
            if let right { for i in 0..<count { right[i] = wetRight[i] } }
            return
        }
        var mix = amount
        for i in 0..<count {
            mix.step()
            let a = Float(mix.value)
            left[i] += a * (wetLeft[i] - left[i])
            if let right { right[i] += a * (wetRight[i] - right[i]) }
        }
        amount = mix
    }

    /// One band of the piece through its level detector and gains, into the sum; returns where in
    /// its step the piece ends (the same for every band).
    @inline(__always) private mutating func processBand(_ band: Int, stereo: Bool, count: Int) -> Int {
        let capacity = Self.scratchCapacity
        let bandLeft = bands + 2 * band * capacity, bandRight = bandLeft + capacity
        let gainLeft = gains.base, gainRight = gains + capacity
        let step = Float(ramp.count)
        var peak = stepPeak[band]
        var startLeft = linearGain[band], startRight = linearGain[6 + band]
        var deltaLeft = linearStep[band], deltaRight = linearStep[6 + band]
        // Step by step: each sample's gain on the ramp, and the step's peak.
        var steps = GridPieces(count: count, period: ramp.count, phase: stepPosition)
        while let piece = steps.next() {
            let x = bandLeft + piece.start, y = bandRight + piece.start, r = ramp + piece.phase
            let outLeft = gainLeft + piece.start, outRight = gainRight + piece.start
            for k in 0..<piece.count { outLeft[k] = startLeft + deltaLeft * r[k] }
            if stereo { for k in 0..<piece.count { outRight[k] = startRight + deltaRight * r[k] } }
            peak = max(peak, Self.peak(x, stereo ? y : nil, count: piece.count))
            guard piece.endsPeriod else { break }
            // End of a step: the new level, and gains to ramp to over the next step.
            let (targetLeft, targetRight) = updateLevel(band, peak: peak)
            peak = 0
            let inverseStep = 1 / step
            startLeft += deltaLeft * step
            startRight += deltaRight * step
            deltaLeft = (targetLeft - startLeft) * inverseStep
            deltaRight = (targetRight - startRight) * inverseStep
        }
        stepPeak[band] = peak
        linearGain[band] = startLeft
        linearGain[6 + band] = startRight
        linearStep[band] = deltaLeft
        linearStep[6 + band] = deltaRight
        // The band under its gains, into the sum (vectorizes).
        let wetLeft = wet.base, wetRight = wet + capacity
        for k in 0..<count { wetLeft[k] += gainLeft[k] * bandLeft[k] }
        if stereo { for k in 0..<count { wetRight[k] += gainRight[k] * bandRight[k] } }
        return steps.phase
    }

    /// The largest magnitude among `count` samples of one or two channels. Four running maxima
    /// break the compare chain, so the loop runs at the CPU's throughput, not its latency.
    @inline(__always) private static func peak(_ x: UnsafeMutablePointer<Float>, _ y: UnsafeMutablePointer<Float>?,
                                               count: Int) -> Float {
        let count = held(count)
        var t0: Float = 0, t1: Float = 0, t2: Float = 0, t3: Float = 0
        var k = 0
        if let y {
            while k + 2 <= count {
                t0 = max(t0, abs(x[k])); t1 = max(t1, abs(y[k]))
                t2 = max(t2, abs(x[k + 1])); t3 = max(t3, abs(y[k + 1]))
                k += 2
            }
            if k < count { t0 = max(t0, max(abs(x[k]), abs(y[k]))) }
        } else {
            while k + 4 <= count {
                t0 = max(t0, abs(x[k])); t1 = max(t1, abs(x[k + 1]))
                t2 = max(t2, abs(x[k + 2])); t3 = max(t3, abs(x[k + 3]))
                k += 4
            }
            while k < count { t0 = max(t0, abs(x[k])); k += 1 }
        }
        return max(max(t0, t1), max(t2, t3))
    }

    /// One step of band `band`'s level detector with this step's peak; its gain per ear, linear.
    @inline(__always) private mutating func updateLevel(_ band: Int, peak: Float) -> (Float, Float) {
        var current = max(holdCurrent[band], peak)
        let held = max(current, holdPrevious[band])
        if holdStepsLeft[band] > 1 {
            holdStepsLeft[band] -= 1
        } else {
            holdPrevious[band] = current
            current = 0
            holdStepsLeft[band] = holdLength[band]
        }
        holdCurrent[band] = current
        // The floor keeps silence finite (-200 dBFS).
        let levelDB = Decibels.perLog2 * Double(FastMath.log2(max(held, 1e-10)))
        let overTarget = max(levelDB - kneeDB[band].value, 0)
        let underTarget = min(max(expansionDB.value - levelDB, 0), Self.expansionDepthDB)
        // Rising level: attack for both (compression sets in, expansion opens); falling: release.
        let attack = attackCoefficient[band], release = releaseCoefficient[band]
        let overCoefficient = overTarget > over[band] ? attack : release
        let overDB = overCoefficient * over[band] + (1 - overCoefficient) * overTarget
        let underCoefficient = underTarget < under[band] ? attack : release
        let underDB = underCoefficient * under[band] + (1 - underCoefficient) * underTarget
        over[band] = overDB
        under[band] = underDB
        let leftSlope = slope[band].value
        peakReductionDB = max(peakReductionDB, Float(-leftSlope * overDB))
        // Gains in log2 units, for exp2.
        let toLog2 = Decibels.log2PerDB
        let left = (gainDB[band].value + leftSlope * overDB - underDB) * toLog2
        let right = (gainDB[6 + band].value + slope[6 + band].value * overDB - underDB) * toLog2
        return (FastMath.exp2(Float(left)), FastMath.exp2(Float(right)))
    }

    public mutating func reset() {
        crossover.reset()
        stepPosition = 0
        stepPeak = InlineArray(repeating: 0)
        linearGain = InlineArray(repeating: 0)
        linearStep = InlineArray(repeating: 0)
        holdStepsLeft = holdLength
        holdCurrent = InlineArray(repeating: 0)
        holdPrevious = InlineArray(repeating: 0)
        over = InlineArray(repeating: 0)
        under = InlineArray(repeating: 0)
        isReset = true
    }

    /// The gain (dB) band `band` applies for `ear` right now: its gain, less compression and expansion.
    public func currentGainDB(band: Int, ear: Int) -> Double {
        let b = min(max(band, 0), 5), k = min(max(ear, 0), 1) * 6 + b
        return gainDB[k].value + slope[k].value * over[b] - under[b]
    }

    /// True when a filter register holds a subnormal number (a test hook for the denormal guard).
    public var holdsSubnormalState: Bool { crossover.holdsSubnormalState }

    /// The crossover's designed band responses, for fitting and for tests.
    public var design: Crossover { crossover }
}
