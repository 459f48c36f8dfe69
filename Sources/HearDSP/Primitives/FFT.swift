// Real FFT of a power-of-two size, for the noise suppressor's analysis and synthesis.
//
// A real sequence of N samples is transformed as a complex one of h = N/2 points, z[n] = x[2n] +
// i x[2n+1], split four ways by its index: SIMD lane s of vector j holds z[4j + s]. One pass of
// scalar-looking code then runs four independent transforms of c = h/4 points, one per lane, with
// the same twiddles in every lane and no shuffles: Stockham radix-4 passes (decimation in
// frequency, ping-ponging between two buffers, so the result comes out in natural order with no
// bit reversal), the last one radix-8 when log2(c) is odd. A vector of points is stored as its four
// real parts then its four imaginary parts, which is also where the samples x[8j … 8j+7] lie.
//
// Then the lanes are joined. With Y_s[t] bin t of lane s, the complex spectrum is
// Z[t + qc] = Σ_s (-i)^(qs) W_h^(ts) Y_s[t], and the real one X[k] = E + W_N^k O with
// E = (Z[k] + conj Z[h-k]) / 2, O = (Z[k] - conj Z[h-k]) / 2i. Bin k = t + qc pairs with
// h - k = (c - t) + (3 - q)c, and conj Z[h-k] = Σ_s (-i)^(qs) W_h^(ts) conj Y_s[c-t]; so, taking the
// bins t of a block of four with their mirrors c - t, 2E_q and 2i W_N^t O_q are the 4-point DFTs
// over s of P_s = W_h^(ts) (Y_s[t] + conj Y_s[c-t]) and M_s = W_N^(t(2s+1)) (Y_s[t] - conj Y_s[c-t]):
// seven twiddle products and two 4-point DFTs give 32 output bins. The blocks are first transposed
// (4x4, so that a vector holds one lane s of four bins). The inverse runs the same steps backwards
// with the same tables: X to P and M, to Y (conjugated, so that the lanes' transforms run forward),
// transposed back, through the lanes' transforms, whose last pass computes only the output asked
// for (the suppressor keeps the last quarter of a frame: a quarter of the last pass).
//
// Shuffles (transposes, reversals, interleaving) get loops of their own: next to arithmetic, the
// compiler moves them into it and multiplies them. All tables and the work arrays are allocated
// in init: forward and inverse allocate nothing. Below 64 samples (the suppressor never goes
// there) a direct DFT does it.

public struct RealFFT: ~Copyable {
    /// Real samples per transform (a power of two, at least 4).
    public let size: Int
    /// Complex points of the inner transform: size / 2.
    let half: Int
    /// Points of each lane's transform: half / 4 (0 below 64 samples: the direct DFT).
    let columns: Int
    /// Per radix-4 pass of length L = columns, columns/4, … (> 8), for p < L/4: W_L^p, W_L^2p, W_L^3p,
    /// each as a vector of four cos and one of four -sin (the same in every lane).
    let passTwiddles: UnsafeMutablePointer<Float>
    /// Per block b < columns/8 of bins t = 4b+1 … 4b+4 (one per lane): 0.5 W_h^(ts) for s = 1, 2, 3,
    /// then 0.5 W_N^(t(2s+1)) for s = 0 … 3, each as a vector of cos and one of -sin.
    let joinTwiddles: UnsafeMutablePointer<Float>
    /// cos and -sin of 2πk/N for k < N, below 64 samples only (capacity 1 otherwise).
    let directCos: UnsafeMutablePointer<Float>
    let directSin: UnsafeMutablePointer<Float>
    /// The ping-pong buffers, size floats (half points) each.
    let a: UnsafeMutablePointer<Float>
    let b: UnsafeMutablePointer<Float>
    /// Where the tables and buffers live when they are this transform's own (empty when they are
    /// pieces of its owner's arena).
    let arena: Arena

    /// `size` is rounded up to a power of two (at least 4).
    public init(size requested: Int) {
        var own = Arena()
        self.init(size: requested, arena: &own, keeping: true)
    }

    /// A transform whose tables and buffers are pieces of `arena` (its owner's).
    init(size requested: Int, arena: inout Arena) {
        self.init(size: requested, arena: &arena, keeping: false)
    }

    private init(size requested: Int, arena: inout Arena, keeping: Bool) {
        var n = 4
        while n < requested && n < 1 << 30 { n &*= 2 }
        size = n
        let h = n / 2
        half = h
        let c = n >= 64 ? n / 8 : 0
        columns = c
        func cosine(_ k: Int, _ period: Int) -> Float { Float(LibM.cos(2 * Double.pi * Double(k) / Double(period))) }
        func minusSine(_ k: Int, _ period: Int) -> Float { Float(-LibM.sin(2 * Double.pi * Double(k) / Double(period))) }

        var passFloats = 0
        var length = c
        while length > 8 { passFloats &+= 24 &* (length / 4); length /= 4 }
        passTwiddles = arena.floats(max(passFloats, 1))
        var offset = 0
        length = c
        while length > 8 {
            for p in upTo(length / 4) {
                for s in 1...3 {
                    for lane in upTo(4) {
                        passTwiddles[offset &+ 8 &* (s &- 1) &+ lane] = cosine(s &* p, length)
                        passTwiddles[offset &+ 8 &* (s &- 1) &+ 4 &+ lane] = minusSine(s &* p, length)
                    }
                }
                offset &+= 24
            }
            length /= 4
        }
        joinTwiddles = arena.floats(max(c / 8 &* 56, 1))
        for block in upTo(c / 8) {
            let w = joinTwiddles + 56 &* block
            for lane in upTo(4) {
                let t = 4 &* block &+ 1 &+ lane
                for s in 1...3 {
                    w[8 &* (s &- 1) &+ lane] = 0.5 * cosine(t &* s, h)
                    w[8 &* (s &- 1) &+ 4 &+ lane] = 0.5 * minusSine(t &* s, h)
                }
                for s in 0...3 {
                    w[24 &+ 8 &* s &+ lane] = 0.5 * cosine(t &* (2 &* s &+ 1), n)
                    w[24 &+ 8 &* s &+ 4 &+ lane] = 0.5 * minusSine(t &* (2 &* s &+ 1), n)
                }
            }
        }
        let direct = c == 0 ? n : 1
        directCos = arena.floats(direct)
        directSin = arena.floats(direct)
        for k in upTo(direct) {
            directCos[k] = cosine(k, n)
            directSin[k] = minusSine(k, n)
        }
        a = arena.floats(n)
        b = arena.floats(n)
        self.arena = keeping ? arena.handOver() : Arena()
    }

    /// Spectrum bins 0...size/2 of `input` (size samples), unnormalized: X[k] = Σ x[n] e^(-2πikn/N).
    @_noLocks public func forward(_ input: UnsafePointer<Float>, real: UnsafeMutablePointer<Float>,
                                  imaginary: UnsafeMutablePointer<Float>) {
        let c = columns
        if c == 0 {
            directForward(input, real: real, imaginary: imaginary)
            return
        }
        let h = half
        // The lanes' transforms, read straight from the samples.
        let (x, y, length, s) = passes(from: input, samples: true)
        if length == 8 {
            if s == 1 { radix8(stride: s, x, true, y) } else { radix8(stride: s, x, false, y) }
        } else {
            if s == 1 { radix4(stride: s, x, true, y) } else { radix4(stride: s, x, false, y) }
        }
        // Bin t of lane s is at y[8t + s] (real) and y[8t + 4 + s] (imaginary). t = 0 first, where
        // the four bins Z[qc] pair among themselves (Z[h] = Z[0]).
        do {
            let ar = y[0] + y[2], ai = y[4] + y[6], br = y[0] - y[2], bi = y[4] - y[6]
            let cr = y[1] + y[3], ci = y[5] + y[7], dr = y[1] - y[3], di = y[5] - y[7]
            let z0r = ar + cr, z0i = ai + ci
            real[0] = z0r + z0i; imaginary[0] = 0
            real[h] = z0r - z0i; imaginary[h] = 0
            // Z[2c] pairs with itself, and W_N^(2c) = -i.
            real[2 &* c] = ar - cr; imaginary[2 &* c] = -(ai - ci)
            // Z[c] = b - i·d, Z[3c] = b + i·d; W_N^c = (1 - i)/√2.
            let zr = br + di, zi = bi - dr, mr = br - di, mi = bi + dr
            let er = 0.5 * (zr + mr), ei = 0.5 * (zi - mi)
            let or = 0.5 * (zi + mi), oi = 0.5 * (mr - zr)
            let w: Float = 0.70710678118654752
            let tr = w * (or + oi), ti = w * (oi - or)
            real[c] = er + tr; imaginary[c] = ei + ti
            real[3 &* c] = er - tr; imaginary[3 &* c] = ti - ei
        }
        // The other bins by blocks, transposed into the buffer the last pass did not write.
        let transposed = y == a ? b : a
        transposeBlocks(rows: y, columns: transposed, toColumns: true)
        // E, into the rows' buffer, then G and the output: in one loop, the compiler keeps so much
        // in registers that it spills more than this stores.
        var block = 0
        while block < c / 8 {
            let v = transposed + 64 &* block
            let w = joinTwiddles + 56 &* block
            let (a0r, a0i) = point(v, 0, false), (b0r, b0i) = point(v, 4, false)
            let (a1r, a1i) = point(v, 1, false), (b1r, b1i) = point(v, 5, false)
            let (p1r, p1i) = cmul(a1r + b1r, a1i - b1i, load4(w), load4(w + 4))
            let (a2r, a2i) = point(v, 2, false), (b2r, b2i) = point(v, 6, false)
            let (p2r, p2i) = cmul(a2r + b2r, a2i - b2i, load4(w + 8), load4(w + 12))
            let (a3r, a3i) = point(v, 3, false), (b3r, b3i) = point(v, 7, false)
            let (p3r, p3i) = cmul(a3r + b3r, a3i - b3i, load4(w + 16), load4(w + 20))
            let e = dft4(0.5 * (a0r + b0r), 0.5 * (a0i - b0i), p1r, p1i, p2r, p2i, p3r, p3i)
            let saved = y + 32 &* block
            store(saved, 0, e.0, e.1); store(saved, 1, e.2, e.3); store(saved, 2, e.4, e.5); store(saved, 3, e.6, e.7)
            block &+= 1
        }
        let r = SIMD4<Float>(repeating: 0.70710678118654752)
        block = 0
        while block < c / 8 {
            let t0 = 4 &* block &+ 1
            let v = transposed + 64 &* block
            let w = joinTwiddles + (56 &* block &+ 24)
            let (a0r, a0i) = point(v, 0, false), (b0r, b0i) = point(v, 4, false)
            let (m0r, m0i) = cmul(a0r - b0r, a0i + b0i, load4(w), load4(w + 4))
            let (a1r, a1i) = point(v, 1, false), (b1r, b1i) = point(v, 5, false)
            let (m1r, m1i) = cmul(a1r - b1r, a1i + b1i, load4(w + 8), load4(w + 12))
            let (a2r, a2i) = point(v, 2, false), (b2r, b2i) = point(v, 6, false)
            let (m2r, m2i) = cmul(a2r - b2r, a2i + b2i, load4(w + 16), load4(w + 20))
            let (a3r, a3i) = point(v, 3, false), (b3r, b3i) = point(v, 7, false)
            let (m3r, m3i) = cmul(a3r - b3r, a3i + b3i, load4(w + 24), load4(w + 28))
            let g = dft4(m0r, m0i, m1r, m1i, m2r, m2i, m3r, m3i)
            // X[k] = E + T and conj X[h-k] = E - T, with T = W_N^k O_q = W_8^q · (-i) · G_q: -i,
            // (-1 - i)/√2, -1, (-1 + i)/√2 times G_q. The mirror bins come out in the order of the
            // lanes, the reverse of theirs: they wait in the rows' buffer, where E was.
            let saved = y + 32 &* block
            let (e0r, e0i) = point(saved, 0, false)
            join(e0r, e0i, g.1, -g.0, bin: t0, real, imaginary, saved)
            let (e1r, e1i) = point(saved, 1, false)
            join(e1r, e1i, r * (g.3 - g.2), -r * (g.2 + g.3), bin: t0 &+ c, real, imaginary, saved + 8)
            let (e2r, e2i) = point(saved, 2, false)
            join(e2r, e2i, -g.4, -g.5, bin: t0 &+ 2 &* c, real, imaginary, saved + 16)
            let (e3r, e3i) = point(saved, 3, false)
            join(e3r, e3i, -r * (g.6 + g.7), r * (g.6 - g.7), bin: t0 &+ 3 &* c, real, imaginary, saved + 24)
            block &+= 1
        }
        block = 0
        while block < c / 8 {
            let mirror = y + 32 &* block
            var bin = h &- 4 &* block &- 4
            for q in upTo(4) {
                storeReversed4(real + bin, load4(mirror + 8 &* q))
                storeReversed4(imaginary + bin, load4(mirror + (8 &* q &+ 4)))
                bin &-= c
            }
            block &+= 1
        }
    }

    /// The inverse of `forward`, scaled so that inverse(forward(x)) == x. Reads bins 0...size/2.
    /// Writes output[first..<size] only (`first` even): the suppressor keeps only a frame's tail.
    @_noLocks public func inverse(real: UnsafePointer<Float>, imaginary: UnsafePointer<Float>,
                                  output: UnsafeMutablePointer<Float>, first: Int = 0) {
        let c = columns
        if c == 0 {
            directInverse(real: real, imaginary: imaginary, output: output, first: first)
            return
        }
        let h = half
        // conj Y_s[t] into buffer a, in the layout `forward` finds Y in, up to the factor 1/h that
        // the last loop applies.
        let y = a
        // t = 0: Z[0] = E + iO with E, O real (the imaginary parts of X[0] and X[h] are not used);
        // Z[2c] = conj X[2c]; Z[c] and Z[3c] pair with each other. Then Y_s[0] = Σ_q i^(qs) Z[qc] / 4,
        // here times 4, as the blocks below give it.
        do {
            let z0r = 0.5 * (real[0] + real[h]), z0i = 0.5 * (real[0] - real[h])
            let z2r = real[2 &* c], z2i = -imaginary[2 &* c]
            // E = (X[c] + conj X[3c]) / 2, O = (X[c] - conj X[3c]) / 2 · W_N^-c, W_N^-c = (1 + i)/√2.
            let er = 0.5 * (real[c] + real[3 &* c]), ei = 0.5 * (imaginary[c] - imaginary[3 &* c])
            let dr = 0.5 * (real[c] - real[3 &* c]), di = 0.5 * (imaginary[c] + imaginary[3 &* c])
            let w: Float = 0.70710678118654752
            let or = w * (dr - di), oi = w * (dr + di)
            // Z[c] = E + iO, Z[3c] = conj E + i conj O.
            let z1r = er - oi, z1i = ei + or, z3r = er + oi, z3i = or - ei
            let ar = z0r + z2r, ai = z0i + z2i, br = z0r - z2r, bi = z0i - z2i
            let cr = z1r + z3r, ci = z1i + z3i, dr2 = z1r - z3r, di2 = z1i - z3i
            // Σ_q i^(qs) Z[qc] for s = 0 … 3, conjugated.
            y[0] = ar + cr; y[4] = -(ai + ci)
            y[1] = br - di2; y[5] = -(bi + dr2)
            y[2] = ar - cr; y[6] = -(ai - ci)
            y[3] = br + di2; y[7] = -(bi - dr2)
        }
        // The other bins by blocks, as columns into buffer b, then transposed.
        let transposed = b
        // Q into the first half of a block's columns and T' into the second, then R and the columns,
        // in two loops for the reason `forward` gives.
        var block = 0
        while block < c / 8 {
            let t0 = 4 &* block &+ 1
            let v = transposed + 64 &* block
            let w = joinTwiddles + 56 &* block
            // E'_q = X[k] + conj X[h-k], T'_q = X[k] - conj X[h-k] for k = t + qc; P' the inverse
            // 4-point DFT of E'; Q_s = conj(W_h^(ts)) P'_s (halved, as the table is).
            let (e0r, e0i, t0r, t0i) = unjoin(bin: t0, real, imaginary)
            store(v, 4, t0r, t0i)
            let (e1r, e1i, t1r, t1i) = unjoin(bin: t0 &+ c, real, imaginary)
            store(v, 5, t1r, t1i)
            let (e2r, e2i, t2r, t2i) = unjoin(bin: t0 &+ 2 &* c, real, imaginary)
            store(v, 6, t2r, t2i)
            let (e3r, e3i, t3r, t3i) = unjoin(bin: t0 &+ 3 &* c, real, imaginary)
            store(v, 7, t3r, t3i)
            let p = dft4(e0r, e0i, e3r, e3i, e2r, e2i, e1r, e1i)
            store(v, 0, 0.5 * p.0, 0.5 * p.1)
            let (q1r, q1i) = cmulConjugate(p.2, p.3, load4(w), load4(w + 4))
            store(v, 1, q1r, q1i)
            let (q2r, q2i) = cmulConjugate(p.4, p.5, load4(w + 8), load4(w + 12))
            store(v, 2, q2r, q2i)
            let (q3r, q3i) = cmulConjugate(p.6, p.7, load4(w + 16), load4(w + 20))
            store(v, 3, q3r, q3i)
            block &+= 1
        }
        let r = SIMD4<Float>(repeating: 0.70710678118654752)
        block = 0
        while block < c / 8 {
            let v = transposed + 64 &* block
            let w = joinTwiddles + (56 &* block &+ 24)
            // M' the inverse 4-point DFT of T' turned by i W_8^-q: i, (-1 + i)/√2, -1, -(1 + i)/√2;
            // R_s = conj(W_N^(t(2s+1))) M'_s (halved); conj Y_s[t] = conj(Q + R), conj Y_s[c-t] = Q - R.
            let (t0r, t0i) = point(v, 4, false), (t1r, t1i) = point(v, 5, false)
            let (t2r, t2i) = point(v, 6, false), (t3r, t3i) = point(v, 7, false)
            let m = dft4(-t0i, t0r, r * (t3i - t3r), -r * (t3r + t3i), -t2r, -t2i, -r * (t1r + t1i), r * (t1r - t1i))
            let (r0r, r0i) = cmulConjugate(m.0, m.1, load4(w), load4(w + 4))
            let (q0r, q0i) = point(v, 0, false)
            store(v, 0, q0r + r0r, -(q0i + r0i))
            store(v, 4, q0r - r0r, q0i - r0i)
            let (r1r, r1i) = cmulConjugate(m.2, m.3, load4(w + 8), load4(w + 12))
            let (q1r, q1i) = point(v, 1, false)
            store(v, 1, q1r + r1r, -(q1i + r1i))
            store(v, 5, q1r - r1r, q1i - r1i)
            let (r2r, r2i) = cmulConjugate(m.4, m.5, load4(w + 16), load4(w + 20))
            let (q2r, q2i) = point(v, 2, false)
            store(v, 2, q2r + r2r, -(q2i + r2i))
            store(v, 6, q2r - r2r, q2i - r2i)
            let (r3r, r3i) = cmulConjugate(m.6, m.7, load4(w + 24), load4(w + 28))
            let (q3r, q3i) = point(v, 3, false)
            store(v, 3, q3r + r3r, -(q3i + r3i))
            store(v, 7, q3r - r3r, q3i - r3i)
            block &+= 1
        }
        transposeBlocks(rows: y, columns: transposed, toColumns: false)

        let (x, z, length, s) = passes(from: y, samples: false)
        // The last pass's output j (vector q + s·jj, output jj of its butterfly q) holds z[4j … 4j+3],
        // samples 8j … 8j+7: the last quarter is the last output of a radix-4 butterfly, the last two
        // of a radix-8 one.
        let from = max(first, 0)
        let tail = 4 &* from >= 3 &* size
        if length == 8 {
            if tail { radix8Tail(stride: s, x, z) } else { radix8(stride: s, x, false, z) }
        } else {
            if tail { radix4Tail(stride: s, x, z) } else { radix4(stride: s, x, false, z) }
        }
        // Interleaved into samples, conjugated back and scaled.
        let scale = SIMD4<Float>(1, -1, 1, -1) / Float(h)
        var j = from / 8
        while j < c {
            let (re, im) = point(z, j, false)
            let lo = scale * SIMD4(re[0], im[0], re[1], im[1]), hi = scale * SIMD4(re[2], im[2], re[3], im[3])
            let at = 8 &* j
            if at >= from {
                store4(output + at, lo)
                store4(output + (at &+ 4), hi)
            } else {
                for i in upTo(4) where at &+ i >= from { output[at &+ i] = lo[i] }
                for i in upTo(4) where at &+ 4 &+ i >= from { output[at &+ 4 &+ i] = hi[i] }
            }
            j &+= 1
        }
    }

    /// Bins k = bin … bin+3 from E_q (e) and T_q = W_N^k O_q (t): X[k] = E + T; conj X[h-k] = E - T,
    /// lane l for bin h - bin - l, goes to `mirror` as it is.
    @inline(__always) func join(_ er: SIMD4<Float>, _ ei: SIMD4<Float>, _ tr: SIMD4<Float>, _ ti: SIMD4<Float>,
                                bin: Int, _ real: UnsafeMutablePointer<Float>, _ imaginary: UnsafeMutablePointer<Float>,
                                _ mirror: UnsafeMutablePointer<Float>) {
        store4(real + bin, er + tr)
        store4(imaginary + bin, ei + ti)
        store(mirror, 0, er - tr, ti - ei)
    }

    /// X[k] + conj X[h-k] and X[k] - conj X[h-k] for k = bin … bin+3: `join` backwards, times 2.
    @inline(__always) func unjoin(bin: Int, _ real: UnsafePointer<Float>, _ imaginary: UnsafePointer<Float>)
        -> (SIMD4<Float>, SIMD4<Float>, SIMD4<Float>, SIMD4<Float>) {
        let xr = load4(real + bin), xi = load4(imaginary + bin)
        let mirrorBin = half &- bin &- 3
        let mr = reversed4(real + mirrorBin), mi = reversed4(imaginary + mirrorBin)
        return (xr + mr, xi - mi, xr - mr, xi + mi)
    }

    /// Rows t = 4b+1 … 4b+4 of the lanes' bins (row t = lane s of bin t, the vector at 8t) to and from
    /// columns (vector s at 64b + 8s: lane s of bins 4b+1+l), and rows c - 4b - 1 … c - 4b - 4 likewise
    /// (vector s at 64b + 32 + 8s: lane s of bins c - 4b - 1 - l), for b < c/8.
    @inline(__always) func transposeBlocks(rows y: UnsafeMutablePointer<Float>, columns v: UnsafeMutablePointer<Float>,
                                           toColumns: Bool) {
        let c = columns
        var block = 0
        while block < c / 8 {
            let row = 32 &* block &+ 8, mirror = 8 &* c &- row, col = 64 &* block
            if toColumns {
                transpose4(from: y + row, 8, to: v + col, 8)
                transpose4(from: y + (row &+ 4), 8, to: v + (col &+ 4), 8)
                transpose4(from: y + mirror, -8, to: v + (col &+ 32), 8)
                transpose4(from: y + (mirror &+ 4), -8, to: v + (col &+ 36), 8)
            } else {
                transpose4(from: v + col, 8, to: y + row, 8)
                transpose4(from: v + (col &+ 4), 8, to: y + (row &+ 4), 8)
                transpose4(from: v + (col &+ 32), 8, to: y + mirror, -8)
                transpose4(from: v + (col &+ 36), 8, to: y + (mirror &+ 4), -8)
            }
            block &+= 1
        }
    }

    /// The passes of the lanes' transforms before the last, from x (the samples when `samples`).
    /// Returns where the last pass reads and writes, its length (4 or 8) and its stride; stride 1
    /// means there was no pass before it and it reads x.
    @inline(__always) func passes(from input: UnsafePointer<Float>, samples: Bool)
        -> (UnsafePointer<Float>, UnsafeMutablePointer<Float>, Int, Int) {
        var n = columns, s = 1
        var twiddles = UnsafePointer(passTwiddles)
        var x = input
        var y = samples ? a : b
        if n > 8 {
            // Spelled out for both layouts so that each pass is compiled for one.
            if samples {
                radix4(length: n, stride: s, x, true, y, twiddles)
            } else {
                radix4(length: n, stride: s, x, false, y, twiddles)
            }
            while true {
                twiddles += 24 &* (n / 4)
                x = UnsafePointer(y)
                y = y == a ? b : a
                n /= 4
                s &*= 4
                if n <= 8 { break }
                radix4(length: n, stride: s, x, false, y, twiddles)
            }
        }
        return (x, y, n, s)
    }

    /// One radix-4 pass: y[q + s(4p + j)] = W_L^(jp) · Σ_i (-i)^(ij) x[q + s(p + iL/4)], p < L/4, q < s.
    @inline(__always) func radix4(length: Int, stride s: Int, _ x: UnsafePointer<Float>, _ samples: Bool,
                                  _ y: UnsafeMutablePointer<Float>, _ twiddles: UnsafePointer<Float>) {
        let m = length / 4
        var p = 0
        while p < m {
            let w = twiddles + 24 &* p
            let w1r = load4(w), w1i = load4(w + 4), w2r = load4(w + 8), w2i = load4(w + 12)
            let w3r = load4(w + 16), w3i = load4(w + 20)
            var q = 0
            while q < s {
                let i0 = q &+ s &* p
                let (ar, ai) = point(x, i0, samples)
                let (br, bi) = point(x, i0 &+ s &* m, samples)
                let (cr, ci) = point(x, i0 &+ 2 &* s &* m, samples)
                let (dr, di) = point(x, i0 &+ 3 &* s &* m, samples)
                let t = dft4(ar, ai, br, bi, cr, ci, dr, di)
                let o0 = q &+ 4 &* s &* p
                store(y, o0, t.0, t.1)
                store(y, o0 &+ s, w1r * t.2 - w1i * t.3, w1r * t.3 + w1i * t.2)
                store(y, o0 &+ 2 &* s, w2r * t.4 - w2i * t.5, w2r * t.5 + w2i * t.4)
                store(y, o0 &+ 3 &* s, w3r * t.6 - w3i * t.7, w3r * t.7 + w3i * t.6)
                q &+= 1
            }
            p &+= 1
        }
    }

    /// The last pass when 4 points remain: y[q + sj] = Σ_i (-i)^(ij) x[q + si], no twiddles.
    @inline(__always) func radix4(stride s: Int, _ x: UnsafePointer<Float>, _ samples: Bool, _ y: UnsafeMutablePointer<Float>) {
        var q = 0
        while q < s {
            let (ar, ai) = point(x, q, samples)
            let (br, bi) = point(x, q &+ s, samples)
            let (cr, ci) = point(x, q &+ 2 &* s, samples)
            let (dr, di) = point(x, q &+ 3 &* s, samples)
            let t = dft4(ar, ai, br, bi, cr, ci, dr, di)
            store(y, q, t.0, t.1)
            store(y, q &+ s, t.2, t.3)
            store(y, q &+ 2 &* s, t.4, t.5)
            store(y, q &+ 3 &* s, t.6, t.7)
            q &+= 1
        }
    }

    /// Only the last output of each butterfly, (a - c) + i(b - d): the last quarter.
    @inline(__always) func radix4Tail(stride s: Int, _ x: UnsafePointer<Float>, _ y: UnsafeMutablePointer<Float>) {
        var q = 0
        while q < s {
            let (ar, ai) = point(x, q, false)
            let (br, bi) = point(x, q &+ s, false)
            let (cr, ci) = point(x, q &+ 2 &* s, false)
            let (dr, di) = point(x, q &+ 3 &* s, false)
            store(y, q &+ 3 &* s, ar - cr - (bi - di), ai - ci + (br - dr))
            q &+= 1
        }
    }

    /// The last pass when 8 points remain: y[q + sj] = Σ_i W_8^(ij) x[q + si], as one radix-2 step
    /// (its twiddles W_8^i are sums and a scale) and two 4-point DFTs.
    @inline(__always) func radix8(stride s: Int, _ x: UnsafePointer<Float>, _ samples: Bool, _ y: UnsafeMutablePointer<Float>) {
        let r = SIMD4<Float>(repeating: 0.70710678118654752)
        var q = 0
        while q < s {
            let (x0r, x0i) = point(x, q, samples)
            let (x4r, x4i) = point(x, q &+ 4 &* s, samples)
            let (x1r, x1i) = point(x, q &+ s, samples)
            let (x5r, x5i) = point(x, q &+ 5 &* s, samples)
            let (x2r, x2i) = point(x, q &+ 2 &* s, samples)
            let (x6r, x6i) = point(x, q &+ 6 &* s, samples)
            let (x3r, x3i) = point(x, q &+ 3 &* s, samples)
            let (x7r, x7i) = point(x, q &+ 7 &* s, samples)
            let d1r = x1r - x5r, d1i = x1i - x5i
            let d3r = x3r - x7r, d3i = x3i - x7i
            // W_8 = (1 - i)/√2, W_8^2 = -i, W_8^3 = -(1 + i)/√2.
            let even = dft4(x0r + x4r, x0i + x4i, x1r + x5r, x1i + x5i, x2r + x6r, x2i + x6i, x3r + x7r, x3i + x7i)
            let odd = dft4(x0r - x4r, x0i - x4i, r * (d1r + d1i), r * (d1i - d1r),
                           x2i - x6i, x6r - x2r, r * (d3i - d3r), -r * (d3r + d3i))
            store(y, q, even.0, even.1)
            store(y, q &+ s, odd.0, odd.1)
            store(y, q &+ 2 &* s, even.2, even.3)
            store(y, q &+ 3 &* s, odd.2, odd.3)
            store(y, q &+ 4 &* s, even.4, even.5)
            store(y, q &+ 5 &* s, odd.4, odd.5)
            store(y, q &+ 6 &* s, even.6, even.7)
            store(y, q &+ 7 &* s, odd.6, odd.7)
            q &+= 1
        }
    }

    /// Only outputs 6 and 7 of each butterfly, the last output of each 4-point DFT: the last quarter.
    @inline(__always) func radix8Tail(stride s: Int, _ x: UnsafePointer<Float>, _ y: UnsafeMutablePointer<Float>) {
        let r = SIMD4<Float>(repeating: 0.70710678118654752)
        var q = 0
        while q < s {
            let (x0r, x0i) = point(x, q, false)
            let (x4r, x4i) = point(x, q &+ 4 &* s, false)
            let (x2r, x2i) = point(x, q &+ 2 &* s, false)
            let (x6r, x6i) = point(x, q &+ 6 &* s, false)
            let (x1r, x1i) = point(x, q &+ s, false)
            let (x5r, x5i) = point(x, q &+ 5 &* s, false)
            let (x3r, x3i) = point(x, q &+ 3 &* s, false)
            let (x7r, x7i) = point(x, q &+ 7 &* s, false)
            // Even: (u0 - u2) + i(u1 - u3), u_i = x_i + x_(i+4).
            let ar = x0r + x4r - (x2r + x6r), ai = x0i + x4i - (x2i + x6i)
            let br = x1r + x5r - (x3r + x7r), bi = x1i + x5i - (x3i + x7i)
            store(y, q &+ 6 &* s, ar - bi, ai + br)
            // Odd: (v0 - v2) + i(v1 - v3), v_i = W_8^i (x_i - x_(i+4)).
            let d0r = x0r - x4r, d0i = x0i - x4i, d2r = x2r - x6r, d2i = x2i - x6i
            let d1r = x1r - x5r, d1i = x1i - x5i, d3r = x3r - x7r, d3i = x3i - x7i
            let cr = d0r - d2i, ci = d0i + d2r
            let er = r * (d1r + d1i + d3r - d3i), ei = r * (d1i - d1r + d3r + d3i)
            store(y, q &+ 7 &* s, cr - ei, ci + er)
            q &+= 1
        }
    }

    /// X[k] = Σ x[n] W_N^(kn) term by term, for sizes too small for the lanes.
    func directForward(_ input: UnsafePointer<Float>, real: UnsafeMutablePointer<Float>,
                       imaginary: UnsafeMutablePointer<Float>) {
        let n = size
        var k = 0
        while k <= half {
            var sr: Float = 0, si: Float = 0
            var i = 0
            while i < n {
                let j = (k &* i) & (n &- 1)
                sr += input[i] * directCos[j]
                si += input[i] * directSin[j]
                i &+= 1
            }
            real[k] = sr
            imaginary[k] = si
            k &+= 1
        }
    }

    /// x[n] = (X[0] + (-1)^n X[h] + 2 Σ_(0<k<h) Re(X[k] W_N^(-kn))) / N term by term.
    func directInverse(real: UnsafePointer<Float>, imaginary: UnsafePointer<Float>,
                       output: UnsafeMutablePointer<Float>, first: Int) {
        let n = size, h = half
        var i = max(first, 0)
        while i < n {
            var sum = real[0] + (i & 1 == 0 ? real[h] : -real[h])
            var k = 1
            while k < h {
                let j = (k &* i) & (n &- 1)
                sum += 2 * (real[k] * directCos[j] + imaginary[k] * directSin[j])
                k &+= 1
            }
            output[i] = sum / Float(n)
            i &+= 1
        }
    }
}

/// Vector i of points (real parts at 8i, imaginary parts at 8i + 4), or of samples x[8i … 8i+7]:
/// real parts the even ones, imaginary parts the odd ones.
@inline(__always) func point(_ x: UnsafePointer<Float>, _ i: Int, _ samples: Bool) -> (SIMD4<Float>, SIMD4<Float>) {
    let p = x + 8 &* i
    let u = load4(p), v = load4(p + 4)
    if samples { return (SIMD4(u[0], u[2], v[0], v[2]), SIMD4(u[1], u[3], v[1], v[3])) }
    return (u, v)
}
@inline(__always) func point(_ x: UnsafeMutablePointer<Float>, _ i: Int, _ samples: Bool) -> (SIMD4<Float>, SIMD4<Float>) {
    point(UnsafePointer(x), i, samples)
}
@inline(__always) func store(_ y: UnsafeMutablePointer<Float>, _ i: Int, _ re: SIMD4<Float>, _ im: SIMD4<Float>) {
    store4(y + 8 &* i, re)
    store4(y + (8 &* i &+ 4), im)
}
@inline(__always) func cmul(_ ar: SIMD4<Float>, _ ai: SIMD4<Float>, _ br: SIMD4<Float>, _ bi: SIMD4<Float>)
    -> (SIMD4<Float>, SIMD4<Float>) {
    (ar * br - ai * bi, ar * bi + ai * br)
}
/// a · conj(b).
@inline(__always) func cmulConjugate(_ ar: SIMD4<Float>, _ ai: SIMD4<Float>, _ br: SIMD4<Float>, _ bi: SIMD4<Float>)
    -> (SIMD4<Float>, SIMD4<Float>) {
    (ar * br + ai * bi, ai * br - ar * bi)
}
/// The 4-point DFT of (a, b, c, d): (a+c) + (b+d), (a-c) - i(b-d), (a+c) - (b+d), (a-c) + i(b-d).
@inline(__always) func dft4(_ ar: SIMD4<Float>, _ ai: SIMD4<Float>, _ br: SIMD4<Float>, _ bi: SIMD4<Float>,
                            _ cr: SIMD4<Float>, _ ci: SIMD4<Float>, _ dr: SIMD4<Float>, _ di: SIMD4<Float>)
    -> (SIMD4<Float>, SIMD4<Float>, SIMD4<Float>, SIMD4<Float>, SIMD4<Float>, SIMD4<Float>, SIMD4<Float>, SIMD4<Float>) {
    let apcR = ar + cr, apcI = ai + ci, amcR = ar - cr, amcI = ai - ci
    let bpdR = br + dr, bpdI = bi + di, bmdR = br - dr, bmdI = bi - di
    return (apcR + bpdR, apcI + bpdI, amcR + bmdI, amcI - bmdR, apcR - bpdR, apcI - bpdI, amcR - bmdI, amcI + bmdR)
}

// One unaligned vector access each, not four scalar ones for the compiler to merge (it does not always).
@inline(__always) func load4(_ p: UnsafeMutablePointer<Float>) -> SIMD4<Float> {
    UnsafeRawPointer(p).loadUnaligned(as: SIMD4<Float>.self)
}
@inline(__always) func load4(_ p: UnsafePointer<Float>) -> SIMD4<Float> {
    UnsafeRawPointer(p).loadUnaligned(as: SIMD4<Float>.self)
}
@inline(__always) func store4(_ p: UnsafeMutablePointer<Float>, _ v: SIMD4<Float>) {
    UnsafeMutableRawPointer(p).storeBytes(of: v, as: SIMD4<Float>.self)
}
/// Rows to columns, in the unpack/move-halves pattern SSE does in eight shuffles.
@inline(__always) func transpose4(_ a: SIMD4<Float>, _ b: SIMD4<Float>, _ c: SIMD4<Float>, _ d: SIMD4<Float>)
    -> (SIMD4<Float>, SIMD4<Float>, SIMD4<Float>, SIMD4<Float>) {
    let t0 = SIMD4(a[0], b[0], a[1], b[1]), t1 = SIMD4(c[0], d[0], c[1], d[1])
    let t2 = SIMD4(a[2], b[2], a[3], b[3]), t3 = SIMD4(c[2], d[2], c[3], d[3])
    return (SIMD4(t0[0], t0[1], t1[0], t1[1]), SIMD4(t0[2], t0[3], t1[2], t1[3]),
            SIMD4(t2[0], t2[1], t3[0], t3[1]), SIMD4(t2[2], t2[3], t3[2], t3[3]))
}
/// Four vectors `step` floats apart, transposed into four vectors `toStep` floats apart.
@inline(__always) func transpose4(from p: UnsafeMutablePointer<Float>, _ step: Int, to q: UnsafeMutablePointer<Float>,
                                  _ toStep: Int) {
    let (a, b, c, d) = transpose4(load4(p), load4(p + step), load4(p + 2 &* step), load4(p + 3 &* step))
    store4(q, a); store4(q + toStep, b); store4(q + 2 &* toStep, c); store4(q + 3 &* toStep, d)
}
/// p[3], p[2], p[1], p[0].
@inline(__always) func reversed4(_ p: UnsafePointer<Float>) -> SIMD4<Float> { reversed(load4(p)) }
@inline(__always) func storeReversed4(_ p: UnsafeMutablePointer<Float>, _ v: SIMD4<Float>) { store4(p, reversed(v)) }
@inline(__always) func reversed(_ v: SIMD4<Float>) -> SIMD4<Float> { SIMD4(v[3], v[2], v[1], v[0]) }
