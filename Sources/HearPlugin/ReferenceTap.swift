// What the speaker chain sends to the speakers, for the echo cancellers of the microphone chains in
// the same process (PipeWire runs every filter-chain of a user in one process, and the chains that
// share a driver run in the same graph cycles). One ring per process, one writer: the first
// `speaker` chain to run claims it, and lets go at cleanup or when its chain number changes. Any
// number of `mic` chains read it, each at its own position. No lock, allocation or syscall on
// either side: the ring is made at the first instantiate and lives as long as the library (which
// stays loaded, LADSPA.swift).
//
// Alignment: a reader reads the block the writer wrote last. When both chains run in the same
// cycles, the writer adds exactly one block between two reads, so the reader finds exactly one
// block's worth (`frames`) waiting, whichever of the two ran first, and whatever the quantum, as
// long as both see the same one. Finding less (the writer fell behind: another driver, or a
// quantum that changed for one chain first) or more than two blocks (it ran ahead) moves the
// reader back to the writer's last block and counts a realignment (the `aec.realign` meter); the
// echo canceller then adapts to the new delay. A writer that stops (its sink suspended: nothing
// plays) leaves nothing to read, and the reader reads silence without moving; one that goes away
// (cleanup) leaves half a second of silence as the reference, while the room's echo dies down.

import HearControl
import HearDSP
import Synchronization

struct ReferenceTap: ~Copyable {
    /// Ring length: a power of two above two of the largest blocks PipeWire runs (8192) at 192 kHz
    /// with room to spare (2.7 s at 48 kHz).
    static let capacity = 1 << 17
    let samples: UnsafeMutablePointer<Float>
    /// The writing instance's key (its control block's address); 0 while none writes.
    let writer = Atomic<Int>(0)
    /// The writer's sample rate; readers at another rate get no reference.
    let rate = Atomic<Int>(0)
    /// Samples written since the tap was made (the ring position is this modulo `capacity`).
    let written = Atomic<UInt64>(0)
    /// Counts writers' claims: a reader realigns when a new writer takes over.
    let claims = Atomic<UInt64>(0)

    /// How long (samples) a reader reads silence after its writer went before it gives up the
    /// reference: half a second, twice the echo canceller's filter.
    @inline(__always) static func tail(sampleRate: Int) -> Int { sampleRate / 2 }

    init() {
        samples = .allocate(capacity: Self.capacity)
        samples.initialize(repeating: 0, count: Self.capacity)
    }

    /// The process's tap, made on first use (at instantiate, never on the audio thread).
    static let shared = SharedTap()

    /// Appends one block of what the speakers get (stereo mixed to mono), if `key` holds the tap or can claim it.
    @_noLocks func publish(key: Int, sampleRate: Int, left: UnsafePointer<Float>, right: UnsafePointer<Float>?, frames: Int) {
        if writer.load(ordering: .acquiring) != key {
            guard writer.compareExchange(expected: 0, desired: key, ordering: .acquiringAndReleasing).exchanged else { return }
            rate.store(sampleRate, ordering: .relaxed)
            claims.wrappingAdd(1, ordering: .releasing)
        }
        let start = written.load(ordering: .relaxed)
        let mask = UInt64(Self.capacity &- 1)
        var i = 0
        while i < frames {
            let slot = Int(truncatingIfNeeded: (start &+ UInt64(truncatingIfNeeded: i)) & mask)
            samples[slot] = right.map { 0.5 * (left[i] + $0[i]) } ?? left[i]
            i &+= 1
        }
        written.store(start &+ UInt64(truncatingIfNeeded: frames), ordering: .releasing)
    }

    /// Lets go of the tap if `key` holds it.
    @_noLocks func release(key: Int) {
        _ = writer.compareExchange(expected: key, desired: 0, ordering: .acquiringAndReleasing)
    }
}

/// The tap as a process-wide constant (the pointer never changes; the tap synchronizes itself).
struct SharedTap: @unchecked Sendable {
    let tap: UnsafeMutablePointer<ReferenceTap>

    init() {
        tap = .allocate(capacity: 1)
        tap.initialize(to: ReferenceTap())
    }
}

/// One microphone chain's place in the tap.
struct TapReader {
    let tap: UnsafeMutablePointer<ReferenceTap>
    /// The next sample to read, in the writer's count.
    var position: UInt64 = 0
    /// The writer claim this reader is aligned to; nil before the first alignment.
    var claim: UInt64? = nil
    /// Samples read as silence since the writer went (its chain suspended or removed): the room's
    /// echo of its last block still reaches the microphone, so the canceller runs on for a while.
    var orphaned = 0

    init(tap: UnsafeMutablePointer<ReferenceTap>) { self.tap = tap }

    /// Before a block of `frames`: whether a reference exists (a writer at `sampleRate`), and
    /// whether the reader had to realign to it. Positions the reader at the block to copy.
    @_noLocks mutating func begin(frames: Int, sampleRate: Int, key: Int) -> (present: Bool, realigned: Bool) {
        let owner = tap.pointee.writer.load(ordering: .acquiring)
        guard owner != 0, owner != key, tap.pointee.rate.load(ordering: .relaxed) == sampleRate else {
            // Silence for as long again as the canceller's filter (`ReferenceTap.tail`) after a writer goes.
            let holding = claim != nil && orphaned < ReferenceTap.tail(sampleRate: sampleRate)
            orphaned = holding ? orphaned &+ frames : 0
            if !holding { claim = nil }
            position = tap.pointee.written.load(ordering: .acquiring)
            return (holding, false)
        }
        orphaned = 0
        let claims = tap.pointee.claims.load(ordering: .acquiring)
        let end = tap.pointee.written.load(ordering: .acquiring)
        let block = UInt64(truncatingIfNeeded: frames)
        if claim != claims {
            claim = claims
            position = end &- min(block, end)
            return (true, false)
        }
        // Signed: a reader ahead of the writer finds a negative count.
        let waiting = Int64(bitPattern: end &- position)
        if waiting == 0 { return (true, false) }  // nothing played since the last block
        if waiting == Int64(frames) { return (true, false) }
        if waiting > 0 && waiting <= 2 &* Int64(frames) && waiting < Int64(ReferenceTap.capacity / 2) {
            return (true, false)  // a little ahead of this reader (a quantum that grew): still in order
        }
        position = end &- min(block, end)
        return (true, true)
    }

    /// Copies the next `count` samples of the reference (silence where the writer has not written).
    @_noLocks mutating func copy(into target: UnsafeMutablePointer<Float>, count: Int) {
        let end = tap.pointee.written.load(ordering: .acquiring)
        let mask = UInt64(ReferenceTap.capacity &- 1)
        var i = 0
        while i < count {
            if position < end {
                target[i] = tap.pointee.samples[Int(truncatingIfNeeded: position & mask)]
                position &+= 1
            } else {
                target[i] = 0
            }
            i &+= 1
        }
    }
}
