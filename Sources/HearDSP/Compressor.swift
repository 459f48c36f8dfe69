// Feed-forward compressor with a soft knee, after Giannoulis, Massberg & Reiss, "Digital Dynamic
// Range Compressor Design" (JAES 2012): the gain computer works on the peak level in dB, and its
// output is smoothed in the dB domain with separate attack and release time constants (the
// "smooth branching" detector), which gives exact exponential attack and release.
// In stereo the detector takes the louder channel, so both channels get the same gain.


public struct Compressor: ~Copyable {
    static var scratchCapacity: Int { 256 }

    /// Static curve and timing, already in the units the sample loop wants.
    public struct Settings: Equatable, Sendable {
        public var thresholdDB: Double
        public var ratio: Double
        public var kneeDB: Double
        public var attackSeconds: Double
        public var releaseSeconds: Double
        public var makeupDB: Double
        public var enabled: Bool

        public init(_ values: ParameterValues) {
            thresholdDB = Double(values[.compThreshold])
            ratio = Double(values[.compRatio])
            kneeDB = Double(values[.compKnee])
            attackSeconds = Double(values[.compAttack]) / 1000
            releaseSeconds = Double(values[.compRelease]) / 1000
            makeupDB = Double(values[.compMakeup])
            enabled = values[.compEnable] != 0
        }
    }

    let sampleRate: Double
    var settings: Settings
    var curve: Curve
    /// Per-sample gain in dB, then its log2, for one piece of audio.
    let scratch: FixedBuffer<Float>
    /// Where `scratch` lives (freed with the stage).
    let arena: Arena
    var attackCoefficient = 0.0
    var releaseCoefficient = 0.0
    /// Smoothed gain change in dB (<= 0): the gain reduction, negated.
    var smoothedDB = 0.0
    /// Makeup glides per control tick, so changing it does not click.
    var makeup: Glide
    /// Deepest gain reduction since the meter last read it, in dB (>= 0).
    public var peakReductionDB: Float = 0

    public init(sampleRate: Double, ticksPerSecond: Double, values: ParameterValues) {
        self.sampleRate = sampleRate
        settings = Settings(values)
        curve = Curve(thresholdDB: settings.thresholdDB, ratio: settings.ratio, kneeDB: settings.kneeDB)
        var arena = Arena()
        scratch = arena.buffer(Self.scratchCapacity, 0)
        self.arena = arena
        makeup = Glide(0, timeConstant: 0.02, stepsPerSecond: ticksPerSecond, tolerance: 1e-4)
        set(values)
        makeup.jump(to: makeup.target)
    }

    public mutating func set(_ values: ParameterValues) {
        let next = Settings(values)
        if next.attackSeconds != settings.attackSeconds || attackCoefficient == 0 {
            attackCoefficient = LibM.exp(-1 / (next.attackSeconds * sampleRate))
        }
        if next.releaseSeconds != settings.releaseSeconds || releaseCoefficient == 0 {
            releaseCoefficient = LibM.exp(-1 / (next.releaseSeconds * sampleRate))
        }
        settings = next
        curve = Curve(thresholdDB: next.thresholdDB, ratio: next.ratio, kneeDB: next.kneeDB)
        makeup.target = next.enabled ? next.makeupDB : 0
    }

    /// The static curve, in the form the sample loop evaluates without branches.
    public struct Curve: Sendable {
        let threshold: Float
        /// 1/ratio - 1: output dB per input dB above the knee, minus one.
        let slope: Float
        let knee: Float
        let halfKnee: Float
        let inverseTwiceKnee: Float

        public init(thresholdDB: Double, ratio: Double, kneeDB: Double) {
            threshold = Float(thresholdDB)
            slope = Float(1 / ratio - 1)
            // A knee of 0 is a hard knee; 0.001 dB differs from it by less than 0.0002 dB.
            knee = Float(max(kneeDB, 0.001))
            halfKnee = knee / 2
            inverseTwiceKnee = 1 / (2 * knee)
        }

        /// Gain change in dB (<= 0) for a peak level of `levelDB`: 0 below the knee, the
        /// quadratic inside it, (1/ratio - 1)(x - threshold) above it.
        @inline(__always) public func gainChangeDB(levelDB: Float) -> Float {
            let over = levelDB - threshold
            let inKnee = min(max(over + halfKnee, 0), knee)
            return slope * (inKnee * inKnee * inverseTwiceKnee + max(over - halfKnee, 0))
        }
    }

    /// Gain change in dB the compressor applies right now (<= 0 while compressing).
    public var currentGainDB: Double { smoothedDB + makeup.value }

    /// True when the stage is off and has let go completely: processing would change nothing.
    public var isIdle: Bool { !settings.enabled && smoothedDB == 0 && makeup.isSettled && makeup.value == 0 }

    @inline(__always) public mutating func tick() {
        makeup.step()
        if smoothedDB > -1e-6 { smoothedDB = 0 }
    }

    /// Compresses `count` samples of one or two channels in place, with one shared gain.
    @_noLocks public mutating func process(_ left: UnsafeMutablePointer<Float>, _ right: UnsafeMutablePointer<Float>?,
                                           count: Int) {
        if isIdle { return }
        var pieces = GridPieces(count: count, period: scratch.count, phase: 0)
        while let piece = pieces.next() {
            processPiece(left + piece.start, right.map { $0 + piece.start }, count: piece.count)
        }
    }

    /// Three passes: the level and static curve per sample (no loop-carried state, so it
    /// vectorizes), the attack/release smoothing (the only serial part), then the gain.
    @inline(__always) private mutating func processPiece(_ left: UnsafeMutablePointer<Float>,
                                                 _ right: UnsafeMutablePointer<Float>?, count: Int) {
        let gainDB = scratch
        if settings.enabled {
            let curve = self.curve
            // The floor keeps silence finite (-200 dBFS).
            if let right {
                for i in 0..<count {
                    let peak = max(abs(left[i]), abs(right[i]))
                    gainDB[i] = curve.gainChangeDB(levelDB: Decibels.fastFromGain(max(peak, 1e-10)))
                }
            } else {
                for i in 0..<count {
                    gainDB[i] = curve.gainChangeDB(levelDB: Decibels.fastFromGain(max(abs(left[i]), 1e-10)))
                }
            }
        } else {
            for i in 0..<count { gainDB[i] = 0 }
        }

        let attack = attackCoefficient, release = releaseCoefficient
        let makeupDB = makeup.value
        var smoothed = smoothedDB
        var deepest = smoothed
        for i in 0..<count {
            let target = Double(gainDB[i])
            // One multiply-add on the loop-carried path: c * smoothed + (1 - c) * target.
            let attacking = target < smoothed
            let coefficient = attacking ? attack : release
            let pull = (attacking ? 1 - attack : 1 - release) * target
            smoothed = (coefficient * smoothed).addingProduct(1, pull)
            deepest = min(deepest, smoothed)
            // log2 of the linear gain, for exp2.
            gainDB[i] = Float((smoothed + makeupDB) * Decibels.log2PerDB)
        }
        smoothedDB = smoothed
        peakReductionDB = max(peakReductionDB, Float(-deepest))

        for i in 0..<count { left[i] *= FastMath.exp2(gainDB[i]) }
        if let right { for i in 0..<count { right[i] *= FastMath.exp2(gainDB[i]) } }
    }

    public mutating func reset() {
        smoothedDB = 0
    }
}
