// The built plugin's control inputs, in port order, as a LADSPA host sees them (dlopen). The
// configs name controls by these names (PipeWire) or give values in this order (PulseAudio).

import CLADSPA
import Foundation
import LADSPALoader
import TestSupport

enum PluginPorts {
    static func controlInputs(label: String, plugin: String = Repository.plugin) throws -> [String] {
        let library: LADSPALibrary
        do { library = try LADSPALibrary(path: plugin) } catch { throw TestFailure("\(error) (run `make` first)") }
        defer { library.close() }
        for descriptor in library.descriptors where String(cString: descriptor.pointee.Label) == label {
            return (0..<Int(descriptor.pointee.PortCount)).compactMap { port in
                let kind = descriptor.pointee.PortDescriptors[port]
                guard kind & LADSPA_PORT_CONTROL != 0, kind & LADSPA_PORT_INPUT != 0,
                      let name = descriptor.pointee.PortNames[port] else { return nil }
                return String(cString: name)
            }
        }
        throw TestFailure("\(plugin) has no label \(label)")
    }
}
