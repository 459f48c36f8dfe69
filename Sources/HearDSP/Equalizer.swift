// Speech equalizer: high-pass (rumble) -> low shelf -> three peaking bands -> high shelf.
// Parameters glide once per control tick and coefficients are recomputed only for bands still
// moving; a band that has settled to flat costs nothing.


public struct Equalizer: Sendable {
    static var bandCount: Int { 6 }
    static var highPass: Int { 0 }
    static var lowShelf: Int { 1 }
    static var highShelf: Int { 5 }

    /// One band's smoothed shape; frequency and Q glide in octaves, gain in dB.
    struct Band: Sendable {
        var log2Frequency: Glide
        var gainDB: Glide
        var log2Q: Glide
        /// How much of the filter is mixed in (the high-pass fades in and out with it).
        var amount: Glide
    }

    let sampleRate: Double
    let channels: Int
    var bands: InlineArray<6, Band>
    var coefficients: InlineArray<6, Biquad>
    /// How many bands are not flat (their sections run, in cascade order).
    var activeCount = 0
    /// Registers per channel and band: `[channel * 6 + band]`.
    var state: InlineArray<12, BiquadState> = InlineArray(repeating: BiquadState())
    var moving = false

    public init(sampleRate: Double, channels: Int, ticksPerSecond: Double, values: ParameterValues) {
        self.sampleRate = sampleRate
        self.channels = min(max(channels, 1), 2)
        func glide(_ tolerance: Double) -> Glide {
            Glide(0, timeConstant: 0.02, stepsPerSecond: ticksPerSecond, tolerance: tolerance)
        }
        let band = Band(log2Frequency: glide(1e-4), gainDB: glide(1e-4), log2Q: glide(1e-4), amount: glide(1e-5))
        bands = InlineArray(repeating: band)
        coefficients = InlineArray(repeating: .identity)
        set(values)
        snap()
    }

    /// Sets new targets; they are reached by gliding in `tick()`.
    public mutating func set(_ values: ParameterValues) {
        let on = values[.eqEnable] != 0
        func place(_ band: Int, _ frequency: Parameter, _ gain: Parameter?, _ q: Parameter?, amount: Double = 1) {
            // Corners are held below 0.45 x rate so every band keeps its shape at 8 kHz.
            let hz = min(Double(values[frequency]), 0.45 * sampleRate)
            bands[band].log2Frequency.target = LibM.log2(hz)
            bands[band].gainDB.target = on ? gain.map { Double(values[$0]) } ?? 0 : 0
            bands[band].log2Q.target = LibM.log2(q.map { Double(values[$0]) } ?? 1)
            bands[band].amount.target = on ? amount : 0
        }
        place(Self.highPass, .eqHighPassFrequency, nil, nil, amount: values[.eqHighPassEnable] != 0 ? 1 : 0)
        place(Self.lowShelf, .eqLowShelfFrequency, .eqLowShelfGain, nil)
        place(2, .eqPeak1Frequency, .eqPeak1Gain, .eqPeak1Q)
        place(3, .eqPeak2Frequency, .eqPeak2Gain, .eqPeak2Q)
        place(4, .eqPeak3Frequency, .eqPeak3Gain, .eqPeak3Q)
        place(Self.highShelf, .eqHighShelfFrequency, .eqHighShelfGain, nil)
        moving = true
    }

    /// Jumps to the targets at once (at start-up, where there is nothing to glide from).
    public mutating func snap() {
        for b in 0..<Self.bandCount {
            bands[b].log2Frequency.jump(to: bands[b].log2Frequency.target)
            bands[b].gainDB.jump(to: bands[b].gainDB.target)
            bands[b].log2Q.jump(to: bands[b].log2Q.target)
            bands[b].amount.jump(to: bands[b].amount.target)
            design(b)
        }
        moving = false
        collectActive()
    }

    /// Once per control period: glide moving bands one step and redesign them.
    @inline(__always) public mutating func tick() {
        for b in 0..<Self.bandCount where !coefficients[b].isIdentity {
            state[b].flushTiny()
            state[Self.bandCount + b].flushTiny()
        }
        guard moving else { return }
        var stillMoving = false
        for b in 0..<Self.bandCount {
            var band = bands[b]
            if band.log2Frequency.isSettled && band.gainDB.isSettled && band.log2Q.isSettled && band.amount.isSettled {
                continue
            }
            band.log2Frequency.step(); band.gainDB.step(); band.log2Q.step(); band.amount.step()
            bands[b] = band
            design(b)
            stillMoving = true
        }
        moving = stillMoving
        collectActive()
    }

    /// The section band `b` runs once its glides have arrived.
    private func targetSection(_ b: Int) -> Biquad {
        guard bands.indices.contains(b) else { return .identity }
        let band = bands[b]
        return section(b, log2Frequency: band.log2Frequency.target, gainDB: band.gainDB.target, log2Q: band.log2Q.target,
                       amount: band.amount.target)
    }

    /// The highest gain (dB) of the whole cascade once every glide has arrived: on a 1/24-octave
    /// grid from 20 Hz to 0.49 x the rate and at each band's own frequency (a narrow peak falls
    /// between grid points). The chain's gain cap (mb.maxgain) is set on it when parameters change,
    /// never per sample: a bound on the sum of the boosts would take off far more than the boosts
    /// ever add where bands sit apart (five bands at +12 dB peak near +20, not +60).
    public func targetPeakDB() -> Double {
        let top = 0.49 * sampleRate
        var peak = 0.0  // squared magnitude of the highest point; 1 = 0 dB (a cut never lowers the bound below 0 dB)
        var sections = InlineArray<6, Biquad>(repeating: .identity)
        for b in 0..<Self.bandCount { sections[b] = targetSection(b) }
        func response(_ f: Double) -> Double {
            let cosine = LibM.cos(2 * Double.pi * f / sampleRate)
            var product = 1.0
            for b in 0..<Self.bandCount { product *= sections[b].squaredMagnitude(cosine: cosine) }
            return product
        }
        var f = 20.0
        while f < top {
            peak = max(peak, response(f))
            f *= 1.0293022366434921  // 2^(1/24)
        }
        for b in 0..<Self.bandCount {
            peak = max(peak, response(min(LibM.exp2(bands[b].log2Frequency.target), top)))
        }
        return Decibels.fromPower(max(peak, 1))
    }

    /// The section of band `b` at this shape.
    func section(_ b: Int, log2Frequency: Double, gainDB gain: Double, log2Q: Double, amount: Double) -> Biquad {
        let hz = LibM.exp2(log2Frequency), q = LibM.exp2(log2Q)
        if amount == 0 || (b != Self.highPass && gain == 0) { return .identity }
        let filter: Biquad
        switch b {
        case Self.highPass: filter = .highPass(frequency: hz, q: 0.7071067811865476, sampleRate: sampleRate)
        case Self.lowShelf: filter = .lowShelf(frequency: hz, gainDB: gain, sampleRate: sampleRate)
        case Self.highShelf: filter = .highShelf(frequency: hz, gainDB: gain, sampleRate: sampleRate)
        default: filter = .peaking(frequency: hz, gainDB: gain, q: q, sampleRate: sampleRate)
        }
        return amount == 1 ? filter : filter.blended(withDry: amount)
    }

    /// The section band `b` runs right now, and registers cleared when it turns flat.
    private mutating func design(_ b: Int) {
        guard bands.indices.contains(b) else { return }
        let band = bands[b]
        let next = section(b, log2Frequency: band.log2Frequency.value, gainDB: band.gainDB.value,
                           log2Q: band.log2Q.value, amount: band.amount.value)
        if next.isIdentity && !coefficients[b].isIdentity {
            state[b] = BiquadState()
            state[Self.bandCount + b] = BiquadState()
        }
        coefficients[b] = next
    }

    private mutating func collectActive() {
        activeCount = 0
        for b in 0..<Self.bandCount where !coefficients[b].isIdentity { activeCount += 1 }
    }

    /// True when no parameter is gliding, so no coefficient will be recomputed.
    public var isSettled: Bool { !moving }

    /// True when the equalizer passes audio through untouched.
    public var isFlat: Bool { activeCount == 0 }

    /// The designed magnitude response of the whole cascade at `frequency`, in dB.
    public func responseDB(atFrequency frequency: Double) -> Double {
        var db = 0.0
        for b in 0..<Self.bandCount {
            db += Decibels.fromGain(coefficients[b].magnitude(atFrequency: frequency, sampleRate: sampleRate))
        }
        return db
    }

    /// Filters one or two channels in place through the bands that are not flat.
    @_noLocks public mutating func process(_ left: UnsafeMutablePointer<Float>, _ right: UnsafeMutablePointer<Float>?,
                                           count: Int) {
        // A cascade of exactly as many sections as are active, so the optimizer can keep every
        // register of the cascade in CPU registers for the whole chunk.
        switch activeCount {
        case 0: return
        case 1: runCascade(left, right, count: count, sections: InlineArray<1, Biquad>(repeating: .identity))
        case 2: runCascade(left, right, count: count, sections: InlineArray<2, Biquad>(repeating: .identity))
        case 3: runCascade(left, right, count: count, sections: InlineArray<3, Biquad>(repeating: .identity))
        case 4: runCascade(left, right, count: count, sections: InlineArray<4, Biquad>(repeating: .identity))
        case 5: runCascade(left, right, count: count, sections: InlineArray<5, Biquad>(repeating: .identity))
        default: runCascade(left, right, count: count, sections: InlineArray<6, Biquad>(repeating: .identity))
        }
    }

    @inline(__always) private mutating func runCascade<let N: Int>(
        _ left: UnsafeMutablePointer<Float>, _ right: UnsafeMutablePointer<Float>?, count: Int,
        sections: InlineArray<N, Biquad>
    ) {
        var sections = sections
        var leftState = InlineArray<N, BiquadState>(repeating: BiquadState())
        var rightState = InlineArray<N, BiquadState>(repeating: BiquadState())
        // The bands that are not flat, in order, become sections 0 ..< N (N == activeCount).
        var k = 0
        for band in 0..<Self.bandCount where !coefficients[band].isIdentity {
            guard sections.indices.contains(k) else { break }
            sections[k] = coefficients[band]
            leftState[k] = state[band]
            rightState[k] = state[Self.bandCount + band]
            k += 1
        }
        // `while` loops over samples: see FixedBuffer.swift.
        var i = 0
        if let right, channels == 2 {
            while i < count {
                var x = Double(left[i]), y = Double(right[i])
                for k in sections.indices {
                    x = leftState[k].filter(x, sections[k])
                    y = rightState[k].filter(y, sections[k])
                }
                left[i] = Float(x)
                right[i] = Float(y)
                i += 1
            }
        } else {
            while i < count {
                var x = Double(left[i])
                for k in sections.indices { x = leftState[k].filter(x, sections[k]) }
                left[i] = Float(x)
                i += 1
            }
        }
        k = 0
        for band in 0..<Self.bandCount where !coefficients[band].isIdentity {
            guard sections.indices.contains(k) else { break }
            state[band] = leftState[k]
            state[Self.bandCount + band] = rightState[k]
            k += 1
        }
    }

    public mutating func reset() {
        state = InlineArray(repeating: BiquadState())
    }
}
