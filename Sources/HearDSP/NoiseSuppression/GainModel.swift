// The learned gain model: band features in, band gains and a speech probability out, once per
// model step. A dense layer, two GRU layers and an output layer that reads both GRUs:
//   d  = tanh(Wd x + bd)
//   h1 = GRU1(d, h1),  h2 = GRU2(h1, h2)            (PyTorch's GRU equations, gates r, z, n)
//   y  = sigmoid(Wo [h1; h2] + bo)                  (32 band gains, then the speech probability)
// Weights come from the blob that training/hear_training/train.py exports (float16, checksummed) and that
// CHearModel compiles into the library; they are widened to Float once, at init, into one piece
// of an arena (the suppressor's) that also holds the state and the scratch vectors. Rows are padded
// to 8 floats, so every matrix-vector product runs on whole SIMD8 loads; the padding is zero in
// weights and inputs. Where the processor has AVX the products run in CHearKernels (one 8-float
// register a row instead of two SSE ones, the same additions in the same order: bit-identical);
// the gates run eight units at a time (FastMath's SIMD8 functions, bit-identical to the scalar ones).

import CHearKernels
import CHearModel

public struct GainModel: ~Copyable {
    /// Layer sizes, from the blob's header (at most 512: `init` refuses larger ones).
    public var inputs: Int { Int(storedInputs) }
    public var dense: Int { Int(storedDense) }
    public var hidden: Int { Int(storedHidden) }
    public var outputs: Int { Int(storedOutputs) }
    /// Statistics updates per model step.
    public var stride: Int { Int(storedStride) }
    /// The input's row length, padded to 8 (dense and hidden are multiples of 8 already).
    var inputColumns: Int { Int(storedInputColumns) }
    // In 16 bits: products of two sizes need no overflow check.
    private let storedInputs: UInt16, storedDense: UInt16, storedHidden: UInt16, storedOutputs: UInt16,
                storedStride: UInt16, storedInputColumns: UInt16
    /// False when the blob is missing, damaged or of another shape: the suppressor then stays classical.
    public let isAvailable: Bool
    /// Whether the products run on AVX (CHearKernels: the same additions, bit-identical, in half the
    /// instructions), read from the processor once, at init.
    public let usesAVX: Bool

    /// "HEARGRU1", the blob's first 8 bytes, read as a little-endian UInt64.
    static let magic: UInt64 = 0x3155_5247_5241_4548
    static let headerBytes = 8 + 4 * 8

    /// The weights, state and scratch, one piece `weightsCount` floats long, and where each part starts.
    let weights: UnsafeMutablePointer<Float>
    let weightsCount: Int
    let denseWeights: UnsafeMutablePointer<Float>, denseBias: UnsafeMutablePointer<Float>
    let gru1Input: UnsafeMutablePointer<Float>, gru1Recurrent: UnsafeMutablePointer<Float>,
        gru1InputBias: UnsafeMutablePointer<Float>, gru1RecurrentBias: UnsafeMutablePointer<Float>
    let gru2Input: UnsafeMutablePointer<Float>, gru2Recurrent: UnsafeMutablePointer<Float>,
        gru2InputBias: UnsafeMutablePointer<Float>, gru2RecurrentBias: UnsafeMutablePointer<Float>
    let outputWeights: UnsafeMutablePointer<Float>, outputBias: UnsafeMutablePointer<Float>
    /// State and scratch: the input, the dense layer's output, both GRU states (adjacent: [h1; h2]),
    /// the gate pre-activations and the outputs.
    let input: UnsafeMutablePointer<Float>, denseOut: UnsafeMutablePointer<Float>,
        state1: UnsafeMutablePointer<Float>, state2: UnsafeMutablePointer<Float>,
        gatesInput: UnsafeMutablePointer<Float>, gatesRecurrent: UnsafeMutablePointer<Float>,
        output: UnsafeMutablePointer<Float>

    /// Where `weights` lives when it is this model's own (empty when it is a piece of its owner's arena).
    let arena: Arena

    /// The blob compiled into the library.
    static var compiledBlob: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: hear_model_data(), count: hear_model_size()) }

    /// The model compiled into the library.
    public init() {
        self.init(blob: Self.compiledBlob)
    }

    /// A model from an exported blob (see train.py's `export`), in memory of its own; with
    /// `allowingAVX` false it computes on the portable path whatever the processor has (the tests
    /// compare the two).
    public init(blob: UnsafeRawBufferPointer, allowingAVX: Bool = true) {
        var own = Arena()
        self.init(blob: blob, arena: &own, keeping: true, allowingAVX: allowingAVX)
    }

    /// A model whose weights, state and scratch are a piece of `arena` (the noise suppressor's).
    init(blob: UnsafeRawBufferPointer, arena: inout Arena) {
        self.init(blob: blob, arena: &arena, keeping: false)
    }

    private init(blob: UnsafeRawBufferPointer, arena: inout Arena, keeping: Bool, allowingAVX: Bool = true) {
        let hasHeader = blob.count >= Self.headerBytes
        func word(_ i: Int) -> Int {
            guard hasHeader else { return 0 }
            return Int(blob.loadUnaligned(fromByteOffset: 8 + 4 * i, as: UInt32.self).littleEndian)
        }
        let version = word(0), inputs = word(1), dense = word(2), hidden = word(3), outputs = word(4),
            stride = word(5), count = word(6), checksum = word(7)
        let shaped = hasHeader && blob.loadUnaligned(as: UInt64.self).littleEndian == Self.magic && version == 1
            && (1...512).contains(inputs) && (8...256).contains(dense) && (8...256).contains(hidden)
            && dense % 8 == 0 && hidden % 8 == 0 && (1...64).contains(outputs) && (1...8).contains(stride)
        // The sizes in 16 bits (they are far below whenever `shaped`), so that their products need
        // no overflow check.
        let n0 = Int(UInt16(clamping: inputs)), d0 = Int(UInt16(clamping: dense)), h0 = Int(UInt16(clamping: hidden))
        let o0 = Int(UInt16(clamping: outputs))
        let expected = (d0 * n0 + d0)  // dense layer
            + (3 * h0 * d0 + 3 * h0 * h0 + 6 * h0)  // GRU 1
            + (3 * h0 * h0 + 3 * h0 * h0 + 6 * h0)  // GRU 2
            + (o0 * 2 * h0 + o0)  // output layer
        var valid = shaped && count == expected && blob.count == Self.headerBytes + 2 * count
        if valid {
            // FNV-1a over the payload (a hash: wrapping multiplication): a damaged or truncated blob
            // is refused, never run.
            var hash: UInt32 = 0x811C_9DC5
            var i = Self.headerBytes
            while i < blob.count {
                hash = (hash ^ UInt32(blob[i])) &* 0x0100_0193
                i += 1
            }
            valid = hash == UInt32(truncatingIfNeeded: checksum)
        }
        isAvailable = valid
        usesAVX = allowingAVX && hear_kernels_have_avx() != 0
        // An unavailable model keeps a minimal, valid shape so that every pointer below exists.
        let n = valid ? n0 : 1, d = valid ? d0 : 8, h = valid ? h0 : 8, o = valid ? o0 : 1
        func padded(_ count: Int) -> Int { (count + 7) / 8 * 8 }
        let columns = padded(n)
        storedInputs = UInt16(truncatingIfNeeded: n)
        storedDense = UInt16(truncatingIfNeeded: d)
        storedHidden = UInt16(truncatingIfNeeded: h)
        storedOutputs = UInt16(truncatingIfNeeded: o)
        storedStride = UInt16(truncatingIfNeeded: valid ? min(stride, 8) : 1)
        storedInputColumns = UInt16(truncatingIfNeeded: columns)
        // Every part's offset, then one piece for them all.
        var next = 0
        func take(_ count: Int) -> Int {
            let at = next
            next = Int(UInt32(truncatingIfNeeded: next + padded(count)))  // a few hundred thousand at most
            return at
        }
        let at = (denseWeights: take(d * columns), denseBias: take(d),
                  gru1Input: take(3 * h * d), gru1Recurrent: take(3 * h * h), gru1InputBias: take(3 * h), gru1RecurrentBias: take(3 * h),
                  gru2Input: take(3 * h * h), gru2Recurrent: take(3 * h * h), gru2InputBias: take(3 * h), gru2RecurrentBias: take(3 * h),
                  outputWeights: take(o * 2 * h), outputBias: take(o),
                  input: take(columns), denseOut: take(d), state1: take(h), state2: take(h),
                  gatesInput: take(3 * h), gatesRecurrent: take(3 * h), output: take(o))
        weightsCount = next
        let weights = arena.floats(next)
        self.weights = weights
        denseWeights = weights + at.denseWeights; denseBias = weights + at.denseBias
        gru1Input = weights + at.gru1Input; gru1Recurrent = weights + at.gru1Recurrent
        gru1InputBias = weights + at.gru1InputBias; gru1RecurrentBias = weights + at.gru1RecurrentBias
        gru2Input = weights + at.gru2Input; gru2Recurrent = weights + at.gru2Recurrent
        gru2InputBias = weights + at.gru2InputBias; gru2RecurrentBias = weights + at.gru2RecurrentBias
        outputWeights = weights + at.outputWeights; outputBias = weights + at.outputBias
        input = weights + at.input; denseOut = weights + at.denseOut
        state1 = weights + at.state1; state2 = weights + at.state2
        gatesInput = weights + at.gatesInput; gatesRecurrent = weights + at.gatesRecurrent; output = weights + at.output
        self.arena = keeping ? arena.handOver() : Arena()
        guard valid, let base = blob.baseAddress else { return }

        // The payload, in export order: dense W (d x inputs), b; per GRU W_ih, W_hh, b_ih, b_hh;
        // output W (o x 2h), b. Each matrix row starts a padded row of its own.
        var source = base + Self.headerBytes
        func read(into destination: UnsafeMutablePointer<Float>, rows: Int, columns: Int, rowStride: Int) {
            var row = destination, r = 0
            while r < rows {
                for c in 0..<held(columns) {
                    row[c] = Float(Float16(bitPattern: source.loadUnaligned(as: UInt16.self).littleEndian))
                    source += 2
                }
                row += rowStride
                r += 1
            }
        }
        read(into: weights + at.denseWeights, rows: d, columns: n, rowStride: columns)
        read(into: weights + at.denseBias, rows: 1, columns: d, rowStride: d)
        read(into: weights + at.gru1Input, rows: 3 * h, columns: d, rowStride: d)
        read(into: weights + at.gru1Recurrent, rows: 3 * h, columns: h, rowStride: h)
        read(into: weights + at.gru1InputBias, rows: 1, columns: 3 * h, rowStride: 3 * h)
        read(into: weights + at.gru1RecurrentBias, rows: 1, columns: 3 * h, rowStride: 3 * h)
        read(into: weights + at.gru2Input, rows: 3 * h, columns: h, rowStride: h)
        read(into: weights + at.gru2Recurrent, rows: 3 * h, columns: h, rowStride: h)
        read(into: weights + at.gru2InputBias, rows: 1, columns: 3 * h, rowStride: 3 * h)
        read(into: weights + at.gru2RecurrentBias, rows: 1, columns: 3 * h, rowStride: 3 * h)
        read(into: weights + at.outputWeights, rows: o, columns: 2 * h, rowStride: 2 * h)
        read(into: weights + at.outputBias, rows: 1, columns: o, rowStride: o)
    }

    /// Where the caller writes the `inputs` features before `step`.
    public var features: UnsafeMutablePointer<Float> { input }
    /// The last step's outputs: `outputs` values in 0...1.
    public var result: UnsafePointer<Float> { UnsafePointer(output) }

    /// Clears the recurrent state (a stream restarts).
    @_noLocks public mutating func reset() {
        for i in 0..<hidden {
            state1[i] = 0
            state2[i] = 0
        }
    }

    /// One step: reads `features`, updates the state, writes `result`.
    @_noLocks public mutating func step() {
        guard isAvailable else { return }
        product(denseWeights, rows: dense, columns: inputColumns, input, plus: denseBias, into: denseOut)
        var i = 0
        while i < dense {  // dense is a multiple of 8
            store8(denseOut + i, Self.tanh(load8(denseOut + i)))
            i += 8
        }
        gru(input: denseOut, inputColumns: dense, inputWeights: gru1Input, recurrent: gru1Recurrent,
            inputBias: gru1InputBias, recurrentBias: gru1RecurrentBias, state: state1)
        gru(input: state1, inputColumns: hidden, inputWeights: gru2Input, recurrent: gru2Recurrent,
            inputBias: gru2InputBias, recurrentBias: gru2RecurrentBias, state: state2)
        // [h1; h2] are adjacent in `weights` (hidden is a multiple of 8, so no padding between them).
        product(outputWeights, rows: outputs, columns: 2 * hidden, state1, plus: outputBias, into: output)
        for i in 0..<outputs { output[i] = Self.sigmoid(output[i]) }
    }

    @inline(__always) func gru(input x: UnsafeMutablePointer<Float>, inputColumns: Int, inputWeights: UnsafeMutablePointer<Float>,
                               recurrent: UnsafeMutablePointer<Float>, inputBias: UnsafeMutablePointer<Float>,
                               recurrentBias: UnsafeMutablePointer<Float>, state s: UnsafeMutablePointer<Float>) {
        let h = hidden
        product(inputWeights, rows: 3 * h, columns: inputColumns, x, plus: inputBias, into: gatesInput)
        product(recurrent, rows: 3 * h, columns: h, s, plus: recurrentBias, into: gatesRecurrent)
        // The gates r, z, n, h apart in each vector.
        let inputR = gatesInput, inputZ = gatesInput + h, inputN = gatesInput + 2 * h
        let stateR = gatesRecurrent, stateZ = gatesRecurrent + h, stateN = gatesRecurrent + 2 * h
        var i = 0
        while i < h {  // hidden is a multiple of 8
            let r = Self.sigmoid(load8(inputR + i) + load8(stateR + i))
            let z = Self.sigmoid(load8(inputZ + i) + load8(stateZ + i))
            let n = Self.tanh(load8(inputN + i) + r * load8(stateN + i))
            store8(s + i, n + z * (load8(s + i) - n))
            i += 8
        }
    }

    /// `multiply`, on AVX where the processor has it.
    @inline(__always) func product(_ w: UnsafeMutablePointer<Float>, rows: Int, columns: Int, _ x: UnsafeMutablePointer<Float>,
                                   plus bias: UnsafeMutablePointer<Float>, into out: UnsafeMutablePointer<Float>) {
        if usesAVX {
            // Sizes are at most 512 rows and 1,024 columns (init), far inside Int32. C, which the
            // compiler's real-time check cannot see into: kernels.c neither allocates nor locks.
            let r = Int32(truncatingIfNeeded: rows), c = Int32(truncatingIfNeeded: columns)
            _unsafePerformance { hear_product_avx(w, r, c, x, bias, out) }
        } else {
            Self.multiply(w, rows: rows, columns: columns, x, plus: bias, into: out)
        }
    }

    /// out = W x + b for a row-major W whose rows are `columns` long (a multiple of 8). (`while`
    /// loops: a `for` over a range keeps a check of its index in bodies this large; FixedBuffer.swift.)
    @inline(__always) static func multiply(_ w: UnsafeMutablePointer<Float>, rows: Int, columns: Int, _ x: UnsafeMutablePointer<Float>,
                                           plus bias: UnsafeMutablePointer<Float>, into out: UnsafeMutablePointer<Float>) {
        let rows = held(rows), columns = held(columns)
        let blocks = columns / 8
        let vector = UnsafeRawPointer(x)
        // Four rows at a time: four independent accumulators share each load of x.
        var row = UnsafeRawPointer(w)
        let rowBytes = 4 * columns
        var r = 0
        while r < rows - 3 {
            var s0 = SIMD8<Float>(), s1 = SIMD8<Float>(), s2 = SIMD8<Float>(), s3 = SIMD8<Float>()
            var j = 0
            while j < blocks {
                let offset = 32 * j
                let v = vector.loadUnaligned(fromByteOffset: offset, as: SIMD8<Float>.self)
                s0 += row.loadUnaligned(fromByteOffset: offset, as: SIMD8<Float>.self) * v
                s1 += (row + rowBytes).loadUnaligned(fromByteOffset: offset, as: SIMD8<Float>.self) * v
                s2 += (row + 2 * rowBytes).loadUnaligned(fromByteOffset: offset, as: SIMD8<Float>.self) * v
                s3 += (row + 3 * rowBytes).loadUnaligned(fromByteOffset: offset, as: SIMD8<Float>.self) * v
                j += 1
            }
            let results = out + r, biases = bias + r
            results[0] = s0.sum() + biases[0]
            results[1] = s1.sum() + biases[1]
            results[2] = s2.sum() + biases[2]
            results[3] = s3.sum() + biases[3]
            row += 4 * rowBytes
            r += 4
        }
        while r < rows {
            var sum = SIMD8<Float>()
            var j = 0
            while j < blocks {
                sum += row.loadUnaligned(fromByteOffset: 32 * j, as: SIMD8<Float>.self) * vector.loadUnaligned(fromByteOffset: 32 * j, as: SIMD8<Float>.self)
                j += 1
            }
            out[r] = sum.sum() + bias[r]
            row += rowBytes
            r += 1
        }
    }

    @inline(__always) static func sigmoid(_ x: Float) -> Float { 1 / (1 + FastMath.exp(-x)) }
    @inline(__always) static func tanh(_ x: Float) -> Float { 2 / (1 + FastMath.exp(-2 * x)) - 1 }
    @inline(__always) static func sigmoid(_ x: SIMD8<Float>) -> SIMD8<Float> { 1 / (1 + FastMath.exp(-x)) }
    @inline(__always) static func tanh(_ x: SIMD8<Float>) -> SIMD8<Float> { 2 / (1 + FastMath.exp(-2 * x)) - 1 }
}
