// What `hearctl tune` shows and what its keys do, without a terminal: keys decoded from the bytes
// a terminal sends, the step each key moves a control (from the schema's range, unit and scale),
// and the screen as plain lines that fit the terminal's size. Tune.swift owns the terminal and the
// chain; this file only decides.

import Foundation
import HearctlCore
import HearControl
import HearDSP

/// The controls, the selection, the values last read and the line under the controls.
struct TuneView {
    /// The main controls, top to bottom.
    static let controls: [Parameter] = [
        .bypass, .nsReduction, .nsMode, .gain, .compThreshold, .compRatio,
        .eqLowShelfGain, .eqPeak1Gain, .eqPeak2Gain, .eqPeak3Gain, .eqHighShelfGain,
    ]
    /// With a hearing profile on (`hearctl fit`), the broadband compressor it switched off gives
    /// way to the profile's switch and its ceiling (mb.mpo).
    static let profileControls: [Parameter] = [
        .bypass, .nsReduction, .nsMode, .gain, .mbEnable, .mbMPO,
        .eqLowShelfGain, .eqPeak1Gain, .eqPeak2Gain, .eqPeak3Gain, .eqHighShelfGain,
    ]

    /// The rows shown now: the profile's while one is on.
    var controls: [Parameter] { value(.mbEnable) >= 0.5 ? Self.profileControls : Self.controls }
    /// How many steps a big step (shift, PgUp/PgDn) takes.
    static let bigStep = 10

    var selected = 0
    /// Every parameter's value, as the chain last reported it.
    var values: [Parameter: Float] = [:]
    /// What `r` goes back to, per parameter.
    var configured: [Parameter: Float] = [:]
    /// The preset name being typed after `s`, nil when not asking.
    var prompt: String?
    /// Set when Enter named an existing preset: the next Enter replaces it.
    var confirmReplace = false
    var message = ""

    var control: Parameter { controls[min(selected, controls.count - 1)] }

    func value(_ parameter: Parameter) -> Float { values[parameter] ?? parameter.spec.defaultValue }

    mutating func handle(_ key: TuneKey) -> TuneAction {
        if prompt != nil { return handlePrompt(key) }
        switch key {
        case .interrupt, .escape, .character("q"), .character("Q"): return .quit
        case .up, .character("k"): selected = (selected + controls.count - 1) % controls.count
        case .down, .character("j"), .character("\t"): selected = (selected + 1) % controls.count
        case .home: selected = 0
        case .end: selected = controls.count - 1
        case .left, .character("h"), .character("-"): return change(by: -1)
        case .right, .character("l"), .character("+"), .character("="): return change(by: 1)
        case .bigLeft, .character("H"), .character("_"): return change(by: -Self.bigStep)
        case .bigRight, .character("L"): return change(by: Self.bigStep)
        case .enter, .character(" "):
            if control.spec.scale == .toggle { return .set(control, value(control) >= 0.5 ? 0 : 1) }
        case .character("b"), .character("B"): return .set(.bypass, value(.bypass) >= 0.5 ? 0 : 1)
        case .character("r"), .character("R"): return .reset(control)
        case .character("s"), .character("S"):
            prompt = ""
            confirmReplace = false
            message = ""
        default: break
        }
        return .none
    }

    private mutating func handlePrompt(_ key: TuneKey) -> TuneAction {
        switch key {
        case .escape, .interrupt:
            prompt = nil
            message = "not saved"
        case .backspace:
            if prompt?.isEmpty == false { prompt?.removeLast() }
            confirmReplace = false
        case .enter:
            let name = prompt ?? ""
            guard Preset.isValidName(name) else {
                message = name.isEmpty ? "type a name first (Esc cancels)" : "use letters, digits, '-', '_' and '.'; not starting with '.'"
                return .none
            }
            return .save(name: name, replace: confirmReplace)
        case .character(let character):
            if (prompt?.count ?? 0) < 64 { prompt?.append(character) }
            confirmReplace = false
        default: break
        }
        return .none
    }

    /// The selected control moved by `steps` (negative: down); `.none` with a message at either end.
    private mutating func change(by steps: Int) -> TuneAction {
        let parameter = control
        let current = value(parameter)
        let next = Self.step(current, for: parameter, by: steps)
        guard next != current else {
            message = "\(parameter.key) is at its \(steps < 0 ? "minimum" : "maximum"), \(ParameterValue.describe(current, for: parameter))"
            return .none
        }
        return .set(parameter, next)
    }

    // MARK: steps

    /// A 1, 2 or 5 times a power of ten near `value`.
    static func niceStep(_ value: Float) -> Float {
        guard value > 0, value.isFinite else { return 1 }
        var power: Float = 1
        while value / power >= 10 { power *= 10 }
        while value / power < 1 { power /= 10 }
        let mantissa = value / power
        return (mantissa < 1.5 ? 1 : mantissa < 3.5 ? 2 : mantissa < 7.5 ? 5 : 10) * power
    }

    /// One step of a linear control: a round number near a hundredth of its range (0.5 dB for
    /// every level here, 1 for a percentage).
    static func linearStep(for parameter: Parameter) -> Float {
        niceStep((parameter.spec.maximum - parameter.spec.minimum) / 100)
    }

    /// One step of a logarithmic control (ratios, frequencies, Q): a fiftieth of its range on a log
    /// scale (about 6 % for comp.ratio), landing on two significant digits.
    static func logFactor(for parameter: Parameter) -> Float {
        exp(log(parameter.spec.maximum / parameter.spec.minimum) / 50)
    }

    /// `value` moved by `steps` steps, on the parameter's grid, within its range. A switch goes off
    /// (steps < 0) or on.
    static func step(_ value: Float, for parameter: Parameter, by steps: Int) -> Float {
        let spec = parameter.spec
        let next: Float
        switch spec.scale {
        case .toggle:
            return steps < 0 ? 0 : 1
        case .linear:
            let step = linearStep(for: parameter)
            next = ((value + Float(steps) * step) / step).rounded() * step
        case .logarithmic:
            let moved = max(value, spec.minimum) * pow(logFactor(for: parameter), Float(steps))
            var snapped = significant(moved)
            // The grid must not hold it in place (two digits are coarse just above a power of ten).
            let grid = gridSpacing(moved)
            if steps > 0 && snapped <= value { snapped = significant(value + grid) }
            if steps < 0 && snapped >= value { snapped = significant(value - grid) }
            next = snapped
        }
        let clamped = min(max(next, spec.minimum), spec.maximum)
        return Float(ParameterValue.rounded(clamped, for: parameter))
    }

    static func gridSpacing(_ value: Float) -> Float {
        var power: Float = 1
        while value / power >= 10 { power *= 10 }
        while value / power < 1 && power > 1e-6 { power /= 10 }
        return power / 10
    }

    /// `value` to two significant digits.
    static func significant(_ value: Float) -> Float {
        guard value > 0, value.isFinite else { return value }
        let grid = gridSpacing(value)
        return (value / grid).rounded() * grid
    }

    // MARK: drawing

    /// A control's name on screen; EQ bands name their current frequency.
    func label(_ parameter: Parameter) -> String {
        func band(_ name: String, _ frequency: Parameter) -> String { "EQ \(name) \(Self.hertz(value(frequency)))" }
        switch parameter {
        case .bypass: return "bypass"
        case .nsReduction: return "noise reduction"
        case .nsMode: return "noise model"
        case .gain: return "output gain"
        case .compThreshold: return "comp threshold"
        case .compRatio: return "comp ratio"
        case .mbEnable: return "hearing profile"
        case .mbMPO: return "profile ceiling"
        case .eqLowShelfGain: return band("low", .eqLowShelfFrequency)
        case .eqPeak1Gain: return band("peak1", .eqPeak1Frequency)
        case .eqPeak2Gain: return band("peak2", .eqPeak2Frequency)
        case .eqPeak3Gain: return band("peak3", .eqPeak3Frequency)
        case .eqHighShelfGain: return band("high", .eqHighShelfFrequency)
        default: return parameter.key
        }
    }

    static func hertz(_ value: Float) -> String {
        value >= 1000 ? ParameterValue.format((value / 100).rounded() / 10) + " kHz" : ParameterValue.format(value.rounded()) + " Hz"
    }

    /// A slider `width` characters wide (brackets included). Controls whose range spans 0 fill from
    /// 0 (marked '|'); the others from their minimum. A switch shows its two settings, the current one in brackets.
    func slider(_ parameter: Parameter, width: Int) -> String {
        let spec = parameter.spec
        let current = value(parameter)
        if spec.scale == .toggle {
            let on = current >= 0.5
            let off = spec.switchName(0), onName = spec.switchName(1)
            return on ? " \(off)  [\(onName)]" : "[\(off)]  \(onName) "
        }
        let inner = max(width - 2, 4)
        func position(_ v: Float) -> Int {
            let fraction: Float
            if spec.scale == .logarithmic {
                fraction = log(max(v, spec.minimum) / spec.minimum) / log(spec.maximum / spec.minimum)
            } else {
                fraction = (v - spec.minimum) / (spec.maximum - spec.minimum)
            }
            return Int((min(max(fraction.isFinite ? fraction : 0, 0), 1) * Float(inner - 1)).rounded())
        }
        let knob = position(current)
        let zero = spec.minimum < 0 && spec.maximum > 0 ? position(0) : nil
        let from = min(zero ?? 0, knob), to = max(zero ?? 0, knob)
        var cells = [Character](repeating: "-", count: inner)
        for index in from...to { cells[index] = "=" }
        if let zero { cells[zero] = "|" }
        cells[knob] = "O"
        return "[" + String(cells) + "]"
    }

    /// The selected control: its key, range, step and what `r` returns it to, then its help.
    var detail: String {
        let parameter = control, spec = parameter.spec
        let unit = spec.unit.isEmpty || spec.unit == ":1" ? spec.unit : " " + spec.unit
        let range: String
        let step: String
        switch spec.scale {
        case .toggle:
            range = "\(spec.switchName(0))/\(spec.switchName(1))"
            step = "left/right/Enter switch"
        case .linear:
            range = "\(ParameterValue.text(spec.minimum, for: parameter))..\(ParameterValue.text(spec.maximum, for: parameter))\(unit)"
            let size = Self.linearStep(for: parameter)
            step = "step \(ParameterValue.format(size))\(unit), shift \(ParameterValue.format(size * Float(Self.bigStep)))\(unit)"
        case .logarithmic:
            range = "\(ParameterValue.text(spec.minimum, for: parameter))..\(ParameterValue.text(spec.maximum, for: parameter))\(unit)"
            let percent = Int(((Self.logFactor(for: parameter) - 1) * 100).rounded())
            step = "step about \(percent)%"
        }
        let reset = ParameterValue.describe(configured[parameter] ?? spec.defaultValue, for: parameter)
        return "\(spec.key) \(range), \(step), r: \(reset). \(spec.help)"
    }

    static let keysLine = "arrows: select/change  shift/PgUp/PgDn: x\(bigStep)  r reset  b bypass  s save  q quit"

    /// The screen: `lines` (each at most `width` columns) and the row to show selected.
    struct Frame: Equatable {
        var lines: [String]
        var highlight: Int?
    }

    /// The whole screen for a terminal `width` x `height`: title, the selected control's detail,
    /// the sliders, the meters, the message (or the name prompt) and the keys. What does not fit
    /// goes: blank lines first, then the detail's wrapped lines (cut to one), then meters; the keys
    /// line stays at the bottom.
    func render(width: Int, height: Int, title: String, meters: [String]) -> Frame {
        guard width >= 30 && height >= 5 else {
            return Frame(lines: [Self.fit("terminal too small: \(width)x\(height)", width), Self.fit("q quits", width)], highlight: nil)
        }
        let labelWidth = 18, valueWidth = 11
        let sliderWidth = min(max(width - 2 - labelWidth - valueWidth - 2, 8), 42)
        let rows = controls.enumerated().map { index, parameter -> String in
            let marker = index == selected ? "> " : "  "
            let text = ParameterValue.describe(value(parameter), for: parameter)
            let shown = parameter.spec.scale == .toggle ? "" : text
            return marker + Self.pad(label(parameter), labelWidth) + Self.leftPad(shown, valueWidth - 1) + "  " + slider(parameter, width: sliderWidth)
        }
        let bottom: String
        if let prompt {
            bottom = "save preset as: \(prompt)_" + (confirmReplace ? "  (exists: Enter replaces it, Esc cancels)" : "  (Enter saves, Esc cancels)")
        } else {
            bottom = message
        }
        // Sections in the order they give way when rows run short.
        // The detail (range, step, help) wraps rather than being cut at the terminal's edge.
        var top = [title] + Self.wrap(detail, width)
        var gapAfterTop = true, gapAfterControls = true
        var meterLines = meters
        func total() -> Int { top.count + (gapAfterTop ? 1 : 0) + rows.count + (gapAfterControls ? 1 : 0) + meterLines.count + 2 }
        if total() > height { gapAfterTop = false }
        if total() > height { gapAfterControls = false }
        if total() > height && top.count > 2 { top = [title, Self.fit(detail, width)] }
        while total() > height && !meterLines.isEmpty { meterLines.removeLast() }
        if total() > height { top = [title] }
        var lines = top + (gapAfterTop ? [""] : [])
        let firstRow = lines.count
        lines += rows
        lines += gapAfterControls ? [""] : []
        lines += meterLines
        var highlight: Int? = firstRow + selected
        if lines.count + 2 > height {
            // Still too many: keep the selected control in view.
            let room = max(height - 2 - firstRow, 1)
            let start = min(max(selected - room / 2, 0), max(rows.count - room, 0))
            lines = Array(lines.prefix(firstRow)) + Array(rows[start..<min(start + room, rows.count)])
            highlight = firstRow + selected - start
        }
        while lines.count < height - 2 { lines.append("") }
        lines += [bottom, Self.keysLine]
        return Frame(lines: lines.map { Self.fit($0, width) }, highlight: highlight)
    }

    /// `text` in lines of at most `width` columns, broken between words (a word longer than a
    /// line is cut by `fit`).
    static func wrap(_ text: String, _ width: Int) -> [String] {
        var lines: [String] = []
        var line = ""
        for word in text.split(separator: " ") {
            if line.isEmpty {
                line = String(word)
            } else if line.count + 1 + word.count <= width {
                line += " " + word
            } else {
                lines.append(line)
                line = String(word)
            }
        }
        if !line.isEmpty || lines.isEmpty { lines.append(line) }
        return lines
    }

    static func fit(_ line: String, _ width: Int) -> String {
        line.count <= width ? line : String(line.prefix(max(width - 1, 0))) + ">"
    }

    static func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? String(text.prefix(width)) : text + String(repeating: " ", count: width - text.count)
    }

    static func leftPad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : String(repeating: " ", count: width - text.count) + text
    }
}
