import Foundation
import HearctlCore
import HearControl
import HearDSP
import Testing
import TestSupport

@Suite struct MultibandCompressorTests {
    /// The hearing stage on, every band at 0 dB and 1:1, then the given changes.
    static func settings(_ changes: [Parameter: Float] = [:]) -> ParameterValues {
        var values = ParameterValues()
        values[.mbEnable] = 1
        values[.nsEnable] = 0  // for the chain tests: steady tones are what a noise suppressor removes
        for (parameter, value) in changes { values[parameter] = value }
        return values
    }

    static func stage(_ values: ParameterValues, rate: Double = 48000, channels: Int = 2) -> MultibandCompressor {
        MultibandCompressor(sampleRate: rate, channels: channels, ticksPerSecond: rate / 64, values: values)
    }

    /// Runs `left` and `right` through the stage in blocks of 64 (one control tick each).
    static func run(_ stage: inout MultibandCompressor, _ left: [Float], _ right: [Float]) -> ([Float], [Float]) {
        var l = left, r = right
        l.withUnsafeMutableBufferPointer { lp in
            r.withUnsafeMutableBufferPointer { rp in
                var offset = 0
                while offset < lp.count {
                    let n = min(64, lp.count - offset)
                    stage.tick()
                    stage.process(lp.baseAddress! + offset, rp.baseAddress! + offset, count: n)
                    offset += n
                }
            }
        }
        return (l, r)
    }

    /// Gain (dB) of a tone at `frequency` and `amplitude` through the stage, per channel, once settled.
    static func toneGainDB(_ stage: inout MultibandCompressor, frequency: Double, amplitude: Float,
                           rate: Double = 48000, seconds: Double = 0.25) -> (Double, Double) {
        let tone = Signals.sine(frequency: frequency, rate: rate, seconds: seconds, amplitude: amplitude)
        let (l, r) = run(&stage, tone, tone)
        let tail = (tone.count / 2)...
        let reference = Signals.amplitude(of: tone[tail], frequency: frequency, rate: rate)
        return (Signals.dB(Signals.amplitude(of: l[tail], frequency: frequency, rate: rate) / reference),
                Signals.dB(Signals.amplitude(of: r[tail], frequency: frequency, rate: rate) / reference))
    }

    static let sweep: [Double] = (0...40).map { 100 * pow(100, Double($0) / 40) }  // 100 Hz ... 10 kHz

    @Test(arguments: allRates)
    func flatWithinHalfADecibelFrom100HzTo10kHzAtZeroGain(rate: Double) {
        var stage = Self.stage(Self.settings(), rate: rate)
        var worst = 0.0
        // Up to 10 kHz, or 0.4 x the rate where that is lower (8 and 16 kHz).
        for frequency in Self.sweep where frequency < 0.4 * rate {
            let (left, right) = Self.toneGainDB(&stage, frequency: frequency, amplitude: 0.1, rate: rate, seconds: 0.1)
            worst = max(worst, abs(left), abs(right))
        }
        // The design itself: the six bands sum to an all-pass, so the magnitude is 1 everywhere.
        let design = stage.design
        var designWorst = 0.0
        for frequency in stride(from: 20.0, to: rate * 0.45, by: 10) {
            designWorst = max(designWorst, abs(design.responseDB(atFrequency: frequency, bandGainsDB: Array(repeating: 0, count: 6))))
        }
        // Mono runs its two branches in the lanes of one vector: the same response.
        var mono = Self.stage(Self.settings(), rate: rate, channels: 1)
        for frequency in Self.sweep where frequency < 0.4 * rate {
            let (left, _) = Self.toneGainDB(&mono, frequency: frequency, amplitude: 0.1, rate: rate, seconds: 0.1)
            worst = max(worst, abs(left))
        }
        #expect(worst < 0.5, "measured deviation \(worst) dB")
        #expect(designWorst < 1e-6, "designed deviation \(designWorst) dB")
        print("multiband at 0 dB, \(rate) Hz: measured within \(worst) dB from 100 Hz to \(min(10000, 0.4 * rate)) Hz; designed \(designWorst) dB")
    }

    @Test func eachEarGetsItsOwnBandGains() {
        var changes: [Parameter: Float] = [:]
        let left: [Float] = [0, 5, 10, 15, 20, 25], right: [Float] = [25, 20, 15, 10, 5, 0]
        for band in 0..<6 {
            changes[.mbGain(ear: 0, band: band)] = left[band]
            changes[.mbGain(ear: 1, band: band)] = right[band]
        }
        // Well above the expansion kneepoint, so every band the tone passes is linear.
        changes[.mbExpansion] = -90
        var stage = Self.stage(Self.settings(changes))
        let design = stage.design
        for band in 0..<6 {
            let centre = Crossover.centre(band)
            let (l, r) = Self.toneGainDB(&stage, frequency: centre, amplitude: 0.03)
            // The tone at the band centre also passes the neighbouring bands: compare with the design.
            let expectedLeft = design.responseDB(atFrequency: centre, bandGainsDB: left.map(Double.init))
            let expectedRight = design.responseDB(atFrequency: centre, bandGainsDB: right.map(Double.init))
            #expect(abs(l - expectedLeft) < 0.2, "band \(band + 1) left: \(l) dB, designed \(expectedLeft) dB")
            #expect(abs(r - expectedRight) < 0.2, "band \(band + 1) right: \(r) dB, designed \(expectedRight) dB")
            #expect(abs(l - Double(left[band])) < 3 && abs(r - Double(right[band])) < 3)
        }
        // A mono stage takes the left ear's gains.
        var mono = Self.stage(Self.settings(changes), channels: 1)
        for band in 0..<6 {
            let centre = Crossover.centre(band)
            let (l, _) = Self.toneGainDB(&mono, frequency: centre, amplitude: 0.03)
            let expected = design.responseDB(atFrequency: centre, bandGainsDB: left.map(Double.init))
            #expect(abs(l - expected) < 0.2, "mono band \(band + 1): \(l) dB, designed \(expected) dB")
        }
    }

    @Test(arguments: [(2, 2.0, 3.0), (3, 1.5, 4.0), (4, 3.0, 2.0)])
    func outputRisesOneOverRatioDecibelsPerDecibelAboveTheKneepoint(band: Int, leftRatio: Float, rightRatio: Float) {
        // The other bands are turned down 30 dB, so what comes out is the band's own output.
        var changes: [Parameter: Float] = [.mbExpansion: -90]
        for b in 0..<6 {
            changes[.mbKnee(band: b)] = -70
            changes[.mbRatio(ear: 0, band: b)] = leftRatio
            changes[.mbRatio(ear: 1, band: b)] = rightRatio
            changes[.mbGain(ear: 0, band: b)] = b == band ? 10 : -20
            changes[.mbGain(ear: 1, band: b)] = b == band ? 10 : -20
        }
        let frequency = Crossover.centre(band)
        var outputs: [(Double, Double, Double)] = []
        for inputDB in stride(from: -50.0, through: -10.0, by: 10.0) {
            var stage = Self.stage(Self.settings(changes))
            let (l, r) = Self.toneGainDB(&stage, frequency: frequency, amplitude: Float(pow(10, inputDB / 20)), seconds: 0.4)
            outputs.append((inputDB, inputDB + l, inputDB + r))
        }
        for (a, b) in zip(outputs, outputs.dropFirst()) {
            let step = b.0 - a.0
            let leftRise = b.1 - a.1, rightRise = b.2 - a.2
            #expect(abs(leftRise - step / Double(leftRatio)) < 0.5, "left \(a.0)->\(b.0) dB in: out rose \(leftRise) dB")
            #expect(abs(rightRise - step / Double(rightRatio)) < 0.5, "right \(a.0)->\(b.0) dB in: out rose \(rightRise) dB")
        }
        print("band \(band + 1) ratios \(leftRatio)/\(rightRatio): out per 10 dB in:",
              zip(outputs, outputs.dropFirst()).map { String(format: "%.2f/%.2f", $1.1 - $0.1, $1.2 - $0.2) })
    }

    /// The time constant of an exponential approach from the first to the last of `values` (one
    /// per step), from two points on it: where it has covered 1 - 1/e and 1 - 1/e^3 of the way,
    /// tau = (t2 - t1) / ln(r1 / r2) with r the distance left. Measured between two points, so the
    /// delay before the level detector sees a change does not count.
    static func timeConstant(_ values: [Double]) -> Double? {
        guard let start = values.first, let end = values.last else { return nil }
        func crossing(_ fraction: Double) -> Int? {
            let mark = start + (end - start) * fraction
            return values.firstIndex(where: { end < start ? $0 <= mark : $0 >= mark })
        }
        guard let first = crossing(1 - exp(-1.0)), let second = crossing(1 - exp(-3.0)) else { return nil }
        return Double(second - first) / log(abs(values[first] - end) / abs(values[second] - end))
    }

    @Test(arguments: [(2, 5.0, 100.0), (3, 10.0, 300.0), (4, 2.0, 50.0)])
    func attackAndReleaseTimeConstants(band: Int, attackMS: Float, releaseMS: Float) {
        let rate = 48000.0
        var changes: [Parameter: Float] = [.mbAttack: attackMS, .mbRelease: releaseMS, .mbExpansion: -90]
        for b in 0..<6 { changes[.mbKnee(band: b)] = -40; changes[.mbRatio(ear: 0, band: b)] = 4 }
        var stage = Self.stage(Self.settings(changes), rate: rate, channels: 1)
        // Each band has its own times: the schema's go to every band, a band's own replace them.
        // Here the measured band gets its times from the schema in one run and its own in another.
        if band == 4 {
            var global = changes
            global[.mbAttack] = 20
            global[.mbRelease] = 500
            stage = Self.stage(Self.settings(global), rate: rate, channels: 1)
            stage.setTimes(band: band, attack: Double(attackMS) / 1000, release: Double(releaseMS) / 1000)
        }
        // -50 dBFS (below the kneepoint), then -10 dBFS, then -50 dBFS again; the band's gain is
        // read every 2 samples.
        let frequency = Crossover.centre(band)
        let segment = Int(rate * Double(max(releaseMS, 100)) / 1000 * 8)
        var input: [Float] = []
        for (n, level) in [(segment, -50.0), (segment, -10.0), (segment, -50.0)] {
            let amplitude = pow(10, level / 20)
            input += (0..<n).map { Float(amplitude * sin(2 * .pi * frequency * Double(input.count + $0) / rate)) }
        }
        var gainDB: [Double] = []
        let step = 2
        var right = [Float](repeating: 0, count: step)
        var offset = 0
        var block = [Float](repeating: 0, count: step)
        while offset + step <= input.count {
            for k in 0..<step { block[k] = input[offset + k] }
            if offset % 64 == 0 { stage.tick() }
            block.withUnsafeMutableBufferPointer { b in
                right.withUnsafeMutableBufferPointer { r in stage.process(b.baseAddress!, r.baseAddress!, count: step) }
            }
            gainDB.append(stage.currentGainDB(band: band, ear: 0))
            offset += step
        }
        let perSegment = segment / step
        let toMS = Double(step) / rate * 1000
        let attack = Self.timeConstant(Array(gainDB[perSegment..<(2 * perSegment)])).map { $0 * toMS } ?? 0
        let release = Self.timeConstant(Array(gainDB[(2 * perSegment)...])).map { $0 * toMS } ?? 0
        #expect(abs(attack / Double(attackMS) - 1) < 0.1, "attack \(attack) ms for \(attackMS) ms")
        #expect(abs(release / Double(releaseMS) - 1) < 0.1, "release \(release) ms for \(releaseMS) ms")
        print("band \(band + 1): attack \(attackMS) ms measured \(attack) ms; release \(releaseMS) ms measured \(release) ms")
    }

    @Test func expansionKeepsTheNoiseFloorDown() {
        var changes: [Parameter: Float] = [.mbExpansion: -60]
        for b in 0..<6 { changes[.mbGain(ear: 0, band: b)] = 20; changes[.mbGain(ear: 1, band: b)] = 20 }
        var stage = Self.stage(Self.settings(changes))
        // A 1 kHz tone 20 dB under the expansion kneepoint (band level) loses 1 dB of gain per dB:
        // 20 dB of gain becomes about 0, where a linear stage would raise it by 20 dB.
        let (quiet, _) = Self.toneGainDB(&stage, frequency: 1000, amplitude: Float(pow(10, -78.0 / 20)), seconds: 0.5)
        var loudStage = Self.stage(Self.settings(changes))
        let (loud, _) = Self.toneGainDB(&loudStage, frequency: 1000, amplitude: Float(pow(10, -45.0 / 20)))
        #expect(abs(loud - 20) < 1, "above the expansion kneepoint: \(loud) dB")
        #expect(quiet < 5, "below it: \(quiet) dB")
        print("expansion: +\(loud) dB at -45 dBFS, +\(quiet) dB at -78 dBFS")
    }

    @Test func outputDoesNotDependOnBlockSizes() {
        let rate = 48000.0
        var changes: [Parameter: Float] = [:]
        for b in 0..<6 {
            changes[.mbGain(ear: 0, band: b)] = Float(4 * b); changes[.mbGain(ear: 1, band: b)] = Float(20 - 3 * b)
            changes[.mbRatio(ear: 0, band: b)] = 2; changes[.mbRatio(ear: 1, band: b)] = 3
        }
        let left = Signals.speechLike(rate: rate, seconds: 2, peak: 0.5, seed: 5)
        let right = Signals.speechLike(rate: rate, seconds: 2, peak: 0.3, seed: 6)
        var reference: ([Float], [Float])?
        for size in [1, 7, 64, 256, 4096, 0] {
            var chain = Chain(sampleRate: rate, channels: 2, values: Self.settings(changes))
            let result = process(&chain, left, right, blocks: Signals.blocks(total: left.count, size: size))
            guard let reference else { reference = result; continue }
            #expect(result.0 == reference.0 && result.1 == reference.1, "block size \(size)")
        }
    }
}

@Suite struct MultibandChainTests {
    /// A fit on both ears; noise suppression off, since steady tones are what it removes.
    static func fitted() -> ParameterValues {
        var values = ParameterValues()
        values[.nsEnable] = 0
        let left = Fitting.fit(try! Audiogram(parsing: "250:30,500:35,1000:45,2000:55,4000:65,8000:70"), rule: .nalR)
        let right = Fitting.fit(try! Audiogram(parsing: "250:20,500:25,1000:30,2000:40,4000:50,8000:60"), rule: .halfGain)
        Fitting.apply(left: left, right: right, to: &values)
        return values
    }

    @Test func switchingTheProfileOnAndOffDoesNotClick() {
        let rate = 48000.0
        let input = Signals.sine(frequency: 700, rate: rate, seconds: 1.5, amplitude: 0.01)
        var off = Self.fitted()
        off[.mbEnable] = 0
        var chain = Chain(sampleRate: rate, channels: 2, values: off)
        var (out, _) = process(&chain, Array(input[..<24000]), Array(input[..<24000]))
        chain.apply(Self.fitted())
        out += process(&chain, Array(input[24000..<48000]), Array(input[24000..<48000])).0
        chain.apply(off)
        out += process(&chain, Array(input[48000...]), Array(input[48000...])).0
        // The largest step anywhere is no larger than the steady, louder (fitted) sine's own.
        let fittedStep = Signals.largestStep(out[40000..<48000])
        #expect(Signals.largestStep(out[...]) <= fittedStep * 1.001, "step \(Signals.largestStep(out[...])) vs \(fittedStep)")
        let gain = Signals.dB(Signals.amplitude(of: out[40000..<48000], frequency: 700, rate: rate) / 0.01)
        #expect(gain > 5, "the fit is heard: \(gain) dB")
        #expect(abs(Signals.dB(Signals.amplitude(of: out[64000...], frequency: 700, rate: rate) / 0.01)) < 0.1)
    }

    @Test func garbageAndDecayToSilenceWithTheProfileOn() {
        let rate = 48000.0
        let clean = Signals.sine(frequency: 440, rate: rate, seconds: 2, amplitude: 0.05)
        var dirty = clean
        for k in 48000..<48100 { dirty[k] = .nan }
        var chain = Chain(sampleRate: rate, channels: 2, values: Self.fitted())
        let (out, outRight) = process(&chain, dirty, dirty)
        #expect((out + outRight).allSatisfy { $0.isFinite && abs($0) <= Float(pow(10, -1.0 / 20)) })
        var reference = Chain(sampleRate: rate, channels: 2, values: Self.fitted())
        let (expected, _) = process(&reference, clean, clean)
        let after = (48100 + 4800)..<(48100 + 9600)
        #expect(abs(Signals.dB(Signals.rms(out[after]) / Signals.rms(expected[after]))) < 3)

        // 10 s decaying by 1 dB per 10 ms: no subnormal output or filter register on the way.
        var decay = Chain(sampleRate: rate, channels: 2, values: Self.fitted())
        let count = Int(10 * rate)
        var level = 0.5
        var subnormals = 0
        var offset = 0
        while offset < count {
            let block = (0..<256).map { n -> Float in
                let x = Float(level * sin(2 * .pi * 220 * Double(offset + n) / rate))
                level *= pow(10, -1.0 / 20 / 480)
                return x
            }
            let (l, r) = process(&decay, block, block, blocks: [256])
            subnormals += (l + r).filter(\.isSubnormal).count
            if decay.holdsSubnormalState { subnormals += 1 }
            offset += 256
        }
        #expect(subnormals == 0)
    }
}
