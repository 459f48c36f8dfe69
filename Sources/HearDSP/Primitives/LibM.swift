// libm's elementary functions are real-time safe (no locks, no allocation, no I/O), but the
// compiler's performance checker cannot see into C and rejects them under @_noLocks. This is the
// one place that vouches for them; the audio path calls libm only through here.

import Glibc

package enum LibM {
    @inline(__always) package static func exp(_ x: Double) -> Double { _unsafePerformance { Glibc.exp(x) } }
    @inline(__always) package static func trunc(_ x: Double) -> Double { _unsafePerformance { Glibc.trunc(x) } }
    @inline(__always) package static func log(_ x: Double) -> Double { _unsafePerformance { Glibc.log(x) } }
    @inline(__always) package static func exp2(_ x: Double) -> Double { _unsafePerformance { Glibc.exp2(x) } }
    @inline(__always) package static func log2(_ x: Double) -> Double { _unsafePerformance { Glibc.log2(x) } }
    @inline(__always) package static func log10(_ x: Double) -> Double { _unsafePerformance { Glibc.log10(x) } }
    @inline(__always) package static func log10(_ x: Float) -> Float { _unsafePerformance { Glibc.log10f(x) } }
    @inline(__always) package static func pow(_ x: Double, _ y: Double) -> Double { _unsafePerformance { Glibc.pow(x, y) } }
    @inline(__always) package static func sqrt(_ x: Double) -> Double { _unsafePerformance { Glibc.sqrt(x) } }
    @inline(__always) package static func sin(_ x: Double) -> Double { _unsafePerformance { Glibc.sin(x) } }
    @inline(__always) package static func cos(_ x: Double) -> Double { _unsafePerformance { Glibc.cos(x) } }
    @inline(__always) package static func sqrt(_ x: Float) -> Float { _unsafePerformance { x.squareRoot() } }
    /// Each lane's square root (sqrtps: correctly rounded, as the scalar one).
    @inline(__always) package static func sqrt(_ x: SIMD8<Float>) -> SIMD8<Float> { _unsafePerformance { x.squareRoot() } }
    @inline(__always) package static func exp2(_ x: Float) -> Float { _unsafePerformance { Glibc.exp2f(x) } }
    @inline(__always) package static func log2(_ x: Float) -> Float { _unsafePerformance { Glibc.log2f(x) } }
}
