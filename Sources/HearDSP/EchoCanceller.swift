// The echo canceller (aec.*), the first stage of the chain: speexdsp's MDF canceller (Debian's
// libspeexdsp) takes out what the speakers put into the microphone. The reference, what the
// speakers play, comes with each chunk from outside (the plugin reads it from the speaker chain of
// the same process); a chunk without one is not cancelled.
//
// It adds no delay: it runs inside the noise suppressor's framing, on each hop of M samples (rate
// / 375: 128 at 48 kHz) once the hop is complete and before the suppressor analyses it, so the
// hop it gathers is the one the suppressor was gathering anyway (NoiseSuppressor.process). Frames
// of M cost a little more than frames of 256 (3.7 % of a core at 48 kHz against 2.1 %, for the
// same ERLE: `make eval-echo`) and save 512 samples (10.7 ms) of latency. What the linear filter
// leaves, the residual echo, the suppressor takes out with the rest of its mask where
// aec.suppress is on (ResidualEcho.swift), from the echo estimate this stage hands it with each hop.
//
// The filter's length (aec.filter) is fixed in speexdsp's state: a new length needs new states,
// which are made off the audio thread (EchoFilters), handed to `install`, and the old ones freed
// off it again (the plugin's control server does both; see HearPlugin/Instance.swift).
//
// Every speexdsp state is made at init; after that no speexdsp call allocates or locks
// (EchoReferenceTests count allocations on the plugin's run path). speexdsp takes 16-bit samples:
// a full-scale float maps to 32767, and anything beyond is held there (a microphone's samples
// never go beyond; 16 bits put the rounding 96 dB below full scale).

import CSpeexDSP

/// speexdsp's cancellers for one chain (one per channel) and the filter length they were made
/// with. Made and destroyed off the audio thread; the audio thread only moves them (`install`).
public struct EchoFilters: ~Copyable {
    let left: OpaquePointer?, right: OpaquePointer?
    /// Samples per frame, channels and filter length (samples, whole frames) they were made for.
    public let frameLength: Int
    public let channels: Int
    public let length: Int

    /// The filter length (samples) that `milliseconds` of echo path makes at `sampleRate`: whole
    /// frames, at least one (aec.filter's range is the schema's clamp).
    public static func length(sampleRate: Double, milliseconds: Double) -> Int {
        let frame = EchoCanceller.frameLength(sampleRate: sampleRate)
        let seconds = milliseconds / 1000
        // The rate is at most 768 kHz: no product here comes near overflowing.
        return max(1, truncatedInt(seconds * sampleRate / Double(frame) + 0.999)) &* frame
    }

    public init(sampleRate: Double, channels: Int, length: Int) {
        let frame = EchoCanceller.frameLength(sampleRate: sampleRate)
        frameLength = frame
        self.channels = min(max(channels, 1), 2)
        self.length = max(1, truncatedInt(Double(length) / Double(frame))) &* frame
        var rate = Int32(truncatingIfNeeded: truncatedInt(sampleRate + 0.5))
        let frame32 = Int32(truncatingIfNeeded: frame), filter32 = Int32(truncatingIfNeeded: self.length)
        func canceller() -> OpaquePointer? {
            guard let state = speex_echo_state_init(frame32, filter32) else { return nil }
            speex_echo_ctl(state, SPEEX_ECHO_SET_SAMPLING_RATE, &rate)
            return state
        }
        left = canceller()
        right = self.channels == 2 ? canceller() : nil
    }

    deinit {
        if let left { speex_echo_state_destroy(left) }
        if let right { speex_echo_state_destroy(right) }
    }
}

public struct EchoCanceller: ~Copyable {
    /// Samples per speexdsp frame: the noise suppressor's hop.
    public let frameLength: Int
    /// The adaptive filter's length in samples (whole frames), as aec.filter asked when its states were made.
    public var filterLength: Int { filters.length }
    /// The filter length aec.filter asks for now; when it differs from `filterLength`, new states
    /// are due (`install`).
    public private(set) var wantedFilterLength: Int
    let channels: Int
    /// speexdsp's cancellers.
    var filters: EchoFilters
    let arena: Arena
    /// The reference gathered for the hop being filled, and the hop as it came (both channels,
    /// left first) for the crossfade and the echo estimate.
    let reference: FixedBuffer<Float>
    let dry: FixedBuffer<Float>
    /// speexdsp's 16-bit frames: microphone, reference, result.
    let micro: FixedBuffer<Int16>, speaker: FixedBuffer<Int16>, result: FixedBuffer<Int16>
    /// The left canceller's filter as an impulse response (speexdsp's fixed point), read about once
    /// a second: its largest tap is the delay from what the speakers were given to the microphone.
    let impulse: FixedBuffer<Int32>
    /// Frames between two readings of the impulse response, and frames since the last.
    let delayEvery: Int
    var framesSinceDelay = 0
    let sampleRate: Double
    /// Whether any chunk of the hop being gathered came with a reference.
    var referenceInFrame = false
    /// Whether the hop handed on last was the canceller's rather than the microphone's as it came:
    /// a change crossfades over one hop.
    var appliedLast = false
    /// Samples since the reference last held sound: once the filter's length has passed, no echo
    /// can reach the microphone, and the hops pass as they came (speexdsp's DC notch and 16 bits
    /// cost a lone near end 0.1-0.3 PESQ-WB) without speexdsp.
    var quietSamples = 0
    var enabled = true
    /// aec.suppress: whether the noise suppressor takes the residual echo out too.
    public private(set) var suppress = false
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

    /// The frame length at `sampleRate`: the noise suppressor's hop.
    public static func frameLength(sampleRate: Double) -> Int { NoiseSuppressor.hop(sampleRate: sampleRate) }

    public init(sampleRate: Double, channels: Int, values: ParameterValues) {
        let frame = Self.frameLength(sampleRate: sampleRate)
        frameLength = frame
        self.channels = min(max(channels, 1), 2)
        let length = EchoFilters.length(sampleRate: sampleRate, milliseconds: Double(values[.aecFilter]))
        filters = EchoFilters(sampleRate: sampleRate, channels: self.channels, length: length)
        wantedFilterLength = length
        self.sampleRate = sampleRate
        var arena = Arena()
        reference = arena.buffer(frame, 0)
        dry = arena.buffer(2 &* frame, 0)
        micro = arena.buffer(frame, 0)
        speaker = arena.buffer(frame, 0)
        result = arena.buffer(frame, 0)
        // For the longest filter aec.filter allows, so that any installed later fits.
        impulse = arena.buffer(EchoFilters.length(sampleRate: sampleRate, milliseconds: Double(Parameter.aecFilter.spec.maximum)), 0)
        delayEvery = max(1, truncatedInt(sampleRate / Double(frame)))
        self.arena = arena
        powerRate = Float(1 - LibM.exp(-Double(frame) / (0.5 * sampleRate)))
        set(values)
    }

    @_noLocks mutating func set(_ values: ParameterValues) {
        enabled = values[.aecEnable] != 0
        suppress = values[.aecSuppress] != 0
        wantedFilterLength = EchoFilters.length(sampleRate: sampleRate, milliseconds: Double(values[.aecFilter]))
    }

    /// Takes `replacement`'s states, made for this canceller's rate, channels and frame (else it
    /// is left as it is), and hands back the ones it had, to be freed off the audio thread. The
    /// new filter starts afresh: what the old one learned does not fit it.
    @_noLocks public mutating func install(_ replacement: inout EchoFilters) -> Bool {
        guard replacement.frameLength == frameLength, replacement.channels == channels,
              replacement.length <= impulse.count else { return false }
        swap(&filters, &replacement)
        microphonePower = 0
        residualPower = 0
        enhancementDB = .nan
        echoDelayMilliseconds = .nan
        framesSinceDelay = 0
        return true
    }

    /// Back to silence, as after activation: the filters and what they learned.
    @_noLocks mutating func reset() {
        reference.fill(0)
        dry.fill(0)
        referenceInFrame = false
        appliedLast = false
        quietSamples = 0
        microphonePower = 0
        residualPower = 0
        enhancementDB = .nan
        echoDelayMilliseconds = .nan
        framesSinceDelay = 0
        Speex.reset(filters.left)
        Speex.reset(filters.right)
    }

    /// Takes the reference (mono, what the speakers played; nil when there is none) for `count`
    /// samples of the hop being gathered, from `position` on.
    @_noLocks mutating func gather(_ speakers: UnsafePointer<Float>?, at position: Int, count: Int) {
        let at = held(min(position, frameLength)), take = held(min(count, frameLength &- at))
        if let speakers {
            referenceInFrame = true
            for k in upTo(take) { reference[at &+ k] = speakers[k] }
        } else {
            for k in upTo(take) { reference[at &+ k] = 0 }
        }
    }

    /// Cancels one whole hop (`frameLength` samples per channel) in place, with the reference
    /// gathered for it. `removed` (a hop) gets what was taken out of it (in stereo the channels'
    /// mean): the echo as the filter predicts it, for the residual-echo suppressor. Returns whether
    /// the hop was cancelled (else `removed` is left alone and means nothing).
    @_noLocks mutating func cancel(_ left: UnsafeMutablePointer<Float>, _ right: UnsafeMutablePointer<Float>?,
                                   removed: UnsafeMutablePointer<Float>) -> Bool {
        let frame = frameLength, hadReference = referenceInFrame
        referenceInFrame = false
        // Switched off or left without a reference while applied: one more hop to fade out.
        guard filters.left != nil && (enabled && hadReference || appliedLast) else {
            enhancementDB = .nan
            appliedLast = false
            return false
        }
        var referencePower: Float = 0
        for k in upTo(frame) {
            let x = reference[k]
            referencePower += x * x
            speaker[k] = Self.sixteenBits(x)
        }
        let sounding = referencePower > Self.silentReference * Float(frame)
        quietSamples = sounding ? 0 : min(quietSamples &+ frame, 1 << 30)
        let apply = enabled && hadReference && quietSamples <= filterLength &+ frame
        // The far end silent for longer than the filter: no echo can arrive, and the hop passes as
        // it came. speexdsp is not called: its filter keeps what it learned, and its memory of the
        // reference is silence whether it saw these hops or not. In a call, where each side
        // speaks in turn, that is most of the time the far end is silent.
        if !apply && !appliedLast { return false }
        var microphone: Float = 0, residual: Float = 0
        let stereo = channels == 2 && right != nil
        for channel in upTo(stereo ? 2 : 1) {
            let samples = channel == 0 ? left : (right ?? left)
            let (before, after) = cancelChannel(samples, dry: dry + channel &* frame, echo: channel == 0 ? filters.left : filters.right,
                                                apply: apply)
            microphone += before
            residual += after
        }
        // What was taken out, for the residual-echo suppressor.
        let share: Float = stereo ? 0.5 : 1
        for k in upTo(frame) { removed[k] = share * (dry[k] - left[k]) }
        if stereo, let right {
            for k in upTo(frame) { removed[k] += share * (dry[frame &+ k] - right[k]) }
        }
        appliedLast = apply
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
        return true
    }

    /// The delay of the filter's largest tap.
    @inline(__always) mutating func readDelay() {
        Speex.impulseResponse(filters.left, impulse.base)
        var largest: Int32 = 0, at = -1
        for k in upTo(min(filterLength, impulse.count)) {
            let tap = impulse[k]
            let magnitude = tap < 0 ? ~tap : tap  // |tap| - 1 below zero: no overflow at Int32.min
            if magnitude > largest { largest = magnitude; at = k }
        }
        echoDelayMilliseconds = at < 0 ? .nan : Float(Double(at) * 1000 / sampleRate)
    }

    /// One channel's hop through the canceller, in place; its samples as they came go to `dry`.
    /// With `apply` off it passes as it came (the canceller still learns); a change of `apply`
    /// crossfades over the hop. Returns the microphone's energy and what the canceller left.
    @inline(__always) func cancelChannel(_ samples: UnsafeMutablePointer<Float>, dry: UnsafeMutablePointer<Float>,
                                         echo: OpaquePointer?, apply: Bool) -> (Float, Float) {
        let frame = frameLength
        var before: Float = 0
        for k in upTo(frame) {
            let x = samples[k]
            dry[k] = x
            before += x * x
            micro[k] = Self.sixteenBits(x)
        }
        Speex.cancel(echo, micro.base, speaker.base, result.base)
        let scale: Float = 1 / 32768, step = 1 / Float(frame), fading = apply != appliedLast
        var after: Float = 0
        for k in upTo(frame) {
            let e = Float(result[k]) * scale
            after += e * e
            if fading {
                let x = dry[k], weight = apply ? Float(k &+ 1) * step : 1 - Float(k &+ 1) * step
                samples[k] = x + weight * (e - x)
            } else if apply {
                samples[k] = e
            }
        }
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
