// The plugin as Debian's ladspa-sdk tools see it: analyseplugin and applyplugin.

import Foundation
import HearDSP
import Testing
import TestSupport

@Suite struct LADSPASDKTests {
    @Test func analysepluginAcceptsThePluginAndListsBothLabels() throws {
        let result = try Command.run("analyseplugin", [PluginPath.built], mergingOutput: true)
        let (status, output) = (result.status, result.output)
        #expect(status == 0, "\(output)")
        #expect(output.contains("Plugin Label: \"hear_mono\""))
        #expect(output.contains("Plugin Label: \"hear_stereo\""))
        #expect(output.contains("Environment: Normal or Hard Real-Time"))
        #expect(!output.contains("ERROR") && !output.contains("Must Run Real-Time: Yes"), "\(output)")
    }

    @Test func applypluginRunsAWAVThroughHearMono() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hear-applyplugin-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let input = directory.appendingPathComponent("in.wav"), output = directory.appendingPathComponent("out.wav")
        let tone = Signals.sine(frequency: 1000, rate: 48000, seconds: 1, amplitude: 0.1)
        try WAVFile.write([tone], rate: 48000, to: input, encoding: .pcm16)  // what applyplugin reads
        // applyplugin takes every control input, in port order: defaults, all stages off, gain 6.
        var controls = ParameterValues()
        for parameter in [Parameter.nsEnable, .eqEnable, .compEnable, .limitEnable] { controls[parameter] = 0 }
        controls[.gain] = 6
        // ...then the `chain` port (after the schema controls): 0.
        let arguments = Parameter.allCases.map { String(controls[$0]) } + ["0"]
        let result = try Command.run("applyplugin", [input.path, output.path, PluginPath.built, "hear_mono"] + arguments, mergingOutput: true)
        let (status, log) = (result.status, result.output)
        #expect(status == 0, "\(log)")
        let processed = try WAVFile.read(output).samples
        #expect(processed.count == tone.count)
        let gain = Signals.dB(Signals.amplitude(of: processed[4800...], frequency: 1000, rate: 48000) / 0.1)
        #expect(abs(gain - 6) < 0.1, "\(gain) dB")
    }
}
