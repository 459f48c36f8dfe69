// The learned model's weights and its inference: the compiled-in blob is the committed file, the
// file matches its SHA-256, a damaged blob is refused, and the Swift inference reproduces the
// outputs the training code computed for the same features with the same (float16) weights.

import CHearKernels
import CHearModel
import Foundation
import HearDSP
import Testing
import TestSupport

@Suite struct GainModelTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let blobURL = root.appendingPathComponent("Sources/CHearModel/hear-model.bin")

    static var compiledBlob: [UInt8] { Array(UnsafeBufferPointer(start: hear_model_data(), count: hear_model_size())) }

    @Test func theCompiledWeightsAreTheCommittedFileAndMatchItsChecksum() throws {
        let file = try [UInt8](Data(contentsOf: Self.blobURL))
        #expect(file == Self.compiledBlob, "the library embeds another hear-model.bin than the repository's")
        let recorded = try String(contentsOf: Self.blobURL.appendingPathExtension("sha256"), encoding: .utf8)
            .split(separator: " ").first.map(String.init)
        let output = try Command.run("/usr/bin/sha256sum", [Self.blobURL.path]).stdout
        let actual = output.split(separator: " ").first.map(String.init)
        #expect(actual != nil && actual == recorded, "sha256 \(actual ?? "?") against hear-model.bin.sha256 \(recorded ?? "?")")
        let available = GainModel().isAvailable
        #expect(available)
    }

    @Test func aDamagedBlobIsRefused() {
        var blob = Self.compiledBlob
        blob[blob.count / 2] ^= 0x40  // one bit in the weights: the checksum no longer matches
        let damaged = blob.withUnsafeBytes { GainModel(blob: $0).isAvailable }
        #expect(!damaged)
        let truncated = Array(Self.compiledBlob.dropLast(2)).withUnsafeBytes { GainModel(blob: $0).isAvailable }
        #expect(!truncated)
        let empty = [UInt8]().withUnsafeBytes { GainModel(blob: $0).isAvailable }
        #expect(!empty)
        let intact = Self.compiledBlob.withUnsafeBytes { GainModel(blob: $0).isAvailable }
        #expect(intact)
    }

    /// train.py's reference: steps, inputs, outputs (UInt32 each), then the features and the outputs (Float32).
    @Test func inferenceReproducesTheTrainingCode() throws {
        let data = try [UInt8](Data(contentsOf: Self.root.appendingPathComponent("Tests/HearDSPTests/Fixtures/reference-vectors.bin")))
        let header = data.withUnsafeBytes { raw in (0..<3).map { Int(raw.loadUnaligned(fromByteOffset: 4 * $0, as: UInt32.self)) } }
        let steps = header[0], inputs = header[1], outputs = header[2]
        var model = GainModel()
        let shape = (model.isAvailable, model.inputs, model.outputs)
        try #require(shape == (true, inputs, outputs))
        try #require(data.count == 12 + 4 * steps * (inputs + outputs))
        let floats = data.withUnsafeBytes { raw in
            (0..<(steps * (inputs + outputs))).map { raw.loadUnaligned(fromByteOffset: 12 + 4 * $0, as: Float.self) }
        }
        var worst: Float = 0
        for step in 0..<steps {
            for i in 0..<inputs { model.features[i] = floats[step * inputs + i] }
            model.step()
            for o in 0..<outputs {
                worst = max(worst, abs(model.result[o] - floats[steps * inputs + step * outputs + o]))
            }
        }
        // float32 in both, the same float16 weights; the difference is summation order and the
        // polynomial exp (FastMath, 1e-7 relative), carried through the recurrence.
        #expect(worst < 1e-4, "largest difference from the training code's outputs: \(worst)")
        print("GainModel: \(steps) steps, largest difference from train.py's outputs \(worst)")
    }

    /// The products on AVX (CHearKernels) add what the portable SIMD8 code adds, in the same order:
    /// the compiled model gives the same bits on both paths, step after step, so the sound does
    /// not depend on the processor.
    @Test(.enabled(if: hear_kernels_have_avx() != 0, "the processor has no AVX"))
    func theAVXPathGivesThePortablePathsBits() {
        let blob = UnsafeRawBufferPointer(start: hear_model_data(), count: hear_model_size())
        var fast = GainModel(blob: blob), portable = GainModel(blob: blob, allowingAVX: false)
        #expect(fast.usesAVX && !portable.usesAVX)
        var random = SeededRandom(seed: 5)
        var differing = 0, largest: Float = 0
        for _ in 0..<2_000 {
            for i in 0..<fast.inputs {
                let x = 2.5 * random.bipolar()
                fast.features[i] = x
                portable.features[i] = x
            }
            fast.step()
            portable.step()
            for o in 0..<fast.outputs where fast.result[o].bitPattern != portable.result[o].bitPattern {
                differing += 1
                largest = max(largest, abs(fast.result[o] - portable.result[o]))
            }
        }
        #expect(differing == 0, "\(differing) outputs differ, by up to \(largest)")
    }
}

