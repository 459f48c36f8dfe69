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
        try WAV.write(tone, rate: 48000, to: input)
        // applyplugin takes every control input, in port order: defaults, all stages off, gain 6.
        var controls = ParameterValues()
        for parameter in [Parameter.nsEnable, .eqEnable, .compEnable, .limitEnable] { controls[parameter] = 0 }
        controls[.gain] = 6
        // ...then the `chain` port (after the schema controls): 0.
        let arguments = Parameter.allCases.map { String(controls[$0]) } + ["0"]
        let result = try Command.run("applyplugin", [input.path, output.path, PluginPath.built, "hear_mono"] + arguments, mergingOutput: true)
        let (status, log) = (result.status, result.output)
        #expect(status == 0, "\(log)")
        let processed = try WAV.read(output)
        #expect(processed.count == tone.count)
        let gain = Signals.dB(Signals.amplitude(of: processed[4800...], frequency: 1000, rate: 48000) / 0.1)
        #expect(abs(gain - 6) < 0.1, "\(gain) dB")
    }
}

/// 16-bit mono PCM WAV, the format applyplugin reads and writes.
enum WAV {
    static func write(_ samples: [Float], rate: Int, to url: URL) throws {
        var data = Data()
        func append<T: FixedWidthInteger>(_ value: T) { withUnsafeBytes(of: value.littleEndian) { data.append(contentsOf: $0) } }
        data.append(contentsOf: Array("RIFF".utf8)); append(UInt32(36 + samples.count * 2))
        data.append(contentsOf: Array("WAVEfmt ".utf8)); append(UInt32(16)); append(UInt16(1)); append(UInt16(1))
        append(UInt32(rate)); append(UInt32(rate * 2)); append(UInt16(2)); append(UInt16(16))
        data.append(contentsOf: Array("data".utf8)); append(UInt32(samples.count * 2))
        for x in samples { append(Int16(max(-32768, min(32767, (x * 32768).rounded())))) }
        try data.write(to: url)
    }

    static func read(_ url: URL) throws -> [Float] {
        let bytes = [UInt8](try Data(contentsOf: url))
        var offset = 12
        while offset + 8 <= bytes.count {
            let id = String(decoding: bytes[offset..<(offset + 4)], as: UTF8.self)
            let size = Int(bytes[offset + 4]) | Int(bytes[offset + 5]) << 8 | Int(bytes[offset + 6]) << 16 | Int(bytes[offset + 7]) << 24
            if id == "data" {
                let body = bytes[(offset + 8)..<min(bytes.count, offset + 8 + size)]
                return stride(from: body.startIndex, to: body.endIndex - 1, by: 2).map {
                    Float(Int16(bitPattern: UInt16(body[$0]) | UInt16(body[$0 + 1]) << 8)) / 32768
                }
            }
            offset += 8 + size
        }
        return []
    }
}
