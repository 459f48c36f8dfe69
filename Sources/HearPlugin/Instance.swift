// One plugin instance: the ports the host connected, the clamped parameter values, and the chain.
// Lives in memory allocated at instantiate and freed at cleanup; run() touches nothing else.
// Parameters arrive from two writers, the host's control ports and the control server (through
// the ControlBlock); per parameter the last writer wins (see HearControl/Protocol.swift).

import HearControl
import HearDSP
import Synchronization

struct Instance: ~Copyable {
    let layout: PortLayout
    let sampleRate: Double
    /// Host buffers by port index, as given to connect_port.
    let ports: UnsafeMutablePointer<UnsafeMutablePointer<Float>?>
    let bounds: ParameterBounds
    /// Control-port values as last read, bit for bit, to notice when the host moves one.
    var lastPortValues: ParameterValues
    var chain: Chain
    /// Shared with the control server; owned by this instance.
    let control: UnsafeMutablePointer<ControlBlock>
    /// The control server's generation and per-parameter stamps as last taken.
    var takenGeneration: UInt64 = 0
    // One per parameter: sized like ParameterValues (its capacity), which the schema fits in.
    var takenStamps: InlineArray<96, UInt64> = InlineArray(repeating: 0)
    var lastMeterRequest: UInt64 = 0
    var chainNumber = -1
    /// The rate in whole hertz, as the reference tap compares it.
    let rateHz: Int
    /// The speaker chain's output for this chain's echo canceller (a `mic` chain reads it, a `speaker` chain writes it).
    var tapReader: TapReader
    /// One piece of the reference at a time: blocks longer than this are processed in pieces.
    let reference: UnsafeMutablePointer<Float>
    static let referencePiece = 4096

    init(sampleRate: Double, channels: Int) {
        layout = PortLayout(channels: channels)
        self.sampleRate = sampleRate
        ports = .allocate(capacity: layout.count)
        ports.initialize(repeating: nil, count: layout.count)
        bounds = ParameterBounds()
        lastPortValues = bounds.defaults
        chain = Chain(sampleRate: sampleRate, channels: channels, values: bounds.defaults)
        control = .allocate(capacity: 1)
        control.initialize(to: ControlBlock(values: bounds.defaults, sampleRate: chain.sampleRate, channels: chain.channels,
                                            echoFilter: chain.echoFilterLength))
        rateHz = truncatedInt(sampleRate + 0.5)
        tapReader = TapReader(tap: ReferenceTap.shared.tap)
        reference = .allocate(capacity: Self.referencePiece)
        reference.initialize(repeating: 0, count: Self.referencePiece)
    }

    deinit {
        tapReader.tap.pointee.release(key: key)
        reference.deallocate()
        ports.deallocate()
        control.deinitialize(count: 1)
        control.deallocate()
    }

    @_noLocks mutating func activate() {
        chain.reset()
        takeParameters()
        writeLatency()
    }

    /// Merges control-port moves and control-server writes since the last block into the chain.
    @_noLocks mutating func takeParameters() {
        var next = chain.values
        let fromPorts = readControls(into: &next)
        let fromServer = readControlBlock(into: &next)
        readChainPort()
        guard fromPorts || fromServer else { return }
        if !(next == chain.values) {
            chain.apply(next)
            control.pointee.wantedEchoFilter.store(chain.wantedEchoFilterLength, ordering: .relaxed)
        }
        let values = chain.values
        for index in 0..<Parameter.count { control.pointee.applied[index].store(values[index].bitPattern, ordering: .relaxed) }
        control.pointee.appliedGeneration.store(takenGeneration, ordering: .releasing)
    }

    /// Control ports the host changed since the last block.
    @_noLocks mutating func readControls(into next: inout ParameterValues) -> Bool {
        var changed = false
        for index in 0..<Parameter.count {
            guard let port = ports[layout.firstControl &+ index] else { continue }
            let raw = port.pointee
            if raw.bitPattern == lastPortValues[index].bitPattern { continue }
            lastPortValues[index] = raw
            next[index] = bounds.clamp(raw, index: index)
            changed = true
        }
        return changed
    }

    /// Values the control server published since the last block (already validated; clamped anyway).
    @_noLocks mutating func readControlBlock(into next: inout ParameterValues) -> Bool {
        let generation = control.pointee.generation.load(ordering: .acquiring)
        if generation == takenGeneration { return false }
        for index in 0..<Parameter.count {
            let stamp = control.pointee.stamps[index].load(ordering: .acquiring)
            if stamp <= takenStamps[index] { continue }
            takenStamps[index] = stamp
            let value = Float(bitPattern: control.pointee.requested[index].load(ordering: .relaxed))
            next[index] = bounds.clamp(value, index: index)
        }
        takenGeneration = generation
        return true
    }

    @_noLocks mutating func readChainPort() {
        guard let port = ports[layout.chain] else {
            if chainNumber < 0 { chainNumber = 0; control.pointee.chain.store(0, ordering: .releasing) }
            return
        }
        let number = ChainName.number(port: port.pointee)
        if number == chainNumber { return }
        if chainNumber == ChainName.speaker { tapReader.tap.pointee.release(key: key) }
        chainNumber = number
        control.pointee.chain.store(number, ordering: .releasing)
    }

    /// Swaps in echo filters the control server made for a new aec.filter (ControlBlock.swift;
    /// `takeParameters` tells it the length the chain asks for).
    @_noLocks mutating func takeEchoFilters() {
        let block = control
        let pending = block.pointee.pendingEchoFilters.load(ordering: .acquiring)
        guard pending != 0, block.pointee.retiredEchoFilters.load(ordering: .acquiring) == 0,
              let box = UnsafeMutablePointer<EchoFilters>(bitPattern: pending) else { return }
        _ = chain.installEchoFilters(&box.pointee)
        block.pointee.installedEchoFilter.store(chain.echoFilterLength, ordering: .releasing)
        block.pointee.retiredEchoFilters.store(pending, ordering: .releasing)
        block.pointee.pendingEchoFilters.store(0, ordering: .releasing)
    }

    @_noLocks func writeLatency() {
        ports[layout.latency]?.pointee = Float(chain.latency)
    }

    @_noLocks mutating func run(frames: Int) {
        takeParameters()
        takeEchoFilters()
        writeLatency()
        let inputs = layout.audioInputs, outputs = layout.audioOutputs
        guard let inLeft = ports[inputs.lowerBound], let outLeft = ports[outputs.lowerBound] else { return }
        let stereo = layout.channels == 2
        let inRight = stereo ? ports[inputs.lowerBound &+ 1] : nil
        let outRight = stereo ? ports[outputs.lowerBound &+ 1] : nil
        if stereo && (inRight == nil || outRight == nil) { return }
        if chainNumber == ChainName.mic {
            processWithReference(inLeft: inLeft, inRight: inRight, outLeft: outLeft, outRight: outRight, frames: frames)
        } else {
            chain.process(inLeft: inLeft, inRight: inRight, outLeft: outLeft, outRight: outRight, frames: frames)
        }
        if chainNumber == ChainName.speaker {
            tapReader.tap.pointee.publish(key: key, sampleRate: rateHz, left: outLeft, right: outRight, frames: frames)
        }
        control.pointee.frames.wrappingAdd(UInt64(truncatingIfNeeded: frames), ordering: .relaxed)
        control.pointee.block.store(UInt64(truncatingIfNeeded: frames), ordering: .relaxed)
        control.pointee.faults.store(chain.internalFaults, ordering: .relaxed)
        publishMeters()
    }

    /// This instance's key in the reference tap: its control block's address.
    var key: Int { Int(bitPattern: control) }

    /// A microphone chain's block: with what the speaker chain played, where one runs.
    @_noLocks mutating func processWithReference(inLeft: UnsafeMutablePointer<Float>, inRight: UnsafeMutablePointer<Float>?,
                                                 outLeft: UnsafeMutablePointer<Float>, outRight: UnsafeMutablePointer<Float>?,
                                                 frames: Int) {
        let (present, realigned) = tapReader.begin(frames: frames, sampleRate: rateHz, key: key)
        if realigned { chain.recordReferenceRealignment() }
        guard present else {
            chain.process(inLeft: inLeft, inRight: inRight, outLeft: outLeft, outRight: outRight, frames: frames)
            return
        }
        var start = 0
        while start < frames {
            let count = min(frames &- start, Self.referencePiece)
            tapReader.copy(into: reference, count: count)
            chain.process(inLeft: inLeft + start, inRight: inRight.map { $0 + start }, outLeft: outLeft + start,
                          outRight: outRight.map { $0 + start }, frames: count, reference: reference)
            start &+= count
        }
    }

    /// Answers a pending meter request with the levels accumulated since the last answer.
    @_noLocks mutating func publishMeters() {
        let request = control.pointee.meterRequest.load(ordering: .acquiring)
        if request == lastMeterRequest { return }
        lastMeterRequest = request
        let meters = chain.meters
        let block = control
        for index in 0..<Meters.capacity { block.pointee.meters[index].store(meters[index].bitPattern, ordering: .relaxed) }
        block.pointee.meterSamples.store(UInt64(truncatingIfNeeded: meters.samples), ordering: .relaxed)
        block.pointee.meterAnswer.store(request, ordering: .releasing)
        chain.meters = Meters()
    }
}
