import CLADSPA
import CMallocCounter
import Foundation
import HearDSP
import LADSPALoader
import Testing
import TestSupport

@Suite(.serialized) struct PluginTests {
    let library: LADSPALibrary
    init() throws { library = try LADSPALibrary.load() }

    @Test func bothLabelsArePresentWithTheirChannels() throws {
        #expect(library.descriptors.map { String(cString: $0.pointee.Label) } == ["hear_mono", "hear_stereo"])
        for (label, channels) in [("hear_mono", 1), ("hear_stereo", 2)] {
            let d = try library.descriptor(label)
            let kinds = (0..<Int(d.pointee.PortCount)).map { d.pointee.PortDescriptors[$0] }
            #expect(kinds.filter { $0 == LADSPA_PORT_AUDIO | LADSPA_PORT_INPUT }.count == channels)
            #expect(kinds.filter { $0 == LADSPA_PORT_AUDIO | LADSPA_PORT_OUTPUT }.count == channels)
            #expect(d.pointee.Properties & LADSPA_PROPERTY_HARD_RT_CAPABLE != 0)
            #expect(d.pointee.Properties & LADSPA_PROPERTY_INPLACE_BROKEN == 0)
        }
    }

    @Test func everySchemaParameterIsAControlPortWithItsBoundsAndDefault() throws {
        for label in ["hear_mono", "hear_stereo"] {
            let d = try library.descriptor(label)
            let names = (0..<Int(d.pointee.PortCount)).map { String(cString: d.pointee.PortNames[$0]!) }
            for parameter in Parameter.allCases {
                let spec = parameter.spec
                guard let port = names.firstIndex(of: spec.key) else {
                    Issue.record("\(label) has no port \(spec.key)"); continue
                }
                #expect(d.pointee.PortDescriptors[port] == LADSPA_PORT_CONTROL | LADSPA_PORT_INPUT)
                let hint = d.pointee.PortRangeHints[port]
                if spec.scale == .toggle {
                    #expect(hint.HintDescriptor & LADSPA_HINT_TOGGLED != 0, "\(spec.key)")
                } else {
                    #expect(hint.LowerBound == spec.minimum && hint.UpperBound == spec.maximum, "\(spec.key)")
                }
                let hostDefault = PluginInstance.defaultValue(hint)
                #expect(abs(hostDefault - spec.defaultValue) <= 1e-4 * max(1, abs(spec.defaultValue)),
                        "\(spec.key): a LADSPA host starts at \(hostDefault), the schema says \(spec.defaultValue)")
            }
            let latency = try #require(names.firstIndex(of: "latency"))
            #expect(d.pointee.PortDescriptors[latency] == LADSPA_PORT_CONTROL | LADSPA_PORT_OUTPUT)
        }
    }

    @Test func gainOf6dBThroughTheCABI() throws {
        let instance = try PluginInstance(library.descriptor("hear_mono"), rate: 48000)
        for key in ["ns.enable", "eq.enable", "comp.enable", "limit.enable"] { instance[key] = 0 }
        instance["gain"] = 6
        let input = Signals.sine(frequency: 1000, rate: 48000, seconds: 1, amplitude: 0.1)
        let out = instance.process([input], blocks: Signals.blocks(total: input.count, size: 256))[0]
        let gain = Signals.dB(Signals.amplitude(of: out[4800...], frequency: 1000, rate: 48000) / 0.1)
        #expect(abs(gain - 6) <= 0.05, "\(gain) dB")
    }

    @Test(arguments: ["hear_mono", "hear_stereo"])
    func blockSizesAndInPlaceGiveBitIdenticalOutput(label: String) throws {
        let rate = 48000.0
        let channels = label == "hear_mono" ? 1 : 2
        let inputs = (0..<channels).map { c in
            zip(Signals.speechLike(rate: rate, seconds: 3, peak: 2, seed: 50 + UInt64(c)),
                Signals.whiteNoise(count: Int(3 * rate), amplitude: 0.02, seed: 60 + UInt64(c))).map { $0 + $1 }
        }
        var reference: [[Float]]?
        for (size, inPlace) in [(256, false), (1, false), (7, false), (64, false), (1000, false), (4096, false),
                                (0, false), (256, true), (0, true)] {
            let instance = try PluginInstance(library.descriptor(label), rate: Int(rate))
            instance["eq.peak2.gain"] = 4
            instance["comp.makeup"] = 6
            let out = instance.process(inputs, blocks: Signals.blocks(total: inputs[0].count, size: size), inPlace: inPlace)
            #expect(out.allSatisfy { $0.allSatisfy { $0.isFinite } })
            guard let reference else { reference = out; continue }
            #expect(out == reference, "block size \(size == 0 ? "random" : String(size)), in place \(inPlace)")
        }
    }

    @Test(arguments: [8000, 16000, 22050, 44100, 48000, 96000, 192000])
    func everyRateRunsAndReportsItsLatency(rate: Int) throws {
        let instance = try PluginInstance(library.descriptor("hear_stereo"), rate: rate)
        let input = Signals.speechLike(rate: Double(rate), seconds: 0.5, peak: 1.5, seed: 3)
        let out = instance.process([input, input], blocks: Signals.blocks(total: input.count, size: 0))
        #expect(instance["latency"] == Float(Chain(sampleRate: Double(rate), channels: 2).latency))
        #expect(instance["latency"] <= Float(rate) * 0.001 + 0.5 || instance["latency"] > 0)
        #expect(out.allSatisfy { $0.allSatisfy { $0.isFinite && abs($0) <= 0.9 } })
        #expect(Signals.rms(out[0][...]) > Signals.rms(input[...]) / 10)
    }

    @Test func nanAndOutOfRangeControlsAreClamped() throws {
        let input = Signals.sine(frequency: 1000, rate: 48000, seconds: 0.5, amplitude: 0.01)
        func gainWith(_ value: Float) throws -> Double {
            let instance = try PluginInstance(library.descriptor("hear_mono"), rate: 48000)
            for key in ["ns.enable", "eq.enable", "comp.enable", "limit.enable"] { instance[key] = 0 }
            instance["gain"] = value
            instance["comp.ratio"] = .nan
            instance["eq.hp.freq"] = -1e30
            let out = instance.process([input], blocks: Signals.blocks(total: input.count, size: 128))[0]
            #expect(out.allSatisfy { $0.isFinite })
            return Signals.dB(Signals.amplitude(of: out[12000...], frequency: 1000, rate: 48000) / 0.01)
        }
        #expect(abs(try gainWith(.nan) - 0) < 0.05)
        #expect(abs(try gainWith(1e9) - 24) < 0.05)
        #expect(abs(try gainWith(-.infinity) + 24) < 0.05)
    }

    @Test func tenSecondsOfRunAllocateNothing() throws {
        // The counter itself works: an allocation on this thread is seen.
        hear_malloc_counter_begin()
        let probe = UnsafeMutableRawPointer.allocate(byteCount: 64, alignment: 8)
        #expect(hear_malloc_counter_end() >= 1)
        probe.deallocate()

        let rate = 48000
        // ... and it sees the plugin's own allocations: instantiate allocates its buffers.
        let descriptor = try library.descriptor("hear_stereo")
        hear_malloc_counter_begin()
        let probeInstance = descriptor.pointee.instantiate(descriptor, UInt(rate))
        let instantiateAllocations = hear_malloc_counter_end()
        descriptor.pointee.cleanup(probeInstance)
        #expect(instantiateAllocations > 3)

        let instance = try PluginInstance(descriptor, rate: rate)
        let input = Signals.speechLike(rate: Double(rate), seconds: 1, peak: 3, seed: 9)
        let inBuffers = instance.audio.prefix(2)
        var allocations = 0
        for second in 0..<10 {
            // A control moves every second, so parameter hand-over is covered too.
            instance["gain"] = Float(second % 3) * 4
            instance["eq.peak1.gain"] = Float(second % 2) * 6
            instance["bypass"] = second == 5 ? 1 : 0
            // Both noise suppressors and the crossfade between them (the learned model's step included).
            instance["ns.mode"] = Float(second / 2 % 2)
            var offset = 0
            hear_malloc_counter_begin()
            while offset + 256 <= input.count {
                for buffer in inBuffers { input.withUnsafeBufferPointer { buffer.update(from: $0.baseAddress! + offset, count: 256) } }
                instance.runSilently(frames: 256)
                offset += 256
            }
            allocations += hear_malloc_counter_end()
        }
        #expect(allocations == 0)
    }
}
