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
    }

    deinit {
        stageCos.deallocate()
        stageSin.deallocate()
        splitCos.deallocate()
        splitSin.deallocate()
        bitReversed.deallocate()
        workReal.deallocate()
        workImaginary.deallocate()
    }

    /// Spectrum bins 0...size/2 of `input` (size samples), unnormalized: X[k] = Σ x[n] e^(-2πikn/N).
    @_noLocks public func forward(_ input: UnsafePointer<Float>, real: UnsafeMutablePointer<Float>,
                                  imaginary: UnsafeMutablePointer<Float>) {
        let h = half
        if h >= 4 {
            // The first radix-4 pass reads the input where bit reversal would have put it: positions
            // s...s+3 (s a multiple of 4) hold z[r], z[r + h/2], z[r + h/4], z[r + 3h/4], r = rev(s).
            let quarter = h / 4
            var s = 0
            while s < h {
                let r = bitReversed[s]
                let p0 = input + 2 * r, p1 = input + 2 * (r + 2 * quarter)
                let p2 = input + 2 * (r + quarter), p3 = input + 2 * (r + 3 * quarter)
                butterfly4(s, p0[0], p0[1], p1[0], p1[1], p2[0], p2[1], p3[0], p3[1])
                s += 4
            }
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
        var k = 1
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
    @_noLocks public func inverse(real: UnsafePointer<Float>, imaginary: UnsafePointer<Float>,
                                  output: UnsafeMutablePointer<Float>) {
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
                for j in 0..<halfLength {
                    // Stage L: (a0, a1) and (a2, a3) with W_L^j.
                    let c1 = w1r[j], s1 = w1i[j]
                    let t1r = r1[j] * c1 - i1[j] * s1, t1i = r1[j] * s1 + i1[j] * c1
                    let t3r = r3[j] * c1 - i3[j] * s1, t3i = r3[j] * s1 + i3[j] * c1
                    let b0r = r0[j] + t1r, b0i = i0[j] + t1i
                    let b1r = r0[j] - t1r, b1i = i0[j] - t1i
                    let b2r = r2[j] + t3r, b2i = i2[j] + t3i
                    let b3r = r2[j] - t3r, b3i = i2[j] - t3i
                    // Stage 2L: (b0, b2) with W_2L^j, (b1, b3) with W_2L^(j + L/2) = -i · W_2L^j.
                    let c2 = w2r[j], s2 = w2i[j]
                    let u2r = b2r * c2 - b2i * s2, u2i = b2r * s2 + b2i * c2
                    let v3r = b3r * c2 - b3i * s2, v3i = b3r * s2 + b3i * c2
                    // -i · v3 = (v3i, -v3r)
                    r0[j] = b0r + u2r; i0[j] = b0i + u2i
                    r2[j] = b0r - u2r; i2[j] = b0i - u2i
                    r1[j] = b1r + v3i; i1[j] = b1i - v3r
                    r3[j] = b1r - v3i; i3[j] = b1i + v3r
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
                for j in 0..<halfLength {
                    let tr = br[j] * wr[j] - bi[j] * wi[j]
                    let ti = br[j] * wi[j] + bi[j] * wr[j]
                    let ur = ar[j], ui = ai[j]
                    ar[j] = ur + tr; ai[j] = ui + ti
                    br[j] = ur - tr; bi[j] = ui - ti
                }
                s += length
            }
            offset += halfLength
            length *= 2
        }
    }
}
