// hearctl meter: live level and gain-reduction bars, redrawn in place several times a second.

import ArgumentParser
import Foundation
import HearControl

extension Hearctl {
    struct Meter: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show live input/output levels and gain reduction until interrupted (Ctrl-C).")

        @Flag(name: .long, help: "Print one reading and exit.") var once = false
        @Option(name: .long, help: "Seconds between readings.") var interval: Double = 0.2
        @OptionGroup var target: ChainOption
        @OptionGroup var output: JSONOption

        mutating func validate() throws {
            // The server drops clients silent for 10 s.
            guard interval >= 0.05 && interval <= 5 else { throw ValidationError("--interval must be between 0.05 and 5 seconds") }
        }

        func run() throws {
            let target = try Target(target)
            var drawnLines = 0
            while true {
                let statuses = try target.statuses()
                if statuses.isEmpty { throw CLIError("no running instance of \(target.chainDescription)") }
                if output.json {
                    let object: [String: Any] = ["instances": statuses.map { Output.statusObject(pid: $0.pid, $0.status) }]
                    if once { Output.json(object) } else { Self.jsonLine(object) }
                } else if once {
                    print(statuses.flatMap { Self.bars(pid: $0.pid, $0.status) }.joined(separator: "\n"))
                } else {
                    // Written unbuffered, cursor moved back up over the previous drawing.
                    let lines = statuses.flatMap { Self.bars(pid: $0.pid, $0.status) }
                    var text = drawnLines > 0 ? "\u{1B}[\(drawnLines)A" : ""
                    for line in lines { text += "\u{1B}[2K" + line + "\n" }
                    FileHandle.standardOutput.write(Data(text.utf8))
                    drawnLines = lines.count
                }
                if once { return }
                Thread.sleep(forTimeInterval: interval)
            }
        }

        static func jsonLine(_ object: Any) {
            let data = try! JSONSerialization.data(withJSONObject: Output.sanitize(object), options: [.sortedKeys])
            FileHandle.standardOutput.write(data + Data("\n".utf8))
        }

        /// A bar from -60 dBFS to 0 dBFS (levels) or 0 to 24 dB (reductions).
        static func bar(_ value: Float, from low: Float, to high: Float, width: Int = 30) -> String {
            let fraction = value.isFinite ? max(0, min(1, (value - low) / (high - low))) : 0
            let filled = Int((fraction * Float(width)).rounded())
            return "[" + String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled) + "]"
        }

        static func bars(pid: Int32, _ status: InstanceStatus) -> [String] {
            let name = "\(status.chainName) \(pid):\(status.id)"
            func level(_ label: String, _ peak: Float, _ rms: Float) -> String {
                "  \(label) \(bar(rms, from: -60, to: 0)) rms \(Output.decibels(rms).leftPad(6)) peak \(Output.decibels(peak).leftPad(6)) dBFS"
            }
            var lines = [name + (status.bypassed ? "  (bypassed)" : "") + (status.running ? "" : "  (idle: the host is not running it)")]
            lines.append(level("in      ", status.inputPeak, status.inputRMS))
            lines.append(level("out     ", status.outputPeak, status.outputRMS))
            lines.append("  comp GR  \(bar(status.compressorReduction, from: 0, to: 24)) \(Output.decibels(status.compressorReduction).leftPad(6)) dB")
            lines.append("  limit GR \(bar(status.limiterReduction, from: 0, to: 24)) \(Output.decibels(status.limiterReduction).leftPad(6)) dB")
            if let floor = status.noiseFloor { lines.append("  noise    \(bar(floor, from: -90, to: -20)) floor \(Output.decibels(floor)) dBFS") }
            if let speech = status.speechProbability { lines.append("  speech   \(bar(speech * 100, from: 0, to: 100)) \(Int(speech * 100))%") }
            return lines
        }
    }
}

extension String {
    func leftPad(_ width: Int) -> String { count >= width ? self : String(repeating: " ", count: width - count) + self }
}
