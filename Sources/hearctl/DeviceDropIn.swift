// `hearctl device set`'s edit of a drop-in: `target.object` in one block, every other byte kept.

import ArgumentParser
import CPipeWire
import Foundation
import Glibc
import HearctlCore
import HearControl
import HearSystem

/// Reading and writing `target.object` in one `<side> = { ... }` block of a drop-in, leaving
/// every other byte as it is.
enum DeviceDropIn {
    /// Ends the line hearctl writes, so that `enable` knows it for the user's choice, not an edit.
    static func marker(_ chain: DropInChain) -> String { "# hearctl device set \(chain.rawValue)" }

    /// For each byte: true when it is code (neither in a `#` comment nor in a quoted string).
    static func codeMask(_ bytes: [UInt8]) -> [Bool] {
        var mask = [Bool](repeating: true, count: bytes.count)
        var index = 0
        while index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: "#"):
                while index < bytes.count && bytes[index] != UInt8(ascii: "\n") { mask[index] = false; index += 1 }
            case UInt8(ascii: "\""):
                mask[index] = false
                index += 1
                while index < bytes.count && bytes[index] != UInt8(ascii: "\"") {
                    mask[index] = false
                    if bytes[index] == UInt8(ascii: "\\") && index + 1 < bytes.count { index += 1; mask[index] = false }
                    index += 1
                }
                if index < bytes.count { mask[index] = false; index += 1 }
            default: index += 1
            }
        }
        return mask
    }

    /// The offsets of the `{` and `}` of the first `<side> = { ... }` block.
    static func block(_ bytes: [UInt8], side: String) -> (open: Int, close: Int)? {
        let key = Array(side.utf8)
        let mask = codeMask(bytes)
        func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D }
        var index = 0
        while index + key.count <= bytes.count {
            defer { index += 1 }
            guard mask[index], Array(bytes[index..<index + key.count]) == key,
                  index == 0 || isSpace(bytes[index - 1]) || bytes[index - 1] == UInt8(ascii: "{") else { continue }
            var position = index + key.count
            while position < bytes.count && isSpace(bytes[position]) { position += 1 }
            if position < bytes.count && (bytes[position] == UInt8(ascii: "=") || bytes[position] == UInt8(ascii: ":")) { position += 1 }
            while position < bytes.count && isSpace(bytes[position]) { position += 1 }
            guard position < bytes.count, bytes[position] == UInt8(ascii: "{") else { continue }
            var depth = 0
            for close in position..<bytes.count where mask[close] {
                if bytes[close] == UInt8(ascii: "{") { depth += 1 }
                if bytes[close] == UInt8(ascii: "}") { depth -= 1; if depth == 0 { return (position, close) } }
            }
            return nil
        }
        return nil
    }

    /// The lines (start, end offsets, end without the newline) between `open` and `close`.
    static func lines(_ bytes: [UInt8], from start: Int, to end: Int) -> [(start: Int, end: Int)] {
        var result: [(Int, Int)] = []
        var lineStart = start
        for index in start..<end where bytes[index] == UInt8(ascii: "\n") {
            result.append((lineStart, index))
            lineStart = index + 1
        }
        result.append((lineStart, end))
        return result
    }

    /// The value of a `target.object = ...` line, if this line is one.
    static func targetValue(_ line: ArraySlice<UInt8>) -> String? {
        var rest = line.drop { $0 == 0x20 || $0 == 0x09 }
        for key in ["target.object", "\"target.object\""] where rest.starts(with: Array(key.utf8)) {
            rest = rest.dropFirst(key.utf8.count)
            guard let first = rest.first, first == 0x20 || first == 0x09 || first == UInt8(ascii: "=") || first == UInt8(ascii: ":")
            else { return nil }
            rest = rest.drop { $0 == 0x20 || $0 == 0x09 || $0 == UInt8(ascii: "=") || $0 == UInt8(ascii: ":") }
            if rest.first == UInt8(ascii: "\"") {
                var value: [UInt8] = []
                var iterator = rest.dropFirst().makeIterator()
                while let byte = iterator.next(), byte != UInt8(ascii: "\"") {
                    value.append(byte == UInt8(ascii: "\\") ? (iterator.next() ?? byte) : byte)
                }
                return String(decoding: value, as: UTF8.self)
            }
            let value = rest.prefix { !($0 == 0x20 || $0 == 0x09 || $0 == UInt8(ascii: "#") || $0 == UInt8(ascii: "}")) }
            return value.isEmpty ? nil : String(decoding: value, as: UTF8.self)
        }
        return nil
    }

    /// The device the drop-in names for the chain's device side, if any.
    static func target(_ text: String, chain: DropInChain) -> String? {
        let bytes = Array(text.utf8)
        guard let block = block(bytes, side: chain.deviceSide) else { return nil }
        for line in lines(bytes, from: block.open + 1, to: block.close) {
            if let value = targetValue(bytes[line.start..<line.end]) { return value }
        }
        return nil
    }

    /// The text with the chain's device set to `device` (nil: no target.object line, the default
    /// is followed). Throws when the block is missing or on one line (then the user edits it).
    static func setting(_ text: String, chain: DropInChain, to device: String?, path: String) throws -> String {
        let bytes = Array(text.utf8)
        guard let block = block(bytes, side: chain.deviceSide) else {
            throw CLIError("\(path) has no \(chain.deviceSide) = { ... } block: add `target.object = \"NAME\"` to the filter's \(chain.deviceSide) by hand. Nothing was changed")
        }
        guard bytes[block.open..<block.close].contains(UInt8(ascii: "\n")) else {
            throw CLIError("\(path) has \(chain.deviceSide) on one line: add or remove `target.object = \"NAME\"` there by hand. Nothing was changed")
        }
        let inner = lines(bytes, from: block.open + 1, to: block.close)
        var output = Array(bytes[0...block.open])
        var indent: [UInt8]?
        for (number, line) in inner.enumerated() {
            let slice = bytes[line.start..<line.end]
            let isLast = number == inner.count - 1
            let newline: [UInt8] = isLast ? [] : [0x0A]
            if !isLast && indent == nil && slice.contains(where: { $0 != 0x20 && $0 != 0x09 }) && line.start > block.open + 1 {
                indent = Array(slice.prefix { $0 == 0x20 || $0 == 0x09 })
            }
            if targetValue(slice) != nil { continue }  // the old choice goes (every line of it)
            if isLast, let device {
                // The new line goes before the closing brace's line, indented as the block's first entry.
                let closing = Array(slice.prefix { $0 == 0x20 || $0 == 0x09 })
                let quoted = device.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
                output += (indent ?? closing + Array("    ".utf8)) + Array("target.object = \"\(quoted)\"   \(marker(chain))\n".utf8)
            }
            output += Array(slice) + newline
        }
        output += Array(bytes[block.close...])
        return String(decoding: output, as: UTF8.self)
    }

    /// The text without the lines `device set` writes (so that `enable` still sees its own drop-in).
    static func withoutChoices(_ text: String) -> String {
        text.split(separator: "\n", omittingEmptySubsequences: false)
            .filter { line in !DropInChain.allCases.contains { line.hasSuffix(marker($0)) && targetValue(ArraySlice(Array(line.utf8))) != nil } }
            .joined(separator: "\n")
    }
}
