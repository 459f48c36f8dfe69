// The one allocator of real-time state. Every stage (and every primitive that holds tables: the
// FFT, the gain model) takes its buffers from an arena at init and holds the arena itself; the
// arena frees them all when its owner goes, and nothing is allocated afterwards. One allocator
// rather than a buffer that allocates itself, because a stage made of parts (the noise suppressor:
// filter bank, noise estimate, gain rule, model, their FFTs) then lives in one piece of memory
// freed once, with no deinit per part to keep in step with its fields. Pieces start on 64-byte
// boundaries (a cache line, and aligned for SIMD loads) and are handed out as FixedBuffers, whose
// counts the optimizer can bound (FixedBuffer.swift).
//
// Memory comes in chunks: the first of `capacity` bytes, more (at least `chunkBytes` each) when the
// parts ask for more. An owner that wants one chunk builds its parts once against an arena that
// starts empty, reads `used`, and builds them again against an arena of that capacity (the
// suppressor does: NoiseSuppressorTests.everyPartLivesInTheOneArena); the parts' initializers are
// then the only description of what they need, with no size formula to keep in step.

struct Arena: ~Copyable {
    /// The newest chunk; its first `alignment` bytes hold the chunk before it.
    private var newest: UnsafeMutableRawPointer? = nil
    private var chunkUsed = 0
    private var chunkCapacity = 0
    /// Bytes handed out so far, padding included.
    private(set) var used = 0
    /// Chunks allocated.
    private(set) var chunks = 0

    static let alignment = 64
    /// The smallest chunk taken when the first is full (or was never asked for).
    static let chunkBytes = 16_384

    /// An arena whose first chunk holds `capacity` bytes (none: the first piece asked for decides).
    init(capacity: Int = 0) {
        if capacity > 0 { addChunk(bytes: capacity) }
    }

    private mutating func addChunk(bytes: Int) {
        let count = min(max(bytes, Self.alignment), 1 << 40)
        let chunk = UnsafeMutableRawPointer.allocate(byteCount: count &+ Self.alignment, alignment: Self.alignment)
        chunk.storeBytes(of: newest, as: UnsafeMutableRawPointer?.self)
        newest = chunk
        chunkUsed = 0
        chunkCapacity = count
        chunks &+= 1
    }

    /// `count` elements set to `value`.
    mutating func take<T: BitwiseCopyable>(_ count: Int, _ value: T) -> UnsafeMutablePointer<T> {
        let n = held(count)
        let bytes = (n &* MemoryLayout<T>.stride &+ Self.alignment &- 1) / Self.alignment &* Self.alignment
        if newest == nil || chunkUsed &+ bytes > chunkCapacity {
            addChunk(bytes: max(bytes, Self.chunkBytes))
        }
        // addChunk leaves a chunk of at least `bytes` free.
        let raw = newest.unsafelyUnwrapped + (Self.alignment &+ chunkUsed)
        chunkUsed &+= bytes
        used &+= bytes
        let pointer = raw.bindMemory(to: T.self, capacity: n)
        for i in 0..<n { (pointer + i).initialize(to: value) }
        return pointer
    }

    /// `count` elements set to `value`, with their count.
    mutating func buffer<T: BitwiseCopyable>(_ count: Int, _ value: T) -> FixedBuffer<T> {
        let n = held(count)
        return FixedBuffer(base: take(n, value), count: n)
    }

    mutating func floats(_ count: Int, _ value: Float = 0) -> UnsafeMutablePointer<Float> { take(count, value) }

    /// Everything taken so far moves to the arena returned (to be held by whoever owns the pieces);
    /// this one is left empty.
    mutating func handOver() -> Arena {
        var whole = Arena()
        whole.newest = newest
        whole.chunkUsed = chunkUsed
        whole.chunkCapacity = chunkCapacity
        whole.used = used
        whole.chunks = chunks
        newest = nil
        chunkUsed = 0
        chunkCapacity = 0
        used = 0
        chunks = 0
        return whole
    }

    deinit {
        var chunk = newest
        while let current = chunk {
            chunk = current.load(as: UnsafeMutableRawPointer?.self)
            current.deallocate()
        }
    }
}
