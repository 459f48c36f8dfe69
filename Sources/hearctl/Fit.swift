// hearctl fit: a hearing profile from an audiogram per ear. The prescription (HearctlCore/Fitting)
// sets the six-band compressor's gains and ratios; what the filter then delivers is measured by
// running tones through the DSP itself, in this process, with every setting the chain has. The
// fit is sent to the chain (which saves it with its settings) and saved as a preset.

import ArgumentParser
import Foundation
import HearctlCore
import HearControl
import HearDSP
import HearSystem

extension FittingRule: ExpressibleByArgument {}

extension Hearctl {
    struct Fit: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Fit the hearing profile to an audiogram per ear and apply it to the speaker chain.",
            discussion: """
                Audiograms are hearing thresholds in dB HL as FREQUENCY:THRESHOLD pairs (125 to 8000 Hz; \
                frequencies left out are interpolated). The rule turns them into gain per band: NAL-R \
                (Byrne & Dillon 1986) or the half-gain rule; compression ratios grow with the loss, and no \
                band gets more than --max-gain. The table shows, per ear, the audiogram, the target gain \
                and the gain the filter delivers, measured by running tones through the DSP with the \
                chain's settings. The fit is applied to the chain (which saves it) and saved as a preset.

                This is not a medical device and not a substitute for hearing aids fitted by an audiologist.

                Examples:
                  hearctl fit --left 250:20,500:25,1000:35,2000:50,4000:60,8000:65 \\
                              --right 250:15,500:20,1000:30,2000:45,4000:55,8000:60
                  hearctl fit --dry-run --rule half-gain --left 500:40,2000:60 --right 500:35
                  hearctl fit --left 500:40,2000:60 --right 500:35 --svg fit.svg --preset mine
                  hearctl fit --from-test             (the estimated thresholds of `hearctl hearing-test`)
                """)

        @Option(name: .long, help: ArgumentHelp("Left ear thresholds, e.g. 250:20,500:25,1000:35,2000:50,4000:60,8000:65.",
                                                valueName: "Hz:dBHL,..."))
        var left: String?
        @Option(name: .long, help: ArgumentHelp("Right ear thresholds (same form).", valueName: "Hz:dBHL,..."))
        var right: String?
        @Flag(name: .customLong("from-test"), help: "Use the estimated thresholds of `hearctl hearing-test` (its saved result, or FILE).")
        var fromTest = false
        @Argument(help: ArgumentHelp("With --from-test: the result file (default: the last test's).", valueName: "file"))
        var testFile: String?
        @Option(name: .long, help: "Prescription rule: NAL-R, or half the loss as gain.")
        var rule: FittingRule = .nalR
        @Option(name: .customLong("max-gain"), help: ArgumentHelp("Most gain any band may get (mb.maxgain), 0 to 40 dB.", valueName: "dB"))
        var maxGain: Double = Double(Parameter.mbMaxGain.spec.defaultValue)
        @Option(name: .long, help: ArgumentHelp("Also write the plot as an SVG file.", valueName: "file"))
        var svg: String?
        @Option(name: .long, help: ArgumentHelp("Save the fitted settings as this user preset.", valueName: "name"),
                completion: Complete.userPresets)
        var preset = "hearing"
        @Flag(name: .customLong("dry-run"), help: "Compute, print and plot the fit for a 48 kHz chain at its defaults; apply and save nothing.")
        var dryRun = false
        @Flag(name: .long, help: "With --from-test: apply a fit from a test whose own answers put it in doubt (a 1 kHz retest more than 5 dB off, or silent presentations answered).")
        var force = false
        @Option(name: .long, help: ArgumentHelp("The chain to fit: a number or a name.", valueName: "chain"),
                completion: Complete.chains)
        var chain = "speaker"
        @Option(name: .long, help: ArgumentHelp("Seconds to wait for each server (exit status 4 when one does not answer).", valueName: "seconds"))
        var timeout: Double = 2
        @OptionGroup var output: JSONOption

        var audiograms: (left: Audiogram, right: Audiogram) {
            get throws {
                if fromTest { return try Self.audiograms(test: try savedTest) }
                func parse(_ text: String?, _ ear: String) throws -> Audiogram {
                    guard let text else { throw ValidationError("--\(ear) is missing: give both ears' thresholds, or --from-test") }
                    do { return try Audiogram(parsing: text) } catch {
                        throw ValidationError("--\(ear): \(error.description)")
                    }
                }
                return (try parse(left, "left"), try parse(right, "right"))
            }
        }

        /// The hearing test's result this fit reads.
        var savedTest: SavedHearingTest {
            get throws {
                guard let path = testFile ?? SavedHearingTest.defaultPath else {
                    throw ValidationError("--from-test: neither XDG_STATE_HOME nor HOME is set; name the result file")
                }
                do { return try SavedHearingTest.read(path) } catch {
                    throw CLIError("--from-test: " + error.description, code: error.code)
                }
            }
        }

        /// Audiograms from a test's estimated dB HL (held in the audiogram's -10...120 range).
        static func audiograms(test: SavedHearingTest) throws -> (left: Audiogram, right: Audiogram) {
            func ear(_ name: String) throws -> Audiogram {
                let points = (test.ears[name] ?? []).compactMap { entry in
                    entry.estimatedHL.map { (entry.frequency, min(max($0.rounded(), -10), 120)) }
                }
                guard !points.isEmpty else { throw ValidationError("--from-test: the test found no threshold for the \(name) ear") }
                do { return try Audiogram(points) } catch {
                    throw ValidationError("--from-test: the \(name) ear's thresholds: \(error.description)")
                }
            }
            return (try ear("left"), try ear("right"))
        }

        mutating func validate() throws {
            if fromTest && (left != nil || right != nil) { throw ValidationError("--from-test takes the thresholds from the test: leave out --left and --right") }
            if !fromTest && testFile != nil { throw ValidationError("'\(testFile!)': a file is read only with --from-test") }
            // The test's result is read once, in run(); given thresholds are checked here.
            if !fromTest { _ = try audiograms }
            let spec = Parameter.mbMaxGain.spec
            guard maxGain.isFinite, maxGain >= Double(spec.minimum), maxGain <= Double(spec.maximum) else {
                throw ValidationError("--max-gain must be between \(Int(spec.minimum)) and \(Int(spec.maximum)) dB, not \(maxGain)")
            }
            guard ChainName.number(chain) != nil else {
                throw ValidationError("--chain takes a number from 0 to \(ChainName.maximum) or a name (default, mic, speaker, chainN), not '\(chain)'")
            }
            try PresetStore.checkName(preset)
        }

        func run() throws {
            // The test's result is read once: its audiograms, and its reliability beside the fit.
            let test = fromTest ? try savedTest : nil
            let (leftAudiogram, rightAudiogram) = try test.map(Self.audiograms) ?? audiograms
            // A doubtful test is fitted only when asked: its thresholds may be a guess.
            let doubts = test?.currentDoubts ?? []
            if !doubts.isEmpty && !dryRun {
                guard force else {
                    throw CLIError("the hearing test's own answers put it in doubt: " + doubts.joined(separator: "; ")
                        + ". Nothing was changed: take the test again (`hearctl hearing-test`), or apply this fit anyway with --force")
                }
                FileHandle.standardError.write(Data("hearctl: warning: fitting a doubtful hearing test (--force): \(doubts.joined(separator: "; "))\n".utf8))
            }
            let chainNumber = ChainName.number(chain) ?? 2
            var values = ParameterValues()
            var rate = 48000.0
            var notices: [String] = []
            var chains: Chains?
            if !dryRun {
                // A running chain, or a suspended one its drop-in configures (the speaker chain right
                // after the test, with nothing playing): fitted as `set` changes it, saved for when it starts.
                let found = try Chains(timeout: timeout)
                guard found.known.contains(chainNumber) else {
                    let known = found.known.map { "\($0) (\(ChainName.name($0))) \(found.state($0))" }
                    throw CLIError("no running hear filter or drop-in has chain \(chainNumber) (\(ChainName.name(chainNumber))); chains: "
                        + (known.isEmpty ? "none" : known.joined(separator: ", ")) + "; pick one with --chain, or use --dry-run",
                        code: ExitStatus.notRunning)
                }
                let status = found.statuses.first { $0.status.chain == chainNumber }?.status
                // A suspended chain runs at the graph's rate when it starts: 48 kHz unless configured otherwise.
                rate = Double(status?.sampleRate ?? 48000)
                let label = status?.label ?? found.configured[chainNumber]?.label ?? "hear_stereo"
                if label == "hear_mono" {
                    notices.append("chain \(chainNumber) runs \(label) (one channel): it gets the left ear's profile")
                }
                for (parameter, value) in try found.values(chainNumber, []) { values[parameter] = value }
                chains = found
            }

            let leftFit = Fitting.fit(leftAudiogram, rule: rule, maxGainDB: maxGain, sampleRate: rate)
            let rightFit = Fitting.fit(rightAudiogram, rule: rule, maxGainDB: maxGain, sampleRate: rate)
            let before = values
            Fitting.apply(left: leftFit, right: rightFit, maxGainDB: maxGain, to: &values)
            notices += Self.changesBeyondTheHearingStage(from: before, to: values, chain: ChainName.name(chainNumber))
            let measured = Delivery.measure(values, rate: rate)
            let ears = [
                Self.ear("left", leftFit, measured.map(\.left), maxGain: maxGain),
                Self.ear("right", rightFit, measured.map(\.right), maxGain: maxGain),
            ]
            var warnings: [String] = []
            for ear in ears {
                let capped = zip(Audiogram.frequencies, ear.prescribed).filter { $0.1 > maxGain }.map { FitPlot.hertz($0.0) }
                if !capped.isEmpty {
                    warnings.append("the \(ear.name) ear's prescription hits the gain cap of \(Fitting.format(maxGain)) dB at "
                        + capped.joined(separator: ", ") + " Hz: those frequencies get less gain than the rule asks")
                }
                let short = zip(Audiogram.frequencies, zip(ear.targets, ear.delivered)).filter { _, pair in
                    pair.1.map { $0 < pair.0 - 2 } ?? false
                }
                if !short.isEmpty {
                    // The cap is the reason only where a band's target comes near it.
                    let nearCap = short.contains { _, pair in pair.0 >= maxGain - 3 }
                    warnings.append("the \(ear.name) ear gets more than 2 dB less than its target at "
                        + short.map { FitPlot.hertz($0.0) }.joined(separator: ", ")
                        + (nearCap ? " Hz (the cap counts the gain the EQ, compressor makeup and output gain add too)"
                                   : " Hz: the bands overlap, so a change this steep between octaves cannot be followed exactly"))
                }
                let over = Audiogram.frequencies.indices.filter { index in
                    ear.delivered[index].map { $0 > ear.targets[index] + 2 } ?? false
                }
                if !over.isEmpty {
                    warnings.append(Self.overshootWarning(ear, at: over, values: values, rate: rate,
                                                          chain: ChainName.name(chainNumber)))
                }
            }

            var applied = false, presetPath: String?
            if let chains {
                let assignments = Self.fitAssignments(values)
                var saving: SettingsFile.Changes = [:]
                for assignment in assignments { saving[assignment.parameter] = .some(assignment.value) }
                let result = try chains.change(chainNumber, request: .set(chain: chainNumber, assignments: assignments),
                                               saving: saving, show: [])
                notices += result.notices
                if result.state != "running" {
                    notices.append("chain \(chainNumber) (\(ChainName.name(chainNumber))) is suspended: the profile is saved in "
                        + "\(result.saved ?? "its state file") and applied when the chain starts")
                }
                applied = true
                presetPath = try Self.savePreset(preset, values: values, comment: commandLine)
            }
            if let svg {
                let note = test.map { test in
                    "estimated thresholds (hearing-test of \(test.date)); \(test.reliability)"
                        + (test.basis.contains("calibration file") ? "" : "; dB HL by an assumed reference, not a calibration")
                }
                try Syscall.writeOutput(svg, bytes: Array(FitPlot.svg(ears: ears, rule: rule, maxGain: maxGain, note: note).utf8))
            }

            if output.json {
                Output.json(Reply(rule: rule.rawValue, maxGain: maxGain, sampleRate: rate, chain: chainNumber, applied: applied,
                                  preset: presetPath, svg: svg, warnings: warnings, notices: notices,
                                  ears: Dictionary(ears.map { ($0.name, Reply.Ear($0)) }, uniquingKeysWith: { $1 })))
                return
            }
            if let test {
                // The test's thresholds are estimates: say so, and how far to trust them, beside the fit.
                print("audiogram from the hearing test of \(test.date): \(test.basis)")
                print("reliability: " + test.reliability + (doubts.isEmpty ? "" : "; doubts: " + doubts.joined(separator: "; ")))
                print()
            }
            for ear in ears {
                print("\(ear.name.capitalized) ear (\(rule == .nalR ? "NAL-R" : "half-gain rule")\(fromTest ? ", estimated thresholds" : "")):")
                print(FitPlot.table(ear))
                print(FitPlot.bandSettings(ear))
                if ear.fit.bandGainDB.contains(where: { $0 < 0 }) { print(FitPlot.negativeGainNote) }
                print()
                print(FitPlot.chart(ear, maxGain: maxGain))
                print()
            }
            for notice in notices { print("notice: \(notice)") }
            for warning in warnings { FileHandle.standardError.write(Data("hearctl: warning: \(warning)\n".utf8)) }
            if applied {
                print("applied to chain \(chainNumber) (\(ChainName.name(chainNumber))) and saved with its settings; preset saved: \(presetPath ?? "-")")
            } else {
                print("dry run: nothing applied or saved")
            }
            if let svg { print("plot written to \(svg)") }
            print("hear is not a medical device; see an audiologist for hearing aids.")
        }

        /// Why the delivered gain overshoots the target at `indices`: the chain's own equalizer or
        /// output gain when the hearing stage alone stays within 2 dB there, else the bands' overlap.
        static func overshootWarning(_ ear: FittedEar, at indices: [Int], values: ParameterValues, rate: Double,
                                     chain: String) -> String {
            let frequencies = indices.map { FitPlot.hertz(Audiogram.frequencies[$0]) }.joined(separator: ", ")
            let lead = "the \(ear.name) ear gets more than 2 dB more than its target at \(frequencies) Hz"
            var alone = values
            alone[.eqEnable] = 0
            alone[.gain] = 0
            let hearingOnly = Delivery.measure(alone, rate: rate).map { ear.name == "left" ? $0.left : $0.right }
            let extra = indices.compactMap { index -> Double? in
                guard let all = ear.delivered[index], let own = hearingOnly[index] else { return nil }
                return all - own
            }.max() ?? 0
            let hearingStageFits = indices.allSatisfy { index in
                hearingOnly[index].map { own in own <= ear.targets[index] + 2 } ?? true
            }
            guard hearingStageFits, extra > 1 else {
                return lead + ": the bands overlap, so a change this steep between octaves cannot be followed exactly"
            }
            var causes: [String] = []
            if values[.eqEnable] != 0 { causes.append("its equalizer (flatten it, or `hearctl set --chain \(chain) eq.enable off`)") }
            if values[.gain] > 0 { causes.append("its output gain of \(Fitting.format(Double(values[.gain]))) dB (`hearctl set --chain \(chain) gain 0`)") }
            return lead + ": the chain's own settings add up to \(Fitting.format(extra.rounded())) dB there, "
                + causes.joined(separator: " and ") + "; the hearing profile alone delivers its target"
        }

        var commandLine: String {
            // The result file by its absolute path: the comment must mean the same from anywhere.
            let source = fromTest ? "--from-test\(testFile.map { " " + URL(fileURLWithPath: $0).standardizedFileURL.path } ?? "")"
                : "--left \(left ?? "") --right \(right ?? "")"
            return "hearing profile: hearctl fit --rule \(rule.rawValue) --max-gain \(Fitting.format(maxGain)) \(source)"
        }

        static func ear(_ name: String, _ fit: EarFit, _ delivered: [Double?], maxGain: Double) -> FittedEar {
            let frequencies = Audiogram.frequencies
            let prescribed = frequencies.map { Fitting.prescribedGain(fit.rule, fit.audiogram, at: $0) }
            return FittedEar(name: name, fit: fit, thresholds: frequencies.map { fit.audiogram.threshold(at: $0) },
                             prescribed: prescribed, targets: prescribed.map { min($0, maxGain) }, delivered: delivered)
        }

        /// What the fit changes outside the hearing stage (mb.*), in words: today the broadband
        /// compressor, which it switches off (the hearing stage compresses per band) and with it the
        /// compressor's makeup gain.
        static func changesBeyondTheHearingStage(from before: ParameterValues, to after: ParameterValues, chain: String) -> [String] {
            var notices: [String] = []
            if before[.compEnable] != 0 && after[.compEnable] == 0 {
                let makeup = before[.compMakeup]
                let gain = makeup != 0 ? ", and with it its makeup gain of \(String(format: "%+.1f", makeup)) dB (sounds below its threshold get that much quieter)" : ""
                notices.append("the fit also switches the broadband compressor off (comp.enable off: the hearing stage compresses per band)\(gain); "
                    + "`hearctl set --chain \(chain) comp.enable on` brings it back")
            }
            if before[.eqEnable] != 0 && after[.eqEnable] == 0 {
                notices.append("the fit also switches the equalizer off (eq.enable off: its boosts would add to the prescribed gain); "
                    + "`hearctl set --chain \(chain) eq.enable on` brings it back, and the delivered gain then differs from the target by the equalizer's curve")
            }
            return notices
        }

        /// What the fit sets: the hearing stage's parameters and the switches of the stages it sets aside.
        static func fitAssignments(_ values: ParameterValues) -> [Assignment] {
            Parameter.allCases.filter { $0.key.hasPrefix("mb.") || $0 == .compEnable || $0 == .eqEnable }.map { Assignment($0, values[$0]) }
        }

        static func savePreset(_ name: String, values: ParameterValues, comment: String) throws -> String {
            guard let directory = PresetStore.directory, let path = PresetStore.path(name) else {
                throw CLIError("neither XDG_CONFIG_HOME nor HOME is set: nowhere to save the preset")
            }
            // At each parameter's precision: a value read back through the socket is a Float
            // (eq.low.freq = 200.00002), and a preset is for people to read.
            let settings = Settings(Parameter.allCases.filter { $0 != .bypass && values[$0] != $0.spec.defaultValue }
                .map { Assignment($0, Float(ParameterValue.rounded(values[$0], for: $0))) })
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            try Syscall.writeFileAtomically(path, directory: directory, bytes: Array(settings.text(comment: comment).utf8), mode: 0o644)
            return path
        }

        /// `fit --json`: the fit per ear, at the audiogram's frequencies and per band.
        struct Reply: Encodable {
            struct Ear: Encodable {
                struct Point: Encodable {
                    let frequency: Double
                    let threshold: Double
                    @Nullable var prescribed: Double?
                    @Nullable var target: Double?
                    /// Nil above the chain's Nyquist frequency.
                    @Nullable var delivered: Double?
                }

                struct Band: Encodable {
                    let centre: Double
                    @Nullable var gain: Double?
                    @Nullable var ratio: Double?
                    let capped: Bool
                }

                let audiogram: [Point]
                let bands: [Band]

                init(_ ear: FittedEar) {
                    audiogram = Audiogram.frequencies.indices.map { index in
                        Point(frequency: Audiogram.frequencies[index], threshold: ear.thresholds[index], prescribed: ear.prescribed[index],
                              target: ear.targets[index], delivered: ear.delivered[index])
                    }
                    bands = (0..<Fitting.bandCount).map { band in
                        Band(centre: Fitting.bandCentres[band], gain: ear.fit.bandGainDB[band], ratio: ear.fit.ratio[band],
                             capped: ear.fit.capped[band])
                    }
                }
            }

            let rule: String
            let maxGain: Double
            let sampleRate: Double
            let chain: Int
            let applied: Bool
            @Nullable var preset: String?
            @Nullable var svg: String?
            let warnings: [String]
            let notices: [String]
            let ears: [String: Ear]
        }
    }
}
