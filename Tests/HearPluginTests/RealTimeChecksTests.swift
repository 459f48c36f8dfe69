// The audio path's real-time safety is checked by the compiler: the entry points carry
// @_noLocks, and a release build rejects any lock, allocation or reference count reachable
// from them. These tests make sure both halves stay true. That no trap is reachable is read from
// the release build itself (NoTrapTests).

import Foundation
import Testing
import TestSupport

@Suite struct RealTimeChecksTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    static func source(_ path: String) throws -> [String] {
        try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8).components(separatedBy: "\n")
    }

    @Test func theLADSPAEntryPointsOfTheAudioThreadAreNoLocks() throws {
        let lines = try Self.source("Sources/HearPlugin/LADSPA.swift")
        for entry in ["func hearRun(", "func hearConnectPort(", "func hearActivate("] {
            let line = try #require(lines.first { $0.contains(entry) }, "\(entry) not found")
            #expect(line.contains("@_noLocks"), "\(entry) must be @_noLocks")
        }
    }

    @Test func everyStageProcessIsNoLocks() throws {
        let directory = Self.root.appendingPathComponent("Sources/HearDSP")
        let files = try #require(FileManager.default.subpaths(atPath: directory.path)).filter { $0.hasSuffix(".swift") }
        #expect(files.contains("NoiseSuppression/NoiseSuppressor.swift"), "\(files)")
        for file in files {
            for line in try Self.source("Sources/HearDSP/\(file)") where line.contains(" func process(") {
                #expect(line.contains("@_noLocks"), "\(file): \(line.trimmingCharacters(in: .whitespaces))")
            }
        }
    }

    /// Compiles `body` inside a @_noLocks function the way the package builds (optimized, whole module).
    static func compile(_ body: String) throws -> (ok: Bool, log: String) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hear-nolocks-\(getpid())-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("probe.swift")
        try "@_noLocks public func probe(_ n: Int) -> Int {\n\(body)\n}\n".write(to: file, atomically: true, encoding: .utf8)
        let result = try Command.run("swiftc", ["-O", "-wmo", "-parse-as-library", "-emit-object", "-o",
                                                directory.appendingPathComponent("probe.o").path, file.path],
                                     timeout: 300, mergingOutput: true)
        return (result.status == 0, result.output)
    }

    @Test func theCompilerRejectsAllocationUnderNoLocks() throws {
        let plain = try Self.compile("    var sum = 0\n    for i in 0..<n { sum &+= i }\n    return sum")
        #expect(plain.ok, "\(plain.log)")
        let allocating = try Self.compile("    let values = [Int](repeating: 1, count: n)\n    return values.count")
        #expect(!allocating.ok)
        #expect(allocating.log.contains("locking") || allocating.log.contains("allocation"), "\(allocating.log)")
    }
}
