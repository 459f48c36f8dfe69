// hearctl and libhear.so run on a machine without a Swift toolchain: the Swift runtime (and, for
// hearctl, Foundation) are linked in statically, so `ldd` lists only system libraries.

import Foundation
import Testing
import TestSupport

@Suite struct SelfContainedTests {
    /// Libraries that only a Swift toolchain provides.
    static let toolchainLibraries = ["libswift", "libFoundation", "lib_Foundation", "libCoreFoundation", "libdispatch", "libBlocksRuntime"]

    /// `ldd`'s lines for a binary, trimmed.
    static func ldd(_ path: String) throws -> [String] {
        let result = try Command.run("/usr/bin/ldd", [path], environment: [:])
        #expect(result.status == 0, "ldd \(path): \(result.stderr)")
        return result.stdout.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
    }

    @Test func hearctlLinksNoSwiftRuntime() throws {
        let lines = try Self.ldd(Built.hearctl)
        #expect(lines.contains { $0.hasPrefix("libc.so") }, "\(lines)")
        for line in lines {
            #expect(!Self.toolchainLibraries.contains { line.contains($0) }, "hearctl links a toolchain library: \(line)")
            #expect(!line.contains("not found"), "\(line)")
        }
        // An empty environment: no LD_LIBRARY_PATH, no PATH to a toolchain.
        let version = try Command.run(Built.hearctl, ["--version"], environment: [:])
        #expect(version.status == 0 && version.stdout.contains("hear/1"), "\(version.stderr)")
    }

    @Test func thePluginLinksOnlyLibcLibmLibstdcxxLibgccAndSpeexDSP() throws {
        let names = try Self.ldd(PluginPath.built).compactMap { $0.split(separator: " ").first.map(String.init) }
        let allowed = ["linux-vdso.so.1", "libc.so.6", "libm.so.6", "libstdc++.so.6", "libgcc_s.so.1", "libspeexdsp.so.1"]
        for name in names where !name.hasPrefix("/") {  // the dynamic loader is listed by its path
            #expect(allowed.contains(name), "libhear.so links \(name)")
        }
    }
}
