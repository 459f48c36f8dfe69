// What one instance's audio thread and the control server share: atomics only, allocated at
// instantiate and freed at cleanup, so neither side ever waits for the other.
//
// Parameters (server -> audio): the server stores a value, stamps it with the next generation,
// then publishes the generation. At the start of a block the audio thread compares generations
// and takes each parameter whose stamp is newer than the one it last took.
// Applied values (audio -> server): what the chain runs with, ports and socket writes merged.
// Meters (audio -> server): the server raises `meterRequest`; at the end of its next block the
// audio thread stores the window it accumulated since its last answer (`meters`, by Meter.rawValue,
// and its sample count), then sets `meterAnswer` to that request.
// Echo filters (server <-> audio): speexdsp's states for a new aec.filter are made here, off the
// audio thread, as an `EchoFilters` box whose address goes into `pendingEchoFilters`; the audio
// thread swaps them in at the start of a block and puts the box, now holding the old states, into
// `retiredEchoFilters`, which the server frees (openMHA's habit: configuration made and freed off
// the audio thread, handed over lock-free). Each slot goes from 0 to a box on one side only and
// back to 0 on the other; every other field has a single writer, so plain loads and stores suffice.

import HearDSP
import Synchronization

struct ControlBlock: ~Copyable {
    let requested: UnsafeMutablePointer<Atomic<UInt32>>
    let stamps: UnsafeMutablePointer<Atomic<UInt64>>
    let generation = Atomic<UInt64>(0)

    let applied: UnsafeMutablePointer<Atomic<UInt32>>
    /// The generation the audio thread has taken in full.
    let appliedGeneration = Atomic<UInt64>(0)
    /// The `chain` control port as the audio thread last read it; -1 before the first block.
    let chain = Atomic<Int>(-1)
    /// Frames processed since instantiate.
    let frames = Atomic<UInt64>(0)
    /// The frame count of the last run() call: the quantum the host's graph runs now (0 before the first).
    let block = Atomic<UInt64>(0)

    let meterRequest = Atomic<UInt64>(0)
    let meterAnswer = Atomic<UInt64>(0)
    /// The last window's values (`Double` bit patterns), `Meters.capacity` of them, by `Meter.rawValue`.
    let meters: UnsafeMutablePointer<Atomic<UInt64>>
    /// The samples the last window measured (Meters.samples).
    let meterSamples = Atomic<UInt64>(0)
    /// Chunks the chain silenced after producing a non-finite sample itself (Chain.internalFaults).
    let faults = Atomic<UInt64>(0)

    /// `EchoFilters` boxes in hand-over (addresses; 0: none), and the filter lengths (samples) the
    /// chain asks for and runs with.
    let pendingEchoFilters = Atomic<Int>(0)
    let retiredEchoFilters = Atomic<Int>(0)
    let wantedEchoFilter: Atomic<Int>
    let installedEchoFilter: Atomic<Int>
    /// What the chain's echo filters are made for.
    let sampleRate: Double
    let channels: Int

    init(values: ParameterValues, sampleRate: Double, channels: Int, echoFilter: Int) {
        self.sampleRate = sampleRate
        self.channels = channels
        wantedEchoFilter = Atomic(echoFilter)
        installedEchoFilter = Atomic(echoFilter)
        requested = .allocate(capacity: Parameter.count)
        stamps = .allocate(capacity: Parameter.count)
        applied = .allocate(capacity: Parameter.count)
        for index in 0..<Parameter.count {
            (requested + index).initialize(to: Atomic(values[index].bitPattern))
            (stamps + index).initialize(to: Atomic(0))
            (applied + index).initialize(to: Atomic(values[index].bitPattern))
        }
        meters = .allocate(capacity: Meters.capacity)
        let empty = Meters()
        for index in 0..<Meters.capacity { (meters + index).initialize(to: Atomic(empty[index].bitPattern)) }
    }

    deinit {
        Self.free(pendingEchoFilters.load(ordering: .acquiring))
        Self.free(retiredEchoFilters.load(ordering: .acquiring))
        requested.deinitialize(count: Parameter.count)
        stamps.deinitialize(count: Parameter.count)
        applied.deinitialize(count: Parameter.count)
        meters.deinitialize(count: Meters.capacity)
        requested.deallocate()
        stamps.deallocate()
        applied.deallocate()
        meters.deallocate()
    }

    // MARK: server side (never called on the audio thread)

    /// Publishes new values; the audio thread takes them at the start of its next block.
    func publish(_ assignments: [(index: Int, value: Float)]) {
        let next = generation.load(ordering: .relaxed) &+ 1
        for (index, value) in assignments where index >= 0 && index < Parameter.count {
            requested[index].store(value.bitPattern, ordering: .relaxed)
            stamps[index].store(next, ordering: .releasing)
        }
        generation.store(next, ordering: .releasing)
    }

    /// Frees the echo filters the audio thread gave back, and makes new ones when the chain asks
    /// for another length than it runs with and none are in hand-over.
    func exchangeEchoFilters() {
        let retired = retiredEchoFilters.load(ordering: .acquiring)
        if retired != 0 {
            Self.free(retired)
            retiredEchoFilters.store(0, ordering: .releasing)
        }
        // `pending` first: the audio thread empties it last, after it stored the length it installed.
        guard pendingEchoFilters.load(ordering: .acquiring) == 0 else { return }
        let wanted = wantedEchoFilter.load(ordering: .relaxed)
        guard wanted > 0, wanted != installedEchoFilter.load(ordering: .acquiring) else { return }
        let box = UnsafeMutablePointer<EchoFilters>.allocate(capacity: 1)
        box.initialize(to: EchoFilters(sampleRate: sampleRate, channels: channels, length: wanted))
        pendingEchoFilters.store(Int(bitPattern: box), ordering: .releasing)
    }

    private static func free(_ address: Int) {
        guard let box = UnsafeMutablePointer<EchoFilters>(bitPattern: address) else { return }
        box.deinitialize(count: 1)
        box.deallocate()
    }

    /// The value the instance runs with, or the one it will take at its next block.
    func current(_ index: Int) -> Float {
        if stamps[index].load(ordering: .acquiring) > appliedGeneration.load(ordering: .acquiring) {
            return Float(bitPattern: requested[index].load(ordering: .relaxed))
        }
        return Float(bitPattern: applied[index].load(ordering: .relaxed))
    }
}
