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

    // Eight lanes at once, each with the scalar function's very operations (bit-identical per
    // lane), for loops the compiler does not vectorize by itself (their pointers may alias).

    /// `log2` of each lane.
    @inline(__always) public static func log2(_ x: SIMD8<Float>) -> SIMD8<Float> {
        let bits = unsafeBitCast(x, to: SIMD8<UInt32>.self)
        let exponent = SIMD8<Float>(unsafeBitCast((bits &>> 23) & 0xFF, to: SIMD8<Int32>.self) &- 127)
        let t = unsafeBitCast((bits & 0x7F_FFFF) | 0x3F80_0000, to: SIMD8<Float>.self) - 1
        return exponent + t * horner(t, 1.4418797760086843, -0.7088638759987393, 0.41524096015459955,
                                     -0.1935103909592163, 0.04526550458283607)
    }

    /// `exp2` of each lane.
    @inline(__always) public static func exp2(_ x: SIMD8<Float>) -> SIMD8<Float> {
        let low = SIMD8<Float>(repeating: -125).replacing(with: x, where: x .> -125)
        let held = SIMD8<Float>(repeating: 126).replacing(with: low, where: low .< 126)
        let rounded = (held + 126.5) + 8_388_608
        let biased = unsafeBitCast(rounded, to: SIMD8<UInt32>.self) & 0x7F_FFFF
        let f = held - ((rounded - 8_388_608) - 127)
        let p = horner(f, 0.9999998960218912, 0.6931546159212211, 0.24014078683039108, 0.055863258390769666,
                       0.008946224943762626, 0.00189510864141329)
        return unsafeBitCast(biased &<< 23, to: SIMD8<Float>.self) * p
    }

    /// c0 + x (c1 + x (c2 + x (c3 + x c4))), innermost first, as the scalar functions' nested
    /// expressions evaluate.
    @inline(__always) static func horner(_ x: SIMD8<Float>, _ c0: Float, _ c1: Float, _ c2: Float, _ c3: Float,
                                         _ c4: Float) -> SIMD8<Float> {
        var p = c3 + x * c4
        p = c2 + x * p
        p = c1 + x * p
        return c0 + x * p
    }

    /// c0 + x (c1 + x (c2 + x (c3 + x (c4 + x c5)))), likewise.
    @inline(__always) static func horner(_ x: SIMD8<Float>, _ c0: Float, _ c1: Float, _ c2: Float, _ c3: Float,
                                         _ c4: Float, _ c5: Float) -> SIMD8<Float> {
        var p = c4 + x * c5
        p = c3 + x * p
        p = c2 + x * p
        p = c1 + x * p
        return c0 + x * p
    }

    /// `exp` of each lane.
    @inline(__always) public static func exp(_ x: SIMD8<Float>) -> SIMD8<Float> { exp2(x * 1.442695041) }
}

/// Eight floats from `p` (unaligned), and back.
@inline(__always) func load8(_ p: UnsafePointer<Float>) -> SIMD8<Float> {
    UnsafeRawPointer(p).loadUnaligned(as: SIMD8<Float>.self)
}
@inline(__always) func load8(_ p: UnsafeMutablePointer<Float>) -> SIMD8<Float> {
    UnsafeRawPointer(p).loadUnaligned(as: SIMD8<Float>.self)
}
@inline(__always) func store8(_ p: UnsafeMutablePointer<Float>, _ v: SIMD8<Float>) {
    UnsafeMutableRawPointer(p).storeBytes(of: v, as: SIMD8<Float>.self)
}
/// Swift's `min` and `max` in each lane, with their choices (`y < x ? y : x`, `y >= x ? y : x`), so
/// that a NaN or a tie goes the way the scalar code sends it.
@inline(__always) func lanesMin(_ x: SIMD8<Float>, _ y: SIMD8<Float>) -> SIMD8<Float> { x.replacing(with: y, where: y .< x) }
@inline(__always) func lanesMax(_ x: SIMD8<Float>, _ y: SIMD8<Float>) -> SIMD8<Float> { x.replacing(with: y, where: y .>= x) }
