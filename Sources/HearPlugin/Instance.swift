// One plugin instance: the ports the host connected, the clamped parameter values, and the chain.
// Lives in memory allocated at instantiate and freed at cleanup; run() touches nothing else.

import HearDSP

struct Instance: ~Copyable {
    let layout: PortLayout
    let sampleRate: Double
    /// Host buffers by port index, as given to connect_port.
    let ports: UnsafeMutablePointer<UnsafeMutablePointer<Float>?>
    let bounds: ParameterBounds
    /// Control-port values as last read, bit for bit, to notice when the host moves one.
    var lastPortValues: ParameterValues
    var chain: Chain

    init(sampleRate: Double, channels: Int) {
        layout = PortLayout(channels: channels)
        self.sampleRate = sampleRate
        ports = .allocate(capacity: layout.count)
        ports.initialize(repeating: nil, count: layout.count)
        bounds = ParameterBounds()
        lastPortValues = bounds.defaults
        chain = Chain(sampleRate: sampleRate, channels: channels, values: bounds.defaults)
    }

    deinit { ports.deallocate() }

    @_noLocks mutating func activate() {
        chain.reset()
        readControls()
        writeLatency()
    }

    /// Applies the control ports the host changed since the last block.
    @_noLocks mutating func readControls() {
        var next = chain.values
        var changed = false
        for index in 0..<Parameter.count {
            guard let port = ports[layout.firstControl + index] else { continue }
            let raw = port.pointee
            if raw.bitPattern == lastPortValues[index].bitPattern { continue }
            lastPortValues[index] = raw
            next[index] = bounds.clamp(raw, index: index)
            changed = true
        }
        if changed && !(next == chain.values) { chain.apply(next) }
    }

    @_noLocks func writeLatency() {
        ports[layout.latency]?.pointee = Float(chain.latency)
    }

    @_noLocks mutating func run(frames: Int) {
        readControls()
        writeLatency()
        let inputs = layout.audioInputs, outputs = layout.audioOutputs
        guard let inLeft = ports[inputs.lowerBound], let outLeft = ports[outputs.lowerBound] else { return }
        let stereo = layout.channels == 2
        let inRight = stereo ? ports[inputs.lowerBound + 1] : nil
        let outRight = stereo ? ports[outputs.lowerBound + 1] : nil
        if stereo && (inRight == nil || outRight == nil) { return }
        chain.process(inLeft: inLeft, inRight: inRight, outLeft: outLeft, outRight: outRight, frames: frames)
    }
}
