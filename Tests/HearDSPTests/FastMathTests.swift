import Foundation
import HearDSP
import Testing

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
}
