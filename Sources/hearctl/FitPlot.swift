// The fit as a table, a terminal chart and an SVG: per ear, the audiogram (hearing threshold,
// dB HL), the target gain and the gain the filter delivers, over 250-8000 Hz on a log axis.

import Foundation
import HearctlCore
import HearControl
import HearDSP

enum FitPlot {
    static func hertz(_ frequency: Double) -> String {
        frequency >= 1000 ? (frequency.truncatingRemainder(dividingBy: 1000) == 0 ? "\(Int(frequency / 1000))k"
                                                                                  : String(format: "%.1fk", frequency / 1000))
                          : "\(Int(frequency))"
    }

    static func decibels(_ value: Double?) -> String {
        guard let value else { return "-" }
        let rounded = (value * 10).rounded() / 10
        return String(format: "%.1f", rounded == 0 ? 0 : rounded)  // never "-0.0"
    }

    static func table(_ ear: FittedEar) -> String {
        var rows = [["Hz", "THRESHOLD dB HL", "RULE dB", "TARGET dB", "DELIVERED dB", "NOTE"]]
        for index in Audiogram.frequencies.indices {
            var notes: [String] = []
            if !measured(ear, Audiogram.frequencies[index]) { notes.append("interpolated") }
            if ear.prescribed[index] > ear.targets[index] { notes.append("capped") }
            rows.append([hertz(Audiogram.frequencies[index]), decibels(ear.thresholds[index]),
                         decibels(ear.prescribed[index]), decibels(ear.targets[index]), decibels(ear.delivered[index]),
                         notes.joined(separator: ", ")])
        }
        return Output.table(rows)
    }

    /// Whether the audiogram gave this frequency (else its threshold is interpolated).
    static func measured(_ ear: FittedEar, _ frequency: Double) -> Bool {
        ear.fit.audiogram.points.contains { $0.frequency == frequency }
    }

    /// Why a band may be set below 0 dB although the fit never turns a frequency down.
    static let negativeGainNote = "a band below 0 dB does not turn those sounds down: the bands overlap, and it offsets "
        + "the gain its neighbours spill into it (DELIVERED is what you get)"

    /// The settings the fit gives the six bands: gain below the kneepoint and ratio above it.
    static func bandSettings(_ ear: FittedEar) -> String {
        let side = ear.name
        return "bands (mb.\(side).gainN, mb.\(side).ratioN): " + (0..<Fitting.bandCount).map { band in
            "\(hertz(Fitting.bandCentres[band])) \(String(format: "%+.1f", ear.fit.bandGainDB[band])) dB "
                + String(format: "%.2g:1", ear.fit.ratio[band])
        }.joined(separator: ", ")
    }

    /// Where `frequency` falls across 250-8000 Hz, 0 to 1 (log scale).
    static func position(_ frequency: Double) -> Double { log2(frequency / 250) / 5 }

    /// A series at any frequency: linear in log frequency between the audiogram frequencies.
    static func interpolate(_ values: [Double?], at frequency: Double) -> Double? {
        let frequencies = Audiogram.frequencies
        for index in 0..<(frequencies.count - 1) where frequency <= frequencies[index + 1] {
            guard let a = values[index], let b = values[index + 1] else { return nil }
            let t = max(0, log2(frequency / frequencies[index]) / log2(frequencies[index + 1] / frequencies[index]))
            return a + t * (b - a)
        }
        return values.last ?? nil
    }

    /// Top of the gain axis: the largest gain, rounded up to 10 dB, at least 40.
    static func top(_ ear: FittedEar, maxGain: Double) -> Double {
        let largest = (ear.targets + ear.delivered.compactMap { $0 } + [maxGain, 40]).max() ?? 40
        return (largest / 10).rounded(.up) * 10
    }

    /// The audiogram's range, the clinical way: from -10 or 0 dB HL (top) down to the deepest
    /// threshold rounded to 10 dB, at least 60 (bottom).
    static func hearingLevels(_ ear: FittedEar) -> (top: Double, bottom: Double) {
        let best = ear.thresholds.min() ?? 0, worst = ear.thresholds.max() ?? 0
        return (best < 0 ? -10 : 0, max(60, (worst / 10).rounded(.up) * 10))
    }

    /// The audiogram mark of an ear, as audiologists draw it: ○ right, × left.
    static func mark(_ ear: FittedEar) -> Character { ear.name == "left" ? "×" : "○" }

    /// Two terminal charts over 250-8000 Hz. The audiogram as audiologists draw it: 0 dB HL at
    /// the top and hearing loss downward, ○ for the right ear and × for the left. Below it the
    /// gain: - target, * delivered (measured), 0 dB at the bottom.
    static func chart(_ ear: FittedEar, maxGain: Double, width: Int = 61) -> String {
        func column(_ f: Double) -> Int { Int((position(f) * Double(width - 1)).rounded()) }
        func frequency(_ column: Int) -> Double { 250 * pow(2, 5 * Double(column) / Double(width - 1)) }
        /// A panel from `first` (top line) to `last` (bottom line), `height` lines.
        func panel(first: Double, last: Double, height: Int, unit: String,
                   draw: (_ line: (Double) -> Int, _ grid: inout [[Character]]) -> Void) -> [String] {
            var grid = [[Character]](repeating: [Character](repeating: " ", count: width), count: height)
            func line(_ value: Double) -> Int {
                let t = (value - first) / (last - first)
                return min(max(Int((t * Double(height - 1)).rounded()), 0), height - 1)
            }
            draw(line, &grid)
            return grid.enumerated().map { index, row in
                let value = first + (last - first) * Double(index) / Double(height - 1)
                let label = index % 2 == 0 ? String(format: "%4.0f", value) + " \(unit) |" : String(repeating: " ", count: 6 + unit.count) + "|"
                return label + String(row)
            }
        }
        var axis = [Character](repeating: " ", count: width + 4)
        for f in [250.0, 500, 1000, 2000, 4000, 8000] {
            let text = Array(hertz(f))
            let start = min(max(column(f) - text.count / 2, 0), axis.count - text.count)
            for (offset, character) in text.enumerated() { axis[start + offset] = character }
        }
        func frame(_ unit: String) -> [String] {
            let indent = String(repeating: " ", count: 6 + unit.count)
            return [indent + "+" + String(repeating: "-", count: width), indent + " " + String(axis) + " Hz"]
        }

        let levels = hearingLevels(ear), mark = mark(ear)
        let hearingLines = Int((levels.bottom - levels.top) / 10) * 2 + 1
        var lines = ["Audiogram (\(ear.name) ear \(mark), hearing threshold in dB HL; loss downward):"]
        lines += panel(first: levels.top, last: levels.bottom, height: hearingLines, unit: "dB HL") { line, grid in
            for c in 0..<width {
                if let value = interpolate(ear.thresholds.map { $0 }, at: frequency(c)) { grid[line(value)][c] = "." }
            }
            for (index, f) in Audiogram.frequencies.enumerated() where f >= 250 {
                grid[line(ear.thresholds[index])][column(f)] = mark
            }
        }
        lines += frame("dB HL")
        let top = top(ear, maxGain: maxGain)
        lines.append("Gain (- target, * delivered, measured):")
        lines += panel(first: top, last: 0, height: Int(top / 10) * 2 + 1, unit: "dB") { line, grid in
            for c in 0..<width {
                if let value = interpolate(ear.targets.map { $0 }, at: frequency(c)) { grid[line(value)][c] = "-" }
            }
            for c in 0..<width {
                if let value = interpolate(ear.delivered, at: frequency(c)) { grid[line(value)][c] = "*" }
            }
        }
        lines += frame("dB")
        return lines.joined(separator: "\n")
    }

    /// Both ears side by side, as an SVG document: per ear the audiogram (0 dB HL at the top,
    /// ○ right, × left) above the gain chart (target dashed, delivered solid).
    static func svg(ears: [FittedEar], rule: FittingRule, maxGain: Double, note: String? = nil) -> String {
        let panelWidth = 420.0, panelHeight = 220.0, margin = 60.0, gap = 50.0, between = 70.0
        let width = margin + Double(ears.count) * (panelWidth + gap)
        let height = margin + 2 * panelHeight + between + 80
        func number(_ v: Double) -> String { String(format: "%.1f", v) }
        var out = """
            <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height))" \
            viewBox="0 0 \(Int(width)) \(Int(height))" font-family="sans-serif" font-size="12">
            <rect width="100%" height="100%" fill="white"/>
            <text x="\(margin)" y="24" font-size="15">hear: hearing profile, \(rule == .nalR ? "NAL-R" : "half-gain rule"), \
            gain cap \(Fitting.format(maxGain)) dB (not a medical device)</text>

            """
        if let note {
            // Where the thresholds came from (an estimate, with its reliability), along the bottom.
            let escaped = note.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            out += "<text x=\"\(margin)\" y=\"\(Int(height) - 10)\" fill=\"#555\">\(escaped)</text>\n"
        }
        for (index, ear) in ears.enumerated() {
            let x0 = margin + Double(index) * (panelWidth + gap)
            // Inset by half a marker's width, so the 250 Hz and 8 kHz points sit inside the frame.
            let inset = 10.0
            func x(_ f: Double) -> Double { x0 + inset + position(f) * (panelWidth - 2 * inset) }
            /// A framed panel at `y0` whose values run from `first` (top edge) to `last` (bottom edge).
            func axes(y0: Double, first: Double, last: Double, label: String) -> (Double) -> Double {
                let y = { (v: Double) in y0 + panelHeight * (min(max(v, min(first, last)), max(first, last)) - first) / (last - first) }
                out += "<rect x=\"\(number(x0))\" y=\"\(number(y0))\" width=\"\(number(panelWidth))\" height=\"\(number(panelHeight))\" fill=\"none\" stroke=\"#888\"/>\n"
                for f in [250.0, 500, 1000, 2000, 4000, 8000] {
                    out += "<line x1=\"\(number(x(f)))\" y1=\"\(number(y0))\" x2=\"\(number(x(f)))\" y2=\"\(number(y0 + panelHeight))\" stroke=\"#ddd\"/>\n"
                    out += "<text x=\"\(number(x(f)))\" y=\"\(number(y0 + panelHeight + 16))\" text-anchor=\"middle\">\(hertz(f))</text>\n"
                }
                out += "<text x=\"\(number(x0 + panelWidth))\" y=\"\(number(y0 + panelHeight + 30))\" text-anchor=\"end\" fill=\"#555\">frequency (Hz)</text>\n"
                var level = min(first, last)
                while level <= max(first, last) {
                    out += "<line x1=\"\(number(x0))\" y1=\"\(number(y(level)))\" x2=\"\(number(x0 + panelWidth))\" y2=\"\(number(y(level)))\" stroke=\"#eee\"/>\n"
                    out += "<text x=\"\(number(x0 - 6))\" y=\"\(number(y(level) + 4))\" text-anchor=\"end\">\(Int(level))</text>\n"
                    level += 10
                }
                out += "<text x=\"\(number(x0))\" y=\"\(number(y0 - 10))\" font-size=\"13\">\(label)</text>\n"
                return y
            }
            func polyline(_ values: [Double?], _ y: (Double) -> Double, _ style: String) -> String {
                let points = zip(Audiogram.frequencies, values).filter { $0.0 >= 250 }
                    .compactMap { f, v in v.map { "\(number(x(f))),\(number(y($0)))" } }
                return "<polyline points=\"\(points.joined(separator: " "))\" fill=\"none\" \(style)/>\n"
            }
            let color = ear.name == "left" ? "#1f5fbf" : "#c0392b"
            let levels = hearingLevels(ear)
            let hearing = axes(y0: margin, first: levels.top, last: levels.bottom,
                               label: "\(ear.name.capitalized) ear: audiogram (dB HL, \(mark(ear)))")
            out += polyline(ear.thresholds.map { $0 }, hearing, "stroke=\"\(color)\" stroke-width=\"1.5\"")
            // Measured points as the clinic draws them; interpolated ones small and grey, so a
            // reader never takes them for measurements.
            for (f, t) in zip(Audiogram.frequencies, ear.thresholds) where f >= 250 {
                let given = measured(ear, f)
                let ink = given ? color : "#999"
                out += ear.name == "left"
                    ? "<text x=\"\(number(x(f)))\" y=\"\(number(hearing(t) + (given ? 5 : 4)))\" text-anchor=\"middle\" fill=\"\(ink)\" font-size=\"\(given ? 15 : 11)\" class=\"\(given ? "measured" : "interpolated")\">×</text>\n"
                    : "<circle cx=\"\(number(x(f)))\" cy=\"\(number(hearing(t)))\" r=\"\(given ? 5 : 3)\" fill=\"white\" stroke=\"\(ink)\" stroke-width=\"1.5\" class=\"\(given ? "measured" : "interpolated")\"/>\n"
            }
            if Audiogram.frequencies.contains(where: { $0 >= 250 && !measured(ear, $0) }) {
                out += "<text x=\"\(number(x0 + panelWidth))\" y=\"\(number(margin - 10))\" text-anchor=\"end\" fill=\"#999\">small grey marks: interpolated, not measured</text>\n"
            }
            let gainTop = top(ear, maxGain: maxGain)
            let gainY0 = margin + panelHeight + between
            let gain = axes(y0: gainY0, first: gainTop, last: 0, label: "\(ear.name.capitalized) ear: gain (dB)")
            out += polyline(ear.targets.map { $0 }, gain, "stroke=\"#333\" stroke-width=\"1.5\" stroke-dasharray=\"6 4\"")
            out += polyline(ear.delivered, gain, "stroke=\"#2e8b57\" stroke-width=\"2.5\"")
            out += "<text x=\"\(number(x0))\" y=\"\(number(gainY0 + panelHeight + 36))\"><tspan fill=\"#333\">- - target gain</tspan>  "
                + "<tspan fill=\"#2e8b57\">— delivered gain (measured)</tspan></text>\n"
        }
        return out + "</svg>\n"
    }
}
