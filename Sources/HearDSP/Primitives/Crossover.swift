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
// The sample loop runs each split as one pole recursion shared by the first low-pass section and
// the all-pass (direct form II, in Double), and folds each all-pass to three multiplies. Stereo
// runs both channels in the lanes of one SIMD2<Double>; mono runs its low and its high branch
// there, which have the same shape.


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

/// One split's coefficients in both lanes: the Butterworth poles (a1, a2) that its low-pass pair
/// and its all-pass share, the low-pass numerator's scale (b0, with b = b0 (1, 2, 1)), and a2 - 1.
struct SplitCoefficients: Sendable {
    var a1: SIMD2<Double>, a2: SIMD2<Double>, b0: SIMD2<Double>, a2MinusOne: SIMD2<Double>

    init(_ lowPass: Biquad) { self.init(lowPass, lowPass) }

    /// Different splits in the two lanes (mono runs the two branches side by side).
    init(_ lane0: Biquad, _ lane1: Biquad) {
        a1 = SIMD2(lane0.a1, lane1.a1); a2 = SIMD2(lane0.a2, lane1.a2)
        b0 = SIMD2(lane0.b0, lane1.b0); a2MinusOne = SIMD2(lane0.a2 - 1, lane1.a2 - 1)
    }
}

/// Direct form II registers of one pole pair, both channels: w[n-1], w[n-2].
struct PoleState: Sendable {
    var w1 = SIMD2<Double>(0, 0), w2 = SIMD2<Double>(0, 0)

    /// The recursion w = x - a1 w[n-1] - a2 w[n-2]; returns w and moves the registers on.
    @inline(__always) mutating func poles(_ x: SIMD2<Double>, _ c: SplitCoefficients) -> (w: SIMD2<Double>, w1: SIMD2<Double>, w2: SIMD2<Double>) {
        let w = x - c.a1 * w1 - c.a2 * w2
        let out = (w, w1, w2)
        w2 = w1
        w1 = w
        return out
    }

    /// Butterworth low-pass section: b0 (w + 2 w[n-1] + w[n-2]).
    @inline(__always) mutating func lowPass(_ x: SIMD2<Double>, _ c: SplitCoefficients) -> SIMD2<Double> {
        let (w, w1, w2) = poles(x, c)
        return c.b0 * ((w + w2) + (w1 + w1))
    }

    /// Second-order all-pass (a2 + a1 z^-1 + z^-2) / (1 + a1 z^-1 + a2 z^-2), folded to
    /// x + (a2 - 1)(w - w[n-2]): three multiplies.
    @inline(__always) mutating func allPass(_ x: SIMD2<Double>, _ c: SplitCoefficients) -> SIMD2<Double> {
        let (w, _, w2) = poles(x, c)
        return x + c.a2MinusOne * (w - w2)
    }

    /// One split: the LR4 low-pass (this pole pair, then `second`) and the all-pass from the same
    /// recursion; the high-pass is the all-pass minus the low-pass.
    @inline(__always) mutating func split(_ x: SIMD2<Double>, _ c: SplitCoefficients,
                                          second: inout PoleState) -> (low: SIMD2<Double>, high: SIMD2<Double>) {
        let (w, w1, w2) = poles(x, c)
        let firstLow = c.b0 * ((w + w2) + (w1 + w1))
        let allPass = x + c.a2MinusOne * (w - w2)
        let low = second.lowPass(firstLow, c)
        return (low, allPass - low)
    }

    @inline(__always) mutating func flushTiny() {
        // Zeroes lanes that have decayed below audibility, long before they could turn subnormal.
        let tiny = SIMD2<Double>(repeating: 1e-20)
        w1.replace(with: 0, where: (w1 .< tiny) .& (w1 .> -tiny))
        w2.replace(with: 0, where: (w2 .< tiny) .& (w2 .> -tiny))
    }

    var holdsSubnormal: Bool { w1[0].isSubnormal || w1[1].isSubnormal || w2[0].isSubnormal || w2[1].isSubnormal }
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
    /// The designed sections, for the responses: per split k, 3k and 3k + 1 the low-pass pair, 3k + 2
    /// the all-pass; then the six compensation all-passes.
    let sections: InlineArray<21, Biquad>
    /// What the sample loop runs: per split, its coefficients; registers per split (shared poles,
    /// second low-pass) and per compensation all-pass.
    let splits: InlineArray<5, SplitCoefficients>
    /// Mono: after the root split the low and the high branch have the same shape (two
    /// compensation all-passes, a split, an all-pass on its low band, a split), so they run in the
    /// two lanes at once: low branch in lane 0, high in lane 1. The lanes' splits, in that order.
    let branchSplits: InlineArray<5, SplitCoefficients>
    var splitState: InlineArray<5, PoleState> = InlineArray(repeating: PoleState())
    var secondState: InlineArray<5, PoleState> = InlineArray(repeating: PoleState())
    var compensationState: InlineArray<6, PoleState> = InlineArray(repeating: PoleState())

    // Section indices of the compensation all-passes (and, in the sample loop, their registers - 15).
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
        var splits = InlineArray<5, SplitCoefficients>(repeating: SplitCoefficients(.identity))
        for k in 0..<5 { splits[k] = SplitCoefficients(sections[3 * k]) }
        self.splits = splits
        let lowPass = { (k: Int) in sections[3 * k] }
        var branchSplits = InlineArray<5, SplitCoefficients>(repeating: SplitCoefficients(.identity))
        branchSplits[0] = SplitCoefficients(lowPass(3), lowPass(0))  // first compensation: 2828 | 354
        branchSplits[1] = SplitCoefficients(lowPass(4), lowPass(1))  // second compensation: 5657 | 707
        branchSplits[2] = SplitCoefficients(lowPass(0), lowPass(3))  // first split: 354 | 2828
        branchSplits[3] = SplitCoefficients(lowPass(1), lowPass(4))  // its low band's all-pass: 707 | 5657
        branchSplits[4] = SplitCoefficients(lowPass(1), lowPass(4))  // second split: 707 | 5657
        self.branchSplits = branchSplits
    }

    /// Splits `count` frames into six bands: band b of channel c goes to `bands + (2b + c) * stride`;
    /// `scratch` holds 2 * count values.
    /// Coefficients and registers live in locals for the whole loop, so they stay in registers.
    @inline(__always) mutating func split(_ left: UnsafeMutablePointer<Float>, _ right: UnsafeMutablePointer<Float>?,
                                          count: Int, into bands: UnsafeMutablePointer<Float>, stride: Int,
                                          scratch branches: UnsafeMutablePointer<SIMD2<Double>>) {
        let stride = held(stride)
        if right == nil {
            splitMono(left, count: count, into: bands, stride: stride, scratch: branches)
            return
        }
        let c = splits
        var p = splitState, q = secondState, a = compensationState
        let left0 = bands, left1 = bands + 2 * stride, left2 = bands + 4 * stride
        let left3 = bands + 6 * stride, left4 = bands + 8 * stride, left5 = bands + 10 * stride
        let right0 = left0 + stride, right1 = left1 + stride, right2 = left2 + stride
        let right3 = left3 + stride, right4 = left4 + stride, right5 = left5 + stride
        let lowBranch = branches, highBranch = branches + count
        // Two passes, so each sample's chain of dependent sections is half as deep and the CPU
        // overlaps more samples: the root split and each branch's compensation, then the branches.
        // (`while` loops over samples: see FixedBuffer.swift.)
        var i = 0
        while i < count {
            let x = SIMD2(Double(left[i]), Double(right?[i] ?? 0))
            // Root split at 1414 Hz.
            let (low3, high3) = p[2].split(x, c[2], second: &q[2])
            // Each branch gets the other's splits as all-passes: low 2828 and 5657, high 354 and 707.
            lowBranch[i] = a[1].allPass(a[0].allPass(low3, c[3]), c[4])
            highBranch[i] = a[4].allPass(a[3].allPass(high3, c[0]), c[1])
            i += 1
        }
        i = 0
        while i < count {
            // Low branch: split at 354 Hz (band 1 gets the 707 Hz all-pass), the rest at 707 Hz.
            let (band1, rest1) = p[0].split(lowBranch[i], c[0], second: &q[0])
            let y0 = a[2].allPass(band1, c[1])
            let (y1, y2) = p[1].split(rest1, c[1], second: &q[1])
            // High branch: split at 2828 Hz (band 4 gets the 5657 Hz all-pass), the rest at 5657 Hz.
            let (band4, rest4) = p[3].split(highBranch[i], c[3], second: &q[3])
            let y3 = a[5].allPass(band4, c[4])
            let (y4, y5) = p[4].split(rest4, c[4], second: &q[4])
            left0[i] = Float(y0[0]); right0[i] = Float(y0[1])
            left1[i] = Float(y1[0]); right1[i] = Float(y1[1])
            left2[i] = Float(y2[0]); right2[i] = Float(y2[1])
            left3[i] = Float(y3[0]); right3[i] = Float(y3[1])
            left4[i] = Float(y4[0]); right4[i] = Float(y4[1])
            left5[i] = Float(y5[0]); right5[i] = Float(y5[1])
            i += 1
        }
        splitState = p
        secondState = q
        compensationState = a
    }

    /// Mono: the root split in lane 0, then both branches side by side (see `branchSplits`). Only
    /// mono instances come here, so the registers it uses are never shared with the stereo loop.
    @inline(__always) private mutating func splitMono(_ samples: UnsafeMutablePointer<Float>, count: Int,
                                              into bands: UnsafeMutablePointer<Float>, stride: Int,
                                              scratch branches: UnsafeMutablePointer<SIMD2<Double>>) {
        let root = splits[2], c = branchSplits
        var p = splitState, q = secondState, a = compensationState
        let b0 = bands, b1 = bands + 2 * stride, b2 = bands + 4 * stride
        let b3 = bands + 6 * stride, b4 = bands + 8 * stride, b5 = bands + 10 * stride
        var i = 0
        while i < count {
            let (low3, high3) = p[2].split(SIMD2(Double(samples[i]), 0), root, second: &q[2])
            branches[i] = a[1].allPass(a[0].allPass(SIMD2(low3[0], high3[0]), c[0]), c[1])
            i += 1
        }
        i = 0
        while i < count {
            let (low, rest) = p[0].split(branches[i], c[2], second: &q[0])
            let y03 = a[2].allPass(low, c[3])
            let (y14, y25) = p[1].split(rest, c[4], second: &q[1])
            b0[i] = Float(y03[0]); b3[i] = Float(y03[1])
            b1[i] = Float(y14[0]); b4[i] = Float(y14[1])
            b2[i] = Float(y25[0]); b5[i] = Float(y25[1])
            i += 1
        }
        splitState = p
        secondState = q
        compensationState = a
    }

    /// Once per control tick: registers that decayed to nothing are zeroed before they turn subnormal.
    @inline(__always) mutating func flushTiny() {
        for k in 0..<5 { splitState[k].flushTiny(); secondState[k].flushTiny() }
        for k in 0..<6 { compensationState[k].flushTiny() }
    }

    mutating func reset() {
        splitState = InlineArray(repeating: PoleState())
        secondState = InlineArray(repeating: PoleState())
        compensationState = InlineArray(repeating: PoleState())
    }

    var holdsSubnormalState: Bool {
        for k in 0..<5 where splitState[k].holdsSubnormal || secondState[k].holdsSubnormal { return true }
        for k in 0..<6 where compensationState[k].holdsSubnormal { return true }
        return false
    }

    /// The designed response of each band at `frequency` (the same tree, in complex numbers).
    public func bandResponses(atFrequency frequency: Double) -> InlineArray<6, Complex> {
        var h = InlineArray<21, Complex>(repeating: Complex(0, 0))
        for k in 0..<Self.sectionCount {
            h[k] = sections[k].response(atFrequency: frequency, sampleRate: sampleRate)
        }
        let low3 = h[6] * h[7], high3 = h[8] - low3
        let low = low3 * h[Self.compLow4] * h[Self.compLow5]
        let band1 = low * h[0] * h[1], rest1 = low * h[2] - band1
        let band2 = rest1 * h[3] * h[4], band3 = rest1 * h[5] - band2
        let high = high3 * h[Self.compHigh1] * h[Self.compHigh2]
        let band4 = high * h[9] * h[10], rest4 = high * h[11] - band4
        let band5 = rest4 * h[12] * h[13], band6 = rest4 * h[14] - band5
        return [band1 * h[Self.compBand1], band2, band3, band4 * h[Self.compBand4], band5, band6]
    }

    /// The most the summed response can rise above the largest band gain, in dB, whatever the
    /// gains: 20 log10 of the largest sum of band magnitudes over frequency (0 if bands never
    /// overlap out of phase). The gain cap subtracts it, so no setting can exceed the cap.
    public func overshootBoundDB() -> Double {
        var worst = 1.0
        var frequency = 20.0
        while frequency < 0.5 * sampleRate {
            let bands = bandResponses(atFrequency: frequency)
            var total = 0.0
            for band in 0..<Self.bandCount { total += bands[band].magnitude }
            worst = max(worst, total)
            frequency *= 1.01
        }
        return Decibels.fromGain(worst)
    }
}
