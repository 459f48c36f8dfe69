// The fit as a table, a terminal chart and an SVG: per ear, the audiogram (hearing threshold,
// dB HL), the target gain and the gain the filter delivers, over 250-8000 Hz on a log axis.

import Foundation
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
            let capped = ear.prescribed[index] > ear.targets[index] ? "capped" : ""
            rows.append([hertz(Audiogram.frequencies[index]), decibels(ear.thresholds[index]),
                         decibels(ear.prescribed[index]), decibels(ear.targets[index]), decibels(ear.delivered[index]), capped])
        }
        return Output.table(rows)
    }

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

    /// Top of the dB axis: the largest value, rounded up to 10 dB, at least 40.
    static func top(_ ear: FittedEar, maxGain: Double) -> Double {
        let largest = (ear.thresholds + ear.targets + ear.delivered.compactMap { $0 } + [maxGain, 40]).max() ?? 40
        return (largest / 10).rounded(.up) * 10
    }

    /// A terminal chart: x = threshold (dB HL, the audiogram; x marks the left ear, o the right),
    /// - = target gain, * = delivered gain; 0 dB at the bottom.
    static func chart(_ ear: FittedEar, maxGain: Double, width: Int = 61, height: Int = 13) -> String {
        let top = top(ear, maxGain: maxGain)
        var grid = [[Character]](repeating: [Character](repeating: " ", count: width), count: height)
        func row(_ value: Double) -> Int { height - 1 - Int((min(max(value, 0), top) / top * Double(height - 1)).rounded()) }
        func frequency(_ column: Int) -> Double { 250 * pow(2, 5 * Double(column) / Double(width - 1)) }
        let mark: Character = ear.name == "left" ? "x" : "o"
        for column in 0..<width {
            let f = frequency(column)
            if let value = interpolate(ear.thresholds.map { $0 }, at: f) { grid[row(value)][column] = "." }
        }
        for (index, f) in Audiogram.frequencies.enumerated() {
            let column = Int((position(f) * Double(width - 1)).rounded())
            grid[row(ear.thresholds[index])][column] = mark
        }
        for column in 0..<width {
            let f = frequency(column)
            if let value = interpolate(ear.targets.map { $0 }, at: f) { grid[row(value)][column] = "-" }
        }
        for column in 0..<width {
            let f = frequency(column)
            if let value = interpolate(ear.delivered, at: f) { grid[row(value)][column] = "*" }
        }
        var lines: [String] = []
        for (index, line) in grid.enumerated() {
            let value = top * Double(height - 1 - index) / Double(height - 1)
            let label = index % 2 == 0 ? String(format: "%4.0f dB |", value) : "        |"
            lines.append(label + String(line))
        }
        lines.append("        +" + String(repeating: "-", count: width))
        var axis = [Character](repeating: " ", count: width + 4)
        for f in [250.0, 500, 1000, 2000, 4000, 8000] {
            let text = Array(hertz(f)), column = Int((position(f) * Double(width - 1)).rounded())
            let start = min(max(column - text.count / 2, 0), axis.count - text.count)
            for (offset, character) in text.enumerated() { axis[start + offset] = character }
        }
        lines.append("         " + String(axis) + " Hz")
        lines.append("         \(mark) threshold (dB HL)   - target gain (dB)   * delivered gain (dB, measured)")
        return lines.joined(separator: "\n")
    }

    /// The same curves for both ears, side by side, as an SVG document.
    static func svg(ears: [FittedEar], rule: FittingRule, maxGain: Double) -> String {
        let panelWidth = 420.0, panelHeight = 300.0, margin = 50.0, gap = 40.0
        let width = margin + Double(ears.count) * (panelWidth + gap), height = panelHeight + 2 * margin + 40
        var out = """
            <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height))" \
            viewBox="0 0 \(Int(width)) \(Int(height))" font-family="sans-serif" font-size="12">
            <rect width="100%" height="100%" fill="white"/>
            <text x="\(margin)" y="24" font-size="15">hear: hearing profile, \(rule == .nalR ? "NAL-R" : "half-gain rule"), \
            gain cap \(Fitting.format(maxGain)) dB (not a medical device)</text>

            """
        for (panel, ear) in ears.enumerated() {
            let top = top(ear, maxGain: maxGain)
            let x0 = margin + Double(panel) * (panelWidth + gap), y0 = margin
            func x(_ f: Double) -> Double { x0 + position(f) * panelWidth }
            func y(_ value: Double) -> Double { y0 + panelHeight * (1 - min(max(value, 0), top) / top) }
            func number(_ v: Double) -> String { String(format: "%.1f", v) }
            out += "<text x=\"\(number(x0))\" y=\"\(number(y0 - 10))\" font-size=\"13\">\(ear.name.capitalized) ear</text>\n"
            out += "<rect x=\"\(number(x0))\" y=\"\(number(y0))\" width=\"\(number(panelWidth))\" height=\"\(number(panelHeight))\" fill=\"none\" stroke=\"#888\"/>\n"
            for f in [250.0, 500, 1000, 2000, 4000, 8000] {
                out += "<line x1=\"\(number(x(f)))\" y1=\"\(number(y0))\" x2=\"\(number(x(f)))\" y2=\"\(number(y0 + panelHeight))\" stroke=\"#ddd\"/>\n"
                out += "<text x=\"\(number(x(f)))\" y=\"\(number(y0 + panelHeight + 16))\" text-anchor=\"middle\">\(hertz(f))</text>\n"
            }
            var level = 0.0
            while level <= top {
                out += "<line x1=\"\(number(x0))\" y1=\"\(number(y(level)))\" x2=\"\(number(x0 + panelWidth))\" y2=\"\(number(y(level)))\" stroke=\"#eee\"/>\n"
                out += "<text x=\"\(number(x0 - 6))\" y=\"\(number(y(level) + 4))\" text-anchor=\"end\">\(Int(level))</text>\n"
                level += 10
            }
            out += "<text x=\"\(number(x0 + panelWidth / 2))\" y=\"\(number(y0 + panelHeight + 34))\" text-anchor=\"middle\">Hz</text>\n"
            func polyline(_ values: [Double?], _ style: String) -> String {
                let points = zip(Audiogram.frequencies, values).compactMap { f, v in v.map { "\(number(x(f))),\(number(y($0)))" } }
                return "<polyline points=\"\(points.joined(separator: " "))\" fill=\"none\" \(style)/>\n"
            }
            let color = ear.name == "left" ? "#1f5fbf" : "#c0392b"
            out += polyline(ear.thresholds.map { $0 }, "stroke=\"\(color)\" stroke-width=\"1.5\"")
            for (f, t) in zip(Audiogram.frequencies, ear.thresholds) {
                out += ear.name == "left"
                    ? "<text x=\"\(number(x(f)))\" y=\"\(number(y(t) + 4))\" text-anchor=\"middle\" fill=\"\(color)\" font-size=\"13\">×</text>\n"
                    : "<circle cx=\"\(number(x(f)))\" cy=\"\(number(y(t)))\" r=\"4\" fill=\"white\" stroke=\"\(color)\"/>\n"
            }
            out += polyline(ear.targets.map { $0 }, "stroke=\"#333\" stroke-width=\"1.5\" stroke-dasharray=\"6 4\"")
            out += polyline(ear.delivered, "stroke=\"#2e8b57\" stroke-width=\"2.5\"")
            let legendY = y0 + panelHeight + 52
            out += "<text x=\"\(number(x0))\" y=\"\(number(legendY))\"><tspan fill=\"\(color)\">threshold (dB HL)</tspan>  "
                + "<tspan fill=\"#333\">- - target gain (dB)</tspan>  <tspan fill=\"#2e8b57\">— delivered gain (dB, measured)</tspan></text>\n"
        }
        return out + "</svg>\n"
    }
}
