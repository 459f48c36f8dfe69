// The unchecked style of the FFT (and the meters' fixed tables): loops over `upTo(n)` and
// arithmetic with `&+`, `&-`, `&*` on indices into buffers sized at init, for code whose bounds the
// optimizer cannot see (the stages and the noise suppressor use FixedBuffer.swift's plain loops
// instead). HearDSP's object code holds
// no trap instruction (NoTrapTests disassembles it), because a trap in the PipeWire daemon
// silences the whole desktop. Also `truncatedInt`, which everyone uses.

/// lower, lower + 1, ..., upper - 1, and nothing when upper <= lower: a `for` over `lower..<upper`
/// without the range's checks (upper >= lower, and the index checks of its iterator, which the
/// optimizer does not always remove).
struct CountingLoop: Sequence, IteratorProtocol {
    var current: Int
    let end: Int

    @inline(__always) mutating func next() -> Int? {
        guard current < end else { return nil }
        defer { current &+= 1 }
        return current
    }

    // Sequence's default copies into arrays trap on overflow; a testable build (`swift test`)
    // keeps them in the object code, so these two are written without any check.
    func _copyToContiguousArray() -> ContiguousArray<Int> {
        let count = Swift.min(Swift.max(0, end &- current), 1 << 40)
        var result = ContiguousArray<Int>(repeating: 0, count: count)
        result.withUnsafeMutableBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return }
            var copy = self, written = 0
            while written < buffer.count, let i = copy.next() { base[written] = i; written &+= 1 }
        }
        return result
    }

    __consuming func _copyContents(initializing buffer: UnsafeMutableBufferPointer<Int>) -> (CountingLoop, Int) {
        var copy = self, written = 0
        guard let base = buffer.baseAddress else { return (copy, 0) }
        while written < buffer.count, let i = copy.next() { (base + written).initialize(to: i); written &+= 1 }
        return (copy, written)
    }
}

/// 0, 1, ..., n - 1; nothing when n <= 0.
@inline(__always) func upTo(_ n: Int) -> CountingLoop { CountingLoop(current: 0, end: n) }

/// lower, ..., upper - 1; nothing when upper <= lower.
@inline(__always) func loop(from lower: Int, upTo upper: Int) -> CountingLoop { CountingLoop(current: lower, end: upper) }

/// `Int(x)` (toward zero) for |x| < 2^52 (public: the plugin and HearControl's real-time code use it too); beyond that held at ±2^52, and NaN gives 0. Never traps.
/// (`Int(exactly:)` names FloatingPointRoundingRule, whose metadata the @_noLocks checker cannot
/// prove static; it is a plain enum, emitted statically, so this vouches for it.)
@_noLocks @inline(__always) public func truncatedInt(_ x: Double) -> Int {
    let held = x.isNaN ? 0 : min(max(x, -0x1p52), 0x1p52)
    return _unsafePerformance { Int(exactly: LibM.trunc(held)) ?? 0 }
}

extension UnsafeMutablePointer where Pointee: BitwiseCopyable {
    /// Sets the first `count` elements to `value` (none when count <= 0): `update(repeating:count:)`
    /// without its check.
    @inline(__always) func fill(_ value: Pointee, count: Int) {
        for i in upTo(count) { self[i] = value }
    }
}
