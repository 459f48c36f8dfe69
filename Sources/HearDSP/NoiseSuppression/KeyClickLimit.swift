// Key clicks under a voice, in learned mode: while somebody types, a bin's gain may not let its
// power rise faster than 3 dB a frame (2.67 ms) above 1.5 kHz. A click and a voice's onset rise
// alike within a frame; what tells typing apart is that it goes on while nobody speaks. So the
// limit is armed only by typing: a short window (Hann over the 2M samples a frame synthesises:
// 5.3 ms, 187.5 Hz bins at 48 kHz, fine enough in time to see a click come and go) finds frames
// where a quarter of the 1.5-9 kHz bins stand 9 dB above their envelope and fall 3 dB in the next
// frame, and counts those heard while the gate is shut; three within about 2 s arm it. Speech alone
// does not arm it, and unarmed it changes nothing.
//
// Where armed, the mask is capped in each bin above 1.5 kHz to what keeps its power within 3 dB of
// its envelope (which rises at most 3 dB a frame and falls at once), never below ns.reduction: a
// click loses what rises above the voice around it, a voice that rises slowly keeps its gain, and
// the model's gain no longer opens for a click (keyboard PESQ-WB rose in `make eval`, clean
// speech kept its SI-SDR; unarmed, the same kind of limit cost clean speech 0.7-3 dB of it). On the
// dry deciding set, a limit that never arms costs family a's keyboard 0.055 PESQ-WB (paired over
// its 36 clips); family b's membrane keys never arm it (not one of its scores changes).

package struct KeyClickLimit: ~Copyable {
    var bins: Int { Int(storedBins) }
    var hop: Int { Int(storedHop) }
    /// The short transform of the arming detector: 2M samples, zero-padded to a power of two.
    let fft: RealFFT
    var shortBins: Int { Int(storedShortBins) }
    let window: UnsafeMutablePointer<Float>
    let scratch: UnsafeMutablePointer<Float>
    let shortReal: UnsafeMutablePointer<Float>
    let shortImaginary: UnsafeMutablePointer<Float>
    /// Per short bin: the power of frames t and t - 1, and the envelope up to t - 2.
    let current: UnsafeMutablePointer<Float>
    let previous: UnsafeMutablePointer<Float>
    let shortEnvelope: UnsafeMutablePointer<Float>
    /// Per bin: the envelope of the frame's power that the limit holds rises to.
    let envelope: UnsafeMutablePointer<Float>
    /// Clicks heard while nobody spoke, decaying over `armSeconds`.
    package private(set) var arming: Float = 0
    var previousOpenness: Float = 0
    let armDecay: Float
    /// Short bins: the first looked at and the last counted; the first bin limited.
    var shortLow: Int { Int(storedShortLow) }
    var shortHigh: Int { Int(storedShortHigh) }
    var limitLow: Int { Int(storedLimitLow) }
    // Sizes in 32 bits: loops up to them and arithmetic on them need no overflow check.
    private let storedBins: UInt32, storedHop: UInt32, storedShortBins: UInt32, storedShortLow: UInt32,
                storedShortHigh: UInt32, storedLimitLow: UInt32

    /// How far a short bin's power must stand above its envelope (9 dB), and fall after (to half
    /// of it, 3 dB), to count as a click.
    static let clickRiseDB = 9.0
    static let clickFall: Float = 0.5
    /// How fast the short envelope falls (1.5 dB a frame): it holds over a pitch period, so a
    /// voice's glottal pulses, which rise and fall within a hop in so short a window, seldom count.
    static let shortEnvelopeFallDB = -1.5
    static let broadbandShare: Float = 0.25
    static let gateShut: Float = 0.5
    static let armCount: Float = 3
    static let armSeconds = 2.0
    /// The limit: a bin's power may rise 3 dB a frame above its envelope.
    static let riseDB = 3.0
    /// The three above as power ratios.
    let clickRise: Float, shortEnvelopeFall: Float, rise: Float
    static let lowHz = 1500.0, shareHighHz = 9000.0
    static let envelopeStart: Float = 1e30

    /// Whether typing has armed the limit.
    package var armed: Bool { arming >= Self.armCount }

    init(sampleRate: Double, hop: Int, frameLength: Int, arena: inout Arena) {
        let m = held(hop), n = held(frameLength)
        let bins = n / 2 + 1
        fft = RealFFT(size: 2 * m, arena: &arena)
        let size = held(fft.size)
        let shortBins = size / 2 + 1
        let shortHz = sampleRate / Double(size)
        let shortLow = max(1, min(truncatedInt(Self.lowHz / shortHz), shortBins - 1))
        let shortHigh = max(shortLow, min(truncatedInt(Self.shareHighHz / shortHz), shortBins - 1))
        let limitLow = max(1, min(truncatedInt(Self.lowHz / (sampleRate / Double(n))), bins))
        storedBins = UInt32(truncatingIfNeeded: bins)
        storedHop = UInt32(truncatingIfNeeded: m)
        storedShortBins = UInt32(truncatingIfNeeded: shortBins)
        storedShortLow = UInt32(truncatingIfNeeded: shortLow)
        storedShortHigh = UInt32(truncatingIfNeeded: shortHigh)
        storedLimitLow = UInt32(truncatingIfNeeded: limitLow)
        armDecay = Float(LibM.exp(-Double(m) / sampleRate / Self.armSeconds))
        clickRise = Float(Decibels.toPower(Self.clickRiseDB))
        shortEnvelopeFall = Float(Decibels.toPower(Self.shortEnvelopeFallDB))
        rise = Float(Decibels.toPower(Self.riseDB))
        window = arena.floats(size)
        for j in 0..<2 * m { window[j] = Float(0.5 - 0.5 * LibM.cos(2 * Double.pi * (Double(j) + 0.5) / Double(2 * m))) }
        scratch = arena.floats(size)
        shortReal = arena.floats(shortBins)
        shortImaginary = arena.floats(shortBins)
        current = arena.floats(shortBins)
        previous = arena.floats(shortBins)
        shortEnvelope = arena.floats(shortBins, Self.envelopeStart)
        envelope = arena.floats(bins, Self.envelopeStart)
    }

    mutating func reset() {
        arming = 0
        previousOpenness = 0
        shortEnvelope.fill(Self.envelopeStart, count: shortBins)
        previous.fill(0, count: shortBins)
        envelope.fill(Self.envelopeStart, count: bins)
    }

    /// Frame t's last 2M samples (`right`: the other channel, averaged in): whether frame t - 1 held
    /// a broadband click, counted while the gate (`openness`, at t) was shut.
    @inline(__always) mutating func listen(_ left: UnsafePointer<Float>, _ right: UnsafePointer<Float>?, openness: Float) {
        let twoHops = 2 * hop, size = fft.size
        if let right {
            for j in 0..<twoHops { scratch[j] = 0.5 * (left[j] + right[j]) * window[j] }
        } else {
            for j in 0..<twoHops { scratch[j] = left[j] * window[j] }
        }
        var j = twoHops
        while j < size {
            scratch[j] = 0
            j += 1
        }
        fft.forward(scratch, real: shortReal, imaginary: shortImaginary)
        for j in 0..<shortBins { current[j] = shortReal[j] * shortReal[j] + shortImaginary[j] * shortImaginary[j] + 1e-20 }
        // Counted as a Float (exact at these sizes).
        var clicks: Float = 0
        j = shortLow
        while j <= shortHigh {
            let p = previous[j]
            if p > clickRise * shortEnvelope[j] && current[j] < Self.clickFall * p { clicks += 1 }
            j += 1
        }
        arming *= armDecay
        let broadband = clicks > 0 && clicks >= Self.broadbandShare * Float(shortHigh - shortLow + 1)
        if broadband && previousOpenness < Self.gateShut { arming += 1 }
        for j in 0..<shortBins {
            let e = shortEnvelope[j]
            shortEnvelope[j] = max(min(previous[j], clickRise * e), e * shortEnvelopeFall)
            previous[j] = current[j]
        }
        previousOpenness = openness
    }

    /// Caps `mask` where armed (by `weight`, 0...1: the learned mode's share and the mask's
    /// strength, so switching glides) and moves the envelope on with this frame's `power`.
    @inline(__always) mutating func limit(_ mask: UnsafeMutablePointer<Float>, power: UnsafePointer<Float>, floorGain: Float,
                                          weight: Float) {
        if armed && weight > 0 {
            var k = limitLow
            while k < bins {
                let p = power[k], e = envelope[k]
                if p > rise * e {
                    let capped = min(mask[k], max(LibM.sqrt(rise * e / p), floorGain))
                    mask[k] += weight * (capped - mask[k])
                }
                k += 1
            }
        }
        var k = limitLow
        while k < bins {
            envelope[k] = min(power[k], rise * envelope[k]) + 1e-30
            k += 1
        }
    }
}
