// Parameter smoothing: a one-pole glide toward the target that snaps onto it once the remaining
// distance is inaudible, so a settled parameter is exactly its target (and its stage can idle).


public struct Glide: Sendable {
    public private(set) var value: Double
    public var target: Double
    /// Fraction of the remaining distance covered per step.
    let rate: Double
    let tolerance: Double

    /// `timeConstant` seconds with `stepsPerSecond` calls of `step()`.
    public init(_ value: Double, timeConstant: Double, stepsPerSecond: Double, tolerance: Double) {
        self.value = value
        self.target = value
        self.rate = 1 - LibM.exp(-1 / (timeConstant * stepsPerSecond))
        self.tolerance = tolerance
    }

    public var isSettled: Bool { value == target }

    public mutating func jump(to newValue: Double) {
        value = newValue
        target = newValue
    }

    @inline(__always) public mutating func step() {
        let distance = target - value
        value = abs(distance) <= tolerance ? target : value + rate * distance
    }
}
