// The suppressor's gate (SpeechActivity): closed on noise alone, steady or clicking, open within a
// pitch period or two of a voice, held through the pauses of a phrase.

import Testing
import HearDSP

/// Key clicks over a faint pink floor: decaying bursts (3 ms) with most of their energy above
/// 1 kHz, about seven a second, each followed by a softer release 80 ms later.
func keyClicks(rate: Double, count: Int, seed: UInt64) -> [Float] {
    var maker = SignalMaker(seed: seed)
    var x = maker.pink(count).map { $0 * 0.0005 }
    var position = Int(0.05 * rate)
    while position < count {
        let length = Int(0.02 * rate)
        var previous: Float = 0
        for (offset, scale) in [(0, Float(0.3)), (Int(0.08 * rate), 0.12)] {
            for i in 0..<length where position + offset + i < count {
                let white = maker.uniform()
                let decay = Float(LibM.exp(-Double(i) / (0.003 * rate)))
                x[position + offset + i] += scale * decay * (white - previous)  // a first difference: mostly highs
                previous = white
            }
        }
        position += Int((0.1 + 0.08 * Double(maker.uniform())) * rate)
    }
    return x
}

/// A steady voiced source (f0 140 Hz, harmonics falling 6 dB per octave up to 4 kHz).
func vowel(rate: Double, count: Int, amplitude: Float) -> [Float] {
    let top = min(4000, 0.45 * rate)
    return (0..<count).map { i in
        var sample = 0.0
        var h = 1
        while Double(h) * 140 < top {
            sample += LibM.sin(2 * Double.pi * 140 * Double(h) * Double(i) / rate) / Double(h)
            h += 1
        }
        return amplitude * Float(sample)
    }
}

/// Runs the suppressor over `input` in hops; returns the output and the gate's openness after every hop.
func runGate(_ input: [Float], rate: Double, values: ParameterValues = classicalValues()) -> (output: [Float], openness: [Float], hop: Int) {
    var suppressor = NoiseSuppressor(sampleRate: rate, channels: 1, values: values)
    var output = input
    var openness: [Float] = []
    let hop = suppressor.hop
    output.withUnsafeMutableBufferPointer { buffer in
        var done = 0
        while done < buffer.count {
            let n = min(hop, buffer.count - done)
            suppressor.process(buffer.baseAddress! + done, nil, count: n)
            openness.append(suppressor.activity.openness)
            done += n
        }
    }
    return (output, openness, hop)
}

@Suite struct SpeechActivityTests {
    @Test(arguments: [8000.0, 16000, 48000, 96000, 192000])
    func keyClicksAloneLoseTheReduction(rate: Double) {
        let count = Int(rate * 5)
        let clicks = keyClicks(rate: rate, count: count, seed: 29)
        let run = runGate(clicks, rate: rate)
        let from = Int(rate * 2)
        #expect(run.openness[(from / run.hop)...].allSatisfy { $0 == 0 }, "the gate opened on key clicks")
        let latency = NoiseSuppressor.latency(sampleRate: rate)
        let attenuation = decibels(meanSquare(clicks[from..<(count - latency)]) / meanSquare(run.output[(from + latency)...]))
        let reduction = Double(Parameter.nsReduction.spec.defaultValue)
        #expect(abs(attenuation - reduction) <= 3, "key clicks attenuated \(attenuation) dB at ns.reduction \(reduction)")
    }

    @Test func steadyNoiseClosesTheGate() {
        let rate = 48000.0
        var maker = SignalMaker(seed: 31)
        let count = Int(rate * 3)
        let noise = zip(maker.white(count), maker.pink(count)).map { 0.02 * $0 + 0.05 * $1 }
        let run = runGate(noise, rate: rate)
        // Closed from the start (nobody has spoken yet) and never opened by the noise.
        #expect(run.openness.allSatisfy { $0 == 0 })
    }

    /// A vowel starting after 1.5 s of noise (5 dB SNR) opens the gate within 25 ms; it then stays
    /// open through a 200 ms pause, and closes within 0.6 s once the talker stops.
    @Test(arguments: [8000.0, 16000, 44100, 48000, 192000])
    func opensOnAVoiceAndHoldsThroughPauses(rate: Double) {
        let count = Int(rate * 4)
        var maker = SignalMaker(seed: 37)
        let noise = maker.pink(count).map { $0 * 0.01 }
        let onset = Int(rate * 1.5), pause = Int(rate * 2.2), resume = Int(rate * 2.4), end = Int(rate * 3)
        let voice = vowel(rate: rate, count: count, amplitude: 1)
        let noisePower = meanSquare(noise[...]), voicePower = meanSquare(voice[...])
        let scale = Float(LibM.sqrt(noisePower / voicePower * LibM.pow(10, 0.5)))
        let input = (0..<count).map { i in
            noise[i] + ((i >= onset && i < pause) || (i >= resume && i < end) ? scale * voice[i] : 0)
        }
        let run = runGate(input, rate: rate)
        func hopIndex(_ sample: Int) -> Int { sample / run.hop }
        #expect(run.openness[hopIndex(onset - Int(rate * 0.1))] == 0, "closed before the voice")
        let opened = run.openness[hopIndex(onset)...].firstIndex { $0 == 1 } ?? run.openness.count
        let delay = Double((opened - hopIndex(onset)) * run.hop) / rate
        #expect(delay <= 0.025, "opened \(delay * 1000) ms after the voice began")
        print("gate opened \(delay * 1000) ms after a vowel began at \(rate) Hz")
        #expect(run.openness[opened..<hopIndex(end)].allSatisfy { $0 == 1 }, "closed during the phrase")
        #expect(run.openness[hopIndex(end + Int(rate * 0.6))...].allSatisfy { $0 == 0 }, "still open after the talker stopped")
    }
}
