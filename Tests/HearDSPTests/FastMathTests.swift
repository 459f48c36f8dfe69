import Foundation
import HearDSP
import Testing
import TestSupport

@Suite struct FastMathTests {
    @Test func log2IsWithinATenThousandthOfADecibel() {
        var worst: Float = 0
        var x: Float = 1e-10
        while x < 1e4 {
            worst = max(worst, abs(FastMath.log2(x) - Foundation.log2(x)))
            x *= 1.0137
        }
        #expect(worst * 6.0206 < 2e-4, "\(worst * 6.0206) dB")
    }

    @Test func exp2IsWithinAMillionthRelative() {
        var worst: Float = 0
        for k in -125_000...126_000 {
            let x = Float(k) / 1000
            worst = max(worst, abs(FastMath.exp2(x) / Foundation.exp2(x) - 1))
        }
        #expect(worst < 1e-6, "\(worst)")
        #expect(FastMath.exp2(.nan) > 0 && FastMath.exp2(.nan).isFinite)
        #expect(FastMath.exp2(1000) == FastMath.exp2(126))
    }

    /// The eight-lane functions do each lane's arithmetic as the scalar ones do: the same bits for
    /// every input, from subnormals to the clamps, NaN and infinities included (the learned model's
    /// gates and the blend run on them, and their output must not depend on the path).
    @Test func eightLanesGiveTheScalarFunctionsBits() {
        var inputs: [Float] = [.nan, .infinity, -.infinity, 0, -0.0, .leastNonzeroMagnitude, .greatestFiniteMagnitude,
                               -.greatestFiniteMagnitude, 1, -1, 125.999, 126, -125, -125.001, 1e-30, 80, -80]
        var random = SeededRandom(seed: 11)
        for _ in 0..<20_000 { inputs.append(Float(bitPattern: UInt32(truncatingIfNeeded: random.next()))) }
        for k in -2_000...2_000 { inputs.append(Float(k) / 16) }
        while inputs.count % 8 != 0 { inputs.append(0.5) }
        var mismatches = 0, checked = 0
        var i = 0
        while i < inputs.count {
            let lanes = SIMD8<Float>(inputs[i..<i + 8])
            let log2 = FastMath.log2(lanes), exp2 = FastMath.exp2(lanes), exp = FastMath.exp(lanes)
            for l in 0..<8 {
                let x = inputs[i + l]
                if x > 0 && x.isFinite {  // log2's domain (normal and subnormal positive floats)
                    checked += 1
                    if log2[l].bitPattern != FastMath.log2(x).bitPattern { mismatches += 1 }
                }
                checked += 2
                if exp2[l].bitPattern != FastMath.exp2(x).bitPattern { mismatches += 1 }
                if exp[l].bitPattern != FastMath.exp(x).bitPattern { mismatches += 1 }
            }
            i += 8
        }
        #expect(checked > 40_000)
        #expect(mismatches == 0, "\(mismatches) of \(checked) lanes differ from the scalar functions")
    }
}

