// Decibels and linear gains: the one place for the conversions and their constants. Off the
// sample path they go through libm; per sample, through FastMath's log2 (within 1e-4 dB).

public enum Decibels {
    /// dB per doubling of a gain, 20 log10(2): dB = perLog2 * log2(gain).
    public static var perLog2: Double { 6.020599913279624 }
    /// log2 of a gain per dB, log2(10) / 20: gain = 2^(dB * log2PerDB).
    public static var log2PerDB: Double { 0.16609640474436813 }

    /// The linear gain of `db`: 10^(dB / 20).
    @inline(__always) public static func toGain(_ db: Double) -> Double { LibM.pow(10, db / 20) }

    /// The power ratio of `db`: 10^(dB / 10).
    @inline(__always) public static func toPower(_ db: Double) -> Double { LibM.pow(10, db / 10) }

    /// The level of a linear gain or amplitude in dB: 20 log10(gain).
    @inline(__always) public static func fromGain(_ gain: Double) -> Double { 20 * LibM.log10(gain) }

    /// 20 log10(gain) in single precision.
    @inline(__always) public static func fromGain(_ gain: Float) -> Float { 20 * LibM.log10(gain) }

    /// The level of a power (a squared amplitude) in dB: 10 log10(power).
    @inline(__always) public static func fromPower(_ power: Double) -> Double { 10 * LibM.log10(power) }

    /// Per frame or sample: 10 log10(power) for power > 0 (normal floats), within 1e-4 dB.
    @inline(__always) public static func fastFromPower(_ power: Float) -> Float {
        3.010299956639812 * FastMath.log2(power)
    }

    /// Per sample: 20 log10(gain) for gain > 0 (normal floats), within 1e-4 dB.
    @inline(__always) public static func fastFromGain(_ gain: Float) -> Float {
        6.020599913279624 * FastMath.log2(gain)
    }
}
