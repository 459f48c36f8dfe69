// The learned gain model: band features in, band gains and a speech probability out, once per
// model step. A dense layer, two GRU layers and an output layer that reads both GRUs:
//   d  = tanh(Wd x + bd)
//   h1 = GRU1(d, h1),  h2 = GRU2(h1, h2)            (PyTorch's GRU equations, gates r, z, n)
//   y  = sigmoid(Wo [h1; h2] + bo)                  (32 band gains, then the speech probability)
// Weights come from the blob that training/hear_training/train.py exports (float16, checksummed) and that
// CHearModel compiles into the library; they are widened to Float once, at init, into one piece
// of an arena (the suppressor's) that also holds the state and the scratch vectors. Rows are padded
// to 8 floats, so every matrix-vector product runs on whole SIMD8 loads; the padding is zero in
// weights and inputs.

import CHearModel

public struct GainModel: ~Copyable {
    /// Layer sizes, from the blob's header.
    public let inputs: Int
    public let dense: Int
    public let hidden: Int
    public let outputs: Int
    /// Statistics updates per model step.
    public let stride: Int
    /// False when the blob is missing, damaged or of another shape: the suppressor then stays classical.
    public let isAvailable: Bool

    /// "HEARGRU1", the blob's first 8 bytes, read as a little-endian UInt64.
    static let magic: UInt64 = 0x3155_5247_5241_4548
    static let headerBytes = 8 + 4 * 8

    /// The weights, state and scratch, `weightsCount` floats.
    let weights: UnsafeMutablePointer<Float>
    let weightsCount: Int
    // Offsets into `weights`. `*Columns` are the padded row lengths.
    /// The input's row length, padded to 8 (dense and hidden are multiples of 8 already).
    let inputColumns: Int
    let denseWeights: Int, denseBias: Int
    let gru1Input: Int, gru1Recurrent: Int, gru1InputBias: Int, gru1RecurrentBias: Int
    let gru2Input: Int, gru2Recurrent: Int, gru2InputBias: Int, gru2RecurrentBias: Int
    let outputWeights: Int, outputBias: Int
    /// State and scratch: the input, the dense layer's output, both GRU states (adjacent: [h1; h2]),
    /// the gate pre-activations and the outputs.
    let input: Int, denseOut: Int, state1: Int, state2: Int, gatesInput: Int, gatesRecurrent: Int, output: Int

    /// Where `weights` lives when it is this model's own (empty when it is a piece of its owner's arena).
    let arena: Arena

    /// The blob compiled into the library.
    static var compiledBlob: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: hear_model_data(), count: hear_model_size()) }

    /// The model compiled into the library.
    public init() {
        self.init(blob: Self.compiledBlob)
    }

    /// A model from an exported blob (see train.py's `export`), in memory of its own.
    public init(blob: UnsafeRawBufferPointer) {
        var own = Arena()
        self.init(blob: blob, arena: &own, keeping: true)
    }

    /// A model whose weights, state and scratch are a piece of `arena` (the noise suppressor's).
    init(blob: UnsafeRawBufferPointer, arena: inout Arena) {
        self.init(blob: blob, arena: &arena, keeping: false)
    }

    private init(blob: UnsafeRawBufferPointer, arena: inout Arena, keeping: Bool) {
        func word(_ i: Int) -> Int {
            guard blob.count >= Self.headerBytes else { return 0 }
            return Int(blob.loadUnaligned(fromByteOffset: 8 + 4 * i, as: UInt32.self).littleEndian)
        }
        let version = word(0), inputs = word(1), dense = word(2), hidden = word(3), outputs = word(4),
            stride = word(5), count = word(6), checksum = word(7)
        // Wrapping arithmetic: sizes out of range (and any product they overflow) fail the checks below.
        let expected = (dense &* inputs &+ dense)  // dense layer
            &+ (3 &* hidden &* dense &+ 3 &* hidden &* hidden &+ 6 &* hidden)  // GRU 1
            &+ (3 &* hidden &* hidden &+ 3 &* hidden &* hidden &+ 6 &* hidden)  // GRU 2
            &+ (outputs &* 2 &* hidden &+ outputs)  // output layer
        var valid = blob.count >= Self.headerBytes && blob.loadUnaligned(as: UInt64.self).littleEndian == Self.magic && version == 1
            && (1...512).contains(inputs) && (8...256).contains(dense) && (8...256).contains(hidden)
            && dense % 8 == 0 && hidden % 8 == 0 && (1...64).contains(outputs) && (1...8).contains(stride)
            && count == expected && blob.count == Self.headerBytes &+ 2 &* count
        if valid {
            // FNV-1a over the payload: a damaged or truncated blob is refused, never run.
            var hash: UInt32 = 0x811C_9DC5
            for i in loop(from: Self.headerBytes, upTo: blob.count) { hash = (hash ^ UInt32(blob[i])) &* 0x0100_0193 }
            valid = hash == UInt32(checksum)
        }
        isAvailable = valid
        // An unavailable model keeps a minimal, valid shape so that every pointer below exists.
        self.inputs = valid ? inputs : 1
        self.dense = valid ? dense : 8
        self.hidden = valid ? hidden : 8
        self.outputs = valid ? outputs : 1
        self.stride = valid ? stride : 1
        func padded(_ n: Int) -> Int { (n &+ 7) / 8 &* 8 }
        inputColumns = padded(self.inputs)
        let h = self.hidden, d = self.dense, o = self.outputs
        var next = 0
        func take(_ n: Int) -> Int { defer { next &+= padded(n) }; return next }
        denseWeights = take(d &* inputColumns); denseBias = take(d)
        gru1Input = take(3 &* h &* d); gru1Recurrent = take(3 &* h &* h); gru1InputBias = take(3 &* h); gru1RecurrentBias = take(3 &* h)
        gru2Input = take(3 &* h &* h); gru2Recurrent = take(3 &* h &* h); gru2InputBias = take(3 &* h); gru2RecurrentBias = take(3 &* h)
        outputWeights = take(o &* 2 &* h); outputBias = take(o)
        input = take(inputColumns); denseOut = take(d); state1 = take(h); state2 = take(h)
        gatesInput = take(3 &* h); gatesRecurrent = take(3 &* h); output = take(o)
        weightsCount = next
        let weights = arena.floats(next)
        self.weights = weights
        self.arena = keeping ? arena.handOver() : Arena()
        guard valid, let base = blob.baseAddress else { return }

        // Offsets as plain values: the nested function must not capture (and so consume) self.
        let o1 = denseWeights, o2 = denseBias, o3 = gru1Input, o4 = gru1Recurrent, o5 = gru1InputBias, o6 = gru1RecurrentBias
        let o7 = gru2Input, o8 = gru2Recurrent, o9 = gru2InputBias, o10 = gru2RecurrentBias, o11 = outputWeights, o12 = outputBias
        let columns = inputColumns, n = self.inputs
        // The payload, in export order: dense W (d x inputs), b; per GRU W_ih, W_hh, b_ih, b_hh; output W (o x 2h), b.
        var position = Self.headerBytes
        func read(into offset: Int, rows: Int, columns: Int, rowStride: Int) {
            for r in upTo(rows) {
                for c in upTo(columns) {
                    let bits = base.loadUnaligned(fromByteOffset: position, as: UInt16.self).littleEndian
                    weights[offset &+ r &* rowStride &+ c] = Float(Float16(bitPattern: bits))
                    position &+= 2
                }
            }
        }
        read(into: o1, rows: d, columns: n, rowStride: columns)
        read(into: o2, rows: 1, columns: d, rowStride: d)
        read(into: o3, rows: 3 &* h, columns: d, rowStride: d)
        read(into: o4, rows: 3 &* h, columns: h, rowStride: h)
        read(into: o5, rows: 1, columns: 3 &* h, rowStride: 3 &* h)
        read(into: o6, rows: 1, columns: 3 &* h, rowStride: 3 &* h)
        read(into: o7, rows: 3 &* h, columns: h, rowStride: h)
        read(into: o8, rows: 3 &* h, columns: h, rowStride: h)
        read(into: o9, rows: 1, columns: 3 &* h, rowStride: 3 &* h)
        read(into: o10, rows: 1, columns: 3 &* h, rowStride: 3 &* h)
        read(into: o11, rows: o, columns: 2 &* h, rowStride: 2 &* h)
        read(into: o12, rows: 1, columns: o, rowStride: o)
    }


    /// Where the caller writes the `inputs` features before `step`.
    public var features: UnsafeMutablePointer<Float> { weights + input }
    /// The last step's outputs: `outputs` values in 0...1.
    public var result: UnsafePointer<Float> { UnsafePointer(weights + output) }

    /// Clears the recurrent state (a stream restarts).
    @_noLocks public mutating func reset() {
        for i in upTo(hidden) {
            weights[state1 &+ i] = 0
            weights[state2 &+ i] = 0
        }
    }

    /// One step: reads `features`, updates the state, writes `result`.
    @_noLocks public mutating func step() {
        guard isAvailable else { return }
        let a = weights
        Self.multiply(a + denseWeights, rows: dense, columns: inputColumns, a + input, plus: a + denseBias, into: a + denseOut)
        for i in upTo(dense) { a[denseOut &+ i] = Self.tanh(a[denseOut &+ i]) }
        gru(input: a + denseOut, inputColumns: dense, inputWeights: gru1Input, recurrent: gru1Recurrent,
            inputBias: gru1InputBias, recurrentBias: gru1RecurrentBias, state: state1)
        gru(input: a + state1, inputColumns: hidden, inputWeights: gru2Input, recurrent: gru2Recurrent,
            inputBias: gru2InputBias, recurrentBias: gru2RecurrentBias, state: state2)
        // [h1; h2] are adjacent in `weights` (hidden is a multiple of 8, so no padding between them).
        Self.multiply(a + outputWeights, rows: outputs, columns: 2 &* hidden, a + state1, plus: a + outputBias, into: a + output)
        for i in upTo(outputs) { a[output &+ i] = Self.sigmoid(a[output &+ i]) }
    }

    @inline(__always) func gru(input x: UnsafeMutablePointer<Float>, inputColumns: Int, inputWeights: Int, recurrent: Int,
                               inputBias: Int, recurrentBias: Int, state: Int) {
        let a = weights, h = hidden
        Self.multiply(a + inputWeights, rows: 3 &* h, columns: inputColumns, x, plus: a + inputBias, into: a + gatesInput)
        Self.multiply(a + recurrent, rows: 3 &* h, columns: h, a + state, plus: a + recurrentBias, into: a + gatesRecurrent)
        let gi = a + gatesInput, gh = a + gatesRecurrent, s = a + state
        for i in upTo(h) {
            let r = Self.sigmoid(gi[i] + gh[i])
            let z = Self.sigmoid(gi[h &+ i] + gh[h &+ i])
            let n = Self.tanh(gi[2 &* h &+ i] + r * gh[2 &* h &+ i])
            s[i] = n + z * (s[i] - n)
        }
    }

    /// out = W x + b for a row-major W whose rows are `columns` long (a multiple of 8).
    @inline(__always) static func multiply(_ w: UnsafeMutablePointer<Float>, rows: Int, columns: Int, _ x: UnsafeMutablePointer<Float>,
                                           plus bias: UnsafeMutablePointer<Float>, into out: UnsafeMutablePointer<Float>) {
        let blocks = columns / 8
        let vector = UnsafeRawPointer(x)
        var r = 0
        // Four rows at a time: four independent accumulators share each load of x.
        while r &+ 4 <= rows {
            let row0 = UnsafeRawPointer(w + r &* columns), row1 = UnsafeRawPointer(w + (r &+ 1) &* columns)
            let row2 = UnsafeRawPointer(w + (r &+ 2) &* columns), row3 = UnsafeRawPointer(w + (r &+ 3) &* columns)
            var s0 = SIMD8<Float>(), s1 = SIMD8<Float>(), s2 = SIMD8<Float>(), s3 = SIMD8<Float>()
            for j in upTo(blocks) {
                let offset = j &* 32
                let v = vector.loadUnaligned(fromByteOffset: offset, as: SIMD8<Float>.self)
                s0 += row0.loadUnaligned(fromByteOffset: offset, as: SIMD8<Float>.self) * v
                s1 += row1.loadUnaligned(fromByteOffset: offset, as: SIMD8<Float>.self) * v
                s2 += row2.loadUnaligned(fromByteOffset: offset, as: SIMD8<Float>.self) * v
                s3 += row3.loadUnaligned(fromByteOffset: offset, as: SIMD8<Float>.self) * v
            }
            out[r] = s0.sum() + bias[r]
            out[r &+ 1] = s1.sum() + bias[r &+ 1]
            out[r &+ 2] = s2.sum() + bias[r &+ 2]
            out[r &+ 3] = s3.sum() + bias[r &+ 3]
            r &+= 4
        }
        while r < rows {
            let row = UnsafeRawPointer(w + r &* columns)
            var s = SIMD8<Float>()
            for j in upTo(blocks) {
                s += row.loadUnaligned(fromByteOffset: j &* 32, as: SIMD8<Float>.self) * vector.loadUnaligned(fromByteOffset: j &* 32, as: SIMD8<Float>.self)
            }
            out[r] = s.sum() + bias[r]
            r &+= 1
        }
    }

    @inline(__always) static func sigmoid(_ x: Float) -> Float { 1 / (1 + FastMath.exp(-x)) }
    @inline(__always) static func tanh(_ x: Float) -> Float { 2 / (1 + FastMath.exp(-2 * x)) - 1 }
}
