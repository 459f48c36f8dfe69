// A non-finite sample produced inside the chain, not at its input: the
// output stage silences it, every stage restarts, the chain counts it, and audio resumes.

import HearDSP
import Testing
import TestSupport

@Suite struct ChainFaultTests {
    @Test func aNonFiniteSampleMadeInsideTheChainIsSilencedCountedAndRecovered() {
        let rate = 48000.0
        var chain = Chain(sampleRate: rate, channels: 1)
        let bins = chain.noiseSuppressor.bins
        // A stage gone bad: the suppressor applies a mask of NaN for 0.1 s.
        let poison = UnsafeMutablePointer<Float>.allocate(capacity: bins)
        poison.initialize(repeating: .nan, count: bins)
        defer { poison.deallocate() }
        let speech = Signals.speechLike(rate: rate, seconds: 2, peak: 0.3, seed: 3)
        var out = process(&chain, Array(speech[..<24000])).0
        chain.noiseSuppressor.suppliedGains = .mask(UnsafePointer(poison))
        out += process(&chain, Array(speech[24000..<28800])).0
        chain.noiseSuppressor.suppliedGains = .none
        out += process(&chain, Array(speech[28800...])).0
        #expect(out.allSatisfy { $0.isFinite && abs($0) <= 1 })
        #expect(chain.internalFaults > 0, "faults counted: \(chain.internalFaults)")
        // Audio resumes: the last half second carries what a chain that never faulted gives for it
        // (how much of this synthetic source the suppressor keeps is its own matter, not the fault's).
        var reference = Chain(sampleRate: rate, channels: 1)
        let expected = process(&reference, speech).0
        let tail = out[(out.count - 24000)...], expectedTail = expected[(expected.count - 24000)...]
        print("after the fault, the last half second: rms \(Signals.rms(tail)) against \(Signals.rms(expectedTail)) without it")
        #expect(Signals.rms(expectedTail) > 0.001)
        #expect(Signals.rms(tail) > 0.5 * Signals.rms(expectedTail), "rms \(Signals.rms(tail)) against \(Signals.rms(expectedTail))")
        // Garbage at the input is not counted as the chain's own fault.
        var clean = Chain(sampleRate: rate, channels: 1)
        var dirty = Array(speech[..<9600])
        dirty[4000] = .nan
        _ = process(&clean, dirty)
        #expect(clean.internalFaults == 0)
    }
}
