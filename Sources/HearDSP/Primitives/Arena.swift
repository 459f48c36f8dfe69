// One allocation for all the buffers of a stage made of parts (the noise suppressor: filter bank,
// noise estimate, gain rule, model): each part takes its pieces at init, the owner frees the whole
// once in its deinit, and nothing is allocated afterwards. Pieces start on 64-byte boundaries
// (a cache line, and aligned for SIMD loads).
//
// The size is found by building the parts once against a measuring arena, which hands out pieces
// of real, separately allocated memory (so that the parts' initializers run exactly as they will)
// and counts their bytes; those pieces are freed when the measuring arena is released. The parts'
// initializers are the only description of what they need: no size formula to keep in step.

struct Arena: ~Copyable {
    /// The owner's memory (nil while measuring).
    let memory: UnsafeMutableRawPointer?
    let capacity: Int
    /// Bytes handed out so far, padding included.
    private(set) var used = 0
    /// Measuring: the last piece handed out; each piece's first 64 bytes hold the one before, so
    /// that they are freed with the arena without a collection (no Array code in HearDSP: NoTrapTests).
    private var lastPiece: UnsafeMutableRawPointer? = nil
    /// Pieces a real arena could not hold (never: NoiseSuppressorTests.everyPartLivesInTheOneArena); they are kept, never freed.
    private(set) var overflowed = 0

    static let alignment = 64

    /// An arena that hands out separate allocations and counts their bytes.
    static func measuring() -> Arena { Arena(memory: nil, capacity: 0) }

    /// An arena of `bytes` bytes (zeroed); its owner frees `memory` at its end.
    static func allocate(bytes: Int) -> Arena {
        let count = max(bytes, alignment)
        let memory = UnsafeMutableRawPointer.allocate(byteCount: count, alignment: alignment)
        memory.initializeMemory(as: UInt8.self, repeating: 0, count: count)
        return Arena(memory: memory, capacity: count)
    }

    private init(memory: UnsafeMutableRawPointer?, capacity: Int) {
        self.memory = memory
        self.capacity = capacity
    }

    /// `count` elements set to `value`.
    mutating func take<T: BitwiseCopyable>(_ count: Int, _ value: T) -> UnsafeMutablePointer<T> {
        let n = max(0, min(count, 1 << 32))
        let bytes = (n &* MemoryLayout<T>.stride &+ Self.alignment &- 1) / Self.alignment &* Self.alignment
        let raw: UnsafeMutableRawPointer
        if let memory, used &+ bytes <= capacity {
            raw = memory + used
        } else {
            // Measuring; or, were the parts ever to ask a real arena for more than they measured, a
            // piece of its own rather than memory past the end (NoiseSuppressorTests.everyPartLivesInTheOneArena checks they never do).
            let piece = UnsafeMutableRawPointer.allocate(byteCount: bytes &+ Self.alignment, alignment: Self.alignment)
            piece.storeBytes(of: lastPiece, as: UnsafeMutableRawPointer?.self)
            if memory == nil { lastPiece = piece } else { overflowed &+= 1 }
            raw = piece + Self.alignment
        }
        used &+= bytes
        let pointer = raw.bindMemory(to: T.self, capacity: n)
        for i in upTo(n) { (pointer + i).initialize(to: value) }
        return pointer
    }

    mutating func floats(_ count: Int, _ value: Float = 0) -> UnsafeMutablePointer<Float> { take(count, value) }
    mutating func ints(_ count: Int, _ value: Int = 0) -> UnsafeMutablePointer<Int> { take(count, value) }

    /// Whether every piece came from the owner's memory (never from a separate allocation).
    var isWhole: Bool { memory != nil && overflowed == 0 }

    deinit {
        // Measuring: the pieces go with the arena (the parts built from them are gone by then).
        // A real arena's memory is its owner's to free.
        var piece = lastPiece
        while let current = piece {
            piece = current.load(as: UnsafeMutableRawPointer?.self)
            current.deallocate()
        }
    }
}
