// Look-ahead peak limiter, the last stage: no output sample exceeds the ceiling.
//
// For each incoming sample the gain it needs is r = min(1, ceiling / |x|). Over the look-ahead
// window of L + 1 samples the limiter takes the minimum of r (a monotonic queue), lets that hold
// recover with a one-pole release, and averages it over the same L + 1 samples. Every term of
// that average is at most the r of the sample leaving the delay line, so the average is too: the
// gain ramps down over L samples before a peak and still meets it exactly. A final clamp at the
// ceiling only absorbs rounding.


public struct Limiter: ~Copyable {
    public let lookahead: Int
    let window: Int
    let channels: Int
    let sampleRate: Double
    var ceiling: Float
    var enabled: Bool
    var releaseCoefficient: Double
    /// Delayed input, `lookahead` samples per channel.
    let delay: UnsafeMutablePointer<Float>
    var delayPosition = 0
    /// Monotonic queue of (required gain, sample index) over the window.
    let queueGain: UnsafeMutablePointer<Double>
    let queueIndex: UnsafeMutablePointer<Int>
    var queueHead = 0
    var queueCount = 0
    var sampleIndex = 0
    /// The released hold values being averaged, and their sum.
    let history: UnsafeMutablePointer<Double>
    var historyPosition = 0
    var historySum: Double
    var hold = 1.0
    /// Samples in a row whose hold was 1: once a whole window, the history needs no updates.
    var calmSamples = 0
    var ticksSinceResum = 0
    /// Deepest gain reduction since the meter last read it, in dB (>= 0).
    public var peakReductionDB: Float = 0

    /// Look-ahead is the whole milliseconds' worth of samples that fit in 1 ms (48 at 48 kHz).
    public static func lookahead(sampleRate: Double) -> Int { max(1, truncatedInt(sampleRate * 0.001)) }

    public init(sampleRate: Double, channels: Int, values: ParameterValues) {
        self.sampleRate = sampleRate
        self.channels = min(max(channels, 1), 2)
        lookahead = Self.lookahead(sampleRate: sampleRate)
        window = lookahead &+ 1
        delay = allocateBuffer(lookahead &* 2, repeating: 0)
        queueGain = allocateBuffer(window, repeating: 0)
        queueIndex = allocateBuffer(window, repeating: 0)
        history = allocateBuffer(window, repeating: 1)
        historySum = Double(window)
        ceiling = 1
        enabled = true
        releaseCoefficient = 0
        set(values)
        reset()
    }

    deinit {
        delay.deallocate()
        queueGain.deallocate()
        queueIndex.deallocate()
        history.deallocate()
    }

    public mutating func set(_ values: ParameterValues) {
        // The hearing profile's maximum output (mb.mpo) is a ceiling too; the lower one holds.
        ceiling = Float(LibM.pow(10, Double(min(values[.limitCeiling], values[.mbMPO])) / 20))
        enabled = values[.limitEnable] != 0
        releaseCoefficient = LibM.exp(-1 / (Double(values[.limitRelease]) / 1000 * sampleRate))
    }

    /// The highest magnitude an output sample may have.
    public var ceilingLevel: Float { ceiling }

    public mutating func reset() {
        delay.fill(0, count: lookahead &* 2)
        history.fill(1, count: window)
        historySum = Double(window)
        queueHead = 0
        queueCount = 0
        sampleIndex = 0
        hold = 1
        calmSamples = 0
        delayPosition = 0
        historyPosition = 0
    }

    /// Re-adds the window now and then, so the running sum cannot drift over hours of audio.
    @inline(__always) public mutating func tick() {
        ticksSinceResum &+= 1
        guard ticksSinceResum >= 256 else { return }
        ticksSinceResum = 0
        var sum = 0.0
        for i in upTo(window) { sum += history[i] }
        historySum = sum
    }

    @_noLocks public mutating func process(_ left: UnsafeMutablePointer<Float>, _ right: UnsafeMutablePointer<Float>?,
                                           count: Int) {
        if !enabled && queueCount == 0 && calmSamples >= window {
            delayOnly(left, right, count: count)
            return
        }
        let limit = enabled ? ceiling : Float.infinity
        let release = releaseCoefficient
        let inverseWindow = 1 / Double(window)
        let rightDelay = delay + lookahead
        var deepest = 1.0
        for i in upTo(count) {
            let inLeft = left[i]
            let inRight = right?[i] ?? 0
            let peak = max(abs(inLeft), abs(inRight))
            let index = sampleIndex
            sampleIndex &+= 1

            // Monotonic queue of the gains samples in the window need; samples that need none
            // (gain 1) never enter it, so an empty queue means 1.
            if queueCount > 0 && queueIndex[queueHead] <= index &- window {
                queueHead = queueHead &+ 1 == window ? 0 : queueHead &+ 1
                queueCount &-= 1
            }
            if peak > limit {
                let required = Double(limit / peak)
                while queueCount > 0 {
                    var last = queueHead &+ queueCount &- 1
                    if last >= window { last &-= window }
                    if queueGain[last] < required { break }
                    queueCount &-= 1
                }
                var tail = queueHead &+ queueCount
                if tail >= window { tail &-= window }
                queueGain[tail] = required
                queueIndex[tail] = index
                queueCount &+= 1
            }

            let gain: Double
            if queueCount == 0 && calmSamples >= window {
                gain = 1  // nothing to limit for a whole window: the history is all ones already
            } else {
                let needed = queueCount > 0 ? queueGain[queueHead] : 1
                let released = 1 - (1 - hold) * release
                hold = min(needed, released > 0.9999999 ? 1 : released)
                historySum += hold - history[historyPosition]
                history[historyPosition] = hold
                historyPosition = historyPosition &+ 1 == window ? 0 : historyPosition &+ 1
                calmSamples = hold == 1 ? calmSamples &+ 1 : 0
                gain = historySum * inverseWindow
                deepest = min(deepest, gain)
            }

            let delayedLeft = delay[delayPosition]
            delay[delayPosition] = inLeft
            left[i] = clamp(Float(Double(delayedLeft) * gain), limit)
            if let right {
                let delayedRight = rightDelay[delayPosition]
                rightDelay[delayPosition] = inRight
                right[i] = clamp(Float(Double(delayedRight) * gain), limit)
            }
            delayPosition = delayPosition &+ 1 == lookahead ? 0 : delayPosition &+ 1
        }
        if deepest < 1 { peakReductionDB = max(peakReductionDB, Float(-20 * LibM.log10(max(deepest, 1e-10)))) }
    }

    /// Off and fully recovered: only the look-ahead delay remains, so the latency never changes.
    @inline(__always) mutating func delayOnly(_ left: UnsafeMutablePointer<Float>, _ right: UnsafeMutablePointer<Float>?,
                                              count: Int) {
        let rightDelay = delay + lookahead
        var position = delayPosition
        for i in upTo(count) {
            let delayedLeft = delay[position]
            delay[position] = left[i]
            left[i] = delayedLeft
            if let right {
                let delayedRight = rightDelay[position]
                rightDelay[position] = right[i]
                right[i] = delayedRight
            }
            position = position &+ 1 == lookahead ? 0 : position &+ 1
        }
        delayPosition = position
    }

    @inline(__always) func clamp(_ x: Float, _ limit: Float) -> Float {
        x > limit ? limit : (x < -limit ? -limit : x)
    }
}
