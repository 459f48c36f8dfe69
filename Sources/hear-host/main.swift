// hear-host: the project's LADSPA host, in two modes.
//   hear-host bench ...   runs any LADSPA plugin offline and times its run() calls alone
//                         (make bench, make eval; Bench.swift gives its options and output).
// Otherwise it is the real-time host of the control tests: it dlopens libhear.so, runs one
// instance on a thread that paces blocks against the monotonic clock (as PipeWire's graph does),
// feeds it a sine, records every output sample with its block's start time, counts heap
// allocations and non-finite samples on that audio thread, and stops cleanly on SIGTERM or SIGINT.
// SIGUSR1 pauses and resumes calling run(), as a host does with a suspended node.
//
//   hear-host --plugin PATH --out FILE [--label hear_mono] [--rate 48000] [--block 256]
//                 [--chain N] [--frequency 1000] [--amplitude 0.02] [--seconds 60] [--control key=value ...]
//                 [--instances N]   (N instances of one chain, as filter-chain makes per channel; the first is recorded)
//
// It prints `ready <pid>` once the first block has run, and on exit one summary line:
//   done blocks=<n> frames=<n> allocations=<n> nonfinite=<n> late=<n>
//   hear-host --connect SOCKET [--send LINE]   (a bare protocol client: prints what the server says)
//
// Fault-injection modes (Tests/HearPluginTests/FaultInjectionTests.swift):
//   --fifo-instantiate 1      instantiate from a SCHED_FIFO thread (as a real-time host may)
//   --late-instance SECONDS   that long after the first block, instantiate and clean up one more
//                             instance on the main thread and print `late-instance instantiate_ms=.. cleanup_ms=..`
//   hear-host --cycles N --plugin PATH   N x (dlopen, instantiate, run, cleanup, dlclose); prints
//                             `cycles n=N heap_after_10=B heap_after_n=B`
//   hear-host --dirent-probe 1   reads a directory entry whose name ends at an unmapped page
//   hear-host --list DIR         lists a directory through HearSystem (for valgrind)
// The recording (FILE) is little-endian: frames as Float32 (first output channel), then one
// Float64 start time (CLOCK_MONOTONIC seconds) per block.

import CLADSPA
import CMallocCounter
import Foundation
import Glibc
import HearSystem
import LADSPALoader
import Synchronization

/// Set by the SIGTERM/SIGINT handlers (a lock-free atomic store is async-signal-safe).
let stopRequested = Atomic<Bool>(false)
/// Toggled by SIGUSR1: while set, the host keeps time but does not call run(), like a suspended node.
let paused = Atomic<Bool>(false)

func now() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return Double(time.tv_sec) + Double(time.tv_nsec) * 1e-9
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("hear-host: \(message)\n".utf8))
    exit(1)
}

if CommandLine.arguments.count > 1 && CommandLine.arguments[1] == "bench" {
    runBench(Array(CommandLine.arguments.dropFirst(2)))
}

var options: [String: String] = [:]
var controls: [(String, Float)] = []
var arguments = CommandLine.arguments.dropFirst()
while let flag = arguments.popFirst() {
    guard flag.hasPrefix("--"), let value = arguments.popFirst() else { fail("usage: see the comment in Sources/hear-host/main.swift") }
    if flag == "--control" {
        let parts = value.split(separator: "=", maxSplits: 1)
        guard parts.count == 2, let number = Float(parts[1]) else { fail("bad --control \(value)") }
        controls.append((String(parts[0]), number))
    } else {
        options[String(flag.dropFirst(2))] = value
    }
}
// Client mode, for the test that runs a client as another user: send one line, print the replies.
if let socketPath = options["connect"] {
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &address.sun_path) { raw in for (i, byte) in socketPath.utf8.enumerated() { raw[i] = byte } }
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
    }
    guard connected == 0 else { fail("connect \(socketPath): \(String(cString: strerror(errno)))") }
    var time = timeval(tv_sec: 5, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
    let line = Array(((options["send"] ?? "ping") + "\n").utf8)
    _ = line.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    var received: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 4096)
    while true {
        let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if count <= 0 { break }
        received += chunk[0..<count]
    }
    print(String(decoding: received, as: UTF8.self), terminator: "")
    exit(0)
}

// A directory entry placed so that its name ends exactly where an unmapped page begins: reading
// d_name past its NUL (as a copy of the whole 256-byte field does) faults.
if options["dirent-probe"] != nil {
    let page = Int(sysconf(Int32(_SC_PAGESIZE)))
    guard let memory = mmap(nil, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), memory != MAP_FAILED else { fail("mmap") }
    mprotect(memory + page, page, PROT_NONE)
    let offset = MemoryLayout<dirent>.offset(of: \dirent.d_name)!
    let name = Array("probe".utf8) + [0]
    let entry = memory + page - ((offset + name.count + 7) / 8 * 8)
    let nameStart = entry + offset
    for (index, byte) in name.enumerated() { nameStart.storeBytes(of: byte, toByteOffset: index, as: UInt8.self) }
    // The name's NUL is the last byte before the guard page when the padding is zero.
    let end = nameStart + name.count
    let entryName = Syscall.entryName(entry.assumingMemoryBound(to: dirent.self))
    print("name=\(entryName) bytes_to_guard=\(memory + page - end)")
    exit(entryName == "probe" ? 0 : 1)
}
if let directory = options["list"] {
    do {
        let names = try Syscall.list(directory)
        print("entries=\(names.count) bytes=\(names.reduce(0) { $0 + $1.utf8.count })")
        exit(0)
    } catch {
        fail("\(error)")
    }
}
// Load/unload cycles: the heap in use after 10 cycles and after N must not differ.
if let cycleText = options["cycles"] {
    guard let pluginPath = options["plugin"], let cycles = Int(cycleText), cycles > 10 else { fail("--cycles N (> 10) needs --plugin") }
    let buffers = UnsafeMutablePointer<Float>.allocate(capacity: 4 * 256)
    buffers.initialize(repeating: 0, count: 4 * 256)
    let controls = UnsafeMutablePointer<Float>.allocate(capacity: 512)
    controls.initialize(repeating: 0, count: 512)
    var heapAfter10: UInt = 0
    for count in 1...cycles {
        let library: LADSPALibrary
        do { library = try LADSPALibrary(path: pluginPath) } catch { fail("\(error)") }
        for index in 0..<min(2, library.count) {
            let descriptor = library.descriptor(at: index)
            guard let handle = descriptor.pointee.instantiate(descriptor, 48000) else { fail("instantiate") }
            var audio = 0
            for port in 0..<Int(descriptor.pointee.PortCount) {
                let kind = descriptor.pointee.PortDescriptors[port]
                if kind & LADSPA_PORT_CONTROL != 0 {
                    descriptor.pointee.connect_port(handle, UInt(port), controls + min(port, 511))
                } else {
                    descriptor.pointee.connect_port(handle, UInt(port), buffers + 256 * min(audio, 3))
                    audio += 1
                }
            }
            descriptor.pointee.activate?(handle)
            descriptor.pointee.run(handle, 256)
            descriptor.pointee.cleanup(handle)
        }
        library.close()
        if count == 10 { heapAfter10 = hear_heap_in_use() }
    }
    print("cycles n=\(cycles) heap_after_10=\(heapAfter10) heap_after_n=\(hear_heap_in_use())")
    exit(0)
}

guard let pluginPath = options["plugin"], let outPath = options["out"] else { fail("--plugin and --out are required") }
let label = options["label"] ?? "hear_mono"
let rate = Int(options["rate"] ?? "48000")!
let block = Int(options["block"] ?? "256")!
let frequency = Double(options["frequency"] ?? "1000")!
let amplitude = Float(options["amplitude"] ?? "0.02")!
let seconds = Double(options["seconds"] ?? "60")!
let chain = Float(options["chain"] ?? "0")!
let instanceCount = max(1, Int(options["instances"] ?? "1")!)

let descriptor: UnsafePointer<LADSPA_Descriptor>
do { descriptor = try LADSPALibrary(path: pluginPath).descriptor(label) } catch { fail("\(error)") }
// A real-time host may call instantiate from a SCHED_FIFO thread; the plugin's threads must not inherit that.
let fifoInstantiate = options["fifo-instantiate"] != nil
if fifoInstantiate {
    var parameters = sched_param(sched_priority: 10)
    let result = pthread_setschedparam(pthread_self(), SCHED_FIFO, &parameters)
    if result != 0 { fail("SCHED_FIFO: \(String(cString: strerror(result)))") }
}
guard let handle = descriptor.pointee.instantiate(descriptor, UInt(rate)) else { fail("instantiate failed") }

// Ports: controls at their LADSPA defaults (as a host derives them), then --chain and --control.
let portCount = Int(descriptor.pointee.PortCount)
let controlValues = UnsafeMutablePointer<Float>.allocate(capacity: portCount)
controlValues.initialize(repeating: 0, count: portCount)
var inputs: [UnsafeMutablePointer<Float>] = []
var outputs: [UnsafeMutablePointer<Float>] = []
for port in 0..<portCount {
    let kind = descriptor.pointee.PortDescriptors[port]
    let name = String(cString: descriptor.pointee.PortNames[port]!)
    if kind & LADSPA_PORT_CONTROL != 0 {
        controlValues[port] = ladspaDefault(descriptor.pointee.PortRangeHints[port], rate: rate)
        if name == "chain" { controlValues[port] = chain }
        for (key, value) in controls where key == name { controlValues[port] = value }
        descriptor.pointee.connect_port(handle, UInt(port), controlValues + port)
    } else {
        let buffer = UnsafeMutablePointer<Float>.allocate(capacity: block)
        buffer.initialize(repeating: 0, count: block)
        descriptor.pointee.connect_port(handle, UInt(port), buffer)
        if kind & LADSPA_PORT_INPUT != 0 { inputs.append(buffer) } else { outputs.append(buffer) }
    }
}
descriptor.pointee.activate?(handle)
if fifoInstantiate {
    var parameters = sched_param(sched_priority: 0)
    _ = pthread_setschedparam(pthread_self(), SCHED_OTHER, &parameters)
}

// Further instances of the same chain: same controls and input, outputs of their own.
var extraHandles: [LADSPA_Handle] = []
var extraOutputs: [UnsafeMutablePointer<Float>] = []
for _ in 1..<instanceCount {
    guard let extra = descriptor.pointee.instantiate(descriptor, UInt(rate)) else { fail("instantiate failed") }
    var nextInput = 0
    for port in 0..<portCount {
        let kind = descriptor.pointee.PortDescriptors[port]
        if kind & LADSPA_PORT_CONTROL != 0 {
            descriptor.pointee.connect_port(extra, UInt(port), controlValues + port)
        } else if kind & LADSPA_PORT_INPUT != 0 {
            descriptor.pointee.connect_port(extra, UInt(port), inputs[nextInput])
            nextInput += 1
        } else {
            let buffer = UnsafeMutablePointer<Float>.allocate(capacity: block)
            buffer.initialize(repeating: 0, count: block)
            descriptor.pointee.connect_port(extra, UInt(port), buffer)
            extraOutputs.append(buffer)
        }
    }
    descriptor.pointee.activate?(extra)
    extraHandles.append(extra)
}

_ = stopRequested.load(ordering: .relaxed)  // initialized before any handler can run
_ = paused.load(ordering: .relaxed)
signal(SIGTERM) { _ in stopRequested.store(true, ordering: .relaxed) }
signal(SIGINT) { _ in stopRequested.store(true, ordering: .relaxed) }
signal(SIGUSR1) { _ in _ = paused.logicalXor(true, ordering: .relaxed) }
// A parent that spawned us from a thread with signals blocked (Dispatch workers do) passes its mask on.
var signals = sigset_t()
sigemptyset(&signals)
sigaddset(&signals, SIGTERM)
sigaddset(&signals, SIGINT)
sigaddset(&signals, SIGUSR1)
pthread_sigmask(SIG_UNBLOCK, &signals, nil)


struct AudioResult { var blocks = 0; var allocations = 0; var nonFinite = 0; var late = 0 }

/// The audio thread's world: everything it touches is allocated before it starts.
final class AudioThread: @unchecked Sendable {
    let descriptor: UnsafePointer<LADSPA_Descriptor>
    let handle: LADSPA_Handle
    let inputs: [UnsafeMutablePointer<Float>]
    let outputs: [UnsafeMutablePointer<Float>]
    let extraHandles: [LADSPA_Handle]
    let extraOutputs: [UnsafeMutablePointer<Float>]
    let recording: UnsafeMutablePointer<Float>
    let blockTimes: UnsafeMutablePointer<Double>
    let maximumBlocks: Int
    let block: Int
    let rate: Int
    let frequency: Double
    let amplitude: Float
    let readyLine = Array("ready \(getpid())\n".utf8)
    var result = AudioResult()

    init(descriptor: UnsafePointer<LADSPA_Descriptor>, handle: LADSPA_Handle, inputs: [UnsafeMutablePointer<Float>],
         outputs: [UnsafeMutablePointer<Float>], extraHandles: [LADSPA_Handle], extraOutputs: [UnsafeMutablePointer<Float>],
         seconds: Double, block: Int, rate: Int, frequency: Double, amplitude: Float) {
        self.extraHandles = extraHandles
        self.extraOutputs = extraOutputs
        self.descriptor = descriptor
        self.handle = handle
        self.inputs = inputs
        self.outputs = outputs
        self.block = block
        self.rate = rate
        self.frequency = frequency
        self.amplitude = amplitude
        maximumBlocks = Int(seconds * Double(rate) / Double(block)) + 1
        recording = .allocate(capacity: maximumBlocks * block)
        blockTimes = .allocate(capacity: maximumBlocks)
    }

    func run() {
        var phase = 0.0
        let step = 2 * Double.pi * frequency / Double(rate)
        let period = Double(block) / Double(rate)
        var deadline = now()
        var result = AudioResult()
        hear_malloc_counter_begin()
        while !stopRequested.load(ordering: .relaxed) && result.blocks < maximumBlocks {
            let start = now()
            blockTimes[result.blocks] = start
            for i in 0..<block {
                let sample = amplitude * Float(sin(phase))
                for input in inputs { input[i] = sample }
                phase += step
                if phase > 2 * Double.pi { phase -= 2 * Double.pi }
            }
            if !paused.load(ordering: .relaxed) {
                descriptor.pointee.run(handle, UInt(block))
                for extra in extraHandles { descriptor.pointee.run(extra, UInt(block)) }
            }
            let target = recording + result.blocks * block
            for i in 0..<block {
                let sample = outputs[0][i]
                if !sample.isFinite { result.nonFinite += 1 }
                target[i] = sample
            }
            for output in outputs.dropFirst() { for i in 0..<block where !output[i].isFinite { result.nonFinite += 1 } }
            for output in extraOutputs { for i in 0..<block where !output[i].isFinite { result.nonFinite += 1 } }
            if result.blocks == 0 { _ = readyLine.withUnsafeBytes { write(1, $0.baseAddress, $0.count) } }
            result.blocks += 1
            deadline += period
            if now() > deadline + period { result.late += 1; deadline = now() }
            var wake = timespec(tv_sec: Int(deadline), tv_nsec: Int((deadline - floor(deadline)) * 1e9))
            while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &wake, nil) == EINTR && !stopRequested.load(ordering: .relaxed) {}
        }
        result.allocations = hear_malloc_counter_end()
        self.result = result
    }
}

// Self-check: the counter sees allocations on this thread (else a zero below would prove nothing).
hear_malloc_counter_begin()
let probe = UnsafeMutableRawPointer.allocate(byteCount: 64, alignment: 16)
let probeCount = hear_malloc_counter_end()
probe.deallocate()
if probeCount < 1 { fail("the malloc counter is not active") }

let audio = AudioThread(descriptor: descriptor, handle: handle, inputs: inputs, outputs: outputs, extraHandles: extraHandles,
                        extraOutputs: extraOutputs, seconds: seconds, block: block,
                        rate: rate, frequency: frequency, amplitude: amplitude)
var thread = pthread_t()
let context = Unmanaged.passRetained(audio).toOpaque()
pthread_create(&thread, nil, { context in
    Unmanaged<AudioThread>.fromOpaque(context!).takeUnretainedValue().run()
    return nil
}, context)
// One more instance, later, on this (the host's main) thread: instantiate and cleanup must not wait
// for anything the control thread does.
if let late = options["late-instance"].flatMap(Double.init) {
    usleep(UInt32(late * 1e6))
    let started = now()
    guard let extra = descriptor.pointee.instantiate(descriptor, UInt(rate)) else { fail("late instantiate failed") }
    let instantiated = now()
    descriptor.pointee.cleanup(extra)
    let cleaned = now()
    let line = "late-instance instantiate_ms=\(Int((instantiated - started) * 1000)) cleanup_ms=\(Int((cleaned - instantiated) * 1000))\n"
    FileHandle.standardError.write(Data(line.utf8))
}
pthread_join(thread, nil)

for extra in extraHandles {
    descriptor.pointee.deactivate?(extra)
    descriptor.pointee.cleanup(extra)
}
descriptor.pointee.deactivate?(handle)
descriptor.pointee.cleanup(handle)

let result = audio.result
var data = Data()
data.append(UnsafeBufferPointer(start: audio.recording, count: result.blocks * block))
data.append(UnsafeBufferPointer(start: audio.blockTimes, count: result.blocks))
do { try Syscall.writeOutput(outPath, bytes: [UInt8](data)) } catch { fail("cannot write \(outPath): \(error)") }
print("done blocks=\(result.blocks) frames=\(result.blocks * block) allocations=\(result.allocations) nonfinite=\(result.nonFinite) late=\(result.late)")
