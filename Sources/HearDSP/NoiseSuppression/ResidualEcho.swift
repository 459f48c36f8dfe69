// The residual-echo suppressor (aec.suppress): what the echo canceller's linear filter leaves of
// the echo, taken out by the noise suppressor's mask. With each hop the canceller hands over the
// echo it predicted and removed (y); where its filter is off by a fraction, the echo left in each
// bin is about that fraction of y's power. The fraction (the leak) is found as speexdsp's
// canceller finds it: the regression of the output's bin powers on y's, each with its slow mean
// taken off so that the near end, which does not follow y, does not count; the regression is
// updated faster where the echo dominates the output. Each bin then gets a Wiener gain of what
// stands above that residual, held at a floor of -30 dB.

struct ResidualEcho: ~Copyable {
    let bins: Int
    /// y's power per bin this frame (the bank's `analyzeRemoved` fills it), and the slow means of
    /// y's and of the output's bin powers.
    let removedPower: UnsafeMutablePointer<Float>
    let meanRemoved: UnsafeMutablePointer<Float>
    let meanOutput: UnsafeMutablePointer<Float>
    /// Scratch for y's spectrum.
    let real: UnsafeMutablePointer<Float>, imaginary: UnsafeMutablePointer<Float>
    /// The regression's averages: covariance of output and y, y's variance (speexdsp's Pey, Pyy).
    var covariance: Float = 0
    var variance: Float = 0
    /// The share of y's power left in the output (0.005 ... 1: speexdsp's bounds).
    private(set) var leak: Float = 0
    /// The means' factor per frame (speexdsp's: 1 s), and the regression's: up to `fastest` as the
    /// echo outweighs the output (speexdsp's beta0 and beta_max, per second of frames).
    let meanRate: Float
    let regressionRate: Float
    let fastest: Float
    /// The lowest gain (-30 dB). On the synthetic room (EchoCancellerTests) the residual as
    /// estimated, with this floor, adds 1.7 dB of ERLE at 48 kHz and 1.8 at 16 while the near end
    /// in double talk stands 10.0 and 12.9 dB above the rest; twice the residual over a -20 dB
    /// floor adds 2.6 and 3.0 dB for 8.3 and 10.5, four times 3.7 and 4.9 dB for 6.2 and 8.1.
    static let floorGain: Float = 0.0316

    init(bins: Int, frameSeconds: Double, arena: inout Arena) {
        self.bins = bins
        removedPower = arena.floats(bins)
        meanRemoved = arena.floats(bins)
        meanOutput = arena.floats(bins)
        real = arena.floats(bins)
        imaginary = arena.floats(bins)
        meanRate = Float(frameSeconds)
        regressionRate = Float(2 * frameSeconds)
        fastest = Float(0.5 * frameSeconds)
    }

    mutating func reset() {
        meanRemoved.fill(0, count: bins)
        meanOutput.fill(0, count: bins)
        covariance = 0
        variance = 0
        leak = 0
    }

    /// One frame: `output` is the bank's bin power of the cancelled microphone, `removedPower` y's;
    /// `removedEnergy` and `outputEnergy` the hop's energies in time.
    @inline(__always) mutating func update(output: UnsafePointer<Float>, removedEnergy: Float, outputEnergy: Float) {
        var cross: Float = 0, square: Float = 0
        for k in upTo(bins) {
            let e = output[k] - meanOutput[k], y = removedPower[k] - meanRemoved[k]
            cross += e * y
            square += y * y
            meanOutput[k] += meanRate * (output[k] - meanOutput[k])
            meanRemoved[k] += meanRate * (removedPower[k] - meanRemoved[k])
        }
        guard square > 0, outputEnergy > 0 else { return }
        let root = LibM.sqrt(square)
        let rate = min(regressionRate * removedEnergy / outputEnergy, fastest)
        covariance += rate * (cross / root - covariance)
        variance += rate * (root - variance)
        if covariance < 0.005 * variance { covariance = 0.005 * variance }
        if covariance > variance { covariance = variance }
        leak = variance > 0 ? covariance / variance : 0
    }

    /// Lowers `mask` (per bin) by what the residual echo explains of `output`.
    @inline(__always) func apply(to mask: UnsafeMutablePointer<Float>, output: UnsafePointer<Float>) {
        let floor = Self.floorGain
        for k in upTo(bins) {
            let residual = leak * removedPower[k], power = output[k]
            let gain = power > residual ? 1 - residual / power : 0
            mask[k] *= max(gain, floor)
        }
    }
}
