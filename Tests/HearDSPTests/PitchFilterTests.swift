// The pitch filter (PitchFilter.swift): in learned mode the frame a pitch period earlier is added
// where a band is periodic, so the noise between a voice's harmonics falls against the harmonics.
// Measured on the output itself, with the filter on and off (the mask is the same either way: it
// comes from the input).

import Testing
import TestSupport
import HearDSP

@Suite struct PitchFilterTests {
    /// A voice of fixed pitch `f0` (harmonics at 1/h to 4 kHz, syllables at 3 Hz) in white noise at
    /// 0 dB SNR, through the learned suppressor; returns the output (latency removed) and the
    /// syllables' envelope.
    static func run(rate: Double, f0: Double, filtersPitch: Bool) -> (output: [Float], envelope: [Float]) {
        let count = Int(rate * 4)
        var voice = [Float](repeating: 0, count: count), envelope = [Float](repeating: 0, count: count)
        for i in 0..<count {
            let t = Double(i) / rate
            let syllable = max(0, LibM.sin(2 * Double.pi * 3 * t))
            var sample = 0.0, h = 1
            while Double(h) * f0 < min(4000, 0.45 * rate) {
                sample += LibM.sin(2 * Double.pi * Double(h) * f0 * t + Double(h)) / Double(h)
                h += 1
            }
            voice[i] = Float(0.1 * syllable * sample)
            envelope[i] = Float(syllable)
        }
        var maker = SignalMaker(seed: 17)
        let white = maker.white(count)
        let gain = Float(LibM.sqrt(meanSquare(voice[...]) / meanSquare(white[...])))
        var signal = zip(voice, white).map { $0 + gain * $1 }
        var suppressor = NoiseSuppressor(sampleRate: rate, channels: 1, values: learnedValues())
        suppressor.filtersPitch = filtersPitch
        process(&signal, through: &suppressor, block: 256)
        return (Array(signal[suppressor.latency...]), envelope)
    }

    /// dB of the power at the harmonics (h · f0) over the power midway between them ((h + ½) · f0),
    /// h = 1...`harmonics`, summed over 40 ms Hann frames (hops of 20 ms) from 1 s on where the
    /// syllable is past half its height: how far the harmonics stand above the noise between them.
    static func harmonicsOverValleys(_ y: [Float], envelope: [Float], rate: Double, f0: Double, harmonics: Int) -> Double {
        let length = Int(0.04 * rate), hop = length / 2
        var window = [Double](repeating: 0, count: length)
        for j in 0..<length { window[j] = 0.5 - 0.5 * LibM.cos(2 * Double.pi * Double(j) / Double(length)) }
        func power(_ start: Int, _ frequency: Double) -> Double {
            var re = 0.0, im = 0.0
            for j in 0..<length {
                let x = Double(y[start + j]) * window[j], phase = 2 * Double.pi * frequency * Double(j) / rate
                re += x * LibM.cos(phase)
                im -= x * LibM.sin(phase)
            }
            return re * re + im * im
        }
        var peaks = 0.0, valleys = 0.0
        var start = Int(rate)
        while start + length <= y.count {
            if envelope[start + length / 2] > 0.5 {
                for h in 1...harmonics {
                    peaks += power(start, Double(h) * f0)
                    valleys += power(start, (Double(h) + 0.5) * f0)
                }
            }
            start += hop
        }
        return decibels(peaks / valleys)
    }

    /// With the filter the harmonics to 1.8 kHz stand at least 1 dB further above the noise between
    /// them than without it, at 48 and 16 kHz, for a low and a high voice (see the printed lines).
    /// With the earlier frame not lined up (its phase ramp turned the wrong way) the gain is gone.
    @Test(arguments: [(48000.0, 120.0), (48000, 210), (16000, 120), (16000, 210)])
    func theNoiseBetweenHarmonicsFalls(rate: Double, f0: Double) {
        let harmonics = Int(1800 / f0)
        let on = Self.run(rate: rate, f0: f0, filtersPitch: true)
        let off = Self.run(rate: rate, f0: f0, filtersPitch: false)
        let with = Self.harmonicsOverValleys(on.output, envelope: on.envelope, rate: rate, f0: f0, harmonics: harmonics)
        let without = Self.harmonicsOverValleys(off.output, envelope: off.envelope, rate: rate, f0: f0, harmonics: harmonics)
        print("pitch filter at \(Int(rate)) Hz, f0 \(Int(f0)) Hz: harmonics over valleys \(with) dB, without it \(without) dB")
        #expect(with - without >= 1, "pitch filter at \(rate) Hz, f0 \(f0): \(with) dB against \(without) dB without it")
    }

    /// The filter never raises a band above its own power, so on clean speech (the gliding voice of
    /// the other suppressor tests) the output's level stays within 0.5 dB of the unfiltered output's.
    @Test(arguments: [16000.0, 48000])
    func cleanSpeechKeepsItsLevel(rate: Double) {
        let count = Int(rate * 3)
        let (speech, _) = SignalMaker.speech(rate: rate, count: count)
        var levels: [Double] = []
        for filters in [true, false] {
            var suppressor = NoiseSuppressor(sampleRate: rate, channels: 1, values: learnedValues())
            suppressor.filtersPitch = filters
            var y = speech
            y.withUnsafeMutableBufferPointer { suppressor.process($0.baseAddress!, nil, count: count) }
            levels.append(decibels(meanSquare(y[Int(rate * 0.5)...])))
        }
        print("pitch filter at \(Int(rate)) Hz, clean speech: level \(levels[0]) dB, without it \(levels[1]) dB")
        #expect(abs(levels[0] - levels[1]) <= 0.5, "clean speech at \(rate) Hz: \(levels[0]) dB against \(levels[1]) dB")
    }

    /// In stereo each channel is filtered with its own earlier frame at the first channel's lag:
    /// the same voice in noise on both channels comes out of each as it does in mono (the mask
    /// reads both channels' mean power, the same here), and the filter is on there too (without
    /// it, the output differs from mono's filtered one); with the right channel the left one
    /// inverted, the right output is the left one inverted (filtered with the left channel's
    /// earlier frame, it would differ).
    @Test func stereoFiltersEachChannelAsMono() {
        let rate = 48000.0, count = Int(rate * 2)
        let (speech, _) = SignalMaker.speech(rate: rate, count: count)
        var maker = SignalMaker(seed: 23)
        let noise = maker.white(count)
        let input = zip(speech, noise).map { $0 + 0.03 * $1 }
        func run(channels: Int, filtersPitch: Bool, inverted: Bool = false) -> (left: [Float], right: [Float]) {
            var suppressor = NoiseSuppressor(sampleRate: rate, channels: channels, values: learnedValues())
            suppressor.filtersPitch = filtersPitch
            var left = input, right = channels == 2 ? (inverted ? input.map { -$0 } : input) : []
            process(&left, right: &right, through: &suppressor, block: 256)
            return (left, right)
        }
        func largestDifference(_ a: [Float], _ b: [Float]) -> Float { zip(a, b).map { abs($0 - $1) }.max() ?? 0 }
        let mono = run(channels: 1, filtersPitch: true).left
        let stereo = run(channels: 2, filtersPitch: true)
        let unfiltered = run(channels: 2, filtersPitch: false)
        let left = largestDifference(stereo.left, mono), right = largestDifference(stereo.right, mono)
        let without = largestDifference(unfiltered.right, mono)
        let opposite = run(channels: 2, filtersPitch: true, inverted: true)
        let mirrored = largestDifference(opposite.right, opposite.left.map { -$0 })
        print("pitch filter in stereo: largest difference from mono \(left) (left), \(right) (right); unfiltered \(without); inverted right against the left inverted \(mirrored)")
        #expect(left <= 1e-6 && right <= 1e-6, "stereo against mono: \(left), \(right)")
        #expect(without > 1e-3, "stereo without the filter against mono with it: \(without)")
        #expect(mirrored <= 1e-6, "the inverted right channel against the left inverted: \(mirrored)")
    }
}
