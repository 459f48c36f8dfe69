// The echo canceller (aec.*), the first stage of the chain: speexdsp's MDF canceller (Debian's
// libspeexdsp) takes out what the speakers put into the microphone, and its residual-echo
// suppressor (aec.suppress) what the linear filter leaves. The reference, what the speakers play,
// comes with each chunk from outside (the plugin reads it from the speaker chain of the same
// process); a chunk without one is not cancelled, and the stage only delays it.
//
// speexdsp works on whole frames of `frameLength` samples (a power of two near 5.3 ms: 256 at
// 48 kHz, 64 at 16 kHz). Samples are gathered into a frame while the frame before is handed out,
// and the residual-echo suppressor delays by one more, so the stage delays by exactly two frames
// whether it cancels or suppresses or not (it holds the frame before where the suppressor is off),
// and the output does not depend on how the host splits its blocks. Every speexdsp state is made
// at init; after that no speexdsp call allocates or locks (EchoReferenceTests count allocations
// on the plugin's run path). speexdsp takes 16-bit samples: a full-scale float maps to 32767, and
// anything beyond is held there (a microphone's samples never go beyond; 16 bits put the rounding
// 96 dB below full scale). 250 ms of filter in frames near 5.3 ms: measured in `make eval-echo`.

import CSpeexDSP

public struct EchoCanceller: ~Copyable {
    /// Samples per speexdsp frame; the stage delays by two.
    public let frameLength: Int
    /// The adaptive filter's length in samples: a whole number of frames covering `filterSeconds`.
    public let filterLength: Int
    /// How much room response the filter covers (s): a living room's reverberation and the
    /// desktop's output and input buffers (a few quanta) together stay within it.
    public static let filterSeconds = 0.25
    let channels: Int
    /// speexdsp's states, one canceller and one preprocessor per channel (the right's only in stereo).
    let echoLeft: OpaquePointer?, echoRight: OpaquePointer?
    let suppressorLeft: OpaquePointer?, suppressorRight: OpaquePointer?
    let arena: Arena
    /// The frame being gathered (both channels, left first), its reference, and the frame handed out.
    let gathered: FixedBuffer<Float>
    let reference: FixedBuffer<Float>
    let ready: FixedBuffer<Float>
    /// The frame gathered before, as it came and as the canceller left it (before the suppressor).
    let previous: FixedBuffer<Float>
    let cancelled: FixedBuffer<Float>
    /// speexdsp's 16-bit frames: microphone, reference, result.
    let micro: FixedBuffer<Int16>, speaker: FixedBuffer<Int16>, result: FixedBuffer<Int16>
    /// The left canceller's filter as an impulse response (speexdsp's fixed point), read about once
    /// a second: its largest tap is the delay from what the speakers were given to the microphone.
    let impulse: FixedBuffer<Int32>
    /// Frames between two readings of the impulse response, and frames since the last.
    let delayEvery: Int
    var framesSinceDelay = 0
    let sampleRate: Double
    /// Where in the frame the next sample goes.
    var position = 0
    /// Whether any chunk of the frame being gathered came with a reference.
    var referenceInFrame = false
    /// Whether speexdsp ran on the last frame: after frames it did not, its suppressor is first
    /// given the frame before, so that its own one-frame delay holds that frame.
    var cancelledLast = false
    /// Whether the frame handed out last was the canceller's rather than the microphone's as it
    /// came: a change crossfades over one frame.
    var appliedLast = false
    /// Samples since the reference last held sound: once the filter's length has passed, no echo
    /// can reach the microphone, and the frames pass as they came (speexdsp's DC notch and 16 bits
    /// cost a lone near end 0.1-0.3 PESQ-WB), while the canceller keeps running to keep its state.
    var quietSamples = 0
    var enabled = true
    var suppress = true
    /// Smoothed powers (per frame) of the microphone and of what the canceller leaves, while the
    /// far end plays: their ratio is the echo return loss enhancement.
    var microphonePower: Float = 0
    var residualPower: Float = 0
    /// The per-frame factor of those averages (about 0.5 s).
    let powerRate: Float
    /// ERLE in dB, NaN while the stage is not cancelling or the far end has not played yet.
    public private(set) var enhancementDB: Float = .nan
    /// The echo path's delay (ms) as the filter learned it, NaN until it has been read while cancelling.
    public private(set) var echoDelayMilliseconds: Float = .nan

    /// A frame's reference power (mean square) below which the far end counts as silent (-60 dBFS).
    static let silentReference: Float = 1e-6

    /// The frame length for `sampleRate`: the power of two nearest 5.3 ms, 32 to 1024 samples.
    public static func frameLength(sampleRate: Double) -> Int {
        var length = 32
        while length < 1024 && Double(length) * 1.414 < sampleRate / 187.5 { length &*= 2 }
        return length
    }

    public init(sampleRate: Double, channels: Int, values: ParameterValues) {
        let frame = Self.frameLength(sampleRate: sampleRate)
        frameLength = frame
        // Whole frames (the rate is at most 768 kHz: no product here comes near overflowing).
        let frames = max(1, truncatedInt(Self.filterSeconds * sampleRate / Double(frame) + 0.999))
        filterLength = frames &* frame
        self.channels = min(max(channels, 1), 2)
        var rate = Int32(truncatingIfNeeded: truncatedInt(sampleRate + 0.5))
        let frame32 = Int32(truncatingIfNeeded: frame), filter32 = Int32(truncatingIfNeeded: frames &* frame)
        func canceller() -> OpaquePointer? {
            guard let state = speex_echo_state_init(frame32, filter32) else { return nil }
            speex_echo_ctl(state, SPEEX_ECHO_SET_SAMPLING_RATE, &rate)
            return state
        }
        func suppressor(for echo: OpaquePointer?) -> OpaquePointer? {
            guard let echo, let state = speex_preprocess_state_init(frame32, rate) else { return nil }
            // Its noise suppression stays on only because its echo suppression acts through the same
            // gain; at 0 dB it takes no noise out (the noise suppressor after this stage does that).
            var on: Int32 = 1, noiseDB: Int32 = 0, off: Int32 = 0
            speex_preprocess_ctl(state, SPEEX_PREPROCESS_SET_DENOISE, &on)
            speex_preprocess_ctl(state, SPEEX_PREPROCESS_SET_NOISE_SUPPRESS, &noiseDB)
            speex_preprocess_ctl(state, SPEEX_PREPROCESS_SET_AGC, &off)
            speex_preprocess_ctl(state, SPEEX_PREPROCESS_SET_VAD, &off)
            speex_preprocess_ctl(state, SPEEX_PREPROCESS_SET_DEREVERB, &off)
            speex_preprocess_ctl(state, SPEEX_PREPROCESS_SET_ECHO_STATE, UnsafeMutableRawPointer(echo))
            return state
        }
        echoLeft = canceller()
        echoRight = self.channels == 2 ? canceller() : nil
        suppressorLeft = suppressor(for: echoLeft)
        suppressorRight = suppressor(for: echoRight)
        var arena = Arena()
        gathered = arena.buffer(2 &* frame, 0)
        reference = arena.buffer(frame, 0)
        ready = arena.buffer(2 &* frame, 0)
        previous = arena.buffer(2 &* frame, 0)
        cancelled = arena.buffer(2 &* frame, 0)
        micro = arena.buffer(frame, 0)
        speaker = arena.buffer(frame, 0)
        result = arena.buffer(frame, 0)
        impulse = arena.buffer(frames &* frame, 0)
        delayEvery = max(1, truncatedInt(sampleRate / Double(frame)))
        self.sampleRate = sampleRate
        self.arena = arena
        powerRate = Float(1 - LibM.exp(-Double(frame) / (0.5 * sampleRate)))
        set(values)
    }

    deinit {
        if let suppressorLeft { speex_preprocess_state_destroy(suppressorLeft) }
        if let suppressorRight { speex_preprocess_state_destroy(suppressorRight) }
        if let echoLeft { speex_echo_state_destroy(echoLeft) }
        if let echoRight { speex_echo_state_destroy(echoRight) }
    }

    /// The stage's delay in samples, on or off: a frame gathered, and the frame speexdsp's suppressor holds.
    public var latency: Int { 2 &* frameLength }

    @_noLocks mutating func set(_ values: ParameterValues) {
        enabled = values[.aecEnable] != 0
        suppress = values[.aecSuppress] != 0
    }

    /// Back to silence, as after activation: the frames, the filters and what they learned.
    @_noLocks mutating func reset() {
        gathered.fill(0)
        ready.fill(0)
        previous.fill(0)
        cancelled.fill(0)
        reference.fill(0)
        position = 0
        referenceInFrame = false
        cancelledLast = false
        appliedLast = false
        quietSamples = 0
        microphonePower = 0
        residualPower = 0
        enhancementDB = .nan
        echoDelayMilliseconds = .nan
        framesSinceDelay = 0
        Speex.reset(echoLeft)
        Speex.reset(echoRight)
    }

    /// Cancels `count` samples in place, `reference` (mono, what the speakers played meanwhile) nil
    /// when there is none.
    @_noLocks mutating func process(_ left: UnsafeMutablePointer<Float>, _ right: UnsafeMutablePointer<Float>?,
                                    reference speakers: UnsafePointer<Float>?, count: Int) {
        let count = held(count), frame = frameLength
        if speakers != nil { referenceInFrame = true }
        // `position` stays in 0 ..< frame and `i` in 0 ... count: wrapping arithmetic cannot wrap.
        var i = 0
        while i < count {
            let at = position
            let take = min(frame &- at, count &- i)
            for k in upTo(take) {
                let slot = at &+ k, sample = i &+ k
                gathered[slot] = left[sample]
                left[sample] = ready[slot]
                reference[slot] = speakers?[sample] ?? 0
            }
            if let right {
                for k in upTo(take) {
                    let slot = frame &+ at &+ k, sample = i &+ k
                    gathered[slot] = right[sample]
                    right[sample] = ready[slot]
                }
            }
            position = at &+ take
            i &+= take
            if position == frame {
                finishFrame()
                position = 0
                referenceInFrame = speakers != nil && i < count
            }
        }
    }

    /// The frame gathered, cancelled or as it came, makes the frame handed out next: the one
    /// before it, as speexdsp's suppressor hands back (it delays by one frame itself).
    @inline(__always) mutating func finishFrame() {
        let frame = frameLength, both = 2 &* frame
        let cancel = enabled && referenceInFrame && echoLeft != nil
        if !cancel && !cancelledLast {
            for k in upTo(both) {
                let x = gathered[k]
                ready[k] = previous[k]
                previous[k] = x
                cancelled[k] = x
            }
            enhancementDB = .nan
            appliedLast = false
            return
        }
        var referencePower: Float = 0
        for k in upTo(frame) {
            let x = reference[k]
            referencePower += x * x
            speaker[k] = Self.sixteenBits(x)
        }
        var microphone: Float = 0, residual: Float = 0
        for channel in upTo(channels) {
            let base = channel &* frame
            let (before, after) = cancelChannel(base, echo: channel == 0 ? echoLeft : echoRight,
                                                suppressor: channel == 0 ? suppressorLeft : suppressorRight,
                                                resuming: !cancelledLast)
            microphone += before
            residual += after
        }
        let sounding = referencePower > Self.silentReference * Float(frame)
        quietSamples = sounding ? 0 : min(quietSamples &+ frame, 1 << 30)
        let apply = cancel && quietSamples <= filterLength &+ frame
        // Switching on or off crossfades from the frame as it came.
        if apply != appliedLast {
            let step = 1 / Float(frame)
            for channel in upTo(channels) {
                let base = channel &* frame
                for k in upTo(frame) {
                    let wet = apply ? Float(k &+ 1) * step : 1 - Float(k &+ 1) * step
                    let dry = previous[base &+ k]
                    ready[base &+ k] = dry + wet * (ready[base &+ k] - dry)
                }
            }
        } else if !apply {
            for k in upTo(both) { ready[k] = previous[k] }
        }
        appliedLast = apply
        for k in upTo(both) { previous[k] = gathered[k] }
        cancelledLast = cancel
        guard cancel else { enhancementDB = .nan; return }
        if sounding {
            microphonePower += powerRate * (microphone - microphonePower)
            residualPower += powerRate * (residual - residualPower)
        }
        enhancementDB = microphonePower > 0
            ? Decibels.fastFromPower(max(microphonePower, 1e-20) / max(residualPower, 1e-20)) : .nan
        framesSinceDelay &+= 1
        if framesSinceDelay >= delayEvery && sounding {
            framesSinceDelay = 0
            readDelay()
        }
    }

    /// The delay of the filter's largest tap.
    @inline(__always) mutating func readDelay() {
        Speex.impulseResponse(echoLeft, impulse.base)
        var largest: Int32 = 0, at = -1
        for k in upTo(impulse.count) {
            let tap = impulse[k]
            let magnitude = tap < 0 ? ~tap : tap  // |tap| - 1 below zero: no overflow at Int32.min
            if magnitude > largest { largest = magnitude; at = k }
        }
        echoDelayMilliseconds = at < 0 ? .nan : Float(Double(at) * 1000 / sampleRate)
    }

    /// One channel's frame (at `base` in the frame buffers) through the canceller; the frame before
    /// it, through the suppressor when aec.suppress is on, goes to `ready`. The suppressor runs on
    /// every cancelled frame, on or off, so that its own one-frame delay holds the frame before;
    /// `resuming` (after frames that were not cancelled) gives it that frame first. Returns the
    /// microphone's energy and what is left after the canceller (and suppressor).
    @inline(__always) func cancelChannel(_ base: Int, echo: OpaquePointer?, suppressor: OpaquePointer?,
                                         resuming: Bool) -> (Float, Float) {
        let frame = frameLength
        let input = gathered + base, output = ready + base, earlier = cancelled + base
        if resuming {
            for k in upTo(frame) { result[k] = Self.sixteenBits(previous[base &+ k]) }
            Speex.suppress(suppressor, result.base)
        }
        var before: Float = 0
        for k in upTo(frame) {
            let x = input[k]
            before += x * x
            micro[k] = Self.sixteenBits(x)
        }
        Speex.cancel(echo, micro.base, speaker.base, result.base)
        let scale: Float = 1 / 32768
        if suppress {
            for k in upTo(frame) { earlier[k] = Float(result[k]) * scale }
            Speex.suppress(suppressor, result.base)
            for k in upTo(frame) { output[k] = Float(result[k]) * scale }
        } else {
            for k in upTo(frame) { output[k] = earlier[k] }
            for k in upTo(frame) { earlier[k] = Float(result[k]) * scale }
            Speex.suppress(suppressor, result.base)
        }
        var after: Float = 0
        for k in upTo(frame) { after += output[k] * output[k] }
        return (before, after)
    }

    /// A sample in speexdsp's 16 bits, rounded, held at full scale: 1.5 * 2^23 added puts the
    /// rounded integer in the float's low mantissa bits, so no conversion can trap.
    @inline(__always) static func sixteenBits(_ x: Float) -> Int16 {
        let scaled = min(max(x * 32768, -32768), 32767) + 12_582_912
        return Int16(truncatingIfNeeded: Int32(bitPattern: scaled.bitPattern) &- 0x4B40_0000)
    }
}

/// speexdsp's per-frame calls. They make no allocation and take no lock after the states are made
/// (EchoReferenceTests count allocations on the plugin's run path while it cancels), but the compiler's performance checker
/// cannot see into C; this is the one place that vouches for them.
enum Speex {
    @inline(__always) static func cancel(_ state: OpaquePointer?, _ microphone: UnsafePointer<Int16>,
                                         _ speakers: UnsafePointer<Int16>, _ output: UnsafeMutablePointer<Int16>) {
        guard let state else { return }
        _unsafePerformance { speex_echo_cancellation(state, microphone, speakers, output) }
    }

    @inline(__always) static func suppress(_ state: OpaquePointer?, _ frame: UnsafeMutablePointer<Int16>) {
        guard let state else { return }
        _ = _unsafePerformance { speex_preprocess_run(state, frame) }
    }

    /// The filter as an impulse response, filter-length Int32s (speexdsp's SPEEX_ECHO_GET_IMPULSE_RESPONSE:
    /// an inverse FFT per filter block into `response`, no allocation).
    @inline(__always) static func impulseResponse(_ state: OpaquePointer?, _ response: UnsafeMutablePointer<Int32>) {
        guard let state else { return }
        _ = _unsafePerformance { speex_echo_ctl(state, SPEEX_ECHO_GET_IMPULSE_RESPONSE, response) }
    }

    @inline(__always) static func reset(_ state: OpaquePointer?) {
        guard let state else { return }
        _unsafePerformance { speex_echo_state_reset(state) }
    }
}
