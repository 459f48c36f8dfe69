// Six-band crossover for the hearing stage: Linkwitz-Riley 4th-order splits (two Butterworth
// sections in cascade) at 354, 707, 1414, 2828 and 5657 Hz, so the band centres fall on the
// audiogram's octaves: 250, 500, 1000, 2000, 4000 and 8000 Hz.
//
// An LR4 low-pass plus its high-pass is a second-order all-pass with the Butterworth poles
// (exactly, also after the bilinear transform), so each split's high-pass is computed as that
// all-pass minus the low-pass: three sections per split instead of four. Bands that skip a split
// get that split's all-pass instead ("phase compensation"), so every band carries the same phase
// and the six bands sum to one all-pass: flat magnitude, no notches, no added latency.
//
// The tree is balanced to need few compensation sections (6 instead of 10 for a chain of splits):
//
//   x ─ split 1414 ─ low  ─ AP2828·AP5657 ─ split 354 ─ band 1 ─ AP707
//                 │                                 └─ split 707 ─ band 2, band 3
//                 └ high ─ AP354·AP707 ──── split 2828 ─ band 4 ─ AP5657
//                                                   └─ split 5657 ─ band 5, band 6
//
// Both channels run in the lanes of one SIMD2<Double>: stereo costs what mono does.


/// A complex number, for the designed responses (off the audio path).
public struct Complex: Sendable {
    public var re: Double
    public var im: Double

    public init(_ re: Double, _ im: Double) { self.re = re; self.im = im }

    public static func + (a: Complex, b: Complex) -> Complex { Complex(a.re + b.re, a.im + b.im) }
    public static func - (a: Complex, b: Complex) -> Complex { Complex(a.re - b.re, a.im - b.im) }
    public static func * (a: Complex, b: Complex) -> Complex {
        Complex(a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re)
    }
    public static func * (a: Double, b: Complex) -> Complex { Complex(a * b.re, a * b.im) }
    public var magnitude: Double { (re * re + im * im).squareRoot() }
}

extension Biquad {
    /// 12 dB/octave Butterworth low-pass; two in cascade make the LR4 low-pass.
    public static func lowPass(frequency: Double, q: Double, sampleRate: Double) -> Biquad {
        let w = 2 * Double.pi * frequency / sampleRate
        let cw = LibM.cos(w), alpha = LibM.sin(w) / (2 * q)
        return Biquad(b0: (1 - cw) / 2, b1: 1 - cw, b2: (1 - cw) / 2, a0: 1 + alpha, a1: -2 * cw, a2: 1 - alpha)
    }

    /// Second-order all-pass with the same poles as `lowPass` at the same frequency and Q.
    public static func allPass(frequency: Double, q: Double, sampleRate: Double) -> Biquad {
        let w = 2 * Double.pi * frequency / sampleRate
        let cw = LibM.cos(w), alpha = LibM.sin(w) / (2 * q)
        return Biquad(b0: 1 - alpha, b1: -2 * cw, b2: 1 + alpha, a0: 1 + alpha, a1: -2 * cw, a2: 1 - alpha)
    }

    /// H(e^jw) at `frequency`.
    public func response(atFrequency frequency: Double, sampleRate: Double) -> Complex {
        let w = 2 * Double.pi * frequency / sampleRate
        let c1 = LibM.cos(w), s1 = LibM.sin(w), c2 = LibM.cos(2 * w), s2 = LibM.sin(2 * w)
        let n = Complex(b0 + b1 * c1 + b2 * c2, -(b1 * s1 + b2 * s2))
        let d = Complex(1 + a1 * c1 + a2 * c2, -(a1 * s1 + a2 * s2))
        let dd = d.re * d.re + d.im * d.im
        return Complex((n.re * d.re + n.im * d.im) / dd, (n.im * d.re - n.re * d.im) / dd)
    }
}

/// A biquad's coefficients in both lanes, so the sample loop multiplies vectors without splatting.
struct StereoBiquad: Sendable {
    var b0: SIMD2<Double>, b1: SIMD2<Double>, b2: SIMD2<Double>, a1: SIMD2<Double>, a2: SIMD2<Double>

    init(_ c: Biquad) {
        b0 = SIMD2(repeating: c.b0); b1 = SIMD2(repeating: c.b1); b2 = SIMD2(repeating: c.b2)
        a1 = SIMD2(repeating: c.a1); a2 = SIMD2(repeating: c.a2)
    }
}

/// Transposed direct form II registers for both channels at once.
struct StereoBiquadState: Sendable {
    var s1 = SIMD2<Double>(0, 0), s2 = SIMD2<Double>(0, 0)

    @inline(__always) mutating func filter(_ x: SIMD2<Double>, _ c: StereoBiquad) -> SIMD2<Double> {
        let y = c.b0 * x + s1
        s1 = c.b1 * x - c.a1 * y + s2
        s2 = c.b2 * x - c.a2 * y
        return y
    }

    @inline(__always) mutating func flushTiny() {
        // Zeroes lanes that have decayed below audibility, long before they could turn subnormal.
        let tiny = SIMD2<Double>(repeating: 1e-20)
        s1.replace(with: 0, where: (s1 .< tiny) .& (s1 .> -tiny))
        s2.replace(with: 0, where: (s2 .< tiny) .& (s2 .> -tiny))
    }
}

public struct Crossover: Sendable {
    public static var bandCount: Int { 6 }
    static var splitCount: Int { 5 }
    /// Sections: per split a low-pass pair and an all-pass (3 each), then 6 compensation all-passes.
    static var sectionCount: Int { 21 }

    /// The nominal crossover frequencies, low to high.
    public static func nominalCrossover(_ split: Int) -> Double {
        switch split {
        case 0: return 353.5533905932738
        case 1: return 707.1067811865476
        case 2: return 1414.213562373095
        case 3: return 2828.42712474619
        default: return 5656.85424949238
        }
    }

    /// Band centres (geometric means of their crossovers): the audiogram octaves.
    public static func centre(_ band: Int) -> Double {
        switch band {
        case 0: return 250
        case 1: return 500
        case 2: return 1000
        case 3: return 2000
        case 4: return 4000
        default: return 8000
        }
    }

    public let sampleRate: Double
    /// The crossovers in use: the nominal ones, held below the Nyquist frequency at low rates.
    public let crossovers: InlineArray<5, Double>
    let sections: InlineArray<21, Biquad>
    let stereoSections: InlineArray<21, StereoBiquad>
    var state: InlineArray<21, StereoBiquadState> = InlineArray(repeating: StereoBiquadState())

    // Section indices: split k uses 3k (low-pass a), 3k+1 (low-pass b), 3k+2 (all-pass).
    static var compLow4: Int { 15 }   // AP at 2828 on the low branch
    static var compLow5: Int { 16 }   // AP at 5657 on the low branch
    static var compBand1: Int { 17 }  // AP at 707 on band 1
    static var compHigh1: Int { 18 }  // AP at 354 on the high branch
    static var compHigh2: Int { 19 }  // AP at 707 on the high branch
    static var compBand4: Int { 20 }  // AP at 5657 on band 4

    public init(sampleRate: Double) {
        self.sampleRate = sampleRate
        var crossovers = InlineArray<5, Double>(repeating: 0)
        // At low rates the top crossovers move down, each at least half an octave below the next,
        // so every split stays a valid filter and the bands stay in order (8 kHz: 2546, 3600 Hz).
        var ceiling = 0.45 * sampleRate
        for k in (0..<5).reversed() {
            crossovers[k] = min(Self.nominalCrossover(k), ceiling)
            ceiling = crossovers[k] * 0.7071067811865476
        }
        self.crossovers = crossovers
        let q = 0.7071067811865476
        var sections = InlineArray<21, Biquad>(repeating: .identity)
        for k in 0..<5 {
            let lowPass = Biquad.lowPass(frequency: crossovers[k], q: q, sampleRate: sampleRate)
            sections[3 * k] = lowPass
            sections[3 * k + 1] = lowPass
            sections[3 * k + 2] = .allPass(frequency: crossovers[k], q: q, sampleRate: sampleRate)
        }
        sections[Self.compLow4] = sections[3 * 3 + 2]
        sections[Self.compLow5] = sections[3 * 4 + 2]
        sections[Self.compBand1] = sections[3 * 1 + 2]
        sections[Self.compHigh1] = sections[3 * 0 + 2]
        sections[Self.compHigh2] = sections[3 * 1 + 2]
        sections[Self.compBand4] = sections[3 * 4 + 2]
        self.sections = sections
        var stereo = InlineArray<21, StereoBiquad>(repeating: StereoBiquad(.identity))
        for k in 0..<21 { stereo[k] = StereoBiquad(sections[k]) }
        stereoSections = stereo
    }

    /// Splits `count` frames into six bands: band b of channel c goes to `bands + (2b + c) * stride`.
    /// Coefficients and registers live in locals for the whole loop, so they stay in registers.
    @inline(__always) mutating func split(_ left: UnsafeMutablePointer<Float>, _ right: UnsafeMutablePointer<Float>?,
                                          count: Int, into bands: UnsafeMutablePointer<Float>, stride: Int) {
        let c = stereoSections
        var s = state
        let b0 = bands, b1 = bands + 2 * stride, b2 = bands + 4 * stride
        let b3 = bands + 6 * stride, b4 = bands + 8 * stride, b5 = bands + 10 * stride
        for i in 0..<count {
            let x = SIMD2(Double(left[i]), Double(right?[i] ?? 0))
            // Root split at 1414 Hz.
            let low3 = s[7].filter(s[6].filter(x, c[6]), c[7])
            let high3 = s[8].filter(x, c[8]) - low3
            // Low branch: compensate the high branch's splits, then split at 354 and 707 Hz.
            let low = s[Self.compLow5].filter(s[Self.compLow4].filter(low3, c[Self.compLow4]), c[Self.compLow5])
            let band1 = s[1].filter(s[0].filter(low, c[0]), c[1])
            let rest1 = s[2].filter(low, c[2]) - band1
            let y0 = s[Self.compBand1].filter(band1, c[Self.compBand1])
            let y1 = s[4].filter(s[3].filter(rest1, c[3]), c[4])
            let y2 = s[5].filter(rest1, c[5]) - y1
            // High branch: compensate the low branch's splits, then split at 2828 and 5657 Hz.
            let high = s[Self.compHigh2].filter(s[Self.compHigh1].filter(high3, c[Self.compHigh1]), c[Self.compHigh2])
            let band4 = s[10].filter(s[9].filter(high, c[9]), c[10])
            let rest4 = s[11].filter(high, c[11]) - band4
            let y3 = s[Self.compBand4].filter(band4, c[Self.compBand4])
            let y4 = s[13].filter(s[12].filter(rest4, c[12]), c[13])
            let y5 = s[14].filter(rest4, c[14]) - y4
            b0[i] = Float(y0[0]); b0[stride + i] = Float(y0[1])
            b1[i] = Float(y1[0]); b1[stride + i] = Float(y1[1])
            b2[i] = Float(y2[0]); b2[stride + i] = Float(y2[1])
            b3[i] = Float(y3[0]); b3[stride + i] = Float(y3[1])
            b4[i] = Float(y4[0]); b4[stride + i] = Float(y4[1])
            b5[i] = Float(y5[0]); b5[stride + i] = Float(y5[1])
        }
        state = s
    }

    /// Once per control tick: registers that decayed to nothing are zeroed before they turn subnormal.
    @inline(__always) mutating func flushTiny() {
        for k in 0..<Self.sectionCount { state[k].flushTiny() }
    }

    mutating func reset() {
        state = InlineArray(repeating: StereoBiquadState())
    }

    var holdsSubnormalState: Bool {
        for k in 0..<Self.sectionCount {
            let s = state[k]
            if s.s1[0].isSubnormal || s.s1[1].isSubnormal || s.s2[0].isSubnormal || s.s2[1].isSubnormal { return true }
        }
        return false
    }

    /// The designed response of each band at `frequency` (the same tree, in complex numbers).
    public func bandResponses(atFrequency frequency: Double) -> [Complex] {
        let h = (0..<Self.sectionCount).map { sections[$0].response(atFrequency: frequency, sampleRate: sampleRate) }
        let low3 = h[6] * h[7], high3 = h[8] - low3
        let low = low3 * h[Self.compLow4] * h[Self.compLow5]
        let band1 = low * h[0] * h[1], rest1 = low * h[2] - band1
        let band2 = rest1 * h[3] * h[4], band3 = rest1 * h[5] - band2
        let high = high3 * h[Self.compHigh1] * h[Self.compHigh2]
        let band4 = high * h[9] * h[10], rest4 = high * h[11] - band4
        let band5 = rest4 * h[12] * h[13], band6 = rest4 * h[14] - band5
        return [band1 * h[Self.compBand1], band2, band3, band4 * h[Self.compBand4], band5, band6]
    }

    /// The designed magnitude response (dB) of the six bands summed with these gains (dB).
    public func responseDB(atFrequency frequency: Double, bandGainsDB: [Double]) -> Double {
        var sum = Complex(0, 0)
        for (band, response) in bandResponses(atFrequency: frequency).enumerated() {
            sum = sum + LibM.pow(10, bandGainsDB[band] / 20) * response
        }
        return 20 * LibM.log10(max(sum.magnitude, 1e-30))
    }

    /// The most the summed response can rise above the largest band gain, in dB, whatever the
    /// gains: 20 log10 of the largest sum of band magnitudes over frequency (0 if bands never
    /// overlap out of phase). The gain cap subtracts it, so no setting can exceed the cap.
    public func overshootBoundDB() -> Double {
        var worst = 1.0
        var frequency = 20.0
        while frequency < 0.5 * sampleRate {
            let total = bandResponses(atFrequency: frequency).reduce(0.0) { $0 + $1.magnitude }
            worst = max(worst, total)
            frequency *= 1.01
        }
        return 20 * LibM.log10(worst)
    }
}
