// Which chains exist, and the one a change goes to.
//
// A chain exists when a control socket reports an instance of it (running, or idle: the host
// holds it but does not run it), or when a PipeWire drop-in configures it (HearctlCore/DropIns:
// a filter-chain node with label hear_mono/hear_stereo or plugin libhear.so; its "chain" control
// is the number). A configured chain without an instance is suspended: PipeWire's filter-chain
// drops the plugin while the node sleeps and makes a new instance when an app uses it. Changes
// to a suspended chain go to its state file ($XDG_STATE_HOME/hear/<chain>.conf, the one the plugin
// saves to and restores from at instantiate, written through the same HearControl/SettingsFile),
// so they apply when it starts.
//
// One rule for every change (set, bypass, reset, preset load): with one chain, it goes there;
// with more than one (running or suspended), it needs --chain, else it is a usage error (exit 2)
// that names them. Reading verbs (status, list, get, meter) show every chain without --chain.

import Foundation
import Glibc
import HearctlCore
import HearControl
import HearDSP
import HearSystem
import Synchronization

/// The chains the drop-ins configure, by number (a later directory's drop-in wins).
enum ConfiguredChains {
    /// Far above any config (PipeWire itself reads a file whole, whatever its size); a file larger
    /// than this is skipped with a warning rather than read into memory.
    static let maximumBytes = 64 << 20

    /// Read as PipeWire reads them: symbolic links followed (stow, home-manager), every `.conf`. A
    /// file that cannot be read or parsed is skipped with a warning naming it and the reason, once
    /// per run of hearctl.
    static func load() -> [Int: ConfiguredChain] {
        var result: [Int: ConfiguredChain] = [:]
        for directory in DropIns.directories(environment: Discovery.environment) {
            guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { continue }
            for name in names.filter({ $0.hasSuffix(".conf") }).sorted() {
                let path = directory + "/" + name
                do {
                    guard let bytes = try Syscall.readRegularFile(path, limit: maximumBytes, followingLinks: true) else {
                        var link = stat()
                        if lstat(path, &link) == 0 { warn(path, "it is a symbolic link to nothing") }
                        continue
                    }
                    for chain in try DropIns.chains(in: String(decoding: bytes, as: UTF8.self), path: path) { result[chain.chain] = chain }
                } catch let error as DropIns.Unreadable {
                    warn(path, "\(error.reason)")
                } catch let error as SystemError {
                    warn(path, error.detail ?? error.message)
                } catch {
                    warn(path, "\(error)")
                }
            }
        }
        return result
    }

    private static let warned = Mutex<Set<String>>([])

    static func warn(_ path: String, _ reason: String) {
        guard warned.withLock({ $0.insert(path).inserted }) else { return }
        FileHandle.standardError.write(Data("hearctl: warning: skipped drop-in \(Sanitize.text(path)): \(Sanitize.text(reason))\n".utf8))
    }
}

/// What a change did, for the reply.
struct ChangeResult {
    let chain: Int
    /// "running" (sent to its instances) or "suspended" (saved for when it starts).
    let state: String
    let instances: Int
    /// The values the changed parameters now have (or will start with).
    let values: [(Parameter, Float)]
    /// The state file written for a suspended chain.
    let saved: String?
    /// What writing it did that the user should hear of (a damaged file kept aside).
    var notices: [String] = []
    /// The parameters that moved by a step: from what to what.
    var steps: [(parameter: Parameter, from: Float, to: Float)] = []
}

struct Chains {
    let target: Target
    let statuses: [(pid: Int32, status: InstanceStatus, notices: [String])]
    let configured: [Int: ConfiguredChain]

    /// Every server, its instances, and the drop-ins. No server is fine when a drop-in configures a chain.
    init(timeout: Double) throws {
        target = try Target(chain: nil, timeout: timeout, required: false)
        statuses = try target.statuses()
        configured = ConfiguredChains.load()
    }

    init(_ option: ChainOption) throws { try self.init(timeout: option.timeout) }

    var running: [Int] { Array(Set(statuses.map(\.status.chain).filter { $0 >= 0 })).sorted() }
    var known: [Int] { Array(Set(running + configured.keys)).sorted() }
    func isRunning(_ chain: Int) -> Bool { statuses.contains { $0.status.chain == chain } }
    func state(_ chain: Int) -> String { isRunning(chain) ? "running" : "suspended" }

    static func describe(_ chain: Int) -> String { "\(chain) (\(ChainName.name(chain)))" }

    var summary: String {
        known.map { "\(ChainName.name($0)) (\($0)) \(state($0))" }.joined(separator: ", ")
    }

    /// The chains a reading verb shows: the one named, else every known chain.
    func reading(_ chain: Int?) throws -> [Int] {
        if known.isEmpty { throw Discovery.notRunning() }
        guard let chain else { return known }
        guard known.contains(chain) else { throw unknown(chain) }
        return [chain]
    }

    /// The one chain a change goes to (see the rule at the top of this file).
    func changing(_ chain: Int?, verb: String) throws -> Int {
        if known.isEmpty { throw Discovery.notRunning() }
        if let chain {
            guard known.contains(chain) else { throw unknown(chain) }
            return chain
        }
        if known.count == 1 { return known[0] }
        let names = known.map { "--chain \(ChainName.name($0))" }.joined(separator: " or ")
        throw CLIError("\(known.count) chains exist (\(summary)): say which one `\(verb)` changes with \(names)", code: ExitStatus.usage)
    }

    func unknown(_ chain: Int) -> CLIError {
        CLIError("chain \(Self.describe(chain)) neither runs nor is configured in a PipeWire drop-in; chains: \(summary)",
                 code: ExitStatus.notRunning)
    }

    /// A chain's values: from its instances while it runs, else what it will start with (the
    /// drop-in's values, with the saved ones on top).
    func values(_ chain: Int, _ parameters: [Parameter]) throws -> [(Parameter, Float)] {
        let wanted = parameters.isEmpty ? Parameter.allCases : parameters
        if isRunning(chain) {
            let reading = Target(chain: chain, connections: target.connections)
            if let found = try reading.values(parameters).first(where: { $0.chain == chain }) { return found.values }
        }
        let saved = Self.stateFile(chain)?.read(repair: false).settings ?? Settings()
        let dropIn = configured[chain]
        return wanted.map { ($0, saved[$0] ?? dropIn?.configured($0) ?? $0.spec.defaultValue) }
    }

    /// The value `reset` returns a parameter to: the drop-in's, else the schema default.
    func configuredValue(_ chain: Int, _ parameter: Parameter) -> Float {
        configured[chain]?.configured(parameter) ?? parameter.spec.defaultValue
    }

    /// Sends `request` to the chain's instances, or saves `changes` for it while it is suspended.
    func change(_ chain: Int, request: Request, saving changes: SettingsFile.Changes, show parameters: [Parameter]) throws -> ChangeResult {
        if isRunning(chain) {
            let sending = Target(chain: chain, connections: target.connections)
            let replies = try sending.each(request)
            return ChangeResult(chain: chain, state: "running", instances: Self.instances(replies), values: try values(chain, parameters),
                                saved: nil)
        }
        guard let file = Self.stateFile(chain) else { throw CLIError("settings cannot be saved: neither XDG_STATE_HOME nor HOME is set") }
        // Longer than the control server's background saves wait: a person waits for this one.
        let outcome = file.update(changes, lockWait: 2)
        if let problem = outcome.problem { throw CLIError(problem.message) }
        return ChangeResult(chain: chain, state: "suspended", instances: 0, values: try values(chain, parameters), saved: file.path,
                            notices: outcome.notices)
    }

    /// How many instances the servers' `ok instances=N` replies say they changed.
    static func instances(_ replies: [(Connection, Reply)]) -> Int {
        replies.reduce(0) { $0 + (Int($1.1.okFields.first { $0.name == "instances" }?.value ?? "") ?? 0) }
    }

    /// Moves parameters by steps: on the chain's instances in one request each (the server reads and
    /// writes in one turn), or in its state file under the file's lock while it is suspended.
    func step(_ chain: Int, _ steps: [Assignment], show parameters: [Parameter]) throws -> ChangeResult {
        if isRunning(chain) {
            let sending = Target(chain: chain, connections: target.connections)
            let replies = try sending.each(.step(chain: chain, steps: steps))
            var moved: [(parameter: Parameter, from: Float, to: Float)] = []
            for (_, reply) in replies {
                for case let record? in reply.records.map(StepRecord.init) where record.chain == chain
                    && !moved.contains(where: { $0.parameter == record.parameter }) {
                    moved.append((record.parameter, record.from, record.to))
                }
            }
            return ChangeResult(chain: chain, state: "running", instances: Self.instances(replies), values: try values(chain, parameters),
                                saved: nil, steps: moved)
        }
        guard let file = Self.stateFile(chain) else { throw CLIError("settings cannot be saved: neither XDG_STATE_HOME nor HOME is set") }
        var moved: [(parameter: Parameter, from: Float, to: Float)] = []
        let outcome = file.update(lockWait: 2) { saved in
            moved = steps.map { step in
                let from = saved[step.parameter] ?? self.configuredValue(chain, step.parameter)
                return (step.parameter, from, min(max(from + step.value, step.parameter.spec.minimum), step.parameter.spec.maximum))
            }
            var changes: SettingsFile.Changes = [:]
            for item in moved { changes[item.parameter] = .some(item.to) }
            return changes
        }
        if let problem = outcome.problem { throw CLIError(problem.message) }
        return ChangeResult(chain: chain, state: "suspended", instances: 0, values: try values(chain, parameters), saved: file.path,
                            notices: outcome.notices, steps: moved)
    }

    /// The chain's state file (HearControl/SettingsFile, the plugin's too), written here while the chain is suspended.
    static func stateFile(_ chain: Int) -> SettingsFile? {
        SettingsFile(chain: chain, writer: "hearctl while the chain was suspended", environment: Discovery.environment)
    }
}

extension Chains {
    /// Waits until every process hosting `chain` has its changes on disk.
    func sync(_ chain: Int) throws {
        let pids = Set(statuses.filter { $0.status.chain == chain }.map(\.pid))
        for connection in target.connections where pids.contains(connection.pid) { _ = try connection.send(.sync) }
    }
}

extension Target {
    init(chain: Int?, connections: [Connection]) {
        self.chain = chain
        self.connections = connections
    }
}
