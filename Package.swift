// swift-tools-version:6.0
import PackageDescription

// The audio path (HearDSP, HearPlugin) is checked by the compiler (@_noLocks): no locks, no
// allocation, no reference counting. The check needs whole-module optimization, which a debug
// build cannot have (SwiftPM's index store refuses -wmo there), so a debug build stops at once with
// one line saying so (Sources/HearDSP/ReleaseOnly.swift); `make` and `make test` build release.
// Exclusivity is enforced statically in those two targets, dynamically everywhere else.
let realTimeFlags: [SwiftSetting] = [.unsafeFlags(["-enforce-exclusivity=unchecked"])]

let package = Package(
    name: "hear",
    products: [
        // libhear.so: the LADSPA plugin PipeWire's filter-chain and PulseAudio load.
        .library(name: "hear", type: .dynamic, targets: ["HearPlugin"]),
        // hearctl: tunes running filters over their control sockets.
        .executable(name: "hearctl", targets: ["hearctl"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
    ],
    targets: [
        .systemLibrary(name: "CLADSPA", path: "modules/CLADSPA"),
        .systemLibrary(name: "CHearSys", path: "modules/CHearSys"),
        // libpipewire-0.3 for hearctl status (Debian: libpipewire-0.3-dev, libspa-0.2-dev); never linked by the plugin.
        .systemLibrary(name: "CPipeWire", path: "modules/CPipeWire", pkgConfig: "libpipewire-0.3",
                       providers: [.apt(["libpipewire-0.3-dev", "libspa-0.2-dev"])]),
        // The learned noise-suppression model's weights (hear-model.bin, from `make train`), embedded as data.
        .target(name: "CHearModel", exclude: ["hear-model.bin", "hear-model.bin.sha256"],
                cSettings: [.unsafeFlags(["-std=c23"])]),
        // Debian's libspeexdsp for the echo canceller (libspeexdsp-dev; libspeexdsp1 at run time).
        .systemLibrary(name: "CSpeexDSP", path: "modules/CSpeexDSP", pkgConfig: "speexdsp", providers: [.apt(["libspeexdsp-dev"])]),
        // The learned model's products on AVX where the processor has it (bit-identical to the portable ones).
        .target(name: "CHearKernels"),
        .target(name: "HearDSP", dependencies: ["CHearModel", "CHearKernels", "CSpeexDSP"], swiftSettings: realTimeFlags),
        // The socket, file and thread layer (typed errors, EINTR retried, deadlines), shared by the
        // plugin's control server and hearctl; no Foundation, since the plugin links it.
        .target(name: "HearSystem", dependencies: ["CHearSys"]),
        .target(
            name: "HearPlugin", dependencies: ["HearDSP", "HearControl", "HearSystem", "CLADSPA"], swiftSettings: realTimeFlags,
            // Self-contained for the PipeWire daemon: the Swift runtime linked in and hidden.
            linkerSettings: [.unsafeFlags([
                "-static-stdlib", "-Xlinker", "--exclude-libs=ALL",
                "-Xlinker", "--version-script=modules/hear.exports", "-Xlinker", "--strip-all",
            ])]
        ),
        // What the plugin and hearctl share: the control protocol, the settings file (its format and
        // its one reader and writer), the socket and state paths (no Foundation: the plugin links it).
        .target(name: "HearControl", dependencies: ["HearDSP", "HearSystem"]),
        // libspa's SPA-JSON tokenizer (header only, nothing linked): hearctl reads PipeWire's drop-ins with it.
        .systemLibrary(name: "CSPAJSON", path: "modules/CSPAJSON", pkgConfig: "libspa-0.2", providers: [.apt(["libspa-0.2-dev"])]),
        // hearctl's own model, apart from its commands so that tests can import it: the hearing fit,
        // the chains PipeWire drop-ins configure, the built-in presets and the tone measurement `fit`
        // checks with. The plugin never links it. No Foundation, so it links into hearctl's static
        // build and into the tests alike.
        .target(name: "HearctlCore", dependencies: ["HearControl", "HearDSP", "CSPAJSON"]),
        .executableTarget(
            name: "hearctl",
            dependencies: ["HearctlCore", "HearControl", "HearDSP", "HearSystem", "CPipeWire", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            // Self-contained: the Swift runtime and Foundation linked in, so it runs without a toolchain
            // (compiled with the flag too, so that the static Foundation's modules name their libraries).
            swiftSettings: [.unsafeFlags(["-static-stdlib"])],
            linkerSettings: [.unsafeFlags(["-static-stdlib"])]
        ),
        // Test helpers: signals and measurements, the one seeded random generator, the one process runner.
        .target(name: "TestSupport", dependencies: ["HearDSP", "HearControl", "HearctlCore"], path: "Tests/TestSupport"),
        // A heap-allocation counter (malloc interposed), for the host and the plugin tests.
        .target(name: "CMallocCounter"),
        // Training features for the learned noise suppressor, computed by the suppressor itself (`make train`).
        // Self-contained (the Swift runtime linked in, no Foundation), so that it also runs on the
        // accelerator that training/accelerator.sh is carried to.
        .executableTarget(name: "hear-features", dependencies: ["HearDSP", "HearSystem"],
                          swiftSettings: [.unsafeFlags(["-static-stdlib"])], linkerSettings: [.unsafeFlags(["-static-stdlib"])]),
        // The project's own LADSPA host: the control and fault tests run libhear.so in it in real time;
        // `hear-host bench` runs any plugin offline and times its run() calls (make bench, make eval).
        .executableTarget(name: "hear-host", dependencies: ["CLADSPA", "LADSPALoader", "CMallocCounter", "HearSystem"]),
        // Loading a LADSPA plugin as a host does (dlopen, its descriptors): hear-host and the tests.
        .target(name: "LADSPALoader", dependencies: ["CLADSPA"]),
        .testTarget(name: "HearDSPTests", dependencies: ["HearDSP", "HearControl", "HearctlCore", "CHearModel", "CHearKernels", "TestSupport"], exclude: ["Fixtures"]),
        .testTarget(name: "HearPluginTests", dependencies: ["HearDSP", "HearControl", "HearctlCore", "HearSystem", "CLADSPA", "LADSPALoader", "CMallocCounter", "TestSupport"]),
        .testTarget(name: "HearSystemTests", dependencies: ["HearSystem"]),
        .testTarget(name: "HearControlTests", dependencies: ["HearControl", "HearDSP", "TestSupport"]),
        .testTarget(name: "HearctlCoreTests", dependencies: ["HearctlCore", "HearControl", "HearDSP", "TestSupport"]),
        // The conf.d drop-ins in a real PipeWire and PulseAudio that the tests start and stop themselves.
        .testTarget(name: "IntegrationTests", dependencies: ["HearDSP", "CLADSPA", "LADSPALoader", "TestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)
