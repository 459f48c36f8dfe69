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
    let voicedUpdates: Int
    static let voicedSeconds = 0.0107
    static let holdSeconds = 0.3
    static let closeSeconds = 0.1

    let fft: RealFFT
    let real: UnsafeMutablePointer<Float>
    let imaginary: UnsafeMutablePointer<Float>
    let correlation: UnsafeMutablePointer<Float>
    /// Per correlation lag: the window's autocorrelation at lag 0 over the one at this lag.
    let lagNormalization: UnsafeMutablePointer<Float>
    let voicingLow: Int, voicingHigh: Int
    let lagFirst: Int, lagLast: Int
    /// The pitch's finer correlation (`findPitch`): its transform, buffers, per-lag normalization,
    /// lag range and samples per lag.
    let fineFFT: RealFFT
    let fineReal: UnsafeMutablePointer<Float>
    let fineImaginary: UnsafeMutablePointer<Float>
    let fineCorrelation: UnsafeMutablePointer<Float>
    let fineNormalization: UnsafeMutablePointer<Float>
    let fineFirst: Int, fineLast: Int
    let fineSamplesPerLag: Float
    /// Sub-band edges (statistics bins), `bandCount + 1` of them; band 0 is the low band of the onset rule.
    let bandEdges: UnsafeMutablePointer<Int>
    /// Spectrum bins per statistics bin.
    let statsWidth: UnsafeMutablePointer<Float>
    let bandCount: Int
    let holdUpdates: Int
    let closeStep: Float

    var voicedRun = 0
    var pitchLag = 0
    var sinceEvidence = 0

    /// `frameLength`, `analysisWindow` and the statistics bins (StatisticsBins.first) are
    /// the suppressor's; `updateSeconds` is the time between updates.
    init(sampleRate: Double, frameLength n: Int, analysisWindow: UnsafePointer<Float>, updateSeconds: Double,
         statsFirst: UnsafePointer<Int>, statsBins: Int, arena: inout Arena) {
        let binWidth = sampleRate / Double(n)
        let bins = n / 2 &+ 1
        func bin(_ hz: Double) -> Int { max(1, min(bins &- 1, truncatedInt(hz / binWidth + 0.5))) }
        /// The first statistics bin that passes `test`, else `statsBins`.
        func firstStatsBin(where test: (Int) -> Bool) -> Int {
            for j in upTo(statsBins) where test(j) { return j }
            return statsBins
        }
        // The voicing band reads statistics bins as spectrum bins, so it stays where they are one bin
        // wide (below 4 kHz at every rate).
        let singleBins = firstStatsBin { statsFirst[$0 &+ 1] &- statsFirst[$0] > 1 }
        voicingLow = bin(200)
        voicingHigh = max(voicingLow &+ 1, min(bin(2000), singleBins))
        // Long enough to hold the band: lag j of the correlation is j · n / size samples.
        fft = RealFFT(size: 2 &* voicingHigh &+ 2, arena: &arena)
        let size = fft.size
        real = arena.floats(size / 2 &+ 1)
        imaginary = arena.floats(size / 2 &+ 1)
        correlation = arena.floats(size)
        let step = Double(n) / Double(size)
        lagFirst = max(1, truncatedInt(0.0025 * sampleRate / step) &+ 1)
        lagLast = max(lagFirst, size / 2 &- 1)
        lagNormalization = arena.floats(size / 2 &+ 1)
        func windowCorrelation(_ lag: Int) -> Double {
            var sum = 0.0
            for i in upTo(n &- lag) { sum += Double(analysisWindow[i]) * Double(analysisWindow[i &+ lag]) }
            return sum
        }
        let zero = windowCorrelation(0)
        for j in upTo(size / 2 &+ 1) {
            let lag = min(n &- 1, truncatedInt(Double(j) * step + 0.5))
            lagNormalization[j] = Float(zero / max(windowCorrelation(lag), zero * 1e-3))
        }
        fineFFT = RealFFT(size: 4 &* size, arena: &arena)
        let fineSize = fineFFT.size
        fineReal = arena.floats(fineSize / 2 &+ 1)
        fineImaginary = arena.floats(fineSize / 2 &+ 1)
        fineCorrelation = arena.floats(fineSize)
        fineNormalization = arena.floats(fineSize / 2 &+ 1)
        let fineStep = Double(n) / Double(fineSize)
        fineSamplesPerLag = Float(fineStep)
        fineFirst = max(1, truncatedInt(0.0025 * sampleRate / fineStep) &+ 1)
        fineLast = max(fineFirst, fineSize / 2 &- 1)
        for j in upTo(fineSize / 2 &+ 1) {
            let lag = min(n &- 1, truncatedInt(Double(j) * fineStep + 0.5))
            fineNormalization[j] = Float(zero / max(windowCorrelation(lag), zero * 1e-3))
        }
        // In statistics bins: the first whose spectrum bins start at or above each edge.
        let edgeHz: InlineArray<5, Double> = [300, 1000, 2000, 4000, 8000]
        bandCount = 4
        bandEdges = arena.ints(5)
        for i in upTo(5) {
            let edge = bin(edgeHz[unchecked: i])
            bandEdges[i] = firstStatsBin { statsFirst[$0] >= edge }
        }
        statsWidth = arena.floats(statsBins)
        for j in upTo(statsBins) { statsWidth[j] = Float(statsFirst[j &+ 1] &- statsFirst[j]) }
        holdUpdates = max(1, truncatedInt(Self.holdSeconds / updateSeconds))
        voicedUpdates = max(2, truncatedInt(Self.voicedSeconds / updateSeconds + 0.5))
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
        for k in loop(from: voicingLow, upTo: voicingHigh) { fineReal[k] = power[k] }
        fineFFT.inverse(real: fineReal, imaginary: fineImaginary, output: fineCorrelation)
        let ceiling = fineCorrelation[0]
        let last = fineFFT.size / 2
        var peak: Float = 0, peakLag = fineFirst
        for j in loop(from: fineFirst, upTo: fineLast &+ 1) {
            let value = min(fineCorrelation[j] * fineNormalization[j], ceiling)
            if value > peak { peak = value; peakLag = j }
        }
        var lag = peakLag
        for j in loop(from: fineFirst, upTo: peakLag) {
            let here = min(fineCorrelation[j] * fineNormalization[j], ceiling)
            let before = min(fineCorrelation[j &- 1] * fineNormalization[j &- 1], ceiling)
            let after = min(fineCorrelation[j &+ 1] * fineNormalization[j &+ 1], ceiling)
            if here >= 0.7 * peak && here >= before && here >= after {
                lag = j
                break
            }
        }
        let next = min(lag &+ 1, last)
        let here = fineCorrelation[lag] * fineNormalization[lag]
        let before = fineCorrelation[lag &- 1] * fineNormalization[lag &- 1]
        let after = fineCorrelation[next] * fineNormalization[next]
        let curvature = before - 2 * here + after
        let offset = curvature < 0 ? min(max(0.5 * (before - after) / curvature, -0.5), 0.5) : 0
        pitchSamples = (Float(lag) + offset) * fineSamplesPerLag
    }

    /// One update from the power and the noise estimate of every statistics bin.
    @_noLocks public mutating func update(power: UnsafePointer<Float>, noise: UnsafePointer<Float>) {
        var level = false, lowLevel = false
        var lowExcess: Float = 0, highExcess: Float = 0, voicingExcess: Float = 0
        for b in upTo(bandCount) {
            let from = bandEdges[b], to = bandEdges[b &+ 1]
            if to <= from { continue }
            var p: Float = 0, q: Float = 0, ratios: Float = 0
            var width: Float = 0
            for k in loop(from: from, upTo: to) {
                p += statsWidth[k] * power[k]
                q += statsWidth[k] * noise[k]
                ratios += statsWidth[k] * power[k] / noise[k]
                width += statsWidth[k]
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

        for k in loop(from: voicingLow, upTo: voicingHigh) { real[k] = power[k] }
        fft.inverse(real: real, imaginary: imaginary, output: correlation)
        var peak: Float = 0, lag = lagFirst
        for j in loop(from: lagFirst, upTo: lagLast &+ 1) {
            let value = correlation[j] * lagNormalization[j]
            if value > peak { peak = value; lag = j }
        }
        periodicity = correlation[0] > 0 ? min(peak / correlation[0], 1) : 0

        // A voice keeps its pitch from one update to the next (within 4 %) and puts at least a third
        // of what stands above the noise below 2 kHz. The correlation of a burst of a few ms, from so
        // few samples, can peak high at some lag too, but a click's energy lies mostly higher.
        let voiced = level && periodicity >= voicedPeak && voicingExcess >= 0.5 * (lowExcess + highExcess - voicingExcess)
        let samePitch = (lag > pitchLag ? lag &- pitchLag : pitchLag &- lag) &* 25 <= max(lag, 25)
        voicedRun = voiced ? (voicedRun > 0 && samePitch ? voicedRun &+ 1 : 1) : 0
        pitchLag = lag
        if onset || voicedRun >= voicedUpdates {
            sinceEvidence = 0
            openness = 1
        } else if sinceEvidence < holdUpdates {
            sinceEvidence &+= 1
        } else {
            openness = max(openness - closeStep, 0)
        }
    }
}
