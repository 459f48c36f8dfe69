// Per-sample dB conversions for the dynamics stages: a polynomial on the mantissa instead of
// libm's log2f/exp2f, which cost more than the rest of the compressor together. Coefficients
// are least-squares fits on Chebyshev nodes; errors are far below what the ear or the tests see.
// No branches and no trapping conversions, so loops over them vectorize.

public enum FastMath {
    /// log2(x) for x > 0 (normal floats), within 1.7e-5 (1e-4 dB).
    @inline(__always) public static func log2(_ x: Float) -> Float {
        let bits = x.bitPattern
        let exponent = Float(Int32(bitPattern: (bits >> 23) & 0xFF) &- 127)
        let t = Float(bitPattern: (bits & 0x7F_FFFF) | 0x3F80_0000) - 1
        let p: Float = 1.4418797760086843 + t * (-0.7088638759987393 + t * (0.41524096015459955
            + t * (-0.1935103909592163 + t * 0.04526550458283607)))
        return exponent + t * p
    }

    /// 2^x, within 1e-7 relative (1e-6 dB); x is held in [-125, 126] (NaN counts as -125).
    @inline(__always) public static func exp2(_ x: Float) -> Float {
        // Two selects that become maxps and minps (a NaN fails the first comparison: -125).
        let low: Float = x > -125 ? x : -125
        let held: Float = low < 126 ? low : 126
        // Adding 2^23 rounds to an integer held in the low mantissa bits: floor of held + 127
        // (an exact integer may land one below, leaving f = 1, where the polynomial still holds).
        let rounded = (held + 126.5) + 8_388_608
        let biased = rounded.bitPattern & 0x7F_FFFF  // floor(held) + 127, or one less at exact integers: 1...253
        let f = held - ((rounded - 8_388_608) - 127)
        let p: Float = 0.9999998960218912 + f * (0.6931546159212211 + f * (0.24014078683039108
            + f * (0.055863258390769666 + f * (0.008946224943762626 + f * 0.00189510864141329))))
        return Float(bitPattern: biased << 23) * p
    }

    /// e^x, same range rules as `exp2` (the noise suppressor's per-bin probabilities).
    @inline(__always) public static func exp(_ x: Float) -> Float { exp2(x * 1.442695041) }
}
