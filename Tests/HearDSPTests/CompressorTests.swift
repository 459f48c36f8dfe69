import Foundation
import HearDSP
import Testing
import TestSupport

@Suite struct CompressorTests {
    /// The textbook soft-knee curve (Giannoulis et al. 2012, eq. 4), the reference.
    static func expectedOutputDB(_ x: Double, threshold t: Double, ratio r: Double, knee w: Double) -> Double {
        if 2 * (x - t) < -w { return x }
        if w > 0 && 2 * abs(x - t) <= w { return x + (1 / r - 1) * pow(x - t + w / 2, 2) / (2 * w) }
        return t + (x - t) / r
    }

    static func compressor(_ changes: [Parameter: Float], rate: Double = 48000) -> Compressor {
        Compressor(sampleRate: rate, ticksPerSecond: 1500, values: values(changes))
    }

    @Test(arguments: [(-24.0, 4.0, 6.0), (-30.0, 2.0, 0.0), (-12.0, 10.0, 12.0)])
    func staticCurveFollowsTheFormula(threshold: Double, ratio: Double, knee: Double) {
        var worst = 0.0
        for inputDB in stride(from: -60.0, through: 0.0, by: 1.5) {
            var comp = Self.compressor([.compThreshold: Float(threshold), .compRatio: Float(ratio), .compKnee: Float(knee),
                                        .compAttack: 1, .compRelease: 10])
            let amplitude = Float(pow(10, inputDB / 20))
            // A square wave: its magnitude is one steady level for the peak detector.
            var signal = Signals.square(frequency: 100, rate: 48000, seconds: 0.3, amplitude: amplitude)
            signal.withUnsafeMutableBufferPointer { comp.process($0.baseAddress!, nil, count: $0.count) }
            let outputDB = 20 * log10(Double(abs(signal.last!)))
            let expected = Self.expectedOutputDB(inputDB, threshold: threshold, ratio: ratio, knee: knee)
            #expect(abs(outputDB - expected) < 0.25, "in \(inputDB) dB: out \(outputDB), formula \(expected)")
            worst = max(worst, abs(outputDB - expected))
        }
        print("compressor T=\(threshold) R=\(ratio) W=\(knee): worst deviation \(worst) dB")
    }

    /// Samples until the gain change (dB) has covered 1 - 1/e of its way from `start` to `end`.
    static func timeConstantSamples(_ gainDB: [Double], from start: Double, to end: Double) -> Int? {
        let mark = start + (end - start) * (1 - exp(-1.0))
        return gainDB.firstIndex { end < start ? $0 <= mark : $0 >= mark }
    }

    @Test(arguments: [(5.0, 100.0), (20.0, 400.0), (1.0, 30.0)])
    func attackAndReleaseTimeConstants(attackMS: Double, releaseMS: Double) {
        let rate = 48000.0
        var comp = Self.compressor([.compThreshold: -30, .compRatio: 4, .compKnee: 0,
                                    .compAttack: Float(attackMS), .compRelease: Float(releaseMS)], rate: rate)
        let quiet: Float = 0.001, loud: Float = 0.5  // -60 dBFS, -6 dBFS
        let segment = Int(rate * 2)
        var input = [Float](repeating: quiet, count: segment) + [Float](repeating: loud, count: segment)
            + [Float](repeating: quiet, count: segment)
        let original = input
        input.withUnsafeMutableBufferPointer { comp.process($0.baseAddress!, nil, count: $0.count) }
        let gainDB = zip(input, original).map { 20 * log10(Double($0.0 / $0.1)) }
        let full = (1.0 / 4 - 1) * (-6.0 + 30)  // -18 dB at -6 dBFS
        let attack = Self.timeConstantSamples(Array(gainDB[segment..<(2 * segment)]), from: 0, to: full)
        let release = Self.timeConstantSamples(Array(gainDB[(2 * segment)...]), from: full, to: 0)
        let attackMeasured = Double(attack ?? 0) / rate * 1000
        let releaseMeasured = Double(release ?? 0) / rate * 1000
        #expect(abs(attackMeasured / attackMS - 1) < 0.1, "attack \(attackMeasured) ms for \(attackMS) ms")
        #expect(abs(releaseMeasured / releaseMS - 1) < 0.1, "release \(releaseMeasured) ms for \(releaseMS) ms")
        print("attack \(attackMS) ms measured \(attackMeasured) ms; release \(releaseMS) ms measured \(releaseMeasured) ms")
    }

    @Test func stereoDetectionIsLinkedSoTheImageHolds() {
        var comp = Self.compressor([.compThreshold: -30, .compRatio: 4])
        var left = Signals.sine(frequency: 300, rate: 48000, seconds: 1, amplitude: 0.5)
        var right = Signals.sine(frequency: 700, rate: 48000, seconds: 1, amplitude: 0.01)
        let originalRight = right
        left.withUnsafeMutableBufferPointer { l in
            right.withUnsafeMutableBufferPointer { r in comp.process(l.baseAddress!, r.baseAddress!, count: l.count) }
        }
        // The quiet channel is turned down exactly as much as the loud one that drives the detector.
        let tail = 24000...
        let leftGain = Signals.amplitude(of: left[tail], frequency: 300, rate: 48000) / 0.5
        let rightGain = Signals.amplitude(of: right[tail], frequency: 700, rate: 48000) / 0.01
        #expect(Signals.dB(leftGain) < -10)
        #expect(abs(Signals.dB(leftGain) - Signals.dB(rightGain)) < 0.1)
        #expect(Signals.rms(right[tail]) < Signals.rms(originalRight[tail]) / 3)
    }

    @Test func makeupGainIsAdded() {
        var comp = Self.compressor([.compThreshold: 0, .compRatio: 1, .compMakeup: 6])
        var signal = Signals.sine(frequency: 1000, rate: 48000, seconds: 0.2, amplitude: 0.1)
        signal.withUnsafeMutableBufferPointer { comp.process($0.baseAddress!, nil, count: $0.count) }
        #expect(abs(Signals.dB(Signals.amplitude(of: signal[4800...], frequency: 1000, rate: 48000) / 0.1) - 6) < 0.01)
    }
}
