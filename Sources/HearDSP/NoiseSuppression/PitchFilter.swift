// The pitch filter, in learned mode (as RNNoise's): before the mask is applied, the spectrum of the
// frame one pitch period earlier is added to this frame's, band by band, as far as the band is
// periodic and the model's gain says noise is left in it; then each band is brought back to its
// own power. A voice's harmonics repeat after one period and add up in phase; the noise between
// them does not, so the sum holds the harmonics relatively higher, and the band's gain (applied
// after, unchanged) takes the noise between them, which 32 bands alone cannot resolve.
//
// Per band b, with c its pitch correlation (LearnedGains' feature: Σ Re(X P*) / √(Σ|X|² Σ|P|²)
// over the band's triangle) and g the model's band gain (its estimate of √(S / (S + N))):
// the share of P is 1 where c >= g and c²(1 - g²) / (g²(1 - c²)) under it, square-rooted, 0
// where c <= 0; times `strength`, and scaled by √(Ex / Ep) so that P enters at X's level. The shares
// and the bands' corrections are spread to the bins over the bands' triangles. In stereo each
// channel is filtered with its own earlier frame, at the first channel's lag and with the same
// shares of the rule.

struct PitchFilter: ~Copyable {
    /// How much of the rule's share is added (RNNoise adds all of it). Against the build without the
    /// filter on the deciding set (PESQ-WB, paired over 288 clips a family; clean speech's SI-SDR):
    /// 1: family a -0.007 (-0.040 at 20 dB SNR), clean 22.1 dB; 0.5: a +0.0095, b +0.0088, clean
    /// 25.5 dB; 0.35: a +0.0099, b +0.0161, clean 26.9 dB; 0.25 as built (faded by ns.reduction
    /// too): a +0.0093, b +0.0147, clean 28.0 dB (29.8 without). Where the model's gain is high the
    /// full share smears clean speech over two periods; a quarter keeps most of the gain at low SNR.
    static let strength: Float = 0.25

    var bins: Int { Int(storedBins) }
    private let storedBins: UInt32
    /// The frame a period earlier, aligned to this one (scratch, per bin).
    let delayedReal: UnsafeMutablePointer<Float>
    let delayedImaginary: UnsafeMutablePointer<Float>
    /// Per bin: the power (scratch), then the share of P or the band's correction spread to it.
    let binPower: UnsafeMutablePointer<Float>
    let binScale: UnsafeMutablePointer<Float>
    /// Per band: the frame's power before and after the filter, the share of P, and the rule's
    /// share (`prepare`) before the level match.
    let bandPower: UnsafeMutablePointer<Float>
    let bandFiltered: UnsafeMutablePointer<Float>
    let bandShare: UnsafeMutablePointer<Float>
    let bandRule: UnsafeMutablePointer<Float>

    init(bins: Int, arena: inout Arena) {
        let bins = held(bins)
        storedBins = UInt32(truncatingIfNeeded: bins)
        delayedReal = arena.floats(bins)
        delayedImaginary = arena.floats(bins)
        binPower = arena.floats(bins)
        binScale = arena.floats(bins)
        bandPower = arena.floats(SpeechBandLayout.count)
        bandFiltered = arena.floats(SpeechBandLayout.count)
        bandShare = arena.floats(SpeechBandLayout.count)
        bandRule = arena.floats(SpeechBandLayout.count)
    }

    /// The share of P in one band (before `strength` and the level match): RNNoise's rule.
    @inline(__always) static func share(correlation c: Float, gain g: Float) -> Float {
        if c <= 0 { return 0 }
        if c >= g { return 1 }
        let ratio = c * c * (1 - g * g) / (0.001 + g * g * (1 - c * c))
        return LibM.sqrt(min(max(ratio, 0), 1))
    }

    /// This frame's shares, once for every channel: from each band's pitch `correlation` and the
    /// model's band `gains`; `weight` (0...1) fades the filter with the learned mode's share, the
    /// mask's strength and ns.reduction.
    @inline(__always) mutating func prepare(correlation: UnsafePointer<Float>, gains: UnsafePointer<Float>, weight: Float) {
        let scale = Self.strength * min(max(weight, 0), 1)
        for b in 0..<SpeechBandLayout.count { bandRule[b] = scale * Self.share(correlation: correlation[b], gain: gains[b]) }
    }

    /// Filters one channel's spectrum (`real`, `imaginary`, every bin) in place with its frame a
    /// pitch period earlier (`delayed…`, moved by e^{-i turn k} to line up with it), at the shares
    /// `prepare` set, each matched to the two frames' levels in the band.
    @inline(__always) mutating func apply(real: UnsafeMutablePointer<Float>, imaginary: UnsafeMutablePointer<Float>,
                                          delayedReal earlierReal: UnsafePointer<Float>,
                                          delayedImaginary earlierImaginary: UnsafePointer<Float>, turn: Double,
                                          bands: borrowing SpeechBands) {
        let bins = self.bins, count = SpeechBandLayout.count
        // `while` loops: a `for` loop's iterator keeps a check in bodies like these (FixedBuffer.swift).
        var k = 0
        while k < bins {
            binPower[k] = real[k] * real[k] + imaginary[k] * imaginary[k]
            binScale[k] = earlierReal[k] * earlierReal[k] + earlierImaginary[k] * earlierImaginary[k]
            k += 1
        }
        bands.average(binPower, into: bandPower)
        bands.average(binScale, into: bandFiltered)
        for b in 0..<count {
            let ex = bandPower[b], ep = bandFiltered[b]
            let level = ex > 1e-30 && ep > 1e-30 ? LibM.sqrt(ex / ep) : 0
            bandShare[b] = bandRule[b] * level
        }
        PhaseRamp.rotate(earlierReal, earlierImaginary, into: delayedReal, delayedImaginary, count: bins, turn: -turn)
        bands.interpolate(bandShare, into: binScale)
        k = 0
        while k < bins {
            let r = real[k] + binScale[k] * delayedReal[k], i = imaginary[k] + binScale[k] * delayedImaginary[k]
            real[k] = r
            imaginary[k] = i
            binPower[k] = r * r + i * i
            k += 1
        }
        // Each band back to its own power, never above it: the filter shapes a band, the mask sets
        // its level.
        bands.average(binPower, into: bandFiltered)
        for b in 0..<count {
            let after = bandFiltered[b]
            bandShare[b] = after > 1e-30 ? min(LibM.sqrt(bandPower[b] / after), 1) : 1
        }
        bands.interpolate(bandShare, into: binScale)
        k = 0
        while k < bins {
            real[k] *= binScale[k]
            imaginary[k] *= binScale[k]
            k += 1
        }
    }
}
