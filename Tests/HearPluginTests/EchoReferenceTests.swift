// The reference tap through the plugin's C ABI: a `speaker` chain and a `mic` chain of one process,
// run block by block as a PipeWire graph runs them, with the synthetic room of EchoRoom between
// the speaker chain's output and the microphone chain's input.

import CMallocCounter
import Foundation
import HearDSP
import LADSPALoader
import Testing
import TestSupport

@Suite(.serialized, .enabled(if: EchoRoom.available, "needs pocketsphinx-testdata and sox (make deps-test)"))
struct EchoReferenceTests {
    let library: LADSPALibrary
    init() throws { library = try LADSPALibrary.load() }

    /// Runs the two chains over `far` in `blocks` (the microphone first in each cycle when
    /// `micFirst`); returns the microphone's input (the echo) and the microphone chain's output,
    /// aligned, and the allocations the microphone chain's run() calls made.
    /// `speakerLeaves`: the cycle from which the speaker chain is gone (its instance cleaned up, as
    /// filter-chain does when its sink suspends), while the microphone chain runs on.
    /// `suppress`: the microphone chain's aec.suppress; `filter`: its aec.filter (ms), set through
    /// its port a second before the first cycle, for the control server to make the filter.
    func call(far: [Float], rate: Int, blocks: [Int], micFirst: Bool, micChain: Float = 1, speakerLeaves: Int? = nil,
              suppress: Bool = false, filter: Float? = nil, room: [Float]? = nil)
        throws -> (microphone: [Float], output: [Float], allocations: Int) {
        let room = room ?? EchoRoom.response(rate: rate)
        // What the speakers play, first on its own: the room needs it before the microphone chain runs.
        // (Its instance goes before the others come: the tap takes one writer, the first.)
        let played = try {
            let speakers = try PluginInstance(library.descriptor("hear_stereo"), rate: rate)
            speakers["chain"] = 2
            let cycles = speakerLeaves ?? blocks.count
            let heard = blocks.prefix(cycles).reduce(0, +)
            let output = speakers.process([Array(far.prefix(heard)), Array(far.prefix(heard))], blocks: Array(blocks.prefix(cycles)))
            return output.map { $0 + [Float](repeating: 0, count: far.count - heard) }
        }()
        let echo = EchoRoom.convolve(played[0], room)
        // Now both, cycle by cycle, with fresh instances (the same output: the chain is deterministic).
        var speaker: PluginInstance? = try PluginInstance(library.descriptor("hear_stereo"), rate: rate)
        speaker?["chain"] = 2
        let mic = try PluginInstance(library.descriptor("hear_mono"), rate: rate)
        mic["chain"] = micChain
        mic["aec.suppress"] = suppress ? 1 : 0
        if let filter {
            // One block of silence tells the control server the length asked for; it makes the
            // filter within its next round (0.1 s), and the first cycle below swaps it in.
            mic["aec.filter"] = filter
            mic.audio[0].update(repeating: 0, count: 256)
            mic.runSilently(frames: 256)
            Thread.sleep(forTimeInterval: 1)
        }
        var output = [Float](repeating: 0, count: far.count)
        var allocations = 0
        var offset = 0
        for (cycle, size) in blocks.enumerated() {
            if cycle == speakerLeaves { speaker = nil }
            func runSpeaker() {
                guard let speaker else { return }
                for k in 0..<2 { far.withUnsafeBufferPointer { speaker.audio[k].update(from: $0.baseAddress! + offset, count: size) } }
                speaker.runSilently(frames: size)
            }
            func runMic() {
                echo.withUnsafeBufferPointer { mic.audio[0].update(from: $0.baseAddress! + offset, count: size) }
                hear_malloc_counter_begin()
                mic.runSilently(frames: size)
                allocations += Int(hear_malloc_counter_end())
                output.withUnsafeMutableBufferPointer { ($0.baseAddress! + offset).update(from: mic.audio[1], count: size) }
            }
            if micFirst { runMic(); runSpeaker() } else { runSpeaker(); runMic() }
            offset += size
        }
        let latency = Chain(sampleRate: Double(rate), channels: 1).latency
        return (echo, Array(output[latency...]) + [Float](repeating: 0, count: latency), allocations)
    }

    static func erle(_ microphone: [Float], _ output: [Float], rate: Int, from: Double, to: Double) -> Double {
        let span = Int(from * Double(rate))..<min(Int(to * Double(rate)), microphone.count)
        func energy(_ x: ArraySlice<Float>) -> Double { x.reduce(0) { $0 + Double($1) * Double($1) } }
        return 10 * log10(energy(microphone[span]) / max(energy(output[span]), 1e-20))
    }

    @Test(arguments: [true, false])
    func theMicrophoneChainCancelsWhatTheSpeakerChainPlays(micFirst: Bool) throws {
        let rate = 48000
        let far = try EchoRoom.speech(EchoRoom.farEndFiles, rate: rate, seconds: 10, levelDB: -26)
        let blocks = [Int](repeating: 256, count: far.count / 256)
        let run = try call(far: far, rate: rate, blocks: blocks, micFirst: micFirst)
        let erle = Self.erle(run.microphone, run.output, rate: rate, from: 2, to: 10)
        // A chain of another number gets no reference: what the noise suppressor alone takes off.
        let other = try call(far: far, rate: rate, blocks: blocks, micFirst: micFirst, micChain: 0)
        let without = Self.erle(other.microphone, other.output, rate: rate, from: 2, to: 10)
        // With the residual-echo suppressor: its transform and regression allocate nothing either.
        let suppressed = try call(far: far, rate: rate, blocks: blocks, micFirst: micFirst, suppress: true)
        let erleSuppressed = Self.erle(suppressed.microphone, suppressed.output, rate: rate, from: 2, to: 10)
        print("ERLE through the plugin (microphone \(micFirst ? "first" : "second") in each cycle): \(erle) dB (aec.suppress: \(erleSuppressed) dB); chain 0: \(without) dB")
        #expect(erleSuppressed > erle, "aec.suppress: \(erleSuppressed) dB against \(erle) dB")
        #expect(suppressed.allocations == 0, "the microphone chain with aec.suppress allocated \(suppressed.allocations) times")
        #expect(erle >= 20, "ERLE \(erle) dB")
        #expect(without < 10, "a chain that is not `mic` took \(without) dB off")
        #expect(run.allocations == 0, "the microphone chain allocated \(run.allocations) times")
    }

    /// aec.filter: an echo path beyond the default filter's 250 ms (the direct sound 300 ms after
    /// the reference, a 0.1 s room after it) is out of its reach; at 500 ms the control server
    /// makes the longer filter off the audio thread, the audio thread swaps it in, and it cancels.
    @Test func aLongerFilterReachesALongerEchoPath() throws {
        let rate = 48000
        let far = try EchoRoom.speech(EchoRoom.farEndFiles, rate: rate, seconds: 10, levelDB: -26)
        let blocks = [Int](repeating: 256, count: far.count / 256)
        let room = EchoRoom.response(rate: rate, delay: 0.3, reverberation: 0.1)
        let short = try call(far: far, rate: rate, blocks: blocks, micFirst: true, room: room)
        let long = try call(far: far, rate: rate, blocks: blocks, micFirst: true, filter: 500, room: room)
        let erleShort = Self.erle(short.microphone, short.output, rate: rate, from: 4, to: 10)
        let erleLong = Self.erle(long.microphone, long.output, rate: rate, from: 4, to: 10)
        print("echo path of 300 ms: ERLE from 4 s \(erleShort) dB with aec.filter 250, \(erleLong) dB with 500")
        print("per second:", (0..<10).map { Int(Self.erle(long.microphone, long.output, rate: rate, from: Double($0), to: Double($0 + 1)).rounded()) })
        #expect(erleShort < 10, "aec.filter 250 on a 300 ms path: \(erleShort) dB")
        // A filter twice as long converges more slowly (11-16 dB a second from 3 s on).
        #expect(erleLong >= 10 && erleLong >= erleShort + 8, "aec.filter 500 on a 300 ms path: \(erleLong) dB")
        #expect(long.allocations == 0, "the microphone chain allocated \(long.allocations) times")
    }

    @Test func aQuantumChangeCostsTheCancellerLessThanTwoSeconds() throws {
        let rate = 48000
        let far = try EchoRoom.speech(EchoRoom.farEndFiles, rate: rate, seconds: 12, levelDB: -26)
        // 256-sample cycles for 6 s, then 1024.
        let first = 6 * rate / 256
        let blocks = [Int](repeating: 256, count: first) + [Int](repeating: 1024, count: (far.count - first * 256) / 1024)
        let run = try call(far: far, rate: rate, blocks: blocks, micFirst: false)
        let before = Self.erle(run.microphone, run.output, rate: rate, from: 2, to: 6)
        let after = Self.erle(run.microphone, run.output, rate: rate, from: 8, to: 12)
        print("ERLE before the quantum change \(before) dB, from 2 s after it \(after) dB")
        #expect(before >= 20 && after >= 20, "ERLE \(before) dB before, \(after) dB after")
    }

    @Test func theEchoTailIsCancelledAfterTheSpeakerChainGoes() throws {
        let rate = 48000
        let far = try EchoRoom.speech(EchoRoom.farEndFiles, rate: rate, seconds: 7, levelDB: -26)
        let blocks = [Int](repeating: 256, count: far.count / 256)
        // The speaker chain goes 6 s in, in the middle of a sentence: the room rings on for 0.5 s.
        let leaves = 6 * rate / 256
        let run = try call(far: far, rate: rate, blocks: blocks, micFirst: false, speakerLeaves: leaves)
        let tail = Self.erle(run.microphone, run.output, rate: rate, from: 6, to: 6.4)
        print("ERLE over the echo's last 0.4 s after the speaker chain went: \(tail) dB")
        #expect(tail >= 15, "the echo tail: \(tail) dB")
    }
}
