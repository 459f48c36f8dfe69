// hear-host bench: runs one LADSPA plugin offline over a signal held in memory, as fast as it goes,
// and times its run() calls alone. scripts/bench.sh (make bench) and training/hear_training
// (make eval) drive it; any LADSPA plugin loads, so Debian's reference plugins are timed by the
// same host as hear.
//
//   hear-host bench [-b block] [-s seconds] [-r rate] [-i in.f32] [-o out.f32] [-I] [-e label [-E far.f32]] plugin.so label [port=value ...]
//     -b N     frames per run() call (256); 0: random sizes 1...4096 from a fixed seed (block-size invariance)
//     -s S     seconds of the built-in test signal (60)
//     -r RATE  sample rate (48000)
//     -i FILE  raw float32 mono input instead of the built-in signal (-s is then ignored); every input port gets it
//     -o FILE  the first output port, raw float32
//     -I       in place: each output port shares the buffer of the input port of the same rank
//     -e LABEL a second instance, LABEL of the same library with its `chain` port at 2 (hear's speaker
//              chain), fed the same signal and run untimed before each timed call: the timed
//              instance, at `chain=1`, then cancels its echo (hear's reference tap)
//     -E FILE  raw float32 mono input for the -e instance instead of the timed instance's signal (the far
//              end of a call, when the timed instance's input is a microphone that hears it); silence after its end
//     port=value  a control port by name or by index; the others start at their LADSPA hint defaults
//
// Output control ports (latency) go to stderr as `out NAME=VALUE`; the result goes to stdout as one line:
//   NAME ch=C block=B rate=R: 12.34 ns/sample/ch, 1234x realtime (0.081% of a core)
// ns/sample/ch is the time inside run() divided by the frames and by the channels (the larger of
// the input and output audio port counts).
//
// No Foundation in this file: the timed loop calls run() and clock_gettime, nothing else.

import CLADSPA
import LADSPALoader
import Glibc

/// The default a host gives a control port from its range hint (the LADSPA header's rules:
/// low/middle/high are a quarter, half and three quarters of the range, geometric on a logarithmic one).
func ladspaDefault(_ hint: LADSPA_PortRangeHint, rate: Int) -> Float {
    let descriptor = hint.HintDescriptor
    let scale: Float = descriptor & LADSPA_HINT_SAMPLE_RATE != 0 ? Float(rate) : 1
    let lower = hint.LowerBound * scale, upper = hint.UpperBound * scale
    let logarithmic = descriptor & LADSPA_HINT_LOGARITHMIC != 0 && lower > 0 && upper > 0
    func between(_ weight: Float) -> Float {
        logarithmic ? expf(logf(lower) * (1 - weight) + logf(upper) * weight) : lower * (1 - weight) + upper * weight
    }
    switch descriptor & LADSPA_HINT_DEFAULT_MASK {
    case LADSPA_HINT_DEFAULT_MINIMUM: return lower
    case LADSPA_HINT_DEFAULT_LOW: return between(0.25)
    case LADSPA_HINT_DEFAULT_MIDDLE: return between(0.5)
    case LADSPA_HINT_DEFAULT_HIGH: return between(0.75)
    case LADSPA_HINT_DEFAULT_MAXIMUM: return upper
    case LADSPA_HINT_DEFAULT_0: return 0
    case LADSPA_HINT_DEFAULT_1: return 1
    case LADSPA_HINT_DEFAULT_100: return 100
    case LADSPA_HINT_DEFAULT_440: return 440
    default: return descriptor & LADSPA_HINT_BOUNDED_BELOW != 0 ? lower : 0
    }
}

/// CLOCK_MONOTONIC in nanoseconds.
@inline(__always) func monotonicNanoseconds() -> UInt64 {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec)
}

/// `value` with `digits` decimals (no Foundation here for String(format:)).
func decimal(_ value: Double, _ digits: Int) -> String {
    guard value.isFinite else { return "\(value)" }
    var scale = 1.0
    for _ in 0..<digits { scale *= 10 }
    let scaled = (abs(value) * scale).rounded()
    let whole = (scaled / scale).rounded(.down)
    let sign = value < 0 && scaled > 0 ? "-" : ""
    guard digits > 0 else { return sign + String(Int(whole)) }
    let fraction = String(Int(scaled - whole * scale))
    return sign + String(Int(whole)) + "." + String(repeating: "0", count: digits - fraction.count) + fraction
}

/// The built-in signal: a speech-like voice over noise, the same on every run. Glottal pulses at
/// 130 Hz, with a slow vibrato, through two formant resonators (650 and 1,700 Hz), in syllables of
/// a quarter second with short pauses between them, over a low rumble and a little white noise
/// that never stops (what a noise suppressor and a compressor meet on a microphone).
func builtInSignal(frames: Int, rate: Int) -> UnsafeMutablePointer<Float> {
    let signal = UnsafeMutablePointer<Float>.allocate(capacity: max(frames, 1))
    let sampleRate = Double(rate)
    /// A two-pole resonator at `frequency` with bandwidth `bandwidth`, unity gain at its peak (about).
    struct Resonator {
        let a1: Double, a2: Double, gain: Double
        var y1 = 0.0, y2 = 0.0
        init(frequency: Double, bandwidth: Double, rate: Double) {
            let radius = exp(-Double.pi * bandwidth / rate)
            a1 = 2 * radius * cos(2 * Double.pi * min(frequency, 0.45 * rate) / rate)
            a2 = -radius * radius
            gain = 1 - radius
        }
        mutating func step(_ x: Double) -> Double {
            let y = gain * x + a1 * y1 + a2 * y2
            y2 = y1
            y1 = y
            return y
        }
    }
    var first = Resonator(frequency: 650, bandwidth: 90, rate: sampleRate)
    var second = Resonator(frequency: 1700, bandwidth: 120, rate: sampleRate)
    var random: UInt64 = 0x9E37_79B9_7F4A_7C15
    var rumble = 0.0, pitchPhase = 0.0
    for index in 0..<frames {
        let time = Double(index) / sampleRate
        // xorshift64*: white noise in [-1, 1).
        random ^= random >> 12
        random ^= random << 25
        random ^= random >> 27
        let white = Double((random &* 0x2545_F491_4F6C_DD1D) >> 11) / Double(1 << 52) - 1
        rumble = 0.995 * rumble + 0.05 * white
        let pitch = 130 * (1 + 0.05 * sin(2 * Double.pi * 5 * time))
        pitchPhase += pitch / sampleRate
        var pulse = 0.0
        if pitchPhase >= 1 {
            pitchPhase -= 1
            pulse = 1
        }
        let voiced = first.step(pulse) + 0.6 * second.step(pulse)
        // Syllables: 0.25 s of voice, then 0.08 s of pause.
        let syllable = time.truncatingRemainder(dividingBy: 0.33)
        let envelope = syllable < 0.25 ? sin(Double.pi * syllable / 0.25) : 0
        signal[index] = Float(2.5 * envelope * voiced + 0.02 * rumble + 0.004 * white)
    }
    return signal
}

func benchUsage() -> Never {
    fail("usage: hear-host bench [-b block] [-s seconds] [-r rate] [-i in.f32] [-o out.f32] [-I] [-e label [-E far.f32]] plugin.so label [port=value ...]")
}

func runBench(_ arguments: [String]) -> Never {
    var block = 256, rate = 48000, seconds = 60.0
    var inputPath: String?, outputPath: String?, speakerLabel: String?, speakerInputPath: String?
    var inPlace = false
    var rest = arguments[...]
    while let flag = rest.first, flag.hasPrefix("-") {
        rest.removeFirst()
        if flag == "-I" { inPlace = true; continue }
        guard let value = rest.popFirst() else { benchUsage() }
        switch flag {
        case "-b": guard let number = Int(value), number >= 0 else { fail("bad block \(value)") }; block = number
        case "-s": guard let number = Double(value), number >= 0 else { fail("bad seconds \(value)") }; seconds = number
        case "-r": guard let number = Int(value), number > 0 else { fail("bad rate \(value)") }; rate = number
        case "-i": inputPath = value
        case "-o": outputPath = value
        case "-e": speakerLabel = value
        case "-E": speakerInputPath = value
        default: benchUsage()
        }
    }
    guard rest.count >= 2 else { benchUsage() }
    if speakerInputPath != nil && speakerLabel == nil { fail("-E gives the -e instance its input: it needs -e label") }
    let pluginPath = rest.removeFirst(), label = rest.removeFirst()

    let found: UnsafePointer<LADSPA_Descriptor>
    do { found = try LADSPALibrary(path: pluginPath).descriptor(label) } catch { fail("\(error)") }
    let descriptor = found.pointee
    let portCount = Int(descriptor.PortCount)
    func isControl(_ port: Int) -> Bool { descriptor.PortDescriptors[port] & LADSPA_PORT_CONTROL != 0 }
    func isInput(_ port: Int) -> Bool { descriptor.PortDescriptors[port] & LADSPA_PORT_INPUT != 0 }
    func portName(_ port: Int) -> String { String(cString: descriptor.PortNames[port]!) }

    let controls = UnsafeMutablePointer<Float>.allocate(capacity: max(portCount, 1))
    controls.initialize(repeating: 0, count: max(portCount, 1))
    for port in 0..<portCount where isControl(port) {
        controls[port] = ladspaDefault(descriptor.PortRangeHints[port], rate: rate)
    }
    for setting in rest {
        let parts = setting.split(separator: "=", maxSplits: 1)
        guard parts.count == 2, let value = Float(parts[1]) else { fail("bad control \(setting) (port=value)") }
        let key = String(parts[0])
        let ports = (0..<portCount).filter { portName($0) == key || Int(key) == $0 }
        guard !ports.isEmpty else { fail("\(label) has no port \(key)") }
        for port in ports { controls[port] = value }
    }

    // The signal, whole, before anything is timed.
    var frames: Int
    let signal: UnsafeMutablePointer<Float>
    if let inputPath {
        (signal, frames) = readSamples(inputPath, atLeast: 0)
    } else {
        frames = Int(seconds * Double(rate))
        signal = builtInSignal(frames: frames, rate: rate)
    }
    // The -e instance's own input, as long as the timed one's (silence after its end).
    let speakerSignal = speakerInputPath.map { readSamples($0, atLeast: frames).samples } ?? signal

    let largestBlock = block == 0 ? 4096 : block
    var buffers: [Int: UnsafeMutablePointer<Float>] = [:]
    var inputPorts: [Int] = [], outputPorts: [Int] = []
    for port in 0..<portCount where !isControl(port) {
        if isInput(port) { inputPorts.append(port) } else { outputPorts.append(port) }
    }
    for port in inputPorts + outputPorts {
        let buffer = UnsafeMutablePointer<Float>.allocate(capacity: largestBlock)
        buffer.initialize(repeating: 0, count: largestBlock)
        buffers[port] = buffer
    }
    if inPlace {
        for (rank, port) in outputPorts.enumerated() where rank < inputPorts.count { buffers[port] = buffers[inputPorts[rank]] }
    }
    let inputs = inputPorts.map { buffers[$0]! }
    let firstOutput = outputPorts.first.map { buffers[$0]! }

    guard let handle = descriptor.instantiate(found, UInt(rate)) else { fail("\(label): instantiate failed") }
    for port in 0..<portCount {
        descriptor.connect_port(handle, UInt(port), isControl(port) ? controls + port : buffers[port]!)
    }
    descriptor.activate?(handle)

    var outputFile: UnsafeMutablePointer<FILE>?
    if let outputPath {
        guard let file = fopen(outputPath, "wb") else { fail("\(outputPath): \(String(cString: strerror(errno)))") }
        outputFile = file
    }
    let speaker = speakerLabel.map { startSpeaker(pluginPath: pluginPath, label: $0, rate: rate, largestBlock: largestBlock) }
    let run = descriptor.run!
    let inputCount = inputs.count
    let inputBase = UnsafeMutablePointer<UnsafeMutablePointer<Float>>.allocate(capacity: max(inputCount, 1))
    for (rank, buffer) in inputs.enumerated() { inputBase[rank] = buffer }
    var busy: UInt64 = 0
    var blockSeed: UInt32 = 777
    var position = 0
    while position < frames {
        var wanted = block
        if block == 0 {
            blockSeed = blockSeed &* 1_664_525 &+ 1_013_904_223
            wanted = 1 + Int((blockSeed >> 8) % 4096)
        }
        let count = min(frames - position, wanted)
        for rank in 0..<inputCount { inputBase[rank].update(from: signal + position, count: count) }
        speaker?.run(speakerSignal + position, count)
        let start = monotonicNanoseconds()
        run(handle, UInt(count))
        busy &+= monotonicNanoseconds() &- start
        if let outputFile, let firstOutput { fwrite(firstOutput, MemoryLayout<Float>.size, count, outputFile) }
        position += count
    }
    if let outputFile, fclose(outputFile) != 0 { fail("\(outputPath!): \(String(cString: strerror(errno)))") }

    for port in 0..<portCount where isControl(port) && !isInput(port) {
        let line = Array("out \(portName(port))=\(controls[port])\n".utf8)
        _ = line.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
    }
    descriptor.deactivate?(handle)
    descriptor.cleanup(handle)

    let channels = max(inputPorts.count, outputPorts.count, 1)
    let busySeconds = Double(busy) * 1e-9
    let audioSeconds = Double(frames) / Double(rate)
    let nanoseconds = frames > 0 ? Double(busy) / Double(frames) / Double(channels) : 0
    let name = String(cString: descriptor.Name)
    let padded = name + String(repeating: " ", count: max(0, 40 - name.count))
    print("\(padded) ch=\(channels) block=\(block) rate=\(rate): \(decimal(nanoseconds, 2)) ns/sample/ch, "
          + "\(decimal(audioSeconds / busySeconds, 0))x realtime (\(decimal(100 * busySeconds / audioSeconds, 3))% of a core)")
    exit(0)
}

/// A raw float32 file, zero-padded to at least `atLeast` samples.
func readSamples(_ path: String, atLeast: Int) -> (samples: UnsafeMutablePointer<Float>, count: Int) {
    guard let file = fopen(path, "rb") else { fail("\(path): \(String(cString: strerror(errno)))") }
    fseek(file, 0, SEEK_END)
    let count = ftell(file) / MemoryLayout<Float>.size
    fseek(file, 0, SEEK_SET)
    let samples = UnsafeMutablePointer<Float>.allocate(capacity: max(count, atLeast, 1))
    samples.initialize(repeating: 0, count: max(count, atLeast, 1))
    guard fread(samples, MemoryLayout<Float>.size, count, file) == count else { fail("\(path): short read") }
    fclose(file)
    return (samples, count)
}

/// The untimed speaker chain of `-e`: its inputs get the signal, its outputs go nowhere.
struct Speaker {
    let handle: LADSPA_Handle
    let runCall: @convention(c) (LADSPA_Handle?, UInt) -> Void
    let inputs: [UnsafeMutablePointer<Float>]

    func run(_ samples: UnsafeMutablePointer<Float>, _ count: Int) {
        for buffer in inputs { buffer.update(from: samples, count: count) }
        runCall(handle, UInt(count))
    }
}

func startSpeaker(pluginPath: String, label: String, rate: Int, largestBlock: Int) -> Speaker {
    let found: UnsafePointer<LADSPA_Descriptor>
    do { found = try LADSPALibrary(path: pluginPath).descriptor(label) } catch { fail("\(error)") }
    let descriptor = found.pointee
    let portCount = Int(descriptor.PortCount)
    guard let handle = descriptor.instantiate(found, UInt(rate)) else { fail("\(label): instantiate failed") }
    var inputs: [UnsafeMutablePointer<Float>] = []
    var hasChain = false
    for port in 0..<portCount {
        let kind = descriptor.PortDescriptors[port]
        let buffer = UnsafeMutablePointer<Float>.allocate(capacity: max(largestBlock, 1))
        buffer.initialize(repeating: 0, count: max(largestBlock, 1))
        if kind & LADSPA_PORT_CONTROL != 0 {
            let chain = String(cString: descriptor.PortNames[port]!) == "chain"
            hasChain = hasChain || chain
            buffer[0] = chain ? 2 : ladspaDefault(descriptor.PortRangeHints[port], rate: rate)
        } else if kind & LADSPA_PORT_INPUT != 0 {
            inputs.append(buffer)
        }
        descriptor.connect_port(handle, UInt(port), buffer)
    }
    guard hasChain else { fail("\(label) has no chain port: -e takes one of hear's labels") }
    descriptor.activate?(handle)
    return Speaker(handle: handle, runCall: descriptor.run!, inputs: inputs)
}
