// `hearctl tune`'s keys: decoded from the bytes a terminal sends, and what each one does.

import Foundation
import HearctlCore
import HearControl
import HearDSP

/// A key as the terminal sends it (xterm/VT sequences; tmux sends the same).
enum TuneKey: Equatable {
    case up, down, left, right
    /// Shift or Ctrl with left/right, PgDn/PgUp: ten steps.
    case bigLeft, bigRight
    case home, end
    case enter, escape, backspace, interrupt
    case character(Character)

    /// Every key in `bytes`, in order. An escape sequence cut short at the end is dropped.
    static func decode(_ bytes: [UInt8]) -> [TuneKey] {
        var keys: [TuneKey] = []
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == 0x1B {
                guard index + 1 < bytes.count else { keys.append(.escape); break }
                let next = bytes[index + 1]
                guard next == UInt8(ascii: "[") || next == UInt8(ascii: "O") else {
                    // Alt+key, or Esc typed right before another key: Esc, then the key.
                    keys.append(.escape)
                    index += 1
                    continue
                }
                var end = index + 2
                while end < bytes.count, (0x30...0x3F).contains(bytes[end]) { end += 1 }
                guard end < bytes.count else { break }
                let parameters = String(decoding: bytes[(index + 2)..<end], as: UTF8.self)
                if let key = sequence(parameters, final: bytes[end]) { keys.append(key) }
                index = end + 1
                continue
            }
            switch byte {
            case 0x03: keys.append(.interrupt)
            case 0x0D, 0x0A: keys.append(.enter)
            case 0x7F, 0x08: keys.append(.backspace)
            case 0x20..<0x7F: keys.append(.character(Character(Unicode.Scalar(byte))))
            default: break  // other control bytes, and UTF-8 beyond ASCII (preset names are ASCII)
            }
            index += 1
        }
        return keys
    }

    /// CSI / SS3 sequences: arrows (with a modifier: "1;2" shift, "1;5" ctrl), PgUp/PgDn, Home/End.
    static func sequence(_ parameters: String, final: UInt8) -> TuneKey? {
        let modified = parameters.split(separator: ";").count > 1
        switch final {
        case UInt8(ascii: "A"): return .up
        case UInt8(ascii: "B"): return .down
        case UInt8(ascii: "C"): return modified ? .bigRight : .right
        case UInt8(ascii: "D"): return modified ? .bigLeft : .left
        case UInt8(ascii: "H"): return .home
        case UInt8(ascii: "F"): return .end
        case UInt8(ascii: "~"):
            switch parameters {
            case "5": return .bigRight
            case "6": return .bigLeft
            case "1", "7": return .home
            case "4", "8": return .end
            default: return nil
            }
        default: return nil
        }
    }
}

/// What a key asks the chain for.
enum TuneAction: Equatable {
    case none
    case set(Parameter, Float)
    /// Back to the chain's configured value (the drop-in's, else the default), as `hearctl reset` does.
    case reset(Parameter)
    case save(name: String, replace: Bool)
    case quit
}
