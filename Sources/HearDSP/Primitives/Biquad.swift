// Second-order IIR sections: designs from R. Bristow-Johnson's "Audio EQ Cookbook", run in Double
// so that low corners at high rates (poles within 1e-4 of the unit circle) stay accurate.


/// Normalized biquad coefficients (a0 = 1).
public struct Biquad: Equatable, Sendable {
    public var b0 = 1.0, b1 = 0.0, b2 = 0.0, a1 = 0.0, a2 = 0.0

    public static let identity = Biquad()

    public init() {}

    init(b0: Double, b1: Double, b2: Double, a0: Double, a1: Double, a2: Double) {
        self.b0 = b0 / a0; self.b1 = b1 / a0; self.b2 = b2 / a0
        self.a1 = a1 / a0; self.a2 = a2 / a0
    }

    public var isIdentity: Bool { self == .identity }

    /// 12 dB/octave high-pass with the given Q (1/sqrt 2: Butterworth).
    public static func highPass(frequency: Double, q: Double, sampleRate: Double) -> Biquad {
        let w = 2 * Double.pi * frequency / sampleRate
        let cw = LibM.cos(w), alpha = LibM.sin(w) / (2 * q)
        return Biquad(b0: (1 + cw) / 2, b1: -(1 + cw), b2: (1 + cw) / 2, a0: 1 + alpha, a1: -2 * cw, a2: 1 - alpha)
    }

    /// Peaking band: `gainDB` at `frequency`, bandwidth set by `q`.
    public static func peaking(frequency: Double, gainDB: Double, q: Double, sampleRate: Double) -> Biquad {
        let a = Decibels.toGain(gainDB / 2)  // the cookbook's A = 10^(dB/40)
        let w = 2 * Double.pi * frequency / sampleRate
        let cw = LibM.cos(w), alpha = LibM.sin(w) / (2 * q)
        return Biquad(b0: 1 + alpha * a, b1: -2 * cw, b2: 1 - alpha * a, a0: 1 + alpha / a, a1: -2 * cw, a2: 1 - alpha / a)
    }

    /// Low shelf with slope 1 (the steepest without overshoot), `gainDB` below `frequency`.
    public static func lowShelf(frequency: Double, gainDB: Double, sampleRate: Double) -> Biquad {
        let a = Decibels.toGain(gainDB / 2)  // the cookbook's A = 10^(dB/40)
        let w = 2 * Double.pi * frequency / sampleRate
        let cw = LibM.cos(w), alpha = LibM.sin(w) * 0.7071067811865476, ra = 2 * LibM.sqrt(a) * alpha
        return Biquad(b0: a * ((a + 1) - (a - 1) * cw + ra), b1: 2 * a * ((a - 1) - (a + 1) * cw),
                      b2: a * ((a + 1) - (a - 1) * cw - ra), a0: (a + 1) + (a - 1) * cw + ra,
                      a1: -2 * ((a - 1) + (a + 1) * cw), a2: (a + 1) + (a - 1) * cw - ra)
    }

    /// High shelf with slope 1, `gainDB` above `frequency`.
    public static func highShelf(frequency: Double, gainDB: Double, sampleRate: Double) -> Biquad {
        let a = Decibels.toGain(gainDB / 2)  // the cookbook's A = 10^(dB/40)
        let w = 2 * Double.pi * frequency / sampleRate
        let cw = LibM.cos(w), alpha = LibM.sin(w) * 0.7071067811865476, ra = 2 * LibM.sqrt(a) * alpha
        return Biquad(b0: a * ((a + 1) + (a - 1) * cw + ra), b1: -2 * a * ((a - 1) + (a + 1) * cw),
                      b2: a * ((a + 1) + (a - 1) * cw - ra), a0: (a + 1) - (a - 1) * cw + ra,
                      a1: 2 * ((a - 1) - (a + 1) * cw), a2: (a + 1) - (a - 1) * cw - ra)
    }

    /// `amount` of this filter mixed with the dry signal, as one biquad: the poles stay put and
    /// the numerator moves, so a filter fades in or out without a discontinuity.
    public func blended(withDry amount: Double) -> Biquad {
        var mixed = self
        let dry = 1 - amount
        mixed.b0 = amount * b0 + dry
        mixed.b1 = amount * b1 + dry * a1
        mixed.b2 = amount * b2 + dry * a2
        return mixed
    }

    /// |H(e^jw)| at `frequency`: the response this section is designed to have.
    public func magnitude(atFrequency frequency: Double, sampleRate: Double) -> Double {
        LibM.sqrt(squaredMagnitude(atFrequency: frequency, sampleRate: sampleRate))
    }

    /// |H(e^jw)|² at `frequency`.
    public func squaredMagnitude(atFrequency frequency: Double, sampleRate: Double) -> Double {
        squaredMagnitude(cosine: LibM.cos(2 * Double.pi * frequency / sampleRate))
    }

    /// |H(e^jw)|² from cos(w) alone: |b0 + b1 z^-1 + b2 z^-2|² = b0² + b1² + b2² + 2(b0 b1 + b1 b2) cos w
    /// + 2 b0 b2 cos 2w, and cos 2w = 2 cos² w - 1; the same for the denominator.
    public func squaredMagnitude(cosine c: Double) -> Double {
        let c2 = 2 * c * c - 1
        let numerator = b0 * b0 + b1 * b1 + b2 * b2 + 2 * (b0 * b1 + b1 * b2) * c + 2 * b0 * b2 * c2
        let denominator = 1 + a1 * a1 + a2 * a2 + 2 * (a1 + a1 * a2) * c + 2 * a2 * c2
        return numerator / denominator
    }
}

/// The two delay registers of a transposed direct form II section.
public struct BiquadState: Sendable {
    public var s1 = 0.0, s2 = 0.0

    public init() {}

    @inline(__always) public mutating func filter(_ x: Double, _ c: Biquad) -> Double {
        let y = c.b0 * x + s1
        s1 = c.b1 * x - c.a1 * y + s2
        s2 = c.b2 * x - c.a2 * y
        return y
    }

    /// Zeroes registers that have decayed below audibility, long before they could turn subnormal.
    @inline(__always) public mutating func flushTiny() {
        if abs(s1) < 1e-20 { s1 = 0 }
        if abs(s2) < 1e-20 { s2 = 0 }
    }
}
