// The echo canceller in the chain, on a synthetic room (EchoRoom: recorded far-end speech through
// a 0.4 s reverberant response with a 20 ms path into the microphone, another recorded talker as
// the near end), at 48 and 16 kHz and host blocks of 64 to 1024 samples.

import Foundation
import HearDSP
import Testing
import TestSupport

@Suite(.enabled(if: EchoRoom.available, "needs pocketsphinx-testdata and sox (make deps-test)"))
struct EchoCancellerTests {
    struct Room {
        let rate: Int
        let far: [Float], near: [Float], echo: [Float]
    }

    static func room(rate: Int, seconds: Double = 12) throws -> Room {
        let far = try EchoRoom.speech(EchoRoom.farEndFiles, rate: rate, seconds: seconds, levelDB: -26)
        let near = try EchoRoom.speech(EchoRoom.nearEndFiles, rate: rate, seconds: seconds, levelDB: -26)
        let echo = EchoRoom.convolve(far, EchoRoom.response(rate: rate))
        return Room(rate: rate, far: far, near: near, echo: echo)
    }

    /// `microphone` through a chain with `reference` beside it, in blocks of `block`.
    static func run(_ microphone: [Float], reference: [Float], rate: Int, values: ParameterValues, block: Int) -> [Float] {
        var chain = Chain(sampleRate: Double(rate), channels: 1, values: values)
        var output = [Float](repeating: 0, count: microphone.count)
        var start = 0
        while start < microphone.count {
            let count = min(block, microphone.count - start)
            microphone.withUnsafeBufferPointer { mic in
                reference.withUnsafeBufferPointer { ref in
                    output.withUnsafeMutableBufferPointer { out in
                        chain.process(inLeft: mic.baseAddress! + start, inRight: nil, outLeft: out.baseAddress! + start,
                                      outRight: nil, frames: count, reference: ref.baseAddress! + start)
                    }
                }
            }
            start += count
        }
        // Aligned with the input: the chain's latency taken off.
        let latency = chain.latency
        return Array(output[latency...]) + [Float](repeating: 0, count: latency)
    }

    static func energy(_ x: ArraySlice<Float>) -> Double { x.reduce(0) { $0 + Double($1) * Double($1) } }

    /// Echo return loss enhancement (dB) from `from` seconds on: the microphone's energy over the output's.
    static func erle(microphone: [Float], output: [Float], rate: Int, from: Double = 2) -> Double {
        let start = Int(from * Double(rate)), end = microphone.count - rate / 10
        return 10 * log10(energy(microphone[start..<end]) / max(energy(output[start..<end]), 1e-20))
    }

    /// How far (dB) `signal` stands above its difference from `other` in short-time magnitude
    /// spectra (20 ms Hann frames, 100 Hz and up): phase-blind, as hearing is, so the canceller's
    /// DC notch (a phase shift at low frequencies) does not count, while echo left in does.
    static func spectralRatio(_ signal: [Float], _ other: [Float], rate: Int) -> Double {
        var size = 1
        while size < rate / 50 { size *= 2 }
        let fft = RealFFT(size: size)
        let bins = size / 2 + 1, lowest = 100 * size / rate
        let window = (0..<size).map { Float(0.5 - 0.5 * cos(2 * Double.pi * Double($0) / Double(size))) }
        var re = [Float](repeating: 0, count: bins), im = re, re2 = re, im2 = re
        var a = [Float](repeating: 0, count: size), b = a
        var power = 0.0, error = 0.0
        var start = 0
        while start + size <= min(signal.count, other.count) {
            for i in 0..<size { a[i] = signal[start + i] * window[i]; b[i] = other[start + i] * window[i] }
            fft.forward(a, real: &re, imaginary: &im)
            fft.forward(b, real: &re2, imaginary: &im2)
            for k in lowest..<bins {
                let x = Double((re[k] * re[k] + im[k] * im[k]).squareRoot())
                let y = Double((re2[k] * re2[k] + im2[k] * im2[k]).squareRoot())
                power += x * x
                error += (x - y) * (x - y)
            }
            start += size / 2
        }
        return 10 * log10(power / max(error, 1e-20))
    }

    @Test(arguments: [48000, 16000])
    func theMicrophoneChainTakesTheEchoOut(rate: Int) throws {
        let room = try Self.room(rate: rate)
        var results: [Int: [Float]] = [:]
        for block in [64, 256, 1024] {
            results[block] = Self.run(room.echo, reference: room.far, rate: rate, values: ParameterValues(), block: block)
        }
        // The same samples whatever the host's blocks.
        #expect(results[64] == results[256] && results[256] == results[1024])
        let on = Self.erle(microphone: room.echo, output: results[256]!, rate: rate)
        var off = values([.aecEnable: 0])
        let withoutCanceller = Self.erle(microphone: room.echo, output: Self.run(room.echo, reference: room.far, rate: rate,
                                                                                 values: off, block: 256), rate: rate)
        off = values([.aecSuppress: 1])
        let suppressed = Self.erle(microphone: room.echo, output: Self.run(room.echo, reference: room.far, rate: rate,
                                                                           values: off, block: 256), rate: rate)
        // The delay it learned: the room's direct path, 20 ms after the reference (within a frame).
        var chain = Chain(sampleRate: Double(rate), channels: 1)
        var output = [Float](repeating: 0, count: room.echo.count)
        chain.process(inLeft: room.echo, inRight: nil, outLeft: &output, outRight: nil, frames: room.echo.count, reference: room.far)
        let delay = chain.meters[.echoDelay]
        print("ERLE at \(rate) Hz from 2 s: \(on) dB (residual suppressor on \(suppressed), canceller off \(withoutCanceller)); delay \(delay) ms")
        #expect(abs(delay - 20) <= 1000 * Double(EchoCanceller.frameLength(sampleRate: Double(rate))) / Double(rate), "echo delay \(delay) ms")
        #expect(on >= 20, "ERLE \(on) dB")
        #expect(withoutCanceller < 10, "the chain without its canceller: \(withoutCanceller) dB")
        // The residual-echo suppressor takes out some of what the filter left.
        #expect(suppressed >= on + 1, "residual suppressor on: \(suppressed) dB against \(on) dB")
    }

    /// aec.filter asks for a length; filters made for it (off the audio thread, in the plugin) are
    /// swapped in, and the old ones come back to be freed; filters made for another rate are refused.
    @Test func newFiltersAreSwappedInWhole() {
        var chain = Chain(sampleRate: 48000, channels: 1)
        #expect(chain.echoFilterLength == 12032 && chain.wantedEchoFilterLength == 12032)  // 94 hops of 128: 250.7 ms
        chain.apply(values([.aecFilter: 500]))
        #expect(chain.wantedEchoFilterLength == 24064 && chain.echoFilterLength == 12032)
        let otherLength = EchoFilters.length(sampleRate: 44100, milliseconds: 500)
        var wrongRate = EchoFilters(sampleRate: 44100, channels: 1, length: otherLength)
        let refused = !chain.installEchoFilters(&wrongRate)
        #expect(refused)
        #expect(wrongRate.length == otherLength && chain.echoFilterLength == 12032)
        var filters = EchoFilters(sampleRate: 48000, channels: 1, length: chain.wantedEchoFilterLength)
        let installed = chain.installEchoFilters(&filters)
        #expect(installed)
        #expect(chain.echoFilterLength == 24064 && filters.length == 12032)
    }

    @Test(arguments: [48000, 16000])
    func theNearEndPassesAndDoubleTalkLosesItsEcho(rate: Int) throws {
        let room = try Self.room(rate: rate)
        // The canceller alone, so that what it does to the near end is not mixed with the other stages.
        let cancelling = values(allOff: true)
        let plain = values(allOff: true, [.aecEnable: 0])
        let silentFarEnd = [Float](repeating: 0, count: room.far.count)
        let nearOff = Self.run(room.near, reference: silentFarEnd, rate: rate, values: plain, block: 256)
        let nearOn = Self.run(room.near, reference: silentFarEnd, rate: rate, values: cancelling, block: 256)
        let span = (2 * rate)..<(room.near.count - rate / 10)
        func ratio(_ signal: [Float], _ other: [Float]) -> Double {
            Self.spectralRatio(Array(signal[span]), Array(other[span]), rate: rate)
        }
        let nearKept = ratio(nearOff, nearOn)
        // Double talk: the far end alone for 4 s, as a call starts, then both; how far the near end
        // stands above what is left of the echo from 6 s on.
        let lateNear = room.near.enumerated().map { $0.offset < 4 * rate ? 0 : $0.element }
        let microphone = zip(lateNear, room.echo).map { $0 + $1 }
        let lateNearOff = Self.run(lateNear, reference: silentFarEnd, rate: rate, values: plain, block: 256)
        let talkOn = Self.run(microphone, reference: room.far, rate: rate, values: cancelling, block: 256)
        let talkOff = Self.run(microphone, reference: room.far, rate: rate, values: plain, block: 256)
        let late = (6 * rate)..<(room.near.count - rate / 10)
        func lateRatio(_ signal: [Float], _ other: [Float]) -> Double {
            Self.spectralRatio(Array(signal[late]), Array(other[late]), rate: rate)
        }
        let before = lateRatio(lateNearOff, talkOff), after = lateRatio(lateNearOff, talkOn)
        let suppressed = lateRatio(lateNearOff, Self.run(microphone, reference: room.far, rate: rate,
                                                         values: values(allOff: true, [.aecSuppress: 1]), block: 256))
        print("at \(rate) Hz: near end alone kept to \(nearKept) dB; double talk near-to-rest \(before) dB -> \(after) dB (residual suppressor on: \(suppressed) dB)")
        #expect(nearKept >= 15, "near end alone changed: \(nearKept) dB")
        // Once the far end has been silent for the filter's length no echo can come: the microphone
        // passes as it came, bit for bit (speexdsp's DC notch would cost it 0.1-0.3 PESQ-WB).
        let settled = rate..<(room.near.count - rate / 10)
        #expect(Array(nearOn[settled]) == Array(nearOff[settled]), "near end alone after 1 s of a silent far end")
        #expect(after >= before + 8, "double talk: \(before) dB without the canceller, \(after) dB with it")
    }
}

/// Behind a call application's own echo canceller: browsers and call apps cancel echo in what the
/// microphone sends them, with what they play as the reference. A stand-in for theirs (speexdsp's
/// canceller with the far end as its reference: a chain with every other stage off) runs on the
/// raw microphone, and after hear's microphone chain at its defaults, with and without hear's own
/// canceller.
@Suite(.enabled(if: EchoRoom.available, "needs pocketsphinx-testdata and sox (make deps-test)"))
struct ApplicationCancellerTests {
    @Test(arguments: [48000, 16000])
    func hearsMicrophoneChainDoesNotSpoilAnApplicationsCanceller(rate: Int) throws {
        let room = try EchoCancellerTests.room(rate: rate)
        let application = values(allOff: true)
        func erle(_ output: [Float]) -> Double { EchoCancellerTests.erle(microphone: room.echo, output: output, rate: rate) }
        // The application reads hear's output: the far end reaches it as late as hear's chain delays it.
        func behindHear(_ hear: ParameterValues, reference: [Float]) -> [Float] {
            let hearOutput = EchoCancellerTests.run(room.echo, reference: reference, rate: rate, values: hear, block: 256)
            return EchoCancellerTests.run(hearOutput, reference: room.far, rate: rate, values: application, block: 256)
        }
        let alone = erle(EchoCancellerTests.run(room.echo, reference: room.far, rate: rate, values: application, block: 256))
        // hear without a reference (no speaker chain): its canceller idles, its noise suppressor runs.
        let behindSuppressor = erle(behindHear(ParameterValues(), reference: [Float](repeating: 0, count: room.far.count)))
        let behindNoReference = erle(behindHear(values([.aecEnable: 0]), reference: room.far))
        let behindCanceller = erle(behindHear(ParameterValues(), reference: room.far))
        print("application canceller at \(rate) Hz: alone \(alone) dB; behind hear without its canceller \(behindNoReference) dB (silent reference \(behindSuppressor) dB); behind hear with it \(behindCanceller) dB")
        #expect(behindNoReference >= alone - 3, "hear's chain without its canceller: \(behindNoReference) dB against \(alone) dB alone")
        #expect(behindCanceller >= alone, "hear's chain with its canceller: \(behindCanceller) dB against \(alone) dB alone")
    }
}
