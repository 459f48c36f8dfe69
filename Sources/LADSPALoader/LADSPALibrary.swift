// The one way this project loads a LADSPA plugin as a host does: dlopen, ladspa_descriptor, the
// descriptors it lists. hear-host (its real-time, cycle and bench modes) and the tests use it.
// A plain value with nothing on the heap, so that hear-host's load/unload cycles measure the
// plugin's heap and not the host's.

import CLADSPA
import Glibc

public struct LADSPALoadError: Error, CustomStringConvertible {
    public let description: String
}

public struct LADSPALibrary: @unchecked Sendable {
    public let path: String
    let handle: UnsafeMutableRawPointer
    let function: LADSPA_Descriptor_Function
    /// How many descriptors the library lists.
    public let count: Int

    public init(path: String) throws(LADSPALoadError) {
        guard let handle = dlopen(path, RTLD_NOW | RTLD_LOCAL) else {
            throw LADSPALoadError(description: "dlopen \(path): \(String(cString: dlerror()))")
        }
        guard let symbol = dlsym(handle, "ladspa_descriptor") else {
            dlclose(handle)
            throw LADSPALoadError(description: "\(path): no ladspa_descriptor")
        }
        let function = unsafeBitCast(symbol, to: LADSPA_Descriptor_Function.self)
        var count = 0
        while function(UInt(count)) != nil { count += 1 }
        self.path = path
        self.handle = handle
        self.function = function
        self.count = count
    }

    /// Descriptor `index` (below `count`).
    public func descriptor(at index: Int) -> UnsafePointer<LADSPA_Descriptor> {
        function(UInt(index))!
    }

    /// Every descriptor, in index order.
    public var descriptors: [UnsafePointer<LADSPA_Descriptor>] { (0..<count).map(descriptor(at:)) }

    /// The descriptor with this label.
    public func descriptor(_ label: String) throws(LADSPALoadError) -> UnsafePointer<LADSPA_Descriptor> {
        for index in 0..<count where String(cString: descriptor(at: index).pointee.Label) == label {
            return descriptor(at: index)
        }
        throw LADSPALoadError(description: "\(path): no label \(label)")
    }

    /// dlclose: the descriptors are gone with it (a host that never closes keeps the library for
    /// the process's life, as hosts do).
    public func close() { dlclose(handle) }
}
