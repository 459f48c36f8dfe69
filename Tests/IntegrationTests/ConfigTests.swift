// The committed configs against the plugin: every control they set is a control port of the
// label they load (so a schema key, or `chain`), in range; the PulseAudio script sets the same
// values as the PipeWire drop-ins, in the plugin's port order.

import Foundation
import HearDSP
import Testing

@Suite struct ConfigTests {
    @Test(arguments: Repository.dropIns)
    func pipeWireDropInSetsOnlyControlsThePluginHas(name: String) throws {
        let text = try Repository.text("conf.d/pipewire/" + name)
        #expect(DropIn.code(text).components(separatedBy: Repository.placeholder).count == 2, "one \(Repository.placeholder) in \(name)")
        let dropIn = try DropIn(text)
        let microphone = name == "hear-microphone.conf"
        #expect(dropIn.label == (microphone ? "hear_mono" : "hear_stereo"))
        // Each chain has its own number, so hearctl tells them apart (1 is "mic", 2 "speaker").
        #expect(dropIn.controls["chain"] == (microphone ? 1 : 2))
        let ports = try PluginPorts.controlInputs(label: dropIn.label)
        #expect(!dropIn.controls.isEmpty)
        for (key, value) in dropIn.controls {
            #expect(ports.contains(key), "\(name): \(key) is no control port of \(dropIn.label)")
            if let parameter = Parameter(key: key) {
                #expect(value >= Double(parameter.spec.minimum) && value <= Double(parameter.spec.maximum), "\(name): \(key) = \(value)")
            } else {
                #expect(key == "chain", "\(name): \(key) is not in the parameter schema")
            }
        }
        let configured = try Repository.configured("conf.d/pipewire/" + name, plugin: "/opt/x/libhear.so")
        #expect(DropIn.code(configured).contains("plugin = \"/opt/x/libhear.so\"") && !DropIn.code(configured).contains("@"))
    }

    /// module-ladspa-sink's lists are positional, so they change whenever the schema grows: the
    /// test writes the script as it should be, from the drop-ins and the plugin's port order, to
    /// .build/hear.pa (never over the tracked file), and a mismatch names the copy that fixes it.
    @Test func pulseAudioScriptMatchesTheDropIns() throws {
        let text = try Repository.text("conf.d/pulseaudio/hear.pa")
        let twins = ["hear_speaker": "hear-speaker.conf", "hear_microphone_filter": "hear-microphone.conf"]
        var expected = text
        for sink in try PulseLADSPASink.all(in: text) {
            let ports = try PluginPorts.controlInputs(label: sink.label)
            let dropIn = try DropIn(Repository.text("conf.d/pipewire/" + twins[sink.sinkName, default: "?"]))
            let list = ports.map { port in dropIn.controls[port].map(PulseLADSPASink.format) ?? "" }.joined(separator: ",")
            expected = expected.replacingOccurrences(of: sink.line, with: sink.line.replacing(/control=[-0-9.,]*/) { _ in "control=" + list })
        }
        let generated = Repository.url(".build/hear.pa")
        try expected.write(to: generated, atomically: true, encoding: .utf8)
        let fix = "cp \(generated.path) conf.d/pulseaudio/hear.pa"
        let sinks = try PulseLADSPASink.all(in: text)
        #expect(sinks.map(\.sinkName).sorted() == ["hear_microphone_filter", "hear_speaker"])
        for sink in sinks {
            let ports = try PluginPorts.controlInputs(label: sink.label)
            // module-ladspa-sink wants exactly one entry per control input.
            #expect(sink.values.count == ports.count,
                    "\(sink.sinkName): \(sink.values.count) values for \(ports.count) control ports; \(fix)")
            let dropIn = try DropIn(Repository.text("conf.d/pipewire/" + twins[sink.sinkName, default: "?"]))
            #expect(sink.label == dropIn.label)
            #expect(sink.controls(ports: ports) == dropIn.controls, "\(sink.sinkName) vs its PipeWire twin; \(fix)")
            #expect(sink.line.contains("plugin=\(Repository.placeholder) "))
        }
    }
}
