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
    let sampleRate: Double
    var ceiling: Float
    var enabled: Bool
    var releaseCoefficient: Double
    /// Delayed input, `lookahead` samples per channel.
    let delayLeft: FixedBuffer<Float>
    let delayRight: FixedBuffer<Float>
    var delayPosition = 0
    /// Monotonic queue of (required gain, sample time) over the window, a ring from `queueHead`
    /// up to `queueTail`; one slot more than the window holds, so head == tail means empty.
    let queueGain: FixedBuffer<Double>
    let queueTime: FixedBuffer<Int>
    var queueHead = 0
    var queueTail = 0
    /// The sample clock: wraps, and only differences of it are used.
    var sampleTime = 0
    /// The released hold values being averaged over the window (its length), and their sum.
    let history: FixedBuffer<Double>
    /// Where the delay lines, the queue and the history live (freed with the stage).
    let arena: Arena
    var historyPosition = 0
    var historySum: Double
    var hold = 1.0
    /// Samples in a row whose hold was 1, counted up to a window: then the history needs no updates.
    var calmSamples = 0
    var ticksSinceResum = 0
    /// Deepest gain reduction since the meter last read it, in dB (>= 0).
    public var peakReductionDB: Float = 0

    /// Look-ahead is the whole milliseconds' worth of samples that fit in 1 ms (48 at 48 kHz).
    public static func lookahead(sampleRate: Double) -> Int { max(1, truncatedInt(sampleRate * 0.001)) }

    public init(sampleRate: Double, channels: Int, values: ParameterValues) {
        self.sampleRate = sampleRate
        let lookahead = held(Self.lookahead(sampleRate: sampleRate))
        self.lookahead = lookahead
        var arena = Arena()
        delayLeft = arena.buffer(lookahead, 0)
        delayRight = arena.buffer(lookahead, 0)
        queueGain = arena.buffer(lookahead + 2, 0)
        queueTime = arena.buffer(lookahead + 2, 0)
        history = arena.buffer(lookahead + 1, 1)
        self.arena = arena
        historySum = Double(history.count)
        ceiling = 1
        enabled = true
        releaseCoefficient = 0
        set(values)
        reset()
    }

    public mutating func set(_ values: ParameterValues) {
        // The hearing profile's maximum output (mb.mpo) is a ceiling too; the lower one holds.
        ceiling = Float(Decibels.toGain(Double(min(values[.limitCeiling], values[.mbMPO]))))
        enabled = values[.limitEnable] != 0
        releaseCoefficient = LibM.exp(-1 / (Double(values[.limitRelease]) / 1000 * sampleRate))
    }

    /// The highest magnitude an output sample may have.
    public var ceilingLevel: Float { ceiling }

    public mutating func reset() {
        delayLeft.fill(0)
        delayRight.fill(0)
        history.fill(1)
        historySum = Double(history.count)
        queueHead = 0
        queueTail = 0
        sampleTime = 0
        hold = 1
        calmSamples = 0
        delayPosition = 0
        historyPosition = 0
    }

    /// Re-adds the window now and then, so the running sum cannot drift over hours of audio.
    @inline(__always) public mutating func tick() {
        if ticksSinceResum < 255 {
            ticksSinceResum += 1
            return
        }
        ticksSinceResum = 0
        var sum = 0.0
        for i in 0..<history.count { sum += history[i] }
        historySum = sum
    }

    @_noLocks public mutating func process(_ left: UnsafeMutablePointer<Float>, _ right: UnsafeMutablePointer<Float>?,
                                           count: Int) {
        let window = history.count
        if !enabled && queueHead == queueTail && calmSamples >= window {
            delayOnly(left, right, count: count)
            return
        }
        let limit = enabled ? ceiling : Float.infinity
        let release = releaseCoefficient
        let inverseWindow = 1 / Double(window)
        var deepest = 1.0
        var i = 0
        while i < count {
            let inLeft = left[i]
            let inRight = right?[i] ?? 0
            let peak = max(abs(inLeft), abs(inRight))
            let time = sampleTime
            sampleTime &+= 1

            // Monotonic queue of the gains samples in the window need; samples that need none
            // (gain 1) never enter it, so an empty queue means 1.
            if queueHead != queueTail && queueTime[queueHead] <= time &- window {
                queueHead = queueGain.slot(after: queueHead)
            }
            if peak > limit {
                let required = Double(limit / peak)
                while queueHead != queueTail {
                    let last = queueGain.slot(before: queueTail)
                    if queueGain[last] < required { break }
                    queueTail = last
                }
                queueGain[queueTail] = required
                queueTime[queueTail] = time
                queueTail = queueGain.slot(after: queueTail)
            }

            let gain: Double
            if queueHead == queueTail && calmSamples >= window {
                gain = 1  // nothing to limit for a whole window: the history is all ones already
            } else {
                let needed = queueHead != queueTail ? queueGain[queueHead] : 1
                let released = 1 - (1 - hold) * release
                hold = min(needed, released > 0.9999999 ? 1 : released)
                historySum += hold - history[historyPosition]
                history[historyPosition] = hold
                historyPosition = history.slot(after: historyPosition)
                calmSamples = hold != 1 ? 0 : (calmSamples < window ? calmSamples + 1 : window)
                gain = historySum * inverseWindow
                deepest = min(deepest, gain)
            }

            let delayedLeft = delayLeft[delayPosition]
            delayLeft[delayPosition] = inLeft
            left[i] = clamp(Float(Double(delayedLeft) * gain), limit)
            if let right {
                let delayedRight = delayRight[delayPosition]
                delayRight[delayPosition] = inRight
                right[i] = clamp(Float(Double(delayedRight) * gain), limit)
            }
            delayPosition = delayLeft.slot(after: delayPosition)
            i += 1
        }
        if deepest < 1 { peakReductionDB = max(peakReductionDB, Float(-Decibels.fromGain(max(deepest, 1e-10)))) }
    }

    /// Off and fully recovered: only the look-ahead delay remains, so the latency never changes.
    @inline(__always) private mutating func delayOnly(_ left: UnsafeMutablePointer<Float>,
                                                      _ right: UnsafeMutablePointer<Float>?, count: Int) {
        var position = delayPosition
        var i = 0
        while i < count {
            let delayedLeft = delayLeft[position]
            delayLeft[position] = left[i]
            left[i] = delayedLeft
            if let right {
                let delayedRight = delayRight[position]
                delayRight[position] = right[i]
                right[i] = delayedRight
            }
            position = delayLeft.slot(after: position)
            i += 1
        }
        delayPosition = position
    }

    @inline(__always) func clamp(_ x: Float, _ limit: Float) -> Float {
        x > limit ? limit : (x < -limit ? -limit : x)
    }
}
