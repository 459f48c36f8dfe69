// The noise suppressor's gain rule, per statistics bin: decision-directed a-priori SNR (Ephraim &
// Malah) refined by one more step through the gain rule (two-step, Plapous et al. 2006), into the
// log-spectral amplitude gain, combined with the speech presence probability into the OM-LSA gain
// (Cohen & Berdugo 2001): G = G_LSA^p · G_min^(1-p), G_min from `ns.reduction`. The a-priori
// absence probability comes from the smoothed a-priori SNR over three bins, about 1 kHz, and the
// whole speech band. Against musical noise, a gain rises at once where the smoothed SNR says
// speech, slowly (30 ms) where it does not, so isolated noise peaks never open; the floor is a gain,
// never zero. The mask is applied as computed, bin by bin: widening it toward the synthesis
// window's resolution (a bin keeping a quarter of its neighbours' gains) kept no more of the speech
// in `make eval` and let more noise through between harmonics.

struct SpectralGain {
    let stats: StatisticsBins
    /// Per statistics bin: the clean-speech power estimate (LSA gain² · power), the a-priori and
    /// a-posteriori SNRs, the smoothed a-priori SNR, the a-priori absence probability, its ~1 kHz
    /// average, the speech presence probability, and the gain.
    let cleanPower: UnsafeMutablePointer<Float>
    let prioriSNR: UnsafeMutablePointer<Float>
    let posterioriSNR: UnsafeMutablePointer<Float>
    let prioriAverage: UnsafeMutablePointer<Float>
    let absence: UnsafeMutablePointer<Float>
    let bandAverage: UnsafeMutablePointer<Float>
    let presence: UnsafeMutablePointer<Float>
    let gain: UnsafeMutablePointer<Float>
    /// Every spectrum bin's gain (from its statistics bin).
    let binGain: UnsafeMutablePointer<Float>
    /// Half the width of the ~1 kHz average, in bins.
    var globalHalf: Int { Int(storedGlobalHalf) }
    private let storedGlobalHalf: UInt32
    /// The decision-directed weight of the last frame's clean estimate: 0.9 per 5.33 ms (Ephraim &
    /// Malah's value at that update rate), whatever the frame rate.
    let decisionDirected: Float
    let prioriSmoothing: Float
    let riseMinimum: Float

    init(stats: StatisticsBins, sampleRate: Double, frameLength: Int, frameSeconds: Double, arena: inout Arena) {
        self.stats = stats
        let count = stats.count
        cleanPower = arena.floats(count)
        prioriSNR = arena.floats(count)
        posterioriSNR = arena.floats(count)
        prioriAverage = arena.floats(count)
        absence = arena.floats(count)
        bandAverage = arena.floats(count)
        presence = arena.floats(count)
        gain = arena.floats(count, 1)
        binGain = arena.floats(stats.bins, 1)
        storedGlobalHalf = UInt32(max(1, min(truncatedInt(500 / (sampleRate / Double(frameLength))), 1 << 16)))
        prioriSmoothing = Float(LibM.pow(0.7, frameSeconds / 0.008))
        decisionDirected = Float(LibM.pow(0.9, frameSeconds / 0.005_333))
        riseMinimum = Float(1 - LibM.exp(-frameSeconds / 0.030))
    }

    mutating func reset() {
        cleanPower.fill(0, count: stats.count)
        prioriAverage.fill(0, count: stats.count)
        gain.fill(1, count: stats.count)
    }

    /// While the suppressor is off: no gain, and the clean estimate is the power itself.
    @inline(__always) mutating func pass(power: UnsafePointer<Float>) {
        for k in 0..<stats.count { gain[k] = 1; cleanPower[k] = power[k] }
    }

    /// This frame's gains from its power and the noise estimate (per statistics bin), spread to
    /// every bin in `binGain`. Returns the mean speech presence probability over 300 Hz - 4 kHz.
    /// The per-bin loops are branch-free so that they vectorize.
    @inline(__always) mutating func compute(power: UnsafePointer<Float>, noise: UnsafePointer<Float>, noiseScale: Float,
                                            floorGain: Float) -> Float {
        let xiMin: Float = 0.0031622777  // -25 dB
        let alpha = decisionDirected
        let beta = prioriSmoothing
        let scale = noiseScale
        let count = stats.count, speech = stats.speechBins
        // (`while` loops where the body is large: FixedBuffer.swift.)
        var k = 0
        while k < count {
            let inverseNoise = 1 / (noise[k] * scale)
            let gamma = power[k] * inverseNoise
            let xi = max(alpha * cleanPower[k] * inverseNoise + (1 - alpha) * max(gamma - 1, 0), xiMin)
            posterioriSNR[k] = gamma
            prioriSNR[k] = xi
            prioriAverage[k] = beta * prioriAverage[k] + (1 - beta) * xi
            k += 1
        }

        // A-priori speech absence from the smoothed a-priori SNR: local (3 stats.count), global (about 1 kHz), frame.
        var frameSum: Float = 0
        for k in speech { frameSum += prioriAverage[k] }
        let framePresence = Self.presence(frameSum / Float(speech.count))
        // Sliding window [k - globalHalf, k + globalHalf], cut at the ends of the spectrum; its
        // count of bins is a Float (exact at these sizes).
        let half = globalHalf
        var globalSum: Float = 0
        var globalCount: Float = 0
        for k in 0..<min(count, half + 1) { globalSum += prioriAverage[k]; globalCount += 1 }
        bandAverage[0] = globalSum / globalCount
        let entering = prioriAverage + half, leaving = prioriAverage - half - 1
        k = 1
        while k < count {
            if k < count - half { globalSum += entering[k]; globalCount += 1 }
            if k > half { globalSum -= leaving[k]; globalCount -= 1 }
            bandAverage[k] = globalSum / globalCount
            k += 1
        }
        let last = count - 1
        absence[0] = 1 - Self.presence(prioriAverage[0]) * Self.presence(bandAverage[0]) * framePresence
        absence[last] = 1 - Self.presence(prioriAverage[last]) * Self.presence(bandAverage[last]) * framePresence
        let below = prioriAverage - 1, above = prioriAverage + 1
        k = 1
        while k < last {
            let local = (below[k] + prioriAverage[k] + above[k]) * (1 / 3)
            absence[k] = 1 - Self.presence(local) * Self.presence(bandAverage[k]) * framePresence
            k += 1
        }

        let floorLog2 = FastMath.log2(floorGain)
        let floor = floorGain
        let qMax: Float = 0.95
        let rise = riseMinimum
        // Eight statistics bins at a time (`lsa` and every step below lane by lane, with the scalar
        // code's operations: bit-identical), then the rest one by one.
        k = 0
        while k < count - 7 {
            let gamma = load8(posterioriSNR + k)
            let first = Self.lsa(xi: load8(prioriSNR + k), gamma: gamma)
            let xi = lanesMax(first.gain * first.gain * gamma, SIMD8(repeating: xiMin))
            let second = Self.lsa(xi: xi, gamma: gamma)
            let lsa = second.gain, expMinusV = second.expMinusV
            store8(cleanPower + k, lsa * lsa * load8(power + k))
            let q = lanesMin(load8(absence + k), SIMD8(repeating: qMax))
            let odds: SIMD8<Float> = q / (1 - q) * (1 + xi)
            let p: SIMD8<Float> = 1 / (1 + odds * expMinusV)
            store8(presence + k, p)
            let logLSA = FastMath.log2(lanesMax(lsa, SIMD8(repeating: 1e-6)))
            let exponent: SIMD8<Float> = p * logLSA + (1 - p) * floorLog2
            let combined = lanesMax(FastMath.exp2(exponent), SIMD8(repeating: floor))
            let previous = load8(gain + k)
            let rising: SIMD8<Float> = rise + (1 - rise) * (1 - q)
            let step = SIMD8<Float>(repeating: 1).replacing(with: rising, where: combined .> previous)
            store8(gain + k, previous + step * (combined - previous))
            k += 8
        }
        while k < count {
            let gamma = posterioriSNR[k]
            // Two-step a-priori SNR (Plapous et al.): the decision-directed estimate lags a frame
            // behind onsets; one more step through the gain rule removes that lag.
            let first = Self.lsa(xi: prioriSNR[k], gamma: gamma)
            let xi = max(first.gain * first.gain * gamma, xiMin)
            let second = Self.lsa(xi: xi, gamma: gamma)
            let lsa = second.gain, expMinusV = second.expMinusV
            cleanPower[k] = lsa * lsa * power[k]
            // Speech presence probability given this frame.
            let q = min(absence[k], qMax)
            let p = 1 / (1 + q / (1 - q) * (1 + xi) * expMinusV)
            presence[k] = p
            // OM-LSA: G = G_LSA^p · G_min^(1-p), never below G_min.
            let combined = max(FastMath.exp2(p * FastMath.log2(max(lsa, 1e-6)) + (1 - p) * floorLog2), floor)
            // Gains rise at once where speech is likely (by the smoothed SNR, not by this frame alone),
            // slowly where it is not: isolated noise peaks fade in and out before they are heard.
            let previous = gain[k]
            let step = combined > previous ? rise + (1 - rise) * (1 - q) : 1
            let smoothed = previous + step * (combined - previous)
            gain[k] = smoothed
            k += 1
        }
        // Back to every bin: a band above 4 kHz gives its gain to each of its bins.
        stats.expand(gain, into: binGain)
        // The DC and Nyquist statistics bins follow their neighbours into the next frame (the mask
        // itself takes care of both bins: NoiseSuppressor.applyGate).
        gain[0] = gain[1]
        gain[last] = gain[last - 1]
        var presenceSum: Float = 0
        for k in speech { presenceSum += presence[k] }
        return presenceSum / Float(speech.count)
    }

    /// The log-spectral amplitude gain ξ/(1+ξ) · exp(E1(v)/2), v = γξ/(1+ξ), at most 1; and e^-v.
    /// E1 by Abramowitz & Stegun 5.1.53 (v <= 1) and 5.1.56 (v > 1), both branch-free.
    @inline(__always) static func lsa(xi: Float, gamma: Float) -> (gain: Float, expMinusV: Float) {
        let ratio = xi / (1 + xi)
        let v = max(ratio * gamma, 1e-6)
        let expMinusV = FastMath.exp(-min(v, 80))
        // E1 below 1 is the series minus ln v; its exp(-ln v / 2) = 1/sqrt(v) is applied outside the exp2.
        let series = ((((0.00107857 * v - 0.00976004) * v + 0.05519968) * v - 0.24991055) * v + 0.99999193) * v
            - 0.57721566
        let large = expMinusV / v * ((v + 2.334733) * v + 0.250621) / ((v + 3.330657) * v + 1.681534)
        let small = v <= 1
        let e1 = small ? series : large
        let factor = small ? 1 / LibM.sqrt(v) : 1
        return (min(ratio * factor * FastMath.exp2(e1 * 0.7213475204), 1), expMinusV)  // exp(E1/2) = 2^(E1 · log2(e) / 2)
    }

    /// `lsa` in eight lanes, each with the scalar function's operations.
    @inline(__always) static func lsa(xi: SIMD8<Float>, gamma: SIMD8<Float>) -> (gain: SIMD8<Float>, expMinusV: SIMD8<Float>) {
        let ratio = xi / (1 + xi)
        let v = lanesMax(ratio * gamma, SIMD8(repeating: 1e-6))
        let expMinusV = FastMath.exp(-lanesMin(v, SIMD8(repeating: 80)))
        var series = 0.00107857 * v - 0.00976004
        series = series * v + 0.05519968
        series = series * v - 0.24991055
        series = series * v + 0.99999193
        series = series * v - 0.57721566
        let largeNumerator = (v + 2.334733) * v + 0.250621
        let largeDenominator = (v + 3.330657) * v + 1.681534
        let large = expMinusV / v * largeNumerator / largeDenominator
        let small = v .<= 1
        let e1 = large.replacing(with: series, where: small)
        let factor = SIMD8<Float>(repeating: 1).replacing(with: 1 / LibM.sqrt(v), where: small)
        return (lanesMin(ratio * factor * FastMath.exp2(e1 * 0.7213475204), SIMD8(repeating: 1)), expMinusV)
    }

    /// Cohen's mapping of a smoothed a-priori SNR to a presence likelihood: 0 below -10 dB, 1 above -5 dB.
    @inline(__always) static func presence(_ zeta: Float) -> Float {
        let zetaMinLog2: Float = -3.321928  // log2(0.1)
        let zetaSpanLog2: Float = 1.660964  // log2(0.316 / 0.1)
        return min(max((FastMath.log2(max(zeta, 1e-10)) - zetaMinLog2) * (1 / zetaSpanLog2), 0), 1)
    }
}
