// Whether a talker is present at all, for the noise suppressor's gate: while nobody speaks, the
// whole mask goes to the floor, so noise that the per-bin rule lets through (random peaks of steady
// noise, key clicks) goes as well.
//
// Evidence, once per statistics update, from the suppressor's power and noise estimates:
// - level: in some sub-band (300 Hz-1 kHz, 1-2, 2-4, 4-8 kHz) the bins' mean power-to-noise ratio
//   exceeds `levelRatio`;
// - voicing: the autocorrelation of the 200 Hz-2 kHz band (an inverse FFT of that band's power,
//   divided by the analysis window's own autocorrelation) peaks at a pitch lag (2.5 ms up to what
//   the frame resolves, about 10 ms) above `voicedPeak`;
// - a vowel's onset: before the frame holds enough periods to show a pitch, most of what stands
//   above the noise lies below 1 kHz (the first formant) and clearly so (`onsetRatio`).
// An onset, or voicing with level and the same pitch on two updates in a row, opens the gate at
// once; after the last of either it holds for `holdSeconds`, longer than the pauses inside a phrase,
// then closes over 100 ms. Level alone neither opens nor holds it: key clicks come in runs longer
// than any fricative and more often than the hold lasts. The price: a phrase that begins with a
// voiceless consonant after a pause loses the consonant's start, until its vowel opens the gate.
// Tuned on `make eval`: key clicks alone lose ns.reduction, while PESQ and STOI
// of the noisy speech stay where they were without the gate.

public struct SpeechActivity: ~Copyable {
    /// 0 (closed: nobody speaks) ... 1 (open). Closed at the start: nobody has spoken yet, and a
    /// voice opens it within a pitch period or two.
    public private(set) var openness: Float = 0
    /// The last update's normalized autocorrelation peak at a pitch lag (0...1).
    public private(set) var periodicity: Float = 0
    /// That peak's lag in samples, refined between the correlation's lags by a parabola through
    /// the peak and its neighbours (the learned model's per-band pitch correlation reads it).
    public private(set) var pitchSamples: Float = 0

    let levelRatio: Float = 2.5
    let onsetRatio: Float = 4
    let voicedPeak: Float = 0.6
    /// Updates in a row that must show the same pitch: those within 10.7 ms (a vowel holds its
    /// pitch that long; steady noise's correlation rarely peaks at one lag twice over that span).
    var voicedUpdates: Int { Int(storedVoicedUpdates) }
    static let voicedSeconds = 0.0107
    static let holdSeconds = 0.3
    static let closeSeconds = 0.1

    let fft: RealFFT
    let real: UnsafeMutablePointer<Float>
    let imaginary: UnsafeMutablePointer<Float>
    let correlation: UnsafeMutablePointer<Float>
    /// Per correlation lag: the window's autocorrelation at lag 0 over the one at this lag.
    let lagNormalization: UnsafeMutablePointer<Float>
    var voicingLow: Int { Int(storedVoicingLow) }
    var voicingHigh: Int { Int(storedVoicingHigh) }
    var lagFirst: Int { Int(storedLagFirst) }
    var lagLast: Int { Int(storedLagLast) }
    /// The pitch's finer correlation (`findPitch`): its transform, buffers, per-lag normalization,
    /// lag range and samples per lag.
    let fineFFT: RealFFT
    let fineReal: UnsafeMutablePointer<Float>
    let fineImaginary: UnsafeMutablePointer<Float>
    let fineCorrelation: UnsafeMutablePointer<Float>
    let fineNormalization: UnsafeMutablePointer<Float>
    var fineFirst: Int { Int(storedFineFirst) }
    var fineLast: Int { Int(storedFineLast) }
    let fineSamplesPerLag: Float
    /// Sub-band edges (statistics bins), `bandCount + 1` of them; band 0 is the low band of the onset rule.
    let bandEdges: UnsafeMutablePointer<UInt32>
    /// Spectrum bins per statistics bin.
    let statsWidth: UnsafeMutablePointer<Float>
    static let bandCount = 4
    var holdUpdates: Int { Int(storedHoldUpdates) }
    let closeStep: Float
    // Sizes, lags and counts in 32 bits: loops up to them and arithmetic on them need no overflow
    // check (Unchecked.swift).
    private let storedVoicedUpdates: UInt32, storedVoicingLow: UInt32, storedVoicingHigh: UInt32,
                storedLagFirst: UInt32, storedLagLast: UInt32, storedFineFirst: UInt32, storedFineLast: UInt32,
                storedHoldUpdates: UInt32

    /// Updates in a row that were voiced at the same pitch (counted up to `voicedUpdates`).
    var voicedRun = 0
    /// The last update's lag, in 32 bits like the lags it is compared with.
    var pitchLag: UInt32 = 0
    /// Updates since the last evidence (counted up to `holdUpdates`).
    var sinceEvidence = 0

    /// `frameLength`, `analysisWindow` and the statistics bins are the suppressor's;
    /// `updateSeconds` is the time between updates.
    init(sampleRate: Double, frameLength: Int, analysisWindow: UnsafePointer<Float>, updateSeconds: Double,
         stats: StatisticsBins, arena: inout Arena) {
        let n = held(frameLength)
        let binWidth = sampleRate / Double(max(n, 1))
        let bins = n / 2 + 1
        let statsBins = stats.count
        // Every lag and count below is a few thousand at most: `held` shows the optimizer so.
        let lastBin = bins - 1
        @inline(__always) func bin(_ hz: Double) -> Int { held(max(1, min(lastBin, truncatedInt(hz / binWidth + 0.5)))) }
        /// The first statistics bin that passes `test`, else `statsBins`.
        func firstStatsBin(where test: (Int) -> Bool) -> Int {
            for j in 0..<statsBins where test(j) { return j }
            return statsBins
        }
        // The voicing band reads statistics bins as spectrum bins, so it stays where they are one bin
        // wide (below 4 kHz at every rate).
        let singleBins = firstStatsBin { stats.binsOf($0).count > 1 }
        let voicingLow = bin(200)
        let voicingHigh = held(max(voicingLow + 1, min(bin(2000), singleBins)))
        // (`held` again inside: the optimizer does not carry a captured value's range in.)
        func windowCorrelation(_ lag: Int) -> Double {
            let length = held(n), lag = held(lag), shifted = analysisWindow + lag
            var sum = 0.0, i = 0
            while i < length - lag {
                sum += Double(analysisWindow[i]) * Double(shifted[i])
                i += 1
            }
            return sum
        }
        let zero = windowCorrelation(0)
        /// For the correlation from a transform of `size` (lag j is j · n / size samples): its lags
        /// from 2.5 ms to half the transform, and per lag the window's autocorrelation at lag 0 over
        /// the one at that lag, into `normalization`.
        func lags(size: Int, normalization: UnsafeMutablePointer<Float>) -> (first: Int, last: Int) {
            let length = held(n), size = held(size), step = Double(length) / Double(max(size, 1))
            for j in 0..<size / 2 + 1 {
                let lag = min(length - 1, held(truncatedInt(Double(j) * step + 0.5)))
                normalization[j] = Float(zero / max(windowCorrelation(lag), zero * 1e-3))
            }
            let first = held(max(1, held(truncatedInt(0.0025 * sampleRate / step)) + 1))
            return (first, held(max(first, size / 2 - 1)))
        }
        // Long enough to hold the band.
        fft = RealFFT(size: 2 * voicingHigh + 2, arena: &arena)
        let size = held(fft.size)
        real = arena.floats(size / 2 + 1)
        imaginary = arena.floats(size / 2 + 1)
        correlation = arena.floats(size)
        lagNormalization = arena.floats(size / 2 + 1)
        let (lagFirst, lagLast) = lags(size: size, normalization: lagNormalization)
        fineFFT = RealFFT(size: 4 * size, arena: &arena)
        let fineSize = held(fineFFT.size)
        fineReal = arena.floats(fineSize / 2 + 1)
        fineImaginary = arena.floats(fineSize / 2 + 1)
        fineCorrelation = arena.floats(fineSize)
        fineNormalization = arena.floats(fineSize / 2 + 1)
        fineSamplesPerLag = Float(Double(n) / Double(max(fineSize, 1)))
        let (fineFirst, fineLast) = lags(size: fineSize, normalization: fineNormalization)
        // In statistics bins: the first whose spectrum bins start at or above each edge.
        let edgeHz: InlineArray<5, Double> = [300, 1000, 2000, 4000, 8000]
        bandEdges = arena.take(Self.bandCount + 1, UInt32(0))
        for i in 0..<Self.bandCount + 1 {
            let edge = bin(edgeHz[unchecked: i])
            bandEdges[i] = UInt32(truncatingIfNeeded: firstStatsBin { stats.binsOf($0).lowerBound >= edge })
        }
        statsWidth = arena.floats(statsBins)
        for j in 0..<statsBins { statsWidth[j] = Float(stats.binsOf(j).count) }
        storedVoicingLow = UInt32(truncatingIfNeeded: voicingLow)
        storedVoicingHigh = UInt32(truncatingIfNeeded: voicingHigh)
        storedLagFirst = UInt32(truncatingIfNeeded: lagFirst)
        storedLagLast = UInt32(truncatingIfNeeded: lagLast)
        storedFineFirst = UInt32(truncatingIfNeeded: fineFirst)
        storedFineLast = UInt32(truncatingIfNeeded: fineLast)
        storedHoldUpdates = UInt32(truncatingIfNeeded: held(max(1, truncatedInt(Self.holdSeconds / updateSeconds))))
        storedVoicedUpdates = UInt32(truncatingIfNeeded: held(max(2, truncatedInt(Self.voicedSeconds / updateSeconds + 0.5))))
        closeStep = Float(updateSeconds / Self.closeSeconds)
    }

    @_noLocks public mutating func reset() {
        openness = 0
        periodicity = 0
        pitchSamples = 0
        voicedRun = 0
        pitchLag = 0
        sinceEvidence = 0
    }

    /// The pitch period for the learned model's per-band pitch correlation, in samples, into
    /// `pitchSamples`; after `update`, from the same power. The gate's correlation has lags 0.24 ms
    /// apart at 48 kHz, a whole period at 4 kHz: this one comes from a transform four times as long
    /// (the band's power zero-padded), and the peak is placed between its lags by a parabola
    /// through it and its neighbours. The first lag whose correlation is a local maximum within
    /// 30 % of the highest counts (the highest is often a multiple of the period: normalized by
    /// the window, long lags are lifted, and held at lag 0's value).
    @_noLocks public mutating func findPitch(power: UnsafePointer<Float>) {
        copyVoicingBand(power, into: fineReal)
        fineFFT.inverse(real: fineReal, imaginary: fineImaginary, output: fineCorrelation)
        let ceiling = fineCorrelation[0]
        let last = fineFFT.size / 2
        let first = fineFirst, correlation = fineCorrelation, normalization = fineNormalization
        func value(_ j: Int) -> Float { min(correlation[j] * normalization[j], ceiling) }
        var peak: Float = 0, peakLag = first
        var j = first
        while j <= fineLast {
            let here = value(j)
            if here > peak { peak = here; peakLag = j }
            j += 1
        }
        var lag = peakLag
        j = first
        while j < peakLag {
            let here = value(j), before = value(j - 1), after = value(j + 1)
            if here >= 0.7 * peak && here >= before && here >= after {
                lag = j
                break
            }
            j += 1
        }
        // The parabola reads the unclamped correlation.
        let next = min(lag + 1, last)
        let here = correlation[lag] * normalization[lag]
        let before = correlation[lag - 1] * normalization[lag - 1]
        let after = correlation[next] * normalization[next]
        let curvature = before - 2 * here + after
        let offset = curvature < 0 ? min(max(0.5 * (before - after) / curvature, -0.5), 0.5) : 0
        pitchSamples = (Float(lag) + offset) * fineSamplesPerLag
    }

    /// The voicing band of `power` into `real` (zero elsewhere, as at init).
    @inline(__always) func copyVoicingBand(_ power: UnsafePointer<Float>, into real: UnsafeMutablePointer<Float>) {
        var k = voicingLow
        while k < voicingHigh {
            real[k] = power[k]
            k += 1
        }
    }

    /// One update from the power and the noise estimate of every statistics bin.
    @_noLocks public mutating func update(power: UnsafePointer<Float>, noise: UnsafePointer<Float>) {
        var level = false, lowLevel = false
        var lowExcess: Float = 0, highExcess: Float = 0, voicingExcess: Float = 0
        for b in 0..<Self.bandCount {
            var k = Int(bandEdges[b])
            let to = Int(bandEdges[b + 1])
            if to <= k { continue }
            var p: Float = 0, q: Float = 0, ratios: Float = 0
            var width: Float = 0
            while k < to {
                p += statsWidth[k] * power[k]
                q += statsWidth[k] * noise[k]
                ratios += statsWidth[k] * power[k] / noise[k]
                width += statsWidth[k]
                k += 1
            }
            // The mean of the bins' ratios rather than the ratio of sums: in coloured noise a few
            // bins carry most of a band's power, and their sum alone fluctuates far more.
            let ratio = ratios / width
            if ratio > levelRatio { level = true }
            let excess = max(p - q, 0)
            if b == 0 {
                lowLevel = ratio > onsetRatio
                lowExcess = excess
            } else {
                highExcess += excess
            }
            if b < 2 { voicingExcess += excess }
        }
        let onset = lowLevel && lowExcess >= highExcess

        copyVoicingBand(power, into: real)
        fft.inverse(real: real, imaginary: imaginary, output: correlation)
        var peak: Float = 0, lag = lagFirst
        var j = lagFirst
        while j <= lagLast {
            let value = correlation[j] * lagNormalization[j]
            if value > peak { peak = value; lag = j }
            j += 1
        }
        periodicity = correlation[0] > 0 ? min(peak / correlation[0], 1) : 0

        // A voice keeps its pitch from one update to the next (within 4 %) and puts at least a third
        // of what stands above the noise below 2 kHz. The correlation of a burst of a few ms, from so
        // few samples, can peak high at some lag too, but a click's energy lies mostly higher.
        let voiced = level && periodicity >= voicedPeak && voicingExcess >= 0.5 * (lowExcess + highExcess - voicingExcess)
        let lastLag = Int(pitchLag)
        let samePitch = (lag > lastLag ? lag - lastLag : lastLag - lag) * 25 <= max(lag, 25)
        // Counted up to what opens the gate, which is all that is asked of the count.
        let run = voicedRun < voicedUpdates ? voicedRun + 1 : voicedRun
        voicedRun = voiced ? (voicedRun > 0 && samePitch ? run : 1) : 0
        pitchLag = UInt32(truncatingIfNeeded: lag)
        if onset || voicedRun >= voicedUpdates {
            sinceEvidence = 0
            openness = 1
        } else if sinceEvidence < holdUpdates {
            sinceEvidence += 1
        } else {
            openness = max(openness - closeStep, 0)
        }
    }
}
