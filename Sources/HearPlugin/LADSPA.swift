// The LADSPA C ABI: `ladspa_descriptor` and the callbacks hosts call. Everything else about the
// plugin lives in Instance and PortLayout; this file only translates.

import CLADSPA
import Glibc
import HearDSP
import HearSystem

/// The library stays loaded once a host has looked at it: the statically linked Swift runtime
/// allocates at load and cannot be unloaded cleanly (each dlopen/dlclose cycle of a fresh copy
/// leaked ~11 KB), and the control thread's code must outlive any dlclose. PipeWire reloads
/// filter-chains on every config change; now those reloads reuse this copy.
let libraryPinned = Threads.pinLibrary()

/// The two plugins this library offers, in `ladspa_descriptor` index order.
enum Label: Int, CaseIterable {
    case mono, stereo

    var channels: Int { self == .mono ? 1 : 2 }
    var label: String { self == .mono ? "hear_mono" : "hear_stereo" }
    var uniqueID: UInt { self == .mono ? 0x4E_A201 : 0x4E_A202 }
    var name: String {
        self == .mono ? "hear speech enhancer (mono)" : "hear speech enhancer (stereo, linked)"
    }
}

/// Descriptors live for the life of the process: hosts keep the pointers they are given.
struct Descriptors: @unchecked Sendable {
    let table: [UnsafeMutablePointer<LADSPA_Descriptor>]

    static let shared = Descriptors(table: Label.allCases.map(makeDescriptor))

    static func makeDescriptor(_ label: Label) -> UnsafeMutablePointer<LADSPA_Descriptor> {
        let layout = PortLayout(channels: label.channels)
        let kinds = UnsafeMutablePointer<LADSPA_PortDescriptor>.allocate(capacity: layout.count)
        let names = UnsafeMutablePointer<UnsafePointer<CChar>?>.allocate(capacity: layout.count)
        let hints = UnsafeMutablePointer<LADSPA_PortRangeHint>.allocate(capacity: layout.count)
        for port in 0..<layout.count {
            kinds[port] = layout.descriptor(port)
            names[port] = UnsafePointer(strdup(layout.name(port)))
            hints[port] = layout.hint(port)
        }
        let descriptor = UnsafeMutablePointer<LADSPA_Descriptor>.allocate(capacity: 1)
        descriptor.initialize(to: LADSPA_Descriptor())
        descriptor.pointee.UniqueID = label.uniqueID
        descriptor.pointee.Label = UnsafePointer(strdup(label.label))
        descriptor.pointee.Properties = LADSPA_PROPERTY_HARD_RT_CAPABLE
        descriptor.pointee.Name = UnsafePointer(strdup(label.name))
        descriptor.pointee.Maker = UnsafePointer(strdup("hear developers"))
        descriptor.pointee.Copyright = UnsafePointer(strdup("MIT"))
        descriptor.pointee.PortCount = UInt(layout.count)
        descriptor.pointee.PortDescriptors = UnsafePointer(kinds)
        descriptor.pointee.PortNames = UnsafePointer(names)
        descriptor.pointee.PortRangeHints = UnsafePointer(hints)
        descriptor.pointee.ImplementationData = UnsafeMutableRawPointer(bitPattern: label.channels)
        descriptor.pointee.instantiate = hearInstantiate
        descriptor.pointee.connect_port = hearConnectPort
        descriptor.pointee.activate = hearActivate
        descriptor.pointee.deactivate = nil
        descriptor.pointee.run = hearRun
        descriptor.pointee.run_adding = nil
        descriptor.pointee.set_run_adding_gain = nil
        descriptor.pointee.cleanup = hearCleanup
        return descriptor
    }
}

@_cdecl("ladspa_descriptor")
public func ladspa_descriptor(_ index: UInt) -> UnsafePointer<LADSPA_Descriptor>? {
    _ = libraryPinned
    let table = Descriptors.shared.table
    guard index < UInt(table.count) else { return nil }
    return UnsafePointer(table[Int(index)])
}

func hearInstantiate(_ descriptor: UnsafePointer<LADSPA_Descriptor>?, _ rate: UInt) -> LADSPA_Handle? {
    guard let descriptor, rate >= 1000, rate <= 768_000 else { return nil }
    let channels = Int(bitPattern: descriptor.pointee.ImplementationData)
    guard channels == 1 || channels == 2 else { return nil }
    let instance = UnsafeMutablePointer<Instance>.allocate(capacity: 1)
    instance.initialize(to: Instance(sampleRate: Double(rate), channels: channels))
    Registry.shared.add(control: instance.pointee.control, label: channels == 1 ? Label.mono.label : Label.stereo.label,
                        sampleRate: Int(rate), channels: channels, latency: instance.pointee.chain.latency)
    return LADSPA_Handle(instance)
}

@_noLocks func hearConnectPort(_ handle: LADSPA_Handle?, _ port: UInt, _ buffer: UnsafeMutablePointer<LADSPA_Data>?) {
    guard let handle else { return }
    let instance = handle.assumingMemoryBound(to: Instance.self)
    guard port < UInt(truncatingIfNeeded: instance.pointee.layout.count) else { return }
    let index = Int(truncatingIfNeeded: port)  // below count: no conversion check needed
    instance.pointee.ports[index] = buffer
    // Hosts may connect the latency port after activate; give it its value at once.
    if index == instance.pointee.layout.latency { instance.pointee.writeLatency() }
}

@_noLocks func hearActivate(_ handle: LADSPA_Handle?) {
    guard let handle else { return }
    handle.assumingMemoryBound(to: Instance.self).pointee.activate()
}

@_noLocks func hearRun(_ handle: LADSPA_Handle?, _ frames: UInt) {
    guard let handle, frames > 0 else { return }
    let count = Int(truncatingIfNeeded: min(frames, 1 << 30))
    handle.assumingMemoryBound(to: Instance.self).pointee.run(frames: count)
}

func hearCleanup(_ handle: LADSPA_Handle?) {
    guard let handle else { return }
    let instance = handle.assumingMemoryBound(to: Instance.self)
    // The control server lets go of the instance before its memory goes.
    Registry.shared.remove(control: instance.pointee.control)
    instance.deinitialize(count: 1)
    instance.deallocate()
}
