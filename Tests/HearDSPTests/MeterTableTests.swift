import HearctlCore
import HearControl
import HearDSP
import Testing

@Suite struct MeterTableTests {
    @Test func countMatchesTheCasesAndFitsTheStorage() {
        #expect(Meter.count == Meter.allCases.count)
        #expect(Meter.count <= Meters.capacity)
        #expect(Meter.allCases.map(\.rawValue) == Array(0..<Meter.count))
    }

    @Test func keysAreUniqueAndNamesNestWithoutClashing() {
        let keys = Meter.allCases.map(\.key)
        #expect(Set(keys).count == keys.count)
        // The other fields of an `instance` line.
        let fields: Set = ["id", "chain", "name", "label", "rate", "channels", "latency", "uptime", "state", "bypass", "faults"]
        for meter in Meter.allCases {
            #expect(!fields.contains(meter.key), "\(meter.key)")
            #expect(!meter.key.contains(" ") && !meter.key.contains("=") && !meter.key.isEmpty, "\(meter.key)")
            #expect(Meter(key: meter.key) == meter)
        }
        #expect(Meter(key: "nope") == nil)
        // JSON: no name may be another's group ("input" beside "input.peak").
        let names = Meter.allCases.map { $0.namePath.joined(separator: ".") }
        #expect(Set(names).count == names.count)
        for name in names { #expect(!names.contains { $0.hasPrefix(name + ".") }, "\(name)") }
    }

    @Test func eachAccumulationFoldsMeasurementsAsItsRowSays() {
        var meters = Meters()
        #expect(meters[.inputPeak] == 0 && meters[.inputRMS] == 0 && meters[.noiseFloor].isNaN)
        meters.record(.inputPeak, 0.5)
        meters.record(.inputPeak, 0.25)
        meters.record(.inputRMS, 2)
        meters.record(.inputRMS, 3)
        meters.record(.noiseFloor, -40)
        meters.record(.noiseFloor, -50)
        #expect(meters[.inputPeak] == 0.5)
        #expect(meters[.inputRMS] == 5)
        #expect(meters[.noiseFloor] == -50)
        #expect(meters[Meters.capacity] == 0 && meters[-1] == 0)
    }

    @Test func readingsAreInDecibelsAndAnEmptyWindowReadsSilence() {
        let empty = MeterReadings()
        #expect(empty[.inputPeak] == -.infinity && empty[.outputRMS] == -.infinity)
        #expect(empty[.compressorReduction] == 0 && empty[.limiterReduction] == 0)
        #expect(empty[.noiseFloor] == nil && empty[.speechProbability] == nil)
        // A half-scale square wave over 100 samples: peak and RMS -6.02 dBFS.
        let window: [Meter: Double] = [.inputPeak: 0.5, .inputRMS: 25, .compressorReduction: 3.5, .speechProbability: 0.75]
        let readings = MeterReadings(samples: 100) { window[$0] ?? $0.spec.accumulation.empty }
        #expect(abs((readings[.inputPeak] ?? 0) + 6.0206) < 0.001)
        #expect(abs((readings[.inputRMS] ?? 0) + 6.0206) < 0.001)
        #expect(readings[.compressorReduction] == 3.5)
        #expect(readings[.speechProbability] == 0.75)
        #expect(readings[.noiseFloor] == nil)
        #expect(readings[.outputPeak] == -.infinity)
    }
}
