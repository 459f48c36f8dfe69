// The learned model's frequency bands: 32 bands defined in Hz, so the model sees the same bands at
// every rate. Centres are 100 Hz apart up to 500 Hz (a bin is 31-47 Hz wide, so a narrower band
// would hold less than two bins) and evenly spaced on the ERB-rate scale from 500 Hz to 20 kHz
// above (about 1.2 ERB apart). Bands are triangles between neighbouring centres: every bin gives
// its power to the two bands around it, with weights that sum to one, and takes its gain back from
// them with the same weights. Bins above the last centre (20 kHz) belong to the last band, so at
// 96 and 192 kHz everything above 20 kHz gets the top band's gain. Bands above the Nyquist
// frequency hold no bin: their energy reads as the floor, exactly what a band-limited stream shows,
// and the model was trained on band-limited streams for that reason.

public enum SpeechBandLayout {
    public static let count = 32
    static let linearTop = 500.0
    static let top = 20_000.0

    /// ERB-rate (Glasberg & Moore 1990) of a frequency, and its inverse.
    static func erbRate(_ hz: Double) -> Double { 21.4 * LibM.log10(1 + 0.00437 * hz) }
    static func frequency(erbRate e: Double) -> Double { (LibM.exp(e / 21.4 * 2.302585092994046) - 1) / 0.00437 }

    /// Centre frequency of band `b` in Hz.
    public static func centre(_ b: Int) -> Double {
        let linear = truncatedInt(linearTop / 100)  // 0, 100, ..., 400 Hz
        if b < linear { return Double(b) * 100 }
        let low = erbRate(linearTop), high = erbRate(top)
        let step = (high - low) / Double(count - 1 - linear)
        return frequency(erbRate: low + Double(b - linear) * step)
    }
}

/// The band layout at one rate and transform length: per bin, the lower of its two bands and the
/// weight of the upper one.
struct SpeechBands {
    var bins: Int { Int(storedBins) }
    private let storedBins: UInt32
    /// Per bin: the band at or below it (0...count-1) and the upper band's share (0...1); the upper
    /// band is `lower + 1`, except in the last band, where the share is 0. Bin and band numbers
    /// are stored in 32 bits, so that arithmetic on them needs no overflow check.
    let lower: UnsafeMutablePointer<UInt32>
    let upperShare: UnsafeMutablePointer<Float>
    /// Per band: 1 / the sum of its bins' weights (0 for a band without bins).
    let inverseWeight: UnsafeMutablePointer<Float>
    /// Per band (and one past the last): the first bin whose lower band it is. `lower` never falls
    /// with the bin, so band b is the lower band of bins lowerStart[b] ..< lowerStart[b + 1].
    let lowerStart: UnsafeMutablePointer<UInt32>

    init(sampleRate: Double, frameLength n: Int, arena: inout Arena) {
        let bins = held(n) / 2 + 1
        let count = SpeechBandLayout.count
        storedBins = UInt32(bins)
        lower = arena.take(bins, UInt32(0))
        upperShare = arena.floats(bins)
        inverseWeight = arena.floats(count)
        let binWidth = sampleRate / Double(n)
        var band = 0
        let weights = arena.take(count, 0.0)
        for k in 0..<bins {
            let f = Double(k) * binWidth
            while band + 1 < count && SpeechBandLayout.centre(band + 1) <= f { band += 1 }
            var share = 0.0
            if band + 1 < count {
                let from = SpeechBandLayout.centre(band), to = SpeechBandLayout.centre(band + 1)
                share = (f - from) / (to - from)
                weights[band + 1] += share
            }
            lower[k] = UInt32(truncatingIfNeeded: band)
            upperShare[k] = Float(share)
            weights[band] += 1 - share
        }
        for b in 0..<count where weights[b] > 0 { inverseWeight[b] = Float(1 / weights[b]) }
        lowerStart = arena.take(count + 1, UInt32(0))
        var k = 0
        for b in 0..<count + 1 {
            while k < bins && Int(lower[k]) < b { k += 1 }
            lowerStart[b] = UInt32(truncatingIfNeeded: k)
        }
    }

    /// Mean of `values` (per bin) over each band's triangle, into `bands` (count). Bins must be
    /// `bins` long; bands without bins read 0. Summed per lower band in registers: a bin's two
    /// shares added straight into `bands` wait on each other's stores.
    @inline(__always) func average(_ values: UnsafePointer<Float>, into bands: UnsafeMutablePointer<Float>) {
        let count = SpeechBandLayout.count
        for b in 0..<count { bands[b] = 0 }
        for b in 0..<count {
            var lowerSum: Float = 0, upperSum: Float = 0
            var k = Int(lowerStart[b])
            let end = Int(lowerStart[b + 1])
            while k < end {
                let v = values[k], up = upperShare[k] * v
                upperSum += up
                lowerSum += v - up
                k += 1
            }
            bands[b] += lowerSum
            // The last band's share is 0, so its (nonexistent) upper neighbour gets nothing.
            if b + 1 < count { bands[b + 1] += upperSum }
        }
        for b in 0..<count { bands[b] *= inverseWeight[b] }
    }

    /// `average` of five per-bin arrays at once, each into its own bands, with the same additions in
    /// the same order (bit-identical to five calls): one pass keeps ten independent sums in flight,
    /// where a single array's pass waits on its two sums' additions at every bin.
    @inline(__always) func average(_ v0: UnsafePointer<Float>, _ v1: UnsafePointer<Float>, _ v2: UnsafePointer<Float>,
                                   _ v3: UnsafePointer<Float>, _ v4: UnsafePointer<Float>,
                                   into b0: UnsafeMutablePointer<Float>, _ b1: UnsafeMutablePointer<Float>,
                                   _ b2: UnsafeMutablePointer<Float>, _ b3: UnsafeMutablePointer<Float>,
                                   _ b4: UnsafeMutablePointer<Float>) {
        let count = SpeechBandLayout.count
        for b in 0..<count {
            b0[b] = 0; b1[b] = 0; b2[b] = 0; b3[b] = 0; b4[b] = 0
        }
        for b in 0..<count {
            var lower = SIMD8<Float>(), upper = SIMD8<Float>()
            var k = Int(lowerStart[b])
            let end = Int(lowerStart[b + 1])
            while k < end {
                let share = upperShare[k]
                let v = SIMD8<Float>(v0[k], v1[k], v2[k], v3[k], v4[k], 0, 0, 0), up = share * v
                upper += up
                lower += v - up
                k += 1
            }
            // The lanes by name (a SIMD subscript checks its index).
            let low = lower.lowHalf, up = upper.lowHalf
            b0[b] += low.x; b1[b] += low.y; b2[b] += low.z; b3[b] += low.w; b4[b] += lower.highHalf.x
            if b + 1 < count {
                b0[b + 1] += up.x; b1[b + 1] += up.y; b2[b + 1] += up.z; b3[b + 1] += up.w; b4[b + 1] += upper.highHalf.x
            }
        }
        for b in 0..<count {
            let w = inverseWeight[b]
            b0[b] *= w; b1[b] *= w; b2[b] *= w; b3[b] *= w; b4[b] *= w
        }
    }

    /// Per-bin gains from per-band gains, the same triangles.
    @inline(__always) func interpolate(_ bands: UnsafePointer<Float>, into values: UnsafeMutablePointer<Float>) {
        let count = SpeechBandLayout.count
        for k in 0..<bins {
            let b = Int(lower[k]), share = upperShare[k]
            let upper = b + 1 < count ? b + 1 : b
            values[k] = bands[b] + share * (bands[upper] - bands[b])
        }
    }
}
