// What lets the stages (and the noise suppressor's parts) be written as plain loops over plain
// indices and still compile without a trap instruction (NoTrapTests disassembles HearDSP: a trap in
// the PipeWire daemon silences the whole desktop). Range checks and overflow checks are left out by
// the optimizer wherever it can see that they cannot fail, so every count a stage loops to is in a
// range it can see: a count from outside goes through `held(_:)`; a buffer's `count`, and the sizes
// and positions a part keeps, are stored in 32 bits (16 where two of them multiply). Below such a
// bound, `for i in 0..<n` needs no check that n >= 0, and index arithmetic like `i + 1`,
// `2 * i + 1` or `start + i` cannot overflow. What the optimizer cannot bound (a loop from a bound
// read out of memory, a position kept between calls) is a pointer moved instead: `row += stride`,
// `(gains + h)[i]`, which no check guards. Elements are read and written through pointers, without
// bounds checks: the indices stay below the counts allocated at init. Loops with long bodies, and
// loops that do not start at 0, are `while i < n { ...; i += 1 }`: a `for` loop's iterator checks
// its index once more, and in a big body the optimizer keeps that check; the `while` condition
// alone proves `i += 1` safe.

/// `count` frames as a loop bound: held in 0 ... 2^31, which the optimizer sees (through the
/// 32-bit round trip, which changes no value in that range: LLVM tracks a zero-extension's range
/// everywhere, a min's and max's not always).
@inline(__always) func held(_ count: Int) -> Int { Int(UInt32(truncatingIfNeeded: min(max(count, 0), 1 << 31))) }

/// Elements taken from an arena at init (`Arena.buffer`, `count` held in 0 ... 2^31), freed with it.
struct FixedBuffer<Element: BitwiseCopyable> {
    let base: UnsafeMutablePointer<Element>
    private let storedCount: UInt32

    var count: Int { Int(storedCount) }

    init(base: UnsafeMutablePointer<Element>, count: Int) {
        self.base = base
        storedCount = UInt32(truncatingIfNeeded: held(count))
    }

    @inline(__always) subscript(i: Int) -> Element {
        get { base[i] }
        nonmutating set { base[i] = newValue }
    }

    /// The elements from `offset` on (a channel's half, a piece).
    @inline(__always) static func + (buffer: FixedBuffer, offset: Int) -> UnsafeMutablePointer<Element> {
        buffer.base + offset
    }

    func fill(_ value: Element) {
        for i in 0..<count { base[i] = value }
    }

    /// The slot after `position` in the buffer as a ring (a delay line): after the last, the first.
    @inline(__always) func slot(after position: Int) -> Int {
        position < count - 1 ? position + 1 : 0
    }

    /// The slot before `position` in the buffer as a ring: before the first, the last.
    @inline(__always) func slot(before position: Int) -> Int {
        position > 0 ? position - 1 : count - 1
    }
}

/// `count` frames cut at the boundaries of a grid of `period` frames (control ticks, scratch
/// buffers, gain steps), the first frame `phase` frames into a period: `next()` gives the pieces in
/// order, and `phase` is then where the frame after them falls. Counts are held as in `held(_:)`.
struct GridPieces {
    struct Piece {
        private let storedStart: UInt32, storedCount: UInt32, storedPhase: UInt32
        let endsPeriod: Bool

        init(start: Int, count: Int, phase: Int, endsPeriod: Bool) {
            storedStart = UInt32(truncatingIfNeeded: start)
            storedCount = UInt32(truncatingIfNeeded: count)
            storedPhase = UInt32(truncatingIfNeeded: phase)
            self.endsPeriod = endsPeriod
        }

        /// The first frame's offset in the whole.
        var start: Int { Int(storedStart) }
        var count: Int { Int(storedCount) }
        /// The first frame's place in its period.
        var phase: Int { Int(storedPhase) }
        var startsPeriod: Bool { storedPhase == 0 }
    }

    let count: Int
    let period: Int
    var start = 0
    private(set) var phase: Int

    init(count: Int, period: Int, phase: Int) {
        self.count = held(count)
        self.period = max(held(period), 1)
        self.phase = min(held(phase), self.period &- 1)
    }

    @inline(__always) mutating func next() -> Piece? {
        guard start < count else { return nil }
        let length = min(period &- phase, count &- start)
        let end = phase &+ length
        let piece = Piece(start: start, count: length, phase: phase, endsPeriod: end == period)
        start &+= length
        phase = end == period ? 0 : end
        return piece
    }
}
