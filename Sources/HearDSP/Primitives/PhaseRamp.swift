// A spectrum turned by a linear phase ramp, e^{i turn k} in bin k (a shift in time by a fraction of
// a frame), without a sin and cos per bin: four rotations side by side, stepped by e^{i 4 turn}, so
// that no bin waits on the one before (the rounding over 1,000 bins stays near 1e-5). The learned
// model's pitch correlation moves the spectrum of a past frame by the rest of a pitch lag with it.

enum PhaseRamp {
    /// e^{i turn l} for the lanes l = 0...3, and e^{i 4 turn}, the step from one vector of bins
    /// to the next: four rotations side by side, so that no bin waits on the one before.
    @inline(__always) static func phases(_ turn: Double) -> (cos: SIMD4<Float>, sin: SIMD4<Float>, stepCos: Float, stepSin: Float) {
        let c1 = LibM.cos(turn), s1 = LibM.sin(turn)
        let c2 = c1 * c1 - s1 * s1, s2 = 2 * c1 * s1
        let c3 = c2 * c1 - s2 * s1, s3 = s2 * c1 + c2 * s1
        return (SIMD4(1, Float(c1), Float(c2), Float(c3)), SIMD4(0, Float(s1), Float(s2), Float(s3)),
                Float(c2 * c2 - s2 * s2), Float(2 * c2 * s2))
    }

    /// Σ Re(z_k e^{i turn k}) over k < count, z_k = real[k] + i imaginary[k].
    @inline(__always) static func rotatedSum(_ real: UnsafeMutablePointer<Float>, _ imaginary: UnsafeMutablePointer<Float>,
                                             count: Int, turn: Double) -> Float {
        let count = held(count)
        var (c, s, stepCos, stepSin) = phases(turn)
        var sum = SIMD4<Float>(repeating: 0)
        var k = 0
        while k < count - 3 {
            sum += load4(real + k) * c - load4(imaginary + k) * s
            (c, s) = (c * stepCos - s * stepSin, s * stepCos + c * stepSin)
            k += 4
        }
        // The last 0-3 bins, from the lanes by name (a SIMD subscript checks its index).
        var total = sum.sum()
        let left = count - k, tailReal = real + k, tailImaginary = imaginary + k
        if left > 0 { total += tailReal[0] * c.x - tailImaginary[0] * s.x }
        if left > 1 { total += tailReal[1] * c.y - tailImaginary[1] * s.y }
        if left > 2 { total += tailReal[2] * c.z - tailImaginary[2] * s.z }
        return total
    }

    /// real[k] = Re(z_k e^{i turn k}) for k < count, z_k = real[k] + i imaginary[k].
    @inline(__always) static func rotate(_ real: UnsafeMutablePointer<Float>, _ imaginary: UnsafeMutablePointer<Float>,
                                         count: Int, turn: Double) {
        let count = held(count)
        var (c, s, stepCos, stepSin) = phases(turn)
        var k = 0
        while k < count - 3 {
            store4(real + k, load4(real + k) * c - load4(imaginary + k) * s)
            (c, s) = (c * stepCos - s * stepSin, s * stepCos + c * stepSin)
            k += 4
        }
        let left = count - k, tailReal = real + k, tailImaginary = imaginary + k
        if left > 0 { tailReal[0] = tailReal[0] * c.x - tailImaginary[0] * s.x }
        if left > 1 { tailReal[1] = tailReal[1] * c.y - tailImaginary[1] * s.y }
        if left > 2 { tailReal[2] = tailReal[2] * c.z - tailImaginary[2] * s.z }
    }

    /// outReal[k] + i outImaginary[k] = z_k e^{i turn k} for k < count, both parts (`rotate` keeps
    /// only the real one).
    @inline(__always) static func rotate(_ real: UnsafePointer<Float>, _ imaginary: UnsafePointer<Float>,
                                         into outReal: UnsafeMutablePointer<Float>, _ outImaginary: UnsafeMutablePointer<Float>,
                                         count: Int, turn: Double) {
        let count = held(count)
        var (c, s, stepCos, stepSin) = phases(turn)
        var k = 0
        while k < count - 3 {
            let r = load4(real + k), i = load4(imaginary + k)
            store4(outReal + k, r * c - i * s)
            store4(outImaginary + k, r * s + i * c)
            (c, s) = (c * stepCos - s * stepSin, s * stepCos + c * stepSin)
            k += 4
        }
        // The last 0-3 bins through pointers to them (an index k + 1 would be checked for overflow).
        let left = count - k, r = real + k, i = imaginary + k, outR = outReal + k, outI = outImaginary + k
        if left > 0 { (outR[0], outI[0]) = (r[0] * c.x - i[0] * s.x, r[0] * s.x + i[0] * c.x) }
        if left > 1 { (outR[1], outI[1]) = (r[1] * c.y - i[1] * s.y, r[1] * s.y + i[1] * c.y) }
        if left > 2 { (outR[2], outI[2]) = (r[2] * c.z - i[2] * s.z, r[2] * s.z + i[2] * c.z) }
    }
}
