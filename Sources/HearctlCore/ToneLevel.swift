// Reading a known tone's level in a signal: how `hearctl fit` and the tests measure what the
// chain actually delivers, rather than trusting the design. Not on the audio path (it lives here,
// not in HearDSP, whose object code holds no trap instruction).

import Glibc

public enum ToneLevel {
    /// Amplitude of the `frequency` component, by a least-squares fit of a sine and a cosine
    /// (exact for a steady tone over any stretch, not only whole periods).
    public static func amplitude(of samples: ArraySlice<Float>, frequency: Double, rate: Double) -> Double {
        var ss = 0.0, cc = 0.0, sc = 0.0, xs = 0.0, xc = 0.0
        for (k, x) in samples.enumerated() {
            let w = 2 * Double.pi * frequency * Double(k) / rate
            let s = Glibc.sin(w), c = Glibc.cos(w)
            ss += s * s; cc += c * c; sc += s * c
            xs += Double(x) * s; xc += Double(x) * c
        }
        let det = ss * cc - sc * sc
        guard det > 0 else { return 0 }
        let a = (xs * cc - xc * sc) / det, b = (xc * ss - xs * sc) / det
        return Glibc.sqrt(a * a + b * b)
    }
}
