// hearctl meter: live level and gain-reduction bars, redrawn in place several times a second.

import ArgumentParser
import Foundation
import HearControl
import HearDSP

extension Hearctl {
    struct MeterCommand: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "meter",
            abstract: "Show live input/output levels and gain reduction until interrupted (Ctrl-C).",
            discussion: """
                A suspended chain reads as idle until an app uses it. On a terminal the bars are redrawn in \
                place; into a pipe or a file each reading follows the last, without escape codes.
                """)

        @Flag(name: .long, help: "Print one reading and exit.") var once = false
        @Option(name: .long, help: "Seconds between readings.") var interval: Double = 0.2
        @OptionGroup var target: ChainOption
        @OptionGroup var output: JSONOption

        mutating func validate() throws {
            // The server drops clients silent for 10 s.
            guard interval >= 0.05 && interval <= 5 else { throw ValidationError("--interval must be between 0.05 and 5 seconds") }
        }

        func run() throws {
            var drawnLines = 0
            while true {
                // Found again each time while nothing runs: a suspended chain gets an instance when an app uses it.
                let chains = try Chains(target)
                let shown = try chains.reading(target.number)
                let statuses = chains.statuses.filter { shown.contains($0.status.chain) }
                let idle = shown.filter { !chains.isRunning($0) }
                var lines = statuses.flatMap { Self.bars(pid: $0.pid, $0.status) }
                lines += idle.map { "chain \(Chains.describe($0)): idle (suspended: PipeWire starts it when an app uses it)" }
                if output.json {
                    let reading = Reading(instances: statuses.map { Output.Instance(pid: $0.pid, $0.status) },
                                          chains: shown.map { Reading.Chain(chain: $0, name: ChainName.name($0), state: chains.isRunning($0) ? "running" : "suspended") })
                    if once { Output.json(reading) } else { Self.jsonLine(reading) }
                } else if once {
                    print(lines.joined(separator: "\n"))
                } else if Output.isTerminal {
                    // Written unbuffered, cursor moved back up over the previous drawing.
                    var text = drawnLines > 0 ? "\u{1B}[\(drawnLines)A" : ""
                    for line in lines { text += "\u{1B}[2K" + line + "\n" }
                    if lines.count < drawnLines { text += "\u{1B}[J" }
                    FileHandle.standardOutput.write(Data(text.utf8))
                    drawnLines = lines.count
                } else {
                    // A pipe or a file: one reading after another, no escape codes.
                    FileHandle.standardOutput.write(Data((lines.joined(separator: "\n") + "\n\n").utf8))
                }
                if once { return }
                Thread.sleep(forTimeInterval: interval)
            }
        }

        /// One reading in `--json`: one line each while it runs.
        struct Reading: Encodable {
            struct Chain: Encodable {
                let chain: Int
                let name: String
                let state: String
            }

            let instances: [Output.Instance]
            let chains: [Chain]
        }

        static func jsonLine(_ reading: Reading) {
            FileHandle.standardOutput.write(Output.encoded(reading, formatting: [.sortedKeys]) + Data("\n".utf8))
        }

        /// A bar from -60 dBFS to 0 dBFS (levels) or 0 to 24 dB (reductions).
        static func bar(_ value: Float, from low: Float, to high: Float, width: Int = 30) -> String {
            let fraction = value.isFinite ? max(0, min(1, (value - low) / (high - low))) : 0
            let filled = Int((fraction * Float(width)).rounded())
            return "[" + String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled) + "]"
        }

        /// The meters `bars` draws a line of its own for.
        static let drawn: Set<Meter> = [.inputPeak, .inputRMS, .outputPeak, .outputRMS, .compressorReduction,
                                                      .limiterReduction, .noiseFloor, .speechProbability]

        static func bars(pid: Int32, _ status: InstanceStatus) -> [String] {
            let name = "\(status.chainName) \(pid):\(status.id)"
            func level(_ label: String, _ peak: Float, _ rms: Float) -> String {
                "  \(label) \(bar(rms, from: -60, to: 0)) rms \(Output.decibels(rms).leftPad(6)) peak \(Output.decibels(peak).leftPad(6)) dBFS"
            }
            var lines = [name + (status.bypassed ? "  (bypassed)" : "") + (status.running ? "" : "  (idle: the host is not running it)")]
            let meters = status.meters
            lines.append(level("in      ", meters[.inputPeak] ?? -.infinity, meters[.inputRMS] ?? -.infinity))
            lines.append(level("out     ", meters[.outputPeak] ?? -.infinity, meters[.outputRMS] ?? -.infinity))
            let compressor = meters[.compressorReduction] ?? 0, limiter = meters[.limiterReduction] ?? 0
            lines.append("  comp GR  \(bar(compressor, from: 0, to: 24)) \(Output.decibels(compressor).leftPad(6)) dB")
            lines.append("  limit GR \(bar(limiter, from: 0, to: 24)) \(Output.decibels(limiter).leftPad(6)) dB")
            if let floor = meters[.noiseFloor] { lines.append("  noise    \(bar(floor, from: -90, to: -20)) floor \(Output.decibels(floor)) dBFS") }
            if let speech = meters[.speechProbability] { lines.append("  speech   \(bar(speech * 100, from: 0, to: 100)) \(Int(speech * 100))%") }
            // Meters without a line of their own above: their key, and a bar on their unit's scale.
            for (meter, reading) in meters.all where !drawn.contains(meter) {
                guard let reading else { continue }
                let range = meter.spec.unit.barRange
                lines.append("  \(meter.key.padding(toLength: 8, withPad: " ", startingAt: 0)) \(bar(reading, from: range.low, to: range.high)) \(meter.spec.unit.text(reading))")
            }
            return lines
        }
    }
}

extension String {
    func leftPad(_ width: Int) -> String { count >= width ? self : String(repeating: " ", count: width - count) + self }
}
