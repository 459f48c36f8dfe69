import Foundation
import HearctlCore
import HearControl
import HearDSP
import Testing
import TestSupport

@Suite struct FittingTests {
    static let mildFlat = try! Audiogram(parsing: "250:25,500:25,1000:30,2000:30,4000:35,8000:35")
    static let moderateSloping = try! Audiogram(parsing: "250:30,500:35,1000:45,2000:55,3000:60,4000:65,6000:70,8000:70")
    static let severeHighFrequency = try! Audiogram(parsing: "250:20,500:25,1000:40,2000:70,3000:85,4000:90,6000:95,8000:95")
    static let audiograms = [("mild flat", mildFlat), ("moderate sloping", moderateSloping),
                             ("severe high-frequency", severeHighFrequency)]

    /// Byrne & Dillon (1986) as published: k(f) at the audiogram frequencies (8 kHz as 6 kHz).
    static let nalRk: [Double: Double] = [250: -17, 500: -8, 1000: 1, 2000: -1, 3000: -2, 4000: -2, 6000: -2, 8000: -2]

    @Test func nalRAndHalfGainFollowThePublishedFormulaAtEveryAudiogramFrequency() throws {
        for (name, audiogram) in Self.audiograms {
            let h = Dictionary(uniqueKeysWithValues: Audiogram.frequencies.map { ($0, audiogram.threshold(at: $0)) })
            let x = 0.05 * (h[500]! + h[1000]! + h[2000]!)
            for f in Audiogram.frequencies {
                let nalR = x + 0.31 * h[f]! + Self.nalRk[f]!
                #expect(abs(Fitting.formulaGain(.nalR, audiogram, at: f) - nalR) < 1e-9, "\(name) \(f) Hz")
                #expect(abs(Fitting.prescribedGain(.nalR, audiogram, at: f) - max(0, nalR)) < 1e-9, "\(name) \(f) Hz")
                #expect(abs(Fitting.prescribedGain(.halfGain, audiogram, at: f) - h[f]! / 2) < 1e-9, "\(name) \(f) Hz")
            }
        }
        // A worked number: moderate sloping, 2 kHz: 0.05 (35 + 45 + 55) + 0.31 * 55 - 1 = 22.8 dB.
        #expect(abs(Fitting.prescribedGain(.nalR, Self.moderateSloping, at: 2000) - 22.8) < 1e-9)
    }

    @Test func missingFrequenciesAreInterpolatedInLogFrequency() throws {
        let audiogram = try Audiogram(parsing: "250:20, 1000:40, 4000:60")
        #expect(audiogram.threshold(at: 500) == 30)       // one octave of two
        #expect(abs(audiogram.threshold(at: 2000) - 50) < 1e-9)
        #expect(abs(audiogram.threshold(at: 3000) - (50 + 10 * log2(1.5))) < 1e-9)
        #expect(audiogram.threshold(at: 8000) == 60)      // beyond the last point: held
        #expect(audiogram.threshold(at: 125) == 20)
        #expect(throws: Audiogram.ParseError.badPoint("1000-40")) { try Audiogram(parsing: "500:30,1000-40") }
        #expect(throws: Audiogram.ParseError.frequencyOutOfRange(20000)) { try Audiogram(parsing: "20000:30") }
        #expect(throws: Audiogram.ParseError.thresholdOutOfRange(200)) { try Audiogram(parsing: "1000:200") }
    }

    @Test func compressionRatiosGrowWithTheLoss() {
        let ratios = stride(from: 0.0, through: 120, by: 10).map { Fitting.compressionRatio(thresholdDB: $0) }
        #expect(zip(ratios, ratios.dropFirst()).allSatisfy { $0 <= $1 })
        #expect(Fitting.compressionRatio(thresholdDB: 20) == 1)
        #expect(Fitting.compressionRatio(thresholdDB: 60) == 2)
        #expect(Fitting.compressionRatio(thresholdDB: 100) == 3)
        let fit = Fitting.fit(Self.severeHighFrequency, rule: .nalR)
        #expect(fit.ratio.first! < fit.ratio.last!)
    }

    /// The gain (dB) the chain delivers at each band centre, per ear: six tones at the band
    /// centres, -50 dBFS each, run through it together (as speech fills every band at once), each
    /// tone's level read back by a least-squares fit over whole periods of all of them.
    static func deliveredGains(_ values: ParameterValues, rate: Double = 48000) -> [(Double, Double)] {
        // Noise suppression off: steady tones are exactly what it is built to remove.
        var settings = values
        settings[.nsEnable] = 0
        var chain = Chain(sampleRate: rate, channels: 2, values: settings)
        let amplitude = pow(10, -50.0 / 20)
        let count = Int(0.3 * rate)
        let tones = (0..<count).map { n in
            Float(Fitting.bandCentres.reduce(0.0) { $0 + amplitude * sin(2 * .pi * $1 * Double(n) / rate + $1) })
        }
        let (left, right) = process(&chain, tones, tones)
        let tail = (count - Int(0.2 * rate))..<count  // 200 ms: a whole number of periods of every centre
        return Fitting.bandCentres.map { centre in
            let input = Signals.amplitude(of: tones[tail], frequency: centre, rate: rate)
            return (Signals.dB(Signals.amplitude(of: left[tail], frequency: centre, rate: rate) / input),
                    Signals.dB(Signals.amplitude(of: right[tail], frequency: centre, rate: rate) / input))
        }
    }

    @Test(arguments: FittingRule.allCases)
    func deliveredGainIsWithin2dBOfTheTargetForThreeAudiogramsPerEar(rule: FittingRule) {
        var worst = 0.0
        for index in 0..<3 {
            // Each audiogram once on each ear, against a different one on the other.
            let (leftName, left) = Self.audiograms[index], (rightName, right) = Self.audiograms[(index + 1) % 3]
            let leftFit = Fitting.fit(left, rule: rule), rightFit = Fitting.fit(right, rule: rule)
            var values = ParameterValues()
            Fitting.apply(left: leftFit, right: rightFit, to: &values)
            let delivered = Self.deliveredGains(values)
            for band in 0..<6 {
                let (l, r) = delivered[band]
                #expect(abs(l - leftFit.targetDB[band]) <= 2,
                        "\(rule) \(leftName) left, \(Fitting.bandCentres[band]) Hz: \(l) dB for \(leftFit.targetDB[band]) dB")
                #expect(abs(r - rightFit.targetDB[band]) <= 2,
                        "\(rule) \(rightName) right, \(Fitting.bandCentres[band]) Hz: \(r) dB for \(rightFit.targetDB[band]) dB")
                worst = max(worst, abs(l - leftFit.targetDB[band]), abs(r - rightFit.targetDB[band]))
            }
            print("\(rule) left \(leftName): target", leftFit.targetDB.map { String(format: "%.1f", $0) },
                  "delivered", delivered.map { String(format: "%.1f", $0.0) })
            print("\(rule) right \(rightName): target", rightFit.targetDB.map { String(format: "%.1f", $0) },
                  "delivered", delivered.map { String(format: "%.1f", $0.1) })
        }
        print("\(rule): delivered gain within \(worst) dB of the target")
    }

    @Test func theCapHoldsTheSevereFitAndSaysSo() {
        let fit = Fitting.fit(Self.severeHighFrequency, rule: .nalR, maxGainDB: 30)
        // 4 kHz: 0.05 (25 + 40 + 70) + 0.31 * 90 - 2 = 32.65 dB prescribed, 30 delivered.
        #expect(abs(fit.prescribedDB[4] - 32.65) < 1e-9)
        #expect(fit.targetDB[4] == 30)
        #expect(fit.capped[4] && fit.capped[5] && !fit.capped[0])
        #expect(fit.bandGainDB.allSatisfy { $0 <= 30 })
        let roomy = Fitting.fit(Self.severeHighFrequency, rule: .nalR, maxGainDB: 40)
        #expect(!roomy.hitsCap)
    }

    // MARK: - Safety: the maximum output and the gain cap hold for every setting.

    /// Random values over every parameter's whole range (seeded), with the extremes weighted in.
    static func randomSettings(_ random: inout SeededRandom) -> ParameterValues {
        let bounds = ParameterBounds()
        var values = ParameterValues()
        for parameter in Parameter.allCases {
            let spec = parameter.spec
            let u = Float(random.next() % 1000) / 999
            let pick = random.next() % 4
            let raw = pick == 0 ? spec.maximum : (pick == 1 ? spec.minimum : spec.minimum + u * (spec.maximum - spec.minimum))
            values[parameter] = bounds.clamp(raw, parameter)
        }
        return values
    }

    @Test func noSettingPushesAnyOutputAboveTheMaximumOutput() {
        let rate = 48000.0
        var random = SeededRandom(seed: 66)
        let loud = Signals.speechLike(rate: rate, seconds: 0.4, peak: 4, seed: 8)
        var worstMargin = -100.0
        for trial in 0..<40 {
            var values = Self.randomSettings(&random)
            if trial % 4 == 0 { values[.limitEnable] = 0 }
            if trial % 4 == 1 { values[.bypass] = 1 }
            if trial % 4 == 2 {
                var fitted = values
                Fitting.apply(left: Fitting.fit(Self.severeHighFrequency, rule: .nalR, maxGainDB: 40),
                              right: Fitting.fit(Self.mildFlat, rule: .halfGain, maxGainDB: 40), maxGainDB: 40, to: &fitted)
                values = fitted
            }
            var chain = Chain(sampleRate: rate, channels: 2, values: ParameterValues())
            // Settings change mid-signal too, as a `hearctl set` would.
            _ = process(&chain, Array(loud[..<9600]), Array(loud[..<9600]))
            chain.apply(values)
            let (left, right) = process(&chain, Array(loud[9600...]), Array(loud[9600...]).map { -$0 })
            #expect((left + right).allSatisfy { $0.isFinite }, "trial \(trial)")
            let mpo = pow(10, Double(values[.mbMPO]) / 20)
            let peak = Double(max(Signals.peak(left[...]), Signals.peak(right[...])))
            #expect(peak <= mpo, "trial \(trial): peak \(Signals.dB(peak)) dBFS over MPO \(values[.mbMPO])")
            worstMargin = max(worstMargin, Signals.dB(peak / mpo))
        }
        print("MPO: highest output relative to the MPO over 40 random settings: \(worstMargin) dB")
    }

    @Test func noSettingPushesTheTotalGainAboveTheCap() {
        let rate = 48000.0
        var random = SeededRandom(seed: 77)
        var worstOver = -100.0
        let frequencies: [Double] = [150, 250, 400, 500, 700, 1000, 1400, 2000, 3000, 4000, 5600, 8000, 11000]
        for trial in 0..<24 {
            var values = Self.randomSettings(&random)
            // Low-level tones, so neither the limiter nor the MPO hides the gain.
            values[.bypass] = 0
            values[.mbMPO] = -1
            values[.limitCeiling] = -1
            if trial % 3 == 0 {
                // Everything that adds gain at its top: the cap has to do all the work.
                for parameter in [Parameter.gain, .eqLowShelfGain, .eqPeak1Gain, .eqPeak2Gain, .eqPeak3Gain, .eqHighShelfGain,
                                  .compMakeup] { values[parameter] = parameter.spec.maximum }
                for band in 0..<6 {
                    values[.mbGain(ear: 0, band: band)] = 40; values[.mbGain(ear: 1, band: band)] = 40
                }
                values[.mbEnable] = trial % 2 == 0 ? 1 : 0
                values[.mbExpansion] = -90
            }
            let cap = Double(values[.mbMaxGain])
            let amplitude = Float(pow(10, (-75.0 + 0.0) / 20))
            for frequency in frequencies {
                var chain = Chain(sampleRate: rate, channels: 2, values: values)
                let tone = Signals.sine(frequency: frequency, rate: rate, seconds: 0.12, amplitude: amplitude)
                let (left, right) = process(&chain, tone, tone)
                let tail = (tone.count / 2)...
                let input = Signals.amplitude(of: tone[tail], frequency: frequency, rate: rate)
                let gain = max(Signals.dB(Signals.amplitude(of: left[tail], frequency: frequency, rate: rate) / input),
                               Signals.dB(Signals.amplitude(of: right[tail], frequency: frequency, rate: rate) / input))
                #expect(gain <= cap + 0.05, "trial \(trial), \(frequency) Hz: \(gain) dB over the cap of \(cap) dB")
                worstOver = max(worstOver, gain - cap)
            }
        }
        print("gain cap: highest gain relative to the cap over 24 random settings x 13 tones: \(worstOver) dB")
    }

    @Test func theCrossoverOvershootIsSmall() {
        let overshoot = Crossover(sampleRate: 48000).overshootBoundDB()
        print("crossover overshoot bound: \(overshoot) dB")
        #expect(overshoot >= 0 && overshoot < 3)
    }
}
