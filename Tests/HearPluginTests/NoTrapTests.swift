// No trap on the audio path, checked on the build itself (the real-time rules, docs/DEVELOPING.md): a trap in
// the PipeWire daemon silences the whole desktop. Bounds-checked subscripts, overflow-checked
// arithmetic, float-to-int conversions, force unwraps and preconditions all compile to a trap
// instruction (`ud2` on x86-64, `brk` on arm64), so their absence is read from the release object
// code with objdump (binutils, which the toolchain needs anyway). The objects read are those linked
// into .build/release/libhear.so, the plugin `make` ships: `make test` compiles the tests against
// that build (`swift test --disable-testable-imports`), so nothing is compiled a second time with
// testability; the test checks that the objects came from that build. It reads
//   - every function in HearDSP's objects (the stages, their init and the shared primitives),
//   - every function the plugin's real-time entry points (run, activate, connect_port) reach
//     through direct calls, in the plugin's, HearDSP's, HearControl's and HearSystem's objects;
//     and in CHearKernels' C object (the learned model's AVX products); what they call outside those
//     objects must be a known C function (libm, memcpy ...), so no Swift runtime or standard-library
//     code we cannot see into runs there.
// Calls through function pointers or witness tables are not followed; the audio path makes none
// (@_noLocks, which the compiler checks, rejects the dynamic dispatch that would need them).

import Foundation
import Testing
import TestSupport

/// Functions, their trap instructions and their direct callees, from `objdump -dr` of object files.
struct ObjectCode {
    struct Function {
        let name: String
        let object: String
        var traps = 0
        var callees: Set<String> = []
    }

    private(set) var functions: [String: Function] = [:]

    static let trapMnemonics: Set<String> = ["ud2", "brk"]

    init(objects: [String]) throws {
        for object in objects { try read(object) }
    }

    static func isBranch(_ mnemonic: String) -> Bool {
        mnemonic.hasPrefix("call") || mnemonic.hasPrefix("j") || mnemonic == "bl" || mnemonic == "b" || mnemonic.hasPrefix("b.")
    }

    /// `name+0x10` or `name-0x4` (an addend) -> `name`.
    static func symbol(_ text: Substring) -> String {
        var name = String(text)
        if let range = name.range(of: #"[+-]0x[0-9a-f]+$"#, options: .regularExpression) { name.removeSubrange(range) }
        return name
    }

    mutating func read(_ object: String) throws {
        let result = try Command.run("/usr/bin/env", ["objdump", "-dr", "--no-show-raw-insn", object],
                             environment: ProcessInfo.processInfo.environment, timeout: 120)
        guard result.status == 0 else { throw ObjectCodeError.objdump(object, result.stderr) }
        let objectName = URL(fileURLWithPath: object).lastPathComponent
        var current: String?
        var lastMnemonic = ""
        // The target printed with a branch (`call 1f <name+0x1f>`) is real only when no relocation
        // follows it; with one, the relocation names the callee and the printed target is a placeholder.
        var pendingTarget: String?
        func commitPending() {
            if let target = pendingTarget, let current { functions[current]?.callees.insert(target) }
            pendingTarget = nil
        }
        for line in result.stdout.split(separator: "\n", omittingEmptySubsequences: true) {
            if let first = line.first, first.isHexDigit, line.hasSuffix(">:"), let open = line.firstIndex(of: "<") {
                commitPending()
                let name = String(line[line.index(after: open)..<line.index(line.endIndex, offsetBy: -2)])
                current = name
                if functions[name] == nil { functions[name] = Function(name: name, object: objectName) }
                continue
            }
            guard let function = current, line.first == " " || line.first == "\t" else { continue }
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard fields.count >= 2, fields[0].hasSuffix(":") else { continue }
            if fields[1].hasPrefix("R_") {  // a relocation of the instruction before it
                pendingTarget = nil
                if fields.count >= 3, Self.isBranch(lastMnemonic) {
                    let callee = Self.symbol(fields[2])
                    if !callee.hasPrefix(".L") { functions[function]?.callees.insert(callee) }
                }
                continue
            }
            commitPending()
            lastMnemonic = String(fields[1])
            if Self.trapMnemonics.contains(lastMnemonic) { functions[function]?.traps += 1 }
            if Self.isBranch(lastMnemonic), let open = line.lastIndex(of: "<"), line.hasSuffix(">") {
                pendingTarget = Self.symbol(line[line.index(after: open)..<line.index(before: line.endIndex)])
            }
        }
        commitPending()
    }

    /// Every function reachable from `roots` by direct calls and jumps, and the callees outside these objects.
    func reachable(from roots: [String]) -> (functions: [Function], external: Set<String>) {
        var seen = Set(roots), queue = roots, external = Set<String>()
        while let name = queue.popLast() {
            for callee in functions[name]?.callees ?? [] {
                if functions[callee] == nil { external.insert(callee); continue }
                if seen.insert(callee).inserted { queue.append(callee) }
            }
        }
        return (seen.compactMap { functions[$0] }, external)
    }
}

enum ObjectCodeError: Error { case objdump(String, String) }

/// Readable names (swift-demangle from the toolchain, on PATH under `make test`); mangled if it is missing.
func demangled(_ names: [String]) -> [String: String] {
    guard !names.isEmpty,
          let result = try? Command.run("/usr/bin/env", ["swift-demangle", "--simplified", "--compact"] + names,
                                environment: ProcessInfo.processInfo.environment, timeout: 120),
          result.status == 0 else { return Dictionary(uniqueKeysWithValues: names.map { ($0, $0) }) }
    let lines = result.stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    guard lines.count >= names.count else { return Dictionary(uniqueKeysWithValues: names.map { ($0, $0) }) }
    return Dictionary(uniqueKeysWithValues: zip(names, lines.prefix(names.count)))
}

@Suite struct NoTrapTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let build = root.appendingPathComponent(".build/release")

    /// The value-witness entry that "copies" a noncopyable type: it traps by design, and nothing can
    /// call it (the compiler rejects every copy of such a value). One per file that declares one.
    static let cannotCopy = "__swift_cannot_copy_noncopyable_type"

    /// What the audio path may call outside the objects read: libc's memory functions, libm, the
    /// stack protector's failure handler, and speexdsp's per-frame calls (the echo canceller: C,
    /// counted allocation-free by EchoReferenceTests; speex_echo_ctl reads the filter's impulse
    /// response about once a second).
    static let allowedExternal: Set<String> = [
        "memcpy", "memmove", "memset", "__stack_chk_fail",
        "speex_echo_cancellation", "speex_echo_state_reset", "speex_echo_ctl",
        "sin", "cos", "tan", "exp", "exp2", "log", "log2", "log10", "pow", "sqrt", "trunc", "floor", "ceil",
        "sinf", "cosf", "expf", "exp2f", "logf", "log2f", "log10f", "powf", "sqrtf", "truncf", "floorf", "ceilf",
    ]

    static let plugin = build.appendingPathComponent("libhear.so")

    /// The release objects of `target`, one per source file, as linked into libhear.so (`make` builds
    /// them): compiled without testability and no newer than the plugin.
    static func objects(_ target: String, language: String = "swift") throws -> [String] {
        // The last release build's commands (SwiftPM's llbuild manifest): the objects come from the
        // command naming the module, which a build with testability would give -enable-testing.
        let manifest = try String(contentsOf: root.appendingPathComponent(".build/release.yaml"), encoding: .utf8)
        if language == "swift" {
            let commands = manifest.split(separator: "\n").filter { $0.contains("args:") && $0.contains("\"-module-name\",\"\(target)\",") }
            #expect(!commands.isEmpty, "no compile command for \(target) in .build/release.yaml")
            #expect(!commands.contains { $0.contains("\"-enable-testing\"") },
                    "\(target) was last compiled with testability, unlike libhear.so: run the tests with `make test` or `swift test -c release --disable-testable-imports`")
        }
        let pluginDate = try #require(FileManager.default.attributesOfItem(atPath: plugin.path)[.modificationDate] as? Date,
                                      "\(plugin.path) is missing: build it first (`make`)")
        let sources = root.appendingPathComponent("Sources/\(target)")
        let files = try #require(FileManager.default.subpaths(atPath: sources.path)).filter { $0.hasSuffix(".\(language)") }
        #expect(!files.isEmpty, "no sources in \(sources.path)")
        var objects: [String] = []
        for file in files {
            let name = URL(fileURLWithPath: file).lastPathComponent
            let object = build.appendingPathComponent("\(target).build/\(name).o").path
            let exists = FileManager.default.fileExists(atPath: object)
            #expect(exists, "\(object) is missing: build in release first (`make`)")
            guard exists else { continue }
            let date = try #require(FileManager.default.attributesOfItem(atPath: object)[.modificationDate] as? Date)
            #expect(date <= pluginDate, "\(object) is newer than libhear.so: it is not the code the plugin holds (build with `make`, then test with `make test`)")
            objects.append(object)
        }
        return objects
    }

    static func report(_ functions: [ObjectCode.Function]) -> String {
        let names = demangled(functions.map(\.name))
        return functions.sorted { ($0.object, $0.name) < ($1.object, $1.name) }
            .map { "\($0.object): \(names[$0.name] ?? $0.name) (\($0.traps))" }.joined(separator: "\n")
    }

    @Test func heardspsObjectCodeHoldsNoTrapInstruction() throws {
        let objects = try Self.objects("HearDSP")
        #expect(objects.contains { $0.hasSuffix("/Chain.swift.o") }, "\(objects)")
        let code = try ObjectCode(objects: objects)
        let functions = Array(code.functions.values)
        #expect(functions.count > 100, "only \(functions.count) functions read: is objdump's output what this parser expects?")
        let trapping = functions.filter { $0.traps > 0 && $0.name != Self.cannotCopy }
        var perObject: [String: Int] = [:]
        for function in trapping { perObject[function.object, default: 0] += function.traps }
        print("HearDSP: \(functions.count) functions in \(objects.count) objects, \(trapping.reduce(0) { $0 + $1.traps }) trap instructions \(perObject)")
        #expect(trapping.isEmpty, "trap instructions in HearDSP (file: function (count)):\n\(Self.report(trapping))")
    }

    @Test func thePluginsRealTimeEntryPointsReachNoTrap() throws {
        var objects: [String] = []
        for target in ["HearPlugin", "HearDSP", "HearControl", "HearSystem"] { objects += try Self.objects(target) }
        // The learned model's AVX products are C (CHearKernels): read like the rest, so that a trap
        // or an outside call there counts too.
        objects += try Self.objects("CHearKernels", language: "c")
        let code = try ObjectCode(objects: objects)
        // The C entry points PipeWire calls on its real-time thread: the @convention(c) thunks
        // (mangled `...FTo`) of hearRun, hearActivate and hearConnectPort.
        var roots: [String] = []
        for entry in ["7hearRun", "12hearActivate", "15hearConnectPort"] {
            let found = code.functions.keys.filter { $0.hasPrefix("$s10HearPlugin\(entry)") && $0.hasSuffix("FTo") }
            #expect(found.count == 1, "the entry point \(entry) in LADSPA.swift.o: \(found)")
            roots += found
        }
        let (reached, external) = code.reachable(from: roots)
        print("run path: \(reached.count) functions reached from \(roots.count) entry points; outside calls: \(external.sorted())")
        #expect(reached.count > 20, "only \(reached.count) functions reached: are calls followed?")
        #expect(reached.contains { $0.name.contains("5ChainV7process") }, "Chain.process is not reached from run")
        let trapping = reached.filter { $0.traps > 0 }
        #expect(trapping.isEmpty, "trap instructions on the plugin's run path (file: function (count)):\n\(Self.report(trapping))")
        let unknown = external.subtracting(Self.allowedExternal)
        #expect(unknown.isEmpty, "the run path calls code this test cannot see into: \(unknown.sorted())")
    }

    /// The scanner itself: a checked subscript compiles to a trap it finds and names, unchecked access to none.
    @Test func theScannerFindsATrapAndNamesItsFunction() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hear-notrap-\(getpid())-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let source = directory.appendingPathComponent("probe.swift"), object = directory.appendingPathComponent("probe.o")
        try """
        public struct Probe {
            var values: InlineArray<8, Float> = InlineArray(repeating: 1)
            public func checked(_ i: Int) -> Float { values[i] }
            public func unchecked(_ i: Int) -> Float { values[unchecked: i & 7] }
            public func sum(_ a: Int, _ b: Int) -> Int { a + b }
            public func wrappingSum(_ a: Int, _ b: Int) -> Int { a &+ b }
        }
        """.write(to: source, atomically: true, encoding: .utf8)
        let compiled = try Command.run("/usr/bin/env", ["swiftc", "-O", "-wmo", "-parse-as-library", "-module-name", "Probe",
                                                "-emit-object", "-o", object.path, source.path],
                               environment: ProcessInfo.processInfo.environment, timeout: 300)
        try #require(compiled.status == 0, "\(compiled.stderr)")
        let code = try ObjectCode(objects: [object.path])
        let names = demangled(Array(code.functions.keys))
        func traps(_ method: String) -> Int? {
            code.functions.values.first { names[$0.name]?.hasPrefix("Probe.\(method)(") == true }?.traps
        }
        #expect((traps("checked") ?? 0) > 0)
        #expect((traps("sum") ?? 0) > 0)
        #expect(traps("unchecked") == 0)
        #expect(traps("wrappingSum") == 0)
    }
}
