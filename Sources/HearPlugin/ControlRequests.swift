// The control server's answers to requests (HearControl/Request.swift), and instances' status lines.

import HearControl
import HearDSP

extension ControlServer {
    func handle(_ request: Request, now: Double) -> [ReplyLine] {
        switch request {
        case .ping:
            return [.ok([])]
        case .status:
            let records = withEntries { state in state.entries.map { ReplyLine.record(status($0, now: now).record) } } ?? []
            return records + store.notices.map { .notice($0) } + [.ok([("instances", String(records.count))])]
        case .get(let chain, let parameters):
            let wanted = parameters.isEmpty ? Parameter.allCases : parameters
            return withEntries { state -> [ReplyLine] in
                var targets = Self.targets(state.entries, chain: chain)
                guard !targets.isEmpty else { return [.error(noInstance(chain))] }
                // Instances that have not run yet do not know their chain; report them only if nothing else runs.
                if targets.contains(where: { state.entries[$0].chain >= 0 }) { targets.removeAll { state.entries[$0].chain < 0 } }
                var seen: [Int] = []
                var lines: [ReplyLine] = []
                for index in targets.sorted(by: { state.entries[$0].chain < state.entries[$1].chain }) {
                    let entry = state.entries[index]
                    let chain = entry.chain
                    if seen.contains(chain) { continue }
                    seen.append(chain)
                    for parameter in wanted {
                        lines.append(.record(ValueRecord(chain: chain, parameter: parameter, value: entry.control.pointee.current(parameter.rawValue)).record))
                    }
                }
                return lines + [.ok([])]
            } ?? [.error(noInstance(chain))]
        case .set(let chain, let assignments):
            var changes: SettingsFile.Changes = [:]
            for assignment in assignments { changes[assignment.parameter] = .some(assignment.value) }
            return change(chain: chain, assignments: assignments, now: now, saving: changes)
        case .step(let chain, let steps):
            return step(chain: chain, steps: steps, now: now)
        case .reset(let chain, let parameters, let values):
            let reset = (parameters.isEmpty ? Parameter.allCases : parameters).map { parameter in
                Assignment(parameter, values.last { $0.parameter == parameter }?.value ?? parameter.spec.defaultValue)
            }
            // Forgotten, not pinned: after a restart the config's value (if it sets one) applies.
            var changes: SettingsFile.Changes = [:]
            for assignment in reset { changes[assignment.parameter] = .some(nil) }
            return change(chain: chain, assignments: reset, now: now, saving: changes)
        case .sync:
            // Answered by ControlServer.answer(_:to:now:), which can hold it until the saver has written.
            return []
        }
    }

    func change(chain: Int?, assignments: [Assignment], now: Double, saving changes: SettingsFile.Changes) -> [ReplyLine] {
        let published = assignments.map { (index: $0.parameter.rawValue, value: $0.value) }
        let result = withEntries { state -> (count: Int, chains: [Int]) in
            let targets = Self.targets(state.entries, chain: chain)
            var chains: [Int] = []
            for index in targets {
                state.entries[index].control.pointee.publish(published)
                let number = state.entries[index].chain
                if number >= 0 && !chains.contains(number) { chains.append(number) }
            }
            return (targets.count, chains)
        }
        guard let result, result.count > 0 else { return [.error(noInstance(chain))] }
        // Recorded for saving outside the lock (the store may touch the file system).
        for number in result.chains { store.update(chain: number, changes, now: now) }
        return [.ok([("instances", String(result.count))])]
    }

    /// Each chain's parameters move from the value its first instance has (or takes at its next
    /// block), read and published under the registry's lock, so that no other request comes between:
    /// instances of one chain get the same value and move together.
    func step(chain: Int?, steps: [Assignment], now: Double) -> [ReplyLine] {
        let result = withEntries { state -> (count: Int, moved: [StepRecord]) in
            let targets = Self.targets(state.entries, chain: chain)
            var moved: [StepRecord] = []
            for index in targets {
                let entry = state.entries[index]
                var published: [(index: Int, value: Float)] = []
                for step in steps {
                    let parameter = step.parameter
                    if let done = moved.first(where: { $0.chain == entry.chain && $0.parameter == parameter }) {
                        published.append((parameter.rawValue, done.to))
                        continue
                    }
                    let from = entry.control.pointee.current(parameter.rawValue)
                    let to = min(max(from + step.value, parameter.spec.minimum), parameter.spec.maximum)
                    moved.append(StepRecord(chain: entry.chain, parameter: parameter, from: from, to: to))
                    published.append((parameter.rawValue, to))
                }
                entry.control.pointee.publish(published)
            }
            return (targets.count, moved)
        }
        guard let result, result.count > 0 else { return [.error(noInstance(chain))] }
        for number in Set(result.moved.map(\.chain)) where number >= 0 {
            var changes: SettingsFile.Changes = [:]
            for record in result.moved where record.chain == number { changes[record.parameter] = .some(record.to) }
            store.update(chain: number, changes, now: now)
        }
        return result.moved.map { .record($0.record) } + [.ok([("instances", String(result.count))])]
    }

    static func targets(_ entries: [RegistryEntry], chain: Int?) -> [Int] {
        entries.indices.filter { chain == nil || entries[$0].chain == chain }
    }

    func noInstance(_ chain: Int?) -> ProtocolError {
        guard let chain else { return ProtocolError(.noInstance, "no instance runs in process \(pid)") }
        return ProtocolError(.noInstance, "no instance of chain \(chain) (\(ChainName.name(chain))) runs in process \(pid)")
    }

    func status(_ entry: RegistryEntry, now: Double) -> InstanceStatus {
        let running = entry.running(now: now)
        return InstanceStatus(
            id: entry.id, chain: entry.chain, label: entry.label, sampleRate: entry.sampleRate, channels: entry.channels,
            latency: entry.latency, uptime: now - entry.created,
            bypassed: entry.control.pointee.current(Parameter.bypass.rawValue) >= 0.5,
            meters: running ? entry.meters : MeterReadings(), running: running,
            faults: Int(truncatingIfNeeded: entry.control.pointee.faults.load(ordering: .relaxed)),
            block: Int(truncatingIfNeeded: entry.control.pointee.block.load(ordering: .relaxed)))
    }
}
