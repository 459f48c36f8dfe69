// The microphone chain on noisy speech in a real PipeWire: espeak-ng speech at a microphone's
// level (peaks at -12 dBFS) after five seconds of noise alone, white noise at -40 dBFS RMS (seeded).
// The chain meets the noise after digital silence, and the suppressor's noise estimate rises to a
// new floor within about 4 s, so the noise is measured 4.0 to 4.9 s in.
// With the config's settings, switching the noise suppressor on lowers the noise floor and raises
// the speech-to-noise ratio (in its default, learned mode).

import Foundation
import Testing
import TestSupport

@Suite(.serialized) struct NoiseTests {
    static let leadIn = 5.0

    /// The noisy sample, mono 48 kHz float, in the session's folder.
    static func noisySpeech(_ session: PipeWireSession) throws -> URL {
        let speech = session.file("speech.wav"), resampled = session.file("speech48.wav")
        try session.processes.run("espeak-ng", ["-v", "en-us", "-s", "150", "-w", speech.path,
                                                "Can you hear me? The fan behind me is loud, but my voice should come through clearly."])
        try session.processes.run("sox", [speech.path, "-r", "48000", "-c", "1", "-b", "32", "-e", "floating-point",
                                          resampled.path, "norm", "-12", "pad", "\(leadIn)", "0.5"])
        let clean = try WAVFile.read(resampled).samples
        let noise = Signals.whiteNoise(count: clean.count, amplitude: 0.01 * 3.0.squareRoot().float, seed: 5)
        let url = session.file("noisy.wav")
        try WAVFile.write([zip(clean, noise).map { $0 + $1 }], rate: 48000, to: url)
        return url
    }

    /// Noise floor (dBFS RMS, 4.0 to 4.9 s into the sample) and speech-to-noise ratio (dB).
    static func figures(_ recording: WAVAudio) throws -> (noise: Double, snr: Double) {
        let samples = recording.samples, rate = Double(recording.rate)
        guard let start = samples.firstIndex(where: { abs($0) > 1e-6 }) else { throw TestFailure("silent recording") }
        let at = { (seconds: Double) in start + Int(seconds * rate) }
        guard at(leadIn + 2) < samples.count else { throw TestFailure("short recording") }
        let noise = Signals.dB(Signals.rms(samples[at(leadIn - 1)..<at(leadIn - 0.1)]))
        let speech = Signals.dB(Signals.rms(samples[at(leadIn)..<min(samples.count, at(leadIn + 4))]))
        return (noise, speech - noise)
    }

    @Test func suppressorLowersTheNoiseOfSpeechThroughTheMicrophone() throws {
        let session = try PipeWireSession(name: "noise")
        defer { session.stop() }
        let noisy = try Self.noisySpeech(session)
        let node = PipeWireSession.microphoneControls

        try session.set(node, [("ns.enable", .toggle(false))])
        let off = try Self.figures(session.record(from: "hear_microphone", channels: 1, playing: noisy,
                                                  into: "hear_test_mic_input", name: "ns-off"))
        try session.set(node, [("ns.enable", .toggle(true))])
        let on = try Self.figures(session.record(from: "hear_microphone", channels: 1, playing: noisy,
                                                 into: "hear_test_mic_input", name: "ns-on"))
        #expect(on.noise < off.noise - 6, "noise floor: \(off.noise) dBFS without, \(on.noise) dBFS with the suppressor")
        #expect(on.snr > off.snr + 6, "speech to noise: \(off.snr) dB without, \(on.snr) dB with the suppressor")
    }
}

private extension Double {
    var float: Float { Float(self) }
}
