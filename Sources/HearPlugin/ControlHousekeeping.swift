// The control server's housekeeping between requests: saved settings restored to instances whose
// chain became known, meter windows sampled, echo filters made and freed, settings saved.

import HearControl
import HearDSP

extension ControlServer {
    /// Restores saved settings to instances whose chain became known, samples meters, saves settings.
    /// The state files are read between two short holds of the registry lock, never under it.
    func maintain(now: Double) {
        let sampleMeters = now >= nextMeter
        if sampleMeters { nextMeter = now + Self.meterInterval }
        let starting = withEntries { state -> [(id: Int, chain: Int)] in
            state.entries.filter { $0.chain >= 0 && $0.restoredChain != $0.chain }.map { ($0.id, $0.chain) }
        } ?? []
        var saved: [Int: Settings] = [:]
        for (_, chain) in starting where saved[chain] == nil { saved[chain] = store.settings(chain: chain) }
        _ = withEntries { state in
            for index in state.entries.indices {
                let entry = state.entries[index]
                if let settings = saved[entry.chain], entry.restoredChain != entry.chain,
                   starting.contains(where: { $0.id == entry.id && $0.chain == entry.chain }) {
                    if !settings.isEmpty {
                        entry.control.pointee.publish(settings.assignments.map { (index: $0.parameter.rawValue, value: $0.value) })
                    }
                    state.entries[index].restoredChain = entry.chain
                }
                if sampleMeters { Self.sampleMeters(&state.entries[index], now: now) }
                entry.control.pointee.exchangeEchoFilters()
            }
        }
        store.flush(now: now)
    }

    private static func sampleMeters(_ entry: inout RegistryEntry, now: Double) {
        let block = entry.control
        let frames = block.pointee.frames.load(ordering: .relaxed)
        if frames != entry.lastFrames {
            entry.lastFrames = frames
            entry.lastProgress = now
        }
        let request = block.pointee.meterRequest.load(ordering: .relaxed)
        guard block.pointee.meterAnswer.load(ordering: .acquiring) == request else { return }  // audio not running
        if request > 0 {
            let samples = block.pointee.meterSamples.load(ordering: .relaxed)
            entry.meters = MeterReadings(samples: samples) { meter in
                Double(bitPattern: block.pointee.meters[meter.rawValue].load(ordering: .relaxed))
            }
        }
        block.pointee.meterRequest.store(request &+ 1, ordering: .releasing)
    }
}
