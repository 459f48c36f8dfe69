// The hear chains a PipeWire drop-in configures. hearctl reads them to know the chains that
// exist while PipeWire has them suspended (filter-chain drops the plugin instance of an idle
// node, so no control socket knows them) and the values `hearctl reset` returns to.
//
// A chain is a filter-chain node of `type = ladspa` whose `label` is hear_mono or hear_stereo or
// whose `plugin` is a libhear.so; its `control = { ... }` gives the configured values, and its
// `"chain"` control (default 0) the chain number. The drop-ins are PipeWire's SPA-JSON: objects
// `{ key = value ... }` (`=`, `:` and `,` optional), arrays `[ ... ]`, quoted or bare strings,
// `#` comments. Files are read from where PipeWire reads them (DropIns.directories).

import HearDSP

/// One configured hear chain.
public struct ConfiguredChain: Equatable, Sendable {
    public var chain: Int
    public var label: String
    /// The node description apps show ("Hear: enhanced microphone"), if the drop-in gives one.
    public var description: String?
    /// The `control = { ... }` values that are schema parameters, in schema order.
    public var settings: Settings
    /// The file it came from.
    public var path: String

    public init(chain: Int, label: String, description: String?, settings: Settings, path: String) {
        self.chain = chain
        self.label = label
        self.description = description
        self.settings = settings
        self.path = path
    }

    /// What a parameter starts at when no saved value overrides it: the drop-in's value, else the schema default.
    public func configured(_ parameter: Parameter) -> Float { settings[parameter] ?? parameter.spec.defaultValue }
}

public enum DropIns {
    /// Where PipeWire reads drop-ins, lowest precedence first: /usr/share/pipewire/pipewire.conf.d,
    /// /etc/pipewire/pipewire.conf.d, then $XDG_CONFIG_HOME/pipewire/pipewire.conf.d (else
    /// ~/.config/pipewire/pipewire.conf.d). PIPEWIRE_CONFIG_DIR replaces the last two, as in PipeWire.
    public static func directories(environment: (String) -> String?) -> [String] {
        if let explicit = environment("PIPEWIRE_CONFIG_DIR"), explicit.hasPrefix("/") {
            return ["/usr/share/pipewire/pipewire.conf.d", SocketPath.trimmed(explicit) + "/pipewire.conf.d"]
        }
        var result = ["/usr/share/pipewire/pipewire.conf.d", "/etc/pipewire/pipewire.conf.d"]
        if let config = environment("XDG_CONFIG_HOME"), config.hasPrefix("/") {
            result.append(SocketPath.trimmed(config) + "/pipewire/pipewire.conf.d")
        } else if let home = environment("HOME"), home.hasPrefix("/") {
            result.append(SocketPath.trimmed(home) + "/.config/pipewire/pipewire.conf.d")
        }
        return result
    }

    /// The hear chains one drop-in configures (none if it does not parse).
    public static func chains(in text: String, path: String) -> [ConfiguredChain] {
        var parser = SPAParser(Array(text.utf8))
        guard let root = parser.document() else { return [] }
        var result: [ConfiguredChain] = []
        collect(root, description: nil, path: path, into: &result)
        return result
    }

    /// Walks the tree; `description` is the nearest enclosing node.description.
    static func collect(_ value: SPAValue, description: String?, path: String, into result: inout [ConfiguredChain]) {
        switch value {
        case .array(let items):
            for item in items { collect(item, description: description, path: path, into: &result) }
        case .object(let members):
            let here = members.first { $0.key == "node.description" }?.value.string ?? description
            let label = members.first { $0.key == "label" }?.value.string ?? ""
            let plugin = members.first { $0.key == "plugin" }?.value.string ?? ""
            let type = members.first { $0.key == "type" }?.value.string
            if type == "ladspa", label == "hear_mono" || label == "hear_stereo" || plugin.hasSuffix("libhear.so") {
                var settings = Settings()
                var chain = 0
                if case .object(let controls)? = members.first(where: { $0.key == "control" })?.value {
                    for (key, value) in controls {
                        guard let number = value.number else { continue }
                        if key == "chain" { chain = ChainName.number(port: number); continue }
                        if let parameter = Parameter(key: key), number.isFinite {
                            settings[parameter] = min(max(number, parameter.spec.minimum), parameter.spec.maximum)
                        }
                    }
                }
                result.append(ConfiguredChain(chain: chain, label: label, description: here, settings: settings, path: path))
                return
            }
            for (_, member) in members { collect(member, description: here, path: path, into: &result) }
        case .string:
            return
        }
    }
}

/// A parsed SPA-JSON value: strings keep their text (numbers and booleans are bare strings).
enum SPAValue: Equatable {
    case string(String)
    case array([SPAValue])
    case object([(key: String, value: SPAValue)])

    var string: String? { if case .string(let text) = self { return text }; return nil }

    var number: Float? {
        guard case .string(let text) = self else { return nil }
        switch text {
        case "true": return 1
        case "false": return 0
        default: return Float(text)
        }
    }

    static func == (a: SPAValue, b: SPAValue) -> Bool {
        switch (a, b) {
        case (.string(let x), .string(let y)): return x == y
        case (.array(let x), .array(let y)): return x == y
        case (.object(let x), .object(let y)):
            return x.count == y.count && zip(x, y).allSatisfy { $0.key == $1.key && $0.value == $1.value }
        default: return false
        }
    }
}

/// SPA-JSON as PipeWire reads its configs: a file is the members of one object without braces.
struct SPAParser {
    let bytes: [UInt8]
    var index = 0
    var depth = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    mutating func document() -> SPAValue? {
        skip()
        if index < bytes.count && bytes[index] == UInt8(ascii: "{") {
            let value = self.value()
            skip()
            return index >= bytes.count ? value : nil
        }
        return members(until: nil).map(SPAValue.object)
    }

    /// Whitespace, separators (`,` `=` `:`) and `#` comments.
    mutating func skip() {
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "#") {
                while index < bytes.count && bytes[index] != 0x0A { index += 1 }
            } else if byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D || byte == UInt8(ascii: ",")
                        || byte == UInt8(ascii: "=") || byte == UInt8(ascii: ":") {
                index += 1
            } else {
                return
            }
        }
    }

    mutating func members(until close: UInt8?) -> [(key: String, value: SPAValue)]? {
        var result: [(key: String, value: SPAValue)] = []
        while true {
            skip()
            if index >= bytes.count { return close == nil ? result : nil }
            if let close, bytes[index] == close { index += 1; return result }
            guard case .string(let key)? = value() else { return nil }
            skip()
            guard index < bytes.count, let member = value() else { return nil }
            result.append((key, member))
        }
    }

    mutating func value() -> SPAValue? {
        skip()
        guard index < bytes.count, depth < 64 else { return nil }
        let byte = bytes[index]
        if byte == UInt8(ascii: "{") || byte == UInt8(ascii: "[") {
            index += 1
            depth += 1
            defer { depth -= 1 }
            if byte == UInt8(ascii: "{") { return members(until: UInt8(ascii: "}")).map(SPAValue.object) }
            var items: [SPAValue] = []
            while true {
                skip()
                if index >= bytes.count { return nil }
                if bytes[index] == UInt8(ascii: "]") { index += 1; return .array(items) }
                guard let item = value() else { return nil }
                items.append(item)
            }
        }
        if byte == UInt8(ascii: "}") || byte == UInt8(ascii: "]") { return nil }
        if byte == UInt8(ascii: "\"") {
            index += 1
            var text: [UInt8] = []
            while index < bytes.count && bytes[index] != UInt8(ascii: "\"") {
                if bytes[index] == UInt8(ascii: "\\") && index + 1 < bytes.count { index += 1 }
                text.append(bytes[index])
                index += 1
            }
            guard index < bytes.count else { return nil }
            index += 1
            return .string(String(decoding: text, as: UTF8.self))
        }
        let start = index
        while index < bytes.count {
            let byte = bytes[index]
            if byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D || byte == UInt8(ascii: ",") || byte == UInt8(ascii: "=")
                || byte == UInt8(ascii: ":") || byte == UInt8(ascii: "{") || byte == UInt8(ascii: "}") || byte == UInt8(ascii: "[")
                || byte == UInt8(ascii: "]") || byte == UInt8(ascii: "#") || byte == UInt8(ascii: "\"") { break }
            index += 1
        }
        return .string(String(decoding: bytes[start..<index], as: UTF8.self))
    }
}
