// The learned mode's limit on key clicks under a voice (KeyClickLimit.swift): armed by typing heard
// while nobody speaks, never by speech or steady noise; armed, it takes key clicks under a voice
// further down at every rate.

import Testing
import HearDSP

@Suite struct KeyClickLimitTests {
    static let rates = [8000.0, 16000, 44100, 48000, 96000]

    /// Runs `input` through a learned-mode suppressor in blocks of 480; returns in how many blocks
    /// the limit was armed, and the first second at which it was.
    static func arming(_ input: [Float], rate: Double) -> (armedBlocks: Int, firstArmed: Double?) {
        var suppressor = NoiseSuppressor(sampleRate: rate, channels: 1, values: learnedValues())
        var output = input
        var armedBlocks = 0
        var first: Double? = nil
        output.withUnsafeMutableBufferPointer { buffer in
            var done = 0
            while done < input.count {
                let n = min(480, input.count - done)
                suppressor.process(buffer.baseAddress! + done, nil, count: n)
                done += n
                if suppressor.clickLimit.armed {
                    armedBlocks += 1
                    if first == nil { first = Double(done) / rate }
                }
            }
        }
        return (armedBlocks, first)
    }

    /// The harmonic source (syllables with pauses) over a faint hiss, and white + pink noise alone
    /// and under it: never armed.
    @Test(arguments: [16000.0, 48000])
    func speechAndSteadyNoiseNeverArm(rate: Double) {
        let count = Int(rate * 4)
        let (speech, _) = SignalMaker.speech(rate: rate, count: count)
        var maker = SignalMaker(seed: 61)
        let hiss = maker.white(count), noise = LearnedSuppressorTests.whiteAndPink(&maker, count).map { $0 * 0.02 }
        let cases: [(String, [Float])] = [
            ("speech", zip(speech, hiss).map { $0 + 0.001 * $1 }),
            ("noise", noise),
            ("noisy speech", zip(speech, noise).map { $0 + $1 }),
        ]
        for (name, input) in cases {
            let armed = Self.arming(input, rate: rate).armedBlocks
            #expect(armed == 0, "\(name) at \(rate) Hz armed the limit in \(armed) blocks")
        }
    }

    /// Typing alone arms it within a second (measured 0.72-0.75 s: about five key presses), and it
    /// stays armed.
    @Test(arguments: rates)
    func typingArmsWithinASecond(rate: Double) throws {
        var maker = SignalMaker(seed: 67)
        let count = Int(rate * 2)
        let result = Self.arming(maker.keyboard(rate: rate, count: count), rate: rate)
        let first = try #require(result.firstArmed, "typing never armed the limit at \(rate) Hz")
        #expect(first <= 1, "armed after \(first) s at \(rate) Hz")
        let blocksAfter = (count - Int(first * rate)) / 480
        #expect(result.armedBlocks >= blocksAfter, "armed in \(result.armedBlocks) blocks of the \(blocksAfter) after \(first) s")
    }

    /// SNR improvement (dB) on key clicks under the harmonic source at 5 dB SNR, where typing began a
    /// second before the voice, measured from half a second after the voice began.
    static func keyClicksUnderSpeech(rate: Double, values: ParameterValues) -> Double {
        let count = Int(rate * 5), start = Int(rate)
        var (speech, _) = SignalMaker.speech(rate: rate, count: count)
        for i in 0..<start { speech[i] = 0 }
        var maker = SignalMaker(seed: 29)
        var keys = maker.keyboard(rate: rate, count: count)
        let first = start + Int(rate * 0.5)
        let gain = Float(LibM.sqrt(meanSquare(speech[first...]) / meanSquare(keys[first...]) / LibM.pow(10, 0.5)))
        keys = keys.map { $0 * gain }
        let out = separate(speech: speech, noise: keys, rate: rate, values: values)
        let last = count - out.latency
        let inputSNR = decibels(meanSquare(speech[first..<last]) / meanSquare(keys[first..<last]))
        return decibels(meanSquare(out.speech[first..<last]) / meanSquare(out.noise[first..<last])) - inputSNR
    }

    /// Per rate: the least SNR improvement that passes, midway between what was measured with the
    /// limit (printed by the test) and without it (its rise set to 300 dB, so that it never caps):
    /// 9.02 / 8.29, 8.32 / 7.61, 11.25 / 10.52, 11.62 / 11.21, 12.47 / 11.53 dB at 8 / 16 / 44.1 /
    /// 48 / 96 kHz with the committed model. The limit takes the part of a click that rises above
    /// the voice, most of what PESQ hears and a smaller share of the click's power.
    static let bounds: [Double: Double] = [8000: 8.66, 16000: 7.96, 44100: 10.89, 48000: 11.41, 96000: 12.00]

    @Test(arguments: rates)
    func lowersKeyClicksUnderSpeechOnceArmed(rate: Double) throws {
        let bound = try #require(Self.bounds[rate])
        let improvement = Self.keyClicksUnderSpeech(rate: rate, values: learnedValues())
        print("key click limit, key clicks after typing at \(Int(rate)) Hz: SNR improvement \(improvement) dB")
        #expect(improvement >= bound, "key clicks at \(rate) Hz: \(improvement) dB")
    }
}
