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
    var hop: Int { Int(storedHop) }
    /// Analysis frame and transform length (N).
    var frameLength: Int { Int(storedFrameLength) }
    /// Spectrum bins 0...N/2.
    var bins: Int { Int(storedBins) }
    // Sizes and positions in 32 bits: loops up to them and index arithmetic on them need no
    // overflow check (Unchecked.swift).
    private let storedHop: UInt32, storedFrameLength: UInt32, storedBins: UInt32, storedInputCapacity: UInt32
    private var storedInputStart: UInt32 = 0, storedFill: UInt32 = 0
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
    var inputCapacity: Int { Int(storedInputCapacity) }
    var inputStart: Int {
        get { Int(storedInputStart) }
        set { storedInputStart = UInt32(truncatingIfNeeded: newValue) }
    }
    let accumulator: UnsafeMutablePointer<Float>
    let ready: UnsafeMutablePointer<Float>
    /// Samples of the current hop received so far.
    var fill: Int {
        get { Int(storedFill) }
        set { storedFill = UInt32(truncatingIfNeeded: newValue) }
    }
    /// Scratch: one windowed frame, and each channel's spectrum.
    let frame: UnsafeMutablePointer<Float>
    let spectrumReal: UnsafeMutablePointer<Float>
    let spectrumImaginary: UnsafeMutablePointer<Float>
    /// Every bin's power in the last frame (in stereo the channels' mean).
    let binPower: UnsafeMutablePointer<Float>
    /// What the echo canceller took out of the input, framed as the input is (`inputCapacity`):
    /// the residual-echo suppressor transforms it (`analyzeRemoved`).
    let removed: UnsafeMutablePointer<Float>
    /// Converts a sum of bin powers (one-sided, doubled) into mean power per sample.
    let powerNormalization: Float

    /// The hop (M) at `sampleRate`: 1/375 s, so latency 2M - 1 stays within 5.33 ms.
    /// (At most 2^20: rates beyond any hardware's hold it there.)
    @inline(__always) static func hop(sampleRate: Double) -> Int { min(max(4, truncatedInt(sampleRate / 375)), 1 << 20) }

    init(sampleRate: Double, shape: AnalysisShape = AnalysisShape(), arena: inout Arena) {
        let m = Self.hop(sampleRate: sampleRate)
        fft = RealFFT(size: min(max(shape.frameHops, 2), 32) * m, arena: &arena)
        let n = held(fft.size)
        let bins = n / 2 + 1
        storedHop = UInt32(m)
        storedFrameLength = UInt32(n)
        storedBins = UInt32(bins)
        analysisWindow = arena.floats(n)
        synthesisWindow = arena.floats(2 * m)
        overlapWindow = arena.floats(2 * m)
        func hann(_ j: Int) -> Double { 0.5 - 0.5 * LibM.cos(Double.pi * Double(j) / Double(m)) }  // period 2M
        let rise = max(n - m, 0)
        for i in 0..<rise {
            let sine = LibM.sqrt(0.5 - 0.5 * LibM.cos(Double.pi * Double(i) / Double(rise)))
            analysisWindow[i] = Float(shape.riseExponent == 1 ? sine : LibM.pow(sine, shape.riseExponent))
        }
        // The last 2M samples: the fall, and the synthesis window that makes their product a Hann window.
        let analysisTail = analysisWindow + (n - 2 * m)
        for j in 0..<2 * m {
            if j >= m { analysisTail[j] = Float(LibM.sqrt(hann(j))) }
            let a = Double(analysisTail[j])
            synthesisWindow[j] = a > 0 ? Float(hann(j) / a) : 0
            overlapWindow[j] = Float(hann(j))
        }
        var windowEnergy = 0.0
        for i in 0..<n { windowEnergy += Double(analysisWindow[i]) * Double(analysisWindow[i]) }
        powerNormalization = Float(1 / (Double(n) * windowEnergy))
        let inputCapacity = n + 8 * m
        storedInputCapacity = UInt32(truncatingIfNeeded: inputCapacity)
        input = arena.floats(2 * inputCapacity)
        accumulator = arena.floats(4 * m)
        ready = arena.floats(2 * m)
        frame = arena.floats(n)
        spectrumReal = arena.floats(2 * bins)
        spectrumImaginary = arena.floats(2 * bins)
        binPower = arena.floats(bins)
        removed = arena.floats(inputCapacity)
    }

    mutating func reset() {
        input.fill(0, count: 2 * inputCapacity)
        removed.fill(0, count: inputCapacity)
        inputStart = 0
        accumulator.fill(0, count: 4 * hop)
        ready.fill(0, count: 2 * hop)
        fill = 0
    }

    /// Channel `channel`'s (0 or 1) input buffer, accumulator and finished output.
    @inline(__always) func input(channel: Int) -> UnsafeMutablePointer<Float> { channel == 0 ? input : input + inputCapacity }
    @inline(__always) func accumulator(channel: Int) -> UnsafeMutablePointer<Float> { channel == 0 ? accumulator : accumulator + 2 * hop }
    @inline(__always) func ready(channel: Int) -> UnsafeMutablePointer<Float> { channel == 0 ? ready : ready + hop }
    @inline(__always) func spectrum(channel: Int) -> (real: UnsafeMutablePointer<Float>, imaginary: UnsafeMutablePointer<Float>) {
        channel == 0 ? (spectrumReal, spectrumImaginary) : (spectrumReal + bins, spectrumImaginary + bins)
    }

    /// Exchanges up to the rest of the current hop: the chunk's input goes in, the output for it
    /// comes out (in place: the input is read before any output is written). Returns how many
    /// samples were exchanged and whether they complete a hop; then the caller processes the frame
    /// (`analyze`, then `synthesize` or `passThrough`, then `advance`) and calls `finishHop`.
    @inline(__always) mutating func exchange(_ left: UnsafeMutablePointer<Float>, _ right: UnsafeMutablePointer<Float>?,
                                             stereo: Bool, count: Int) -> (chunk: Int, completes: Bool) {
        let n = frameLength, m = hop, filled = fill
        let chunk = held(min(count, m - filled))
        let base = inputStart + n - m + filled
        let bytes = max(0, chunk * MemoryLayout<Float>.stride)  // max: copyMemory traps on a negative count
        UnsafeMutableRawPointer(input(channel: 0) + base).copyMemory(from: left, byteCount: bytes)
        if stereo, let right { UnsafeMutableRawPointer(input(channel: 1) + base).copyMemory(from: right, byteCount: bytes) }
        let completes = filled + chunk == m
        // Output for sample at fill f is ready[f + 1]; the one completing a hop reads the new frame's first.
        let direct = completes ? chunk - 1 : chunk
        let directBytes = max(0, direct * MemoryLayout<Float>.stride)
        UnsafeMutableRawPointer(left).copyMemory(from: ready(channel: 0) + filled + 1, byteCount: directBytes)
        if stereo, let right { UnsafeMutableRawPointer(right).copyMemory(from: ready(channel: 1) + filled + 1, byteCount: directBytes) }
        fill = completes ? 0 : filled + chunk
        return (chunk, completes)
    }

    /// The last 2M input samples of the frame being processed, in channel `channel` (0 or 1).
    @inline(__always) func frameTail(channel: Int) -> UnsafeMutablePointer<Float> {
        input(channel: channel) + (inputStart + frameLength - 2 * hop)
    }

    /// The newest hop of channel `channel`'s input (M samples): complete once `exchange` says so,
    /// not yet analysed; the echo canceller works on it there.
    @inline(__always) func newestHop(channel: Int) -> UnsafeMutablePointer<Float> {
        input(channel: channel) + (inputStart + frameLength - hop)
    }

    /// Where what the echo canceller took out of the newest hop goes (M samples).
    @inline(__always) func newestRemoved() -> UnsafeMutablePointer<Float> { removed + (inputStart + frameLength - hop) }

    /// The power per bin of what the echo canceller took out over this frame, into `power`, as
    /// `analyze` measures the input's; `real` and `imaginary` (bins each) are the caller's scratch.
    @inline(__always) func analyzeRemoved(into power: UnsafeMutablePointer<Float>, real: UnsafeMutablePointer<Float>,
                                          imaginary: UnsafeMutablePointer<Float>) {
        let n = frameLength
        let samples = removed + inputStart
        for i in 0..<n { frame[i] = samples[i] * analysisWindow[i] }
        fft.forward(frame, real: real, imaginary: imaginary)
        for k in 0..<bins { power[k] = real[k] * real[k] + imaginary[k] * imaginary[k] }
    }

    /// After a frame: the hop's last output sample, into the chunk's last place.
    @inline(__always) func finishHop(_ left: UnsafeMutablePointer<Float>, _ right: UnsafeMutablePointer<Float>?, stereo: Bool, last: Int) {
        left[last] = ready[0]
        if stereo, let right { right[last] = ready(channel: 1)[0] }
    }

    /// Transforms the frame of each channel and sets `binPower`.
    @inline(__always) mutating func analyze(stereo: Bool) {
        let n = frameLength
        let channelCount = stereo ? 2 : 1
        var c = 0
        while c < channelCount {
            let samples = input(channel: c) + inputStart
            for i in 0..<n { frame[i] = samples[i] * analysisWindow[i] }
            let spectrum = spectrum(channel: c)
            fft.forward(frame, real: spectrum.real, imaginary: spectrum.imaginary)
            c += 1
        }
        if stereo {
            let (r2, i2) = spectrum(channel: 1)
            for k in 0..<bins {
                let a = spectrumReal[k] * spectrumReal[k] + spectrumImaginary[k] * spectrumImaginary[k]
                let b = r2[k] * r2[k] + i2[k] * i2[k]
                binPower[k] = 0.5 * (a + b)
            }
        } else {
            for k in 0..<bins { binPower[k] = spectrumReal[k] * spectrumReal[k] + spectrumImaginary[k] * spectrumImaginary[k] }
        }
    }

    /// The frame's spectrum times `gains` (per bin), back to time and overlap-added.
    @inline(__always) mutating func synthesize(gains: UnsafePointer<Float>, stereo: Bool) {
        let n = frameLength, m = hop
        let channelCount = stereo ? 2 : 1
        var c = 0
        while c < channelCount {
            let (re, im) = spectrum(channel: c)
            for k in 0..<bins {
                re[k] *= gains[k]
                im[k] *= gains[k]
            }
            fft.inverse(real: re, imaginary: im, output: frame, first: n - 2 * m)
            let tail = frame + (n - 2 * m), acc = accumulator(channel: c)
            for j in 0..<2 * m { acc[j] += tail[j] * synthesisWindow[j] }
            c += 1
        }
    }

    /// The frame unchanged: its share of the output is x · Hann, without a transform.
    @inline(__always) mutating func passThrough(stereo: Bool) {
        let channelCount = stereo ? 2 : 1
        var c = 0
        while c < channelCount {
            let samples = frameTail(channel: c), acc = accumulator(channel: c)
            for j in 0..<2 * hop { acc[j] += samples[j] * overlapWindow[j] }
            c += 1
        }
    }

    /// The first M accumulated samples are complete: hands them out, shifts the rest down, and
    /// moves to the next frame.
    @inline(__always) mutating func advance(stereo: Bool) {
        let n = frameLength, m = hop
        let channelCount = stereo ? 2 : 1
        var c = 0
        while c < channelCount {
            let acc = accumulator(channel: c), later = acc + m, out = ready(channel: c)
            for j in 0..<m {
                out[j] = acc[j]
                acc[j] = later[j]
                later[j] = 0
            }
            c += 1
        }
        // The next frame starts M later; when it would run past the buffer, its first N - M samples move to the start.
        if inputStart + n + m <= inputCapacity {
            inputStart += m
        } else {
            c = 0
            while c < channelCount {
                let channel = input(channel: c)
                UnsafeMutableRawPointer(channel).copyMemory(from: channel + (inputStart + m), byteCount: max(0, (n - m) * MemoryLayout<Float>.stride))
                c += 1
            }
            UnsafeMutableRawPointer(removed).copyMemory(from: removed + (inputStart + m), byteCount: max(0, (n - m) * MemoryLayout<Float>.stride))
            inputStart = 0
        }
    }
}
