// The noise suppressor's framing: a low-delay analysis/synthesis filter bank (after Mauler & Martin).
// Frames of N samples advance by a hop of M; the analysis window is long and asymmetric (a slow
// sqrt-Hann rise over N - M samples, a short sqrt-Hann fall over the last M), the synthesis window
// covers only the last 2M samples, and their product there is a Hann window of 2M, which
// overlap-adds to exactly one. Frequency resolution comes from N, delay only from M: a sample
// leaves 2M - 1 samples after it entered. M is rate / 375 (128 at 48 kHz: 255 samples, 5.3 ms);
// N is the power of two >= 8M (1024).

/// The analysis window's shape (the synthesis window follows from it): the frame is `frameHops`
/// hops long (a power of two: 8 by default), and the rise over all but the last hop is a sine
/// (sqrt-Hann) raised to `riseExponent` (1 by default; 2 is a Hann rise). For measurements of what
/// frequency resolution is worth at the same delay (hear-features oracle); the plugin uses the default.
public struct AnalysisShape: Sendable {
    public var frameHops: Int
    public var riseExponent: Double
    public init(frameHops: Int = 8, riseExponent: Double = 1) {
        self.frameHops = frameHops
        self.riseExponent = riseExponent
    }
}

struct FilterBank: ~Copyable {
    /// Samples per frame advance; also half the synthesis window (M).
    let hop: Int
    /// Analysis frame and transform length (N).
    let frameLength: Int
    /// Spectrum bins 0...N/2.
    let bins: Int
    let fft: RealFFT
    let analysisWindow: UnsafeMutablePointer<Float>
    /// For the last 2M samples of a frame.
    let synthesisWindow: UnsafeMutablePointer<Float>
    /// Analysis · synthesis over the last 2M samples (a Hann window): the frame's share of the
    /// output when no gain is applied, which skips the inverse transform while the stage is off.
    let overlapWindow: UnsafeMutablePointer<Float>
    /// Per channel: the last N input samples; the overlap-add accumulator (2M); finished output (M).
    /// The current frame is input[inputStart..<inputStart + N] (per channel, `inputCapacity` apart):
    /// it advances by M a frame and moves back to the start only when the buffer is used up.
    let input: UnsafeMutablePointer<Float>
    let inputCapacity: Int
    var inputStart = 0
    let accumulator: UnsafeMutablePointer<Float>
    let ready: UnsafeMutablePointer<Float>
    /// Samples of the current hop received so far.
    var fill = 0
    /// Scratch: one windowed frame, and each channel's spectrum.
    let frame: UnsafeMutablePointer<Float>
    let spectrumReal: UnsafeMutablePointer<Float>
    let spectrumImaginary: UnsafeMutablePointer<Float>
    /// Every bin's power in the last frame (in stereo the channels' mean).
    let binPower: UnsafeMutablePointer<Float>
    /// Converts a sum of bin powers (one-sided, doubled) into mean power per sample.
    let powerNormalization: Float

    /// The hop (M) at `sampleRate`: 1/375 s, so latency 2M - 1 stays within 5.33 ms.
    static func hop(sampleRate: Double) -> Int { max(4, truncatedInt(sampleRate / 375)) }

    init(sampleRate: Double, shape: AnalysisShape = AnalysisShape(), arena: inout Arena) {
        let m = Self.hop(sampleRate: sampleRate)
        hop = m
        fft = RealFFT(size: min(max(shape.frameHops, 2), 32) &* m, arena: &arena)
        let n = fft.size
        frameLength = n
        bins = n / 2 &+ 1
        analysisWindow = arena.floats(n)
        synthesisWindow = arena.floats(2 &* m)
        overlapWindow = arena.floats(2 &* m)
        func hann(_ j: Int) -> Double { 0.5 - 0.5 * LibM.cos(Double.pi * Double(j) / Double(m)) }  // period 2M
        let rise = n &- m
        for i in upTo(rise) {
            let sine = LibM.sqrt(0.5 - 0.5 * LibM.cos(Double.pi * Double(i) / Double(rise)))
            analysisWindow[i] = Float(shape.riseExponent == 1 ? sine : LibM.pow(sine, shape.riseExponent))
        }
        for i in loop(from: rise, upTo: n) { analysisWindow[i] = Float(LibM.sqrt(hann(i &- (n &- 2 &* m)))) }
        for j in upTo(2 &* m) {
            let a = Double(analysisWindow[n &- 2 &* m &+ j])
            synthesisWindow[j] = a > 0 ? Float(hann(j) / a) : 0
            overlapWindow[j] = Float(hann(j))
        }
        var windowEnergy = 0.0
        for i in upTo(n) { windowEnergy += Double(analysisWindow[i]) * Double(analysisWindow[i]) }
        powerNormalization = Float(1 / (Double(n) * windowEnergy))
        inputCapacity = n &+ 8 &* m
        input = arena.floats(2 &* inputCapacity)
        accumulator = arena.floats(4 &* m)
        ready = arena.floats(2 &* m)
        frame = arena.floats(n)
        spectrumReal = arena.floats(2 &* bins)
        spectrumImaginary = arena.floats(2 &* bins)
        binPower = arena.floats(bins)
    }

    mutating func reset() {
        input.fill(0, count: 2 &* inputCapacity)
        inputStart = 0
        accumulator.fill(0, count: 4 &* hop)
        ready.fill(0, count: 2 &* hop)
        fill = 0
    }

    /// Exchanges up to the rest of the current hop: the chunk's input goes in, the output for it
    /// comes out (in place: the input is read before any output is written). Returns how many
    /// samples were exchanged and whether they complete a hop; then the caller processes the frame
    /// (`analyze`, then `synthesize` or `passThrough`, then `advance`) and calls `finishHop`.
    @inline(__always) mutating func exchange(_ left: UnsafeMutablePointer<Float>, _ right: UnsafeMutablePointer<Float>?,
                                             stereo: Bool, count: Int) -> (chunk: Int, completes: Bool) {
        let n = frameLength, m = hop
        let chunk = min(count, m &- fill)
        let base = inputStart &+ n &- m &+ fill
        let bytes = max(0, chunk &* MemoryLayout<Float>.stride)  // max: copyMemory traps on a negative count
        UnsafeMutableRawPointer(input + base).copyMemory(from: left, byteCount: bytes)
        if stereo, let right { UnsafeMutableRawPointer(input + inputCapacity + base).copyMemory(from: right, byteCount: bytes) }
        let completes = fill &+ chunk == m
        // Output for sample at fill f is ready[f + 1]; the one completing a hop reads the new frame's first.
        let direct = completes ? chunk &- 1 : chunk
        let directBytes = max(0, direct &* MemoryLayout<Float>.stride)
        UnsafeMutableRawPointer(left).copyMemory(from: ready + fill + 1, byteCount: directBytes)
        if stereo, let right { UnsafeMutableRawPointer(right).copyMemory(from: ready + m + fill + 1, byteCount: directBytes) }
        fill = completes ? 0 : fill &+ chunk
        return (chunk, completes)
    }

    /// The last 2M input samples of the frame being processed, in the first channel (`channel` 0)
    /// or the second.
    @inline(__always) func frameTail(channel: Int) -> UnsafeMutablePointer<Float> {
        input + (channel &* inputCapacity &+ inputStart &+ frameLength &- 2 &* hop)
    }

    /// After a frame: the hop's last output sample, into the chunk's last place.
    @inline(__always) func finishHop(_ left: UnsafeMutablePointer<Float>, _ right: UnsafeMutablePointer<Float>?, stereo: Bool, last: Int) {
        left[last] = ready[0]
        if stereo, let right { right[last] = ready[hop] }
    }

    /// Transforms the frame of each channel and sets `binPower`.
    @inline(__always) mutating func analyze(stereo: Bool) {
        let n = frameLength
        for c in upTo(stereo ? 2 : 1) {
            let samples = input + (c &* inputCapacity &+ inputStart)
            for i in upTo(n) { frame[i] = samples[i] * analysisWindow[i] }
            fft.forward(frame, real: spectrumReal + c &* bins, imaginary: spectrumImaginary + c &* bins)
        }
        if stereo {
            let r2 = spectrumReal + bins, i2 = spectrumImaginary + bins
            for k in upTo(bins) {
                let a = spectrumReal[k] * spectrumReal[k] + spectrumImaginary[k] * spectrumImaginary[k]
                let b = r2[k] * r2[k] + i2[k] * i2[k]
                binPower[k] = 0.5 * (a + b)
            }
        } else {
            for k in upTo(bins) { binPower[k] = spectrumReal[k] * spectrumReal[k] + spectrumImaginary[k] * spectrumImaginary[k] }
        }
    }

    /// The frame's spectrum times `gains` (per bin), back to time and overlap-added.
    @inline(__always) mutating func synthesize(gains: UnsafePointer<Float>, stereo: Bool) {
        let n = frameLength, m = hop
        for c in upTo(stereo ? 2 : 1) {
            let re = spectrumReal + c &* bins, im = spectrumImaginary + c &* bins
            for k in upTo(bins) {
                re[k] *= gains[k]
                im[k] *= gains[k]
            }
            fft.inverse(real: re, imaginary: im, output: frame, first: n &- 2 &* m)
            let tail = frame + (n &- 2 &* m), acc = accumulator + c &* 2 &* m
            for j in upTo(2 &* m) { acc[j] += tail[j] * synthesisWindow[j] }
        }
    }

    /// The frame unchanged: its share of the output is x · Hann, without a transform.
    @inline(__always) mutating func passThrough(stereo: Bool) {
        let n = frameLength, m = hop
        for c in upTo(stereo ? 2 : 1) {
            let samples = input + (c &* inputCapacity &+ inputStart &+ (n &- 2 &* m)), acc = accumulator + c &* 2 &* m
            for j in upTo(2 &* m) { acc[j] += samples[j] * overlapWindow[j] }
        }
    }

    /// The first M accumulated samples are complete: hands them out, shifts the rest down, and
    /// moves to the next frame.
    @inline(__always) mutating func advance(stereo: Bool) {
        let n = frameLength, m = hop
        let channelCount = stereo ? 2 : 1
        for c in upTo(channelCount) {
            let acc = accumulator + c &* 2 &* m, out = ready + c &* m
            for j in upTo(m) {
                out[j] = acc[j]
                acc[j] = acc[j &+ m]
                acc[j &+ m] = 0
            }
        }
        // The next frame starts M later; when it would run past the buffer, its first N - M samples move to the start.
        if inputStart &+ n &+ m <= inputCapacity {
            inputStart &+= m
        } else {
            for c in upTo(channelCount) {
                let channel = input + c &* inputCapacity
                UnsafeMutableRawPointer(channel).copyMemory(from: channel + (inputStart &+ m), byteCount: max(0, (n &- m) &* MemoryLayout<Float>.stride))
            }
            inputStart = 0
        }
    }
}
