// Where the noise suppressor's statistics run: on every spectrum bin up to 4 kHz, on pairs of bins
// up to 8 kHz and on bands of 8 bins (375 Hz at 48 kHz) above, from the band's mean power; a band's
// gain goes to each of its bins. The ear resolves far less than a bin up there, and this takes 40 %
// of the per-bin work at 48 kHz (`make eval`: unchanged).

struct StatisticsBins {
    /// Spectrum bins 0...N/2.
    var bins: Int { Int(storedBins) }
    /// Every spectrum bin below `split` (4 kHz) is a statistics bin of its own.
    var split: Int { Int(storedSplit) }
    /// Statistics bins in all.
    var count: Int { Int(storedCount) }
    /// Bin range where speech probability is metered and the frame's speech presence is judged
    /// (300 Hz - 4 kHz).
    var speechBins: Range<Int> { Int(storedSpeechLow)..<max(Int(storedSpeechLow), Int(storedSpeechHigh)) }
    // Sizes in 32 bits: loops up to them and index arithmetic on them need no overflow check.
    private let storedBins: UInt32, storedSplit: UInt32, storedCount: UInt32
    private let storedSpeechLow: UInt32, storedSpeechHigh: UInt32
    /// Statistics bin j covers spectrum bins first[j] ..< first[j + 1] (`count + 1` values).
    private let first: UnsafeMutablePointer<UInt32>
    /// How many one-sided spectrum bins each statistics bin stands for, doubled (DC and Nyquist once).
    let weight: UnsafeMutablePointer<Float>

    init(sampleRate: Double, frameLength n: Int, arena: inout Arena) {
        let bins = held(n) / 2 + 1
        let binWidth = sampleRate / Double(max(n, 1))
        let speechLow = max(1, min(bins - 1, held(truncatedInt(300 / binWidth))))
        let speechHigh = max(speechLow + 1, min(bins, held(truncatedInt(4000 / binWidth)) + 1))
        let split = min(bins, speechHigh)
        // Every bin below the split, then pairs of bins up to 8 kHz, then eights: counted, then written.
        let pairsEnd = min(bins, max(split, held(truncatedInt(8000 / binWidth)) + 1))
        @inline(__always) func nextFirst(_ first: Int) -> Int { min(first + (first < pairsEnd ? 2 : 8), bins) }
        var count = split
        var next = split
        // Each statistics bin above the split covers at least one spectrum bin: count stays within bins.
        while next < bins && count < bins {
            count += 1
            next = nextFirst(next)
        }
        storedBins = UInt32(truncatingIfNeeded: bins)
        storedSplit = UInt32(truncatingIfNeeded: split)
        storedCount = UInt32(truncatingIfNeeded: count)
        storedSpeechLow = UInt32(truncatingIfNeeded: speechLow)
        storedSpeechHigh = UInt32(truncatingIfNeeded: speechHigh)
        first = arena.take(count + 1, UInt32(0))
        for j in 0..<split { first[j] = UInt32(truncatingIfNeeded: j) }
        next = split
        var j = split
        while j < count {
            first[j] = UInt32(truncatingIfNeeded: next)
            next = nextFirst(next)
            j += 1
        }
        first[count] = UInt32(truncatingIfNeeded: bins)
        weight = arena.floats(count)
        for j in 0..<count {
            for k in binsOf(j) { weight[j] += k == 0 || k == bins - 1 ? 1 : 2 }
        }
    }

    /// The spectrum bins that statistics bin `j` stands for.
    @inline(__always) func binsOf(_ j: Int) -> Range<Int> {
        let from = Int(first[j])
        return from..<max(from, Int(first[j + 1]))
    }

    /// The statistics bins' power from every bin's: the bin's own below `split`, the band's mean above.
    /// (`while` loops inside: a `for` over a range keeps a check of its index there; FixedBuffer.swift.)
    @inline(__always) func gather(_ perBin: UnsafePointer<Float>, into stats: UnsafeMutablePointer<Float>) {
        for k in 0..<split { stats[k] = perBin[k] }
        var j = split
        while j < count {
            var i = Int(first[j])
            let end = Int(first[j + 1])
            var sum: Float = 0
            while i < end {
                sum += perBin[i]
                i += 1
            }
            stats[j] = sum / Float(end - Int(first[j]))
            j += 1
        }
    }

    /// A statistics bin's value spread to every spectrum bin it stands for.
    @inline(__always) func expand(_ stats: UnsafePointer<Float>, into perBin: UnsafeMutablePointer<Float>) {
        for k in 0..<split { perBin[k] = stats[k] }
        var j = split
        while j < count {
            let v = stats[j]
            var k = Int(first[j])
            let end = Int(first[j + 1])
            while k < end {
                perBin[k] = v
                k += 1
            }
            j += 1
        }
    }
}
