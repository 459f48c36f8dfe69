// A LADSPA host for the tests: dlopens the built libhear.so and drives it through the C ABI in
// the order PipeWire's filter-chain does (instantiate, connect_port, activate, run..., cleanup).

import CLADSPA
import Foundation
import HearDSP
import LADSPALoader

enum PluginPath {
    /// `HEAR_PLUGIN`, else the release build in this package.
    static var built: String {
        if let path = ProcessInfo.processInfo.environment["HEAR_PLUGIN"], !path.isEmpty { return path }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        return root.appendingPathComponent(".build/release/libhear.so").path
    }
}

extension LADSPALibrary {
    /// The built plugin, loaded once per test process, like a host does.
    static let shared: Result<LADSPALibrary, Error> = Result {
        do { return try LADSPALibrary(path: PluginPath.built) } catch { throw HostError.load("\(error) (run `make` first)") }
    }
    static func load() throws -> LADSPALibrary { try shared.get() }
}

enum HostError: Error, CustomStringConvertible {
    case load(String)
    var description: String { if case .load(let message) = self { return message }; return "" }
}

/// One instance with host-owned buffers for every port.
final class PluginInstance {
    let descriptor: UnsafePointer<LADSPA_Descriptor>
    let handle: LADSPA_Handle
    let portCount: Int
    let controls: UnsafeMutablePointer<Float>
    let maxBlock: Int
    var audio: [UnsafeMutablePointer<Float>] = []
    var inputPorts: [Int] = []
    var outputPorts: [Int] = []

    init(_ descriptor: UnsafePointer<LADSPA_Descriptor>, rate: Int, maxBlock: Int = 8192) throws {
        self.descriptor = descriptor
        guard let handle = descriptor.pointee.instantiate(descriptor, UInt(rate)) else {
            throw HostError.load("instantiate failed at \(rate) Hz")
        }
        self.handle = handle
        self.maxBlock = maxBlock
        portCount = Int(descriptor.pointee.PortCount)
        controls = .allocate(capacity: portCount)
        controls.initialize(repeating: 0, count: portCount)
        for port in 0..<portCount {
            let kind = descriptor.pointee.PortDescriptors[port]
            if kind & LADSPA_PORT_CONTROL != 0 {
                controls[port] = Self.defaultValue(descriptor.pointee.PortRangeHints[port])
                descriptor.pointee.connect_port(handle, UInt(port), controls + port)
            } else {
                let buffer = UnsafeMutablePointer<Float>.allocate(capacity: maxBlock)
                buffer.initialize(repeating: 0, count: maxBlock)
                audio.append(buffer)
                if kind & LADSPA_PORT_INPUT != 0 { inputPorts.append(port) } else { outputPorts.append(port) }
                descriptor.pointee.connect_port(handle, UInt(port), buffer)
            }
        }
        descriptor.pointee.activate?(handle)
    }

    deinit {
        descriptor.pointee.deactivate?(handle)
        descriptor.pointee.cleanup(handle)
        controls.deallocate()
        for buffer in audio { buffer.deallocate() }
    }

    /// The default a host derives from a range hint (ladspa.h's rules), independently of the plugin.
    static func defaultValue(_ hint: LADSPA_PortRangeHint) -> Float {
        let d = hint.HintDescriptor, lo = Double(hint.LowerBound), hi = Double(hint.UpperBound)
        let logarithmic = d & LADSPA_HINT_LOGARITHMIC != 0 && lo > 0
        func between(_ w: Double) -> Float { Float(logarithmic ? exp(log(lo) * (1 - w) + log(hi) * w) : lo * (1 - w) + hi * w) }
        switch d & LADSPA_HINT_DEFAULT_MASK {
        case LADSPA_HINT_DEFAULT_MINIMUM: return Float(lo)
        case LADSPA_HINT_DEFAULT_LOW: return between(0.25)
        case LADSPA_HINT_DEFAULT_MIDDLE: return between(0.5)
        case LADSPA_HINT_DEFAULT_HIGH: return between(0.75)
        case LADSPA_HINT_DEFAULT_MAXIMUM: return Float(hi)
        case LADSPA_HINT_DEFAULT_0: return 0
        case LADSPA_HINT_DEFAULT_1: return 1
        case LADSPA_HINT_DEFAULT_100: return 100
        case LADSPA_HINT_DEFAULT_440: return 440
        default: return 0
        }
    }

    func port(_ name: String) -> Int? {
        (0..<portCount).first { String(cString: descriptor.pointee.PortNames[$0]!) == name }
    }

    subscript(name: String) -> Float {
        get { controls[port(name)!] }
        set { controls[port(name)!] = newValue }
    }

    /// Runs `inputs` (one array per input port) through in the given block sizes. In place means
    /// each output port is connected to its input's buffer, as PipeWire may do.
    func process(_ inputs: [[Float]], blocks: [Int], inPlace: Bool = false) -> [[Float]] {
        let total = inputs[0].count
        var outputs = [[Float]](repeating: [Float](repeating: 0, count: total), count: outputPorts.count)
        let inBuffers = audio.prefix(inputPorts.count), outBuffers = audio.suffix(outputPorts.count)
        for (k, port) in outputPorts.enumerated() {
            let target = inPlace ? inBuffers[inBuffers.startIndex + k] : outBuffers[outBuffers.startIndex + k]
            descriptor.pointee.connect_port(handle, UInt(port), target)
        }
        var offset = 0
        for size in blocks {
            precondition(size <= maxBlock)
            for (k, buffer) in inBuffers.enumerated() {
                inputs[k].withUnsafeBufferPointer { buffer.update(from: $0.baseAddress! + offset, count: size) }
            }
            descriptor.pointee.run(handle, UInt(size))
            for k in 0..<outputPorts.count {
                let source = inPlace ? inBuffers[inBuffers.startIndex + k] : outBuffers[outBuffers.startIndex + k]
                outputs[k].withUnsafeMutableBufferPointer { ($0.baseAddress! + offset).update(from: source, count: size) }
            }
            offset += size
        }
        return outputs
    }

    func runSilently(frames: Int) {
        descriptor.pointee.run(handle, UInt(frames))
    }
}
