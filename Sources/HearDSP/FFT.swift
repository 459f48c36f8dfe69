// Real FFT of a power-of-two size, for the noise suppressor's analysis and synthesis.
//
// A real sequence of N samples is transformed as a complex one of N/2 (even samples real, odd
// samples imaginary) and the two interleaved half-spectra are separated afterwards. The complex
// FFT is an iterative radix-2 decimation in time on split real/imaginary arrays; every stage's
// twiddles are stored contiguously, so the inner loops run with unit stride. All tables and the
// work arrays are allocated in init: forward and inverse allocate nothing.


public struct RealFFT: ~Copyable {
    /// Real samples per transform (a power of two, at least 4).
    public let size: Int
    /// Complex points of the inner transform: size / 2.
    let half: Int
    /// Per stage of length 2, 4, … half: cos and -sin of 2πj/length for j < length/2, stage after stage.
    let stageCos: UnsafeMutablePointer<Float>
    let stageSin: UnsafeMutablePointer<Float>
    /// cos and -sin of 2πk/size for k <= half: splits the half-size transform into the real one.
    let splitCos: UnsafeMutablePointer<Float>
    let splitSin: UnsafeMutablePointer<Float>
    let bitReversed: UnsafeMutablePointer<Int>
    let workReal: UnsafeMutablePointer<Float>
    let workImaginary: UnsafeMutablePointer<Float>
    /// The inverse's input to the complex transform, in natural order.
    let scratchReal: UnsafeMutablePointer<Float>
    let scratchImaginary: UnsafeMutablePointer<Float>

    /// `size` is rounded up to a power of two (at least 4).
    public init(size requested: Int) {
        var n = 4
        while n < requested { n *= 2 }
        size = n
        half = n / 2
        stageCos = .allocate(capacity: half)
        stageSin = .allocate(capacity: half)
        var offset = 0
        var length = 2
        while length <= half {
            for j in 0..<(length / 2) {
                let angle = 2 * Double.pi * Double(j) / Double(length)
                stageCos[offset + j] = Float(LibM.cos(angle))
                stageSin[offset + j] = Float(-LibM.sin(angle))
            }
            offset += length / 2
            length *= 2
        }
        splitCos = .allocate(capacity: half + 1)
        splitSin = .allocate(capacity: half + 1)
        for k in 0...half {
            let angle = 2 * Double.pi * Double(k) / Double(n)
            splitCos[k] = Float(LibM.cos(angle))
            splitSin[k] = Float(-LibM.sin(angle))
        }
        bitReversed = .allocate(capacity: half)
        var bits = 0
        while (1 << bits) < half { bits += 1 }
        for i in 0..<half {
            var reversed = 0
            for b in 0..<bits where i & (1 << b) != 0 { reversed |= 1 << (bits - 1 - b) }
            bitReversed[i] = reversed
        }
        workReal = .allocate(capacity: half)
        workImaginary = .allocate(capacity: half)
        workReal.initialize(repeating: 0, count: half)
        workImaginary.initialize(repeating: 0, count: half)
        scratchReal = .allocate(capacity: half)
        scratchImaginary = .allocate(capacity: half)
        scratchReal.initialize(repeating: 0, count: half)
        scratchImaginary.initialize(repeating: 0, count: half)
    }

    deinit {
        stageCos.deallocate()
        stageSin.deallocate()
        splitCos.deallocate()
        splitSin.deallocate()
        bitReversed.deallocate()
        workReal.deallocate()
        workImaginary.deallocate()
        scratchReal.deallocate()
        scratchImaginary.deallocate()
    }

    /// Spectrum bins 0...size/2 of `input` (size samples), unnormalized: X[k] = Σ x[n] e^(-2πikn/N).
    @_noLocks public func forward(_ input: UnsafePointer<Float>, real: UnsafeMutablePointer<Float>,
                                  imaginary: UnsafeMutablePointer<Float>) {
        let h = half
        if h >= 4 {
            // The first radix-4 pass reads the input where bit reversal would have put it: positions
            // s...s+3 (s a multiple of 4) hold z[r], z[r + h/2], z[r + h/4], z[r + 3h/4], r = rev(s).
            firstPass(real: input, imaginary: input + 1, stride: 2)
            laterStages()
        } else {
            for i in 0..<h {
                let j = bitReversed[i]
                workReal[j] = input[2 * i]
                workImaginary[j] = input[2 * i + 1]
            }
            transform()
        }
        // Z[k] = E[k] + i O[k]; X[k] = E[k] + W^k O[k] with E, O the even and odd samples' spectra.
        real[0] = workReal[0] + workImaginary[0]
        imaginary[0] = 0
        real[h] = workReal[0] - workImaginary[0]
        imaginary[h] = 0
        // Bins k and h - k from the same pair Z[k], Z[h-k]: X[h-k] = conj(E - W^k O).
        // Four pairs at once: k...k+3 read forward, h-k-3...h-k read and written as one reversed vector.
        var k = 1
        while k + 3 <= h / 2 {
            let zr = load4(workReal + k), zi = load4(workImaginary + k)
            let cr = reversed4(workReal + (h - k - 3)), ci = -reversed4(workImaginary + (h - k - 3))
            let er = 0.5 * (zr + cr), ei = 0.5 * (zi + ci)
            let or = 0.5 * (zi - ci), oi = -0.5 * (zr - cr)
            let wr = load4(splitCos + k), wi = load4(splitSin + k)
            let tr = wr * or - wi * oi, ti = wr * oi + wi * or
            store4(real + k, er + tr)
            store4(imaginary + k, ei + ti)
            storeReversed4(real + (h - k - 3), er - tr)
            storeReversed4(imaginary + (h - k - 3), -(ei - ti))
            k += 4
        }
        while k <= h / 2 {
            let zr = workReal[k], zi = workImaginary[k]
            let cr = workReal[h - k], ci = -workImaginary[h - k]  // conj(Z[h-k])
            let er = 0.5 * (zr + cr), ei = 0.5 * (zi + ci)
            // O = (Z[k] - conj Z[h-k]) / 2i
            let or = 0.5 * (zi - ci), oi = -0.5 * (zr - cr)
            let wr = splitCos[k], wi = splitSin[k]
            let tr = wr * or - wi * oi, ti = wr * oi + wi * or
            real[k] = er + tr
            imaginary[k] = ei + ti
            real[h - k] = er - tr
            imaginary[h - k] = -(ei - ti)
            k += 1
        }
    }

    /// The inverse of `forward`, scaled so that inverse(forward(x)) == x. Reads bins 0...size/2.
    /// Writes output[first..<size] only (`first` even): the suppressor keeps only a frame's tail.
    @_noLocks public func inverse(real: UnsafePointer<Float>, imaginary: UnsafePointer<Float>,
                                  output: UnsafeMutablePointer<Float>, first: Int = 0) {
        let h = half
        // E[k] = (X[k] + conj X[h-k]) / 2, O[k] = (X[k] - conj X[h-k]) / 2 · W^-k, Z = E + i O.
        // The inverse transform is run as a forward one on conj(Z), conjugated back at the end.
        // Z[h-k] = conj(E[k]) + i conj(O[k]): each pass of the loop fills two points.
        do {
            let er = 0.5 * (real[0] + real[h]), or = 0.5 * (real[0] - real[h])
            workReal[0] = er
            workImaginary[0] = -or  // conj(Z[0]), Z[0] = E + iO with E, O real
        }
        var k = 1
        if h >= 8 {
            // conj(Z) in natural order, four pairs at a time; the first pass then reads it where bit
            // reversal would have put it, as `forward` reads its input.
            let zr = scratchReal, zi = scratchImaginary
            zr[0] = workReal[0]
            zi[0] = workImaginary[0]
            while k + 3 <= h / 2 {
                let xr = load4(real + k), xi = load4(imaginary + k)
                let cr = reversed4(real + (h - k - 3)), ci = -reversed4(imaginary + (h - k - 3))
                let er = 0.5 * (xr + cr), ei = 0.5 * (xi + ci)
                let dr = 0.5 * (xr - cr), di = 0.5 * (xi - ci)
                let wr = load4(splitCos + k), wi = -load4(splitSin + k)  // W^-k
                let or = dr * wr - di * wi, oi = dr * wi + di * wr
                store4(zr + k, er - oi)
                store4(zi + k, -(ei + or))
                storeReversed4(zr + (h - k - 3), er + oi)
                storeReversed4(zi + (h - k - 3), -(or - ei))
                k += 4
            }
            firstPass(real: UnsafePointer(zr), imaginary: UnsafePointer(zi), stride: 1)
            laterStages()
            let scale = 1 / Float(h)
            for i in (first / 2)..<h {
                output[2 * i] = workReal[i] * scale
                output[2 * i + 1] = -workImaginary[i] * scale
            }
            return
        }
        while k <= h / 2 {
            let xr = real[k], xi = imaginary[k]
            let cr = real[h - k], ci = -imaginary[h - k]
            let er = 0.5 * (xr + cr), ei = 0.5 * (xi + ci)
            let dr = 0.5 * (xr - cr), di = 0.5 * (xi - ci)
            let wr = splitCos[k], wi = -splitSin[k]  // W^-k
            let or = dr * wr - di * wi, oi = dr * wi + di * wr
            let j = bitReversed[k], m = bitReversed[h - k]
            workReal[j] = er - oi
            workImaginary[j] = -(ei + or)
            workReal[m] = er + oi
            workImaginary[m] = -(or - ei)
            k += 1
        }
        transform()
        let scale = 1 / Float(h)
        for i in 0..<h {
            output[2 * i] = workReal[i] * scale
            output[2 * i + 1] = -workImaginary[i] * scale
        }
    }

    /// In-place forward complex FFT of the work arrays, which hold the input in bit-reversed order.
    @inline(__always) func transform() {
        let h = half
        let re = workReal, im = workImaginary
        // Length 2 and 4 in one pass: their twiddles are 1 and -i.
        if h >= 4 {
            var s = 0
            while s < h {
                butterfly4(s, re[s], im[s], re[s + 1], im[s + 1], re[s + 2], im[s + 2], re[s + 3], im[s + 3])
                s += 4
            }
        } else if h == 2 {
            let ar = re[0], ai = im[0]
            re[0] = ar + re[1]; im[0] = ai + im[1]
            re[1] = ar - re[1]; im[1] = ai - im[1]
            return
        } else {
            return
        }
        laterStages()
    }

    /// Lengths 2 and 4 in one pass, read where bit reversal would have put the points: positions
    /// s...s+3 (s a multiple of 4) hold z[r], z[r + h/2], z[r + h/4], z[r + 3h/4], r = rev(s).
    /// Point i is (real[i · stride], imaginary[i · stride]). Needs half >= 4.
    @inline(__always) func firstPass(real: UnsafePointer<Float>, imaginary: UnsafePointer<Float>, stride: Int) {
        let h = half
        let quarter = h / 4
        if quarter >= 4 {
            // Four groups at once, taken in the order of r (bit reversal is its own inverse, so
            // s = rev(r)): the four points of r...r+3 are contiguous vectors, and a 4x4 transpose
            // turns the butterflies' outputs into each group's four consecutive points.
            var r = 0
            while r < quarter {
                let (x0r, x0i) = load4(real, imaginary, r, stride)
                let (x1r, x1i) = load4(real, imaginary, r + 2 * quarter, stride)
                let (x2r, x2i) = load4(real, imaginary, r + quarter, stride)
                let (x3r, x3i) = load4(real, imaginary, r + 3 * quarter, stride)
                let a0r = x0r + x1r, a0i = x0i + x1i
                let a1r = x0r - x1r, a1i = x0i - x1i
                let b0r = x2r + x3r, b0i = x2i + x3i
                let b1r = x2r - x3r, b1i = x2i - x3i
                // b1 · (-i) = (b1i, -b1r)
                let y0r = a0r + b0r, y0i = a0i + b0i
                let y1r = a1r + b1i, y1i = a1i - b1r
                let y2r = a0r - b0r, y2i = a0i - b0i
                let y3r = a1r - b1i, y3i = a1i + b1r
                let (q0r, q1r, q2r, q3r) = transpose4(y0r, y1r, y2r, y3r)
                let (q0i, q1i, q2i, q3i) = transpose4(y0i, y1i, y2i, y3i)
                let s0 = bitReversed[r], s1 = bitReversed[r + 1], s2 = bitReversed[r + 2], s3 = bitReversed[r + 3]
                store4(workReal + s0, q0r); store4(workImaginary + s0, q0i)
                store4(workReal + s1, q1r); store4(workImaginary + s1, q1i)
                store4(workReal + s2, q2r); store4(workImaginary + s2, q2i)
                store4(workReal + s3, q3r); store4(workImaginary + s3, q3i)
                r += 4
            }
            return
        }
        var s = 0
        while s < h {
            let r = bitReversed[s]
            let i0 = stride * r, i1 = stride * (r + 2 * quarter)
            let i2 = stride * (r + quarter), i3 = stride * (r + 3 * quarter)
            butterfly4(s, real[i0], imaginary[i0], real[i1], imaginary[i1], real[i2], imaginary[i2], real[i3], imaginary[i3])
            s += 4
        }
    }

    /// Stages of length 2 and 4 on four points in bit-reversed order, written to s...s+3.
    @inline(__always) func butterfly4(_ s: Int, _ x0r: Float, _ x0i: Float, _ x1r: Float, _ x1i: Float,
                                      _ x2r: Float, _ x2i: Float, _ x3r: Float, _ x3i: Float) {
        let re = workReal, im = workImaginary
        let a0r = x0r + x1r, a0i = x0i + x1i
        let a1r = x0r - x1r, a1i = x0i - x1i
        let b0r = x2r + x3r, b0i = x2i + x3i
        let b1r = x2r - x3r, b1i = x2i - x3i
        re[s] = a0r + b0r; im[s] = a0i + b0i
        re[s + 2] = a0r - b0r; im[s + 2] = a0i - b0i
        // b1 · (-i) = (b1i, -b1r)
        re[s + 1] = a1r + b1i; im[s + 1] = a1i - b1r
        re[s + 3] = a1r - b1i; im[s + 3] = a1i + b1r
    }

    /// Stages of length 8 and up, in place on the work arrays.
    @inline(__always) func laterStages() {
        let h = half
        let re = workReal, im = workImaginary
        var length = 8
        var offset = 3  // twiddles of lengths 2 and 4 come first (1 + 2 entries)
        // Two radix-2 stages (lengths L and 2L) per pass while both remain: half the passes over memory.
        while 2 * length <= h {
            let halfLength = length / 2
            let w1r = stageCos + offset, w1i = stageSin + offset
            let w2r = stageCos + offset + halfLength, w2i = stageSin + offset + halfLength
            var s = 0
            while s < h {
                let r0 = re + s, i0 = im + s
                let r1 = r0 + halfLength, i1 = i0 + halfLength
                let r2 = r0 + length, i2 = i0 + length
                let r3 = r2 + halfLength, i3 = i2 + halfLength
                // Four butterflies at once (halfLength is a multiple of 4 from length 8 on).
                var j = 0
                while j < halfLength {
                    // Stage L: (a0, a1) and (a2, a3) with W_L^j.
                    let c1 = load4(w1r + j), s1 = load4(w1i + j)
                    let x1r = load4(r1 + j), x1i = load4(i1 + j)
                    let x3r = load4(r3 + j), x3i = load4(i3 + j)
                    let x0r = load4(r0 + j), x0i = load4(i0 + j)
                    let x2r = load4(r2 + j), x2i = load4(i2 + j)
                    let t1r = x1r * c1 - x1i * s1, t1i = x1r * s1 + x1i * c1
                    let t3r = x3r * c1 - x3i * s1, t3i = x3r * s1 + x3i * c1
                    let b0r = x0r + t1r, b0i = x0i + t1i
                    let b1r = x0r - t1r, b1i = x0i - t1i
                    let b2r = x2r + t3r, b2i = x2i + t3i
                    let b3r = x2r - t3r, b3i = x2i - t3i
                    // Stage 2L: (b0, b2) with W_2L^j, (b1, b3) with W_2L^(j + L/2) = -i · W_2L^j.
                    let c2 = load4(w2r + j), s2 = load4(w2i + j)
                    let u2r = b2r * c2 - b2i * s2, u2i = b2r * s2 + b2i * c2
                    let v3r = b3r * c2 - b3i * s2, v3i = b3r * s2 + b3i * c2
                    // -i · v3 = (v3i, -v3r)
                    store4(r0 + j, b0r + u2r); store4(i0 + j, b0i + u2i)
                    store4(r2 + j, b0r - u2r); store4(i2 + j, b0i - u2i)
                    store4(r1 + j, b1r + v3i); store4(i1 + j, b1i - v3r)
                    store4(r3 + j, b1r - v3i); store4(i3 + j, b1i + v3r)
                    j += 4
                }
                s += 2 * length
            }
            offset += halfLength + length
            length *= 4
        }
        while length <= h {
            let halfLength = length / 2
            let wr = stageCos + offset, wi = stageSin + offset
            var s = 0
            while s < h {
                let ar = re + s, ai = im + s
                let br = re + s + halfLength, bi = im + s + halfLength
                var j = 0
                while j < halfLength {
                    let cr = load4(wr + j), ci = load4(wi + j)
                    let yr = load4(br + j), yi = load4(bi + j)
                    let tr = yr * cr - yi * ci
                    let ti = yr * ci + yi * cr
                    let ur = load4(ar + j), ui = load4(ai + j)
                    store4(ar + j, ur + tr); store4(ai + j, ui + ti)
                    store4(br + j, ur - tr); store4(bi + j, ui - ti)
                    j += 4
                }
                s += length
            }
            offset += halfLength
            length *= 2
        }
    }
}

@inline(__always) func load4(_ p: UnsafeMutablePointer<Float>) -> SIMD4<Float> { SIMD4(p[0], p[1], p[2], p[3]) }
@inline(__always) func load4(_ p: UnsafePointer<Float>) -> SIMD4<Float> { SIMD4(p[0], p[1], p[2], p[3]) }
/// Points i...i+3 of split (stride 1) or interleaved (stride 2, imaginary = real + 1) arrays.
@inline(__always) func load4(_ real: UnsafePointer<Float>, _ imaginary: UnsafePointer<Float>, _ i: Int,
                             _ stride: Int) -> (SIMD4<Float>, SIMD4<Float>) {
    if stride == 2 {
        let p = real + 2 * i
        return (SIMD4(p[0], p[2], p[4], p[6]), SIMD4(p[1], p[3], p[5], p[7]))
    }
    return (load4(real + i), load4(imaginary + i))
}
/// Rows to columns, in the unpack/move-halves pattern SSE does in eight shuffles.
@inline(__always) func transpose4(_ a: SIMD4<Float>, _ b: SIMD4<Float>, _ c: SIMD4<Float>, _ d: SIMD4<Float>)
    -> (SIMD4<Float>, SIMD4<Float>, SIMD4<Float>, SIMD4<Float>) {
    let t0 = SIMD4(a[0], b[0], a[1], b[1]), t1 = SIMD4(c[0], d[0], c[1], d[1])
    let t2 = SIMD4(a[2], b[2], a[3], b[3]), t3 = SIMD4(c[2], d[2], c[3], d[3])
    return (SIMD4(t0[0], t0[1], t1[0], t1[1]), SIMD4(t0[2], t0[3], t1[2], t1[3]),
            SIMD4(t2[0], t2[1], t3[0], t3[1]), SIMD4(t2[2], t2[3], t3[2], t3[3]))
}
/// p[3], p[2], p[1], p[0].
@inline(__always) func reversed4(_ p: UnsafeMutablePointer<Float>) -> SIMD4<Float> { SIMD4(p[3], p[2], p[1], p[0]) }
@inline(__always) func reversed4(_ p: UnsafePointer<Float>) -> SIMD4<Float> { SIMD4(p[3], p[2], p[1], p[0]) }
@inline(__always) func storeReversed4(_ p: UnsafeMutablePointer<Float>, _ v: SIMD4<Float>) {
    p[0] = v[3]; p[1] = v[2]; p[2] = v[1]; p[3] = v[0]
}
@inline(__always) func store4(_ p: UnsafeMutablePointer<Float>, _ v: SIMD4<Float>) {
    p[0] = v[0]; p[1] = v[1]; p[2] = v[2]; p[3] = v[3]
}
