// The built plugin's control inputs, in port order, as a LADSPA host sees them (dlopen). The
// configs name controls by these names (PipeWire) or give values in this order (PulseAudio).

import CLADSPA
import Foundation

enum PluginPorts {
    static func controlInputs(label: String, plugin: String = Repository.plugin) throws -> [String] {
        guard let handle = dlopen(plugin, RTLD_NOW | RTLD_LOCAL) else {
            throw IntegrationError("dlopen \(plugin): \(String(cString: dlerror())) (run `make` first)")
        }
        defer { dlclose(handle) }
        guard let symbol = dlsym(handle, "ladspa_descriptor") else { throw IntegrationError("no ladspa_descriptor") }
        let function = unsafeBitCast(symbol, to: LADSPA_Descriptor_Function.self)
        var index: UInt = 0
        while let descriptor = function(index) {
            index += 1
            guard String(cString: descriptor.pointee.Label) == label else { continue }
            return (0..<Int(descriptor.pointee.PortCount)).compactMap { port in
                let kind = descriptor.pointee.PortDescriptors[port]
                guard kind & LADSPA_PORT_CONTROL != 0, kind & LADSPA_PORT_INPUT != 0,
                      let name = descriptor.pointee.PortNames[port] else { return nil }
                return String(cString: name)
            }
        }
        throw IntegrationError("\(plugin) has no label \(label)")
    }
}
