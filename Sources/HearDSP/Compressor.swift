// Feed-forward compressor with a soft knee, after Giannoulis, Massberg & Reiss, "Digital Dynamic
// Range Compressor Design" (JAES 2012): the gain computer works on the peak level in dB, and its
// output is smoothed in the dB domain with separate attack and release time constants (the
// "smooth branching" detector), which gives exact exponential attack and release.
// In stereo the detector takes the louder channel, so both channels get the same gain.


public struct Compressor: Sendable {
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
        makeup.target = next.enabled ? next.makeupDB : 0
    }

    /// The static curve: gain change in dB (<= 0) for a peak level of `levelDB`.
    @inline(__always) public static func gainChangeDB(levelDB x: Double, thresholdDB t: Double, ratio r: Double,
                                                      kneeDB w: Double) -> Double {
        let over = x - t
        if 2 * over <= -w { return 0 }
        if 2 * over < w {
            let k = over + w / 2
            return (1 / r - 1) * k * k / (2 * w)
        }
        return (1 / r - 1) * over
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
        let t = settings.thresholdDB, r = settings.ratio, w = settings.kneeDB, on = settings.enabled
        let attack = attackCoefficient, release = releaseCoefficient
        let makeupDB = makeup.value
        var smoothed = smoothedDB
        var deepest = smoothed
        for i in 0..<count {
            var peak = abs(left[i])
            if let right { peak = max(peak, abs(right[i])) }
            // 20 log10(x) via log2; the floor keeps silence finite (-200 dBFS).
            let levelDB = 6.020599913279624 * Double(LibM.log2(max(peak, 1e-10)))
            let target = on ? Self.gainChangeDB(levelDB: levelDB, thresholdDB: t, ratio: r, kneeDB: w) : 0
            let coefficient = target < smoothed ? attack : release
            smoothed = target + coefficient * (smoothed - target)
            deepest = min(deepest, smoothed)
            // 10^(dB/20) via exp2.
            let gain = LibM.exp2(Float((smoothed + makeupDB) * 0.16609640474436813))
            left[i] *= gain
            if let right { right[i] *= gain }
        }
        smoothedDB = smoothed
        peakReductionDB = max(peakReductionDB, Float(-deepest))
    }

    public mutating func reset() {
        smoothedDB = 0
    }
}
