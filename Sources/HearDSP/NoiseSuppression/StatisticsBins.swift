// Where the noise suppressor's statistics run: on every spectrum bin up to 4 kHz, on pairs of bins
// up to 8 kHz and on bands of 8 bins (375 Hz at 48 kHz) above, from the band's mean power; a band's
// gain goes to each of its bins. The ear resolves far less than a bin up there, and this takes 40 %
// of the per-bin work at 48 kHz (`make eval`: unchanged).

struct StatisticsBins {
    /// Spectrum bins 0...N/2.
    let bins: Int
    /// Every spectrum bin below `split` (4 kHz) is a statistics bin of its own.
    let split: Int
    /// Statistics bins in all.
    let count: Int
    /// Statistics bin j covers spectrum bins first[j] ..< first[j + 1] (`count + 1` values).
    let first: UnsafeMutablePointer<Int>
    /// How many one-sided spectrum bins each statistics bin stands for, doubled (DC and Nyquist once).
    let weight: UnsafeMutablePointer<Float>
    /// Bin range where speech probability is metered and the frame's speech presence is judged
    /// (300 Hz - 4 kHz).
    let speechLow: Int
    let speechHigh: Int

    init(sampleRate: Double, frameLength n: Int, arena: inout Arena) {
        let bins = n / 2 &+ 1
        self.bins = bins
        let binWidth = sampleRate / Double(n)
        speechLow = max(1, min(bins &- 1, truncatedInt(300 / binWidth)))
        speechHigh = max(speechLow &+ 1, min(bins, truncatedInt(4000 / binWidth) &+ 1))
        let split = min(bins, speechHigh)
        self.split = split
        // Every bin below the split, then pairs of bins up to 8 kHz, then eights: counted, then written.
        let pairsEnd = min(bins, max(split, truncatedInt(8000 / binWidth) &+ 1))
        func nextFirst(_ first: Int) -> Int { min(first &+ (first < pairsEnd ? 2 : 8), bins) }
        var firstCount = split
        var next = split
        while next < bins {
            firstCount &+= 1
            next = nextFirst(next)
        }
        count = firstCount
        first = arena.ints(firstCount &+ 1)
        for j in upTo(split) { first[j] = j }
        next = split
        for j in loop(from: split, upTo: firstCount) {
            first[j] = next
            next = nextFirst(next)
        }
        first[firstCount] = bins
        weight = arena.floats(firstCount)
        for j in upTo(firstCount) {
            for k in loop(from: first[j], upTo: first[j &+ 1]) { weight[j] += k == 0 || k == bins &- 1 ? 1 : 2 }
        }
    }

    /// The statistics bins' power from every bin's: the bin's own below `split`, the band's mean above.
    @inline(__always) func gather(_ perBin: UnsafePointer<Float>, into stats: UnsafeMutablePointer<Float>) {
        for k in upTo(split) { stats[k] = perBin[k] }
        for j in loop(from: split, upTo: count) {
            let from = first[j], to = first[j &+ 1]
            var sum: Float = 0
            for i in loop(from: from, upTo: to) { sum += perBin[i] }
            stats[j] = sum / Float(to &- from)
        }
    }

    /// A statistics bin's value spread to every spectrum bin it stands for.
    @inline(__always) func expand(_ stats: UnsafePointer<Float>, into perBin: UnsafeMutablePointer<Float>) {
        for k in upTo(split) { perBin[k] = stats[k] }
        for j in loop(from: split, upTo: count) {
            let v = stats[j]
            for k in loop(from: first[j], upTo: first[j &+ 1]) { perBin[k] = v }
        }
    }
}
