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

    /// The chain's device-side block (`capture.props` or `playback.props`) and its `target.object`
    /// members, read with libspa's tokenizer (HearctlCore's SPAObjectSpan), as PipeWire reads them.
    static func block(_ text: String, chain: DropInChain) -> SPAObjectSpan? {
        SPAObjectSpan.find(chain.deviceSide, member: "target.object", in: text)
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

    /// The device the drop-in names for the chain's device side, if any.
    static func target(_ text: String, chain: DropInChain) -> String? {
        block(text, chain: chain)?.members.lazy.compactMap(\.value).first
    }

    /// The text with the chain's device set to `device` (nil: no target.object line, the default
    /// is followed). Throws when the block is missing or on one line (then the user edits it).
    static func setting(_ text: String, chain: DropInChain, to device: String?, path: String) throws -> String {
        let bytes = Array(text.utf8)
        guard let block = block(text, chain: chain) else {
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
            // The old choice goes (every line that holds one).
            if block.members.contains(where: { (line.start..<max(line.end, line.start + 1)).contains($0.bytes.lowerBound) }) { continue }
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

    /// The text without the lines `device set` writes (so that `enable` still sees its own drop-in):
    /// those that end in its marker and hold the chain's `target.object`.
    static func withoutChoices(_ text: String) -> String {
        var starts: [Int] = []
        for chain in DropInChain.allCases {
            starts += (block(text, chain: chain)?.members ?? []).map(\.bytes.lowerBound)
        }
        var offset = 0
        var kept: [Substring] = []
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let length = line.utf8.count
            let holdsChoice = starts.contains { $0 >= offset && $0 < offset + length }
            if !(holdsChoice && DropInChain.allCases.contains { line.hasSuffix(marker($0)) }) { kept.append(line) }
            offset += length + 1
        }
        return kept.joined(separator: "\n")
    }
}
