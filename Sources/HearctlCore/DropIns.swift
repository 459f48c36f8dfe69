// The hear chains a PipeWire drop-in configures. hearctl reads them to know the chains that
// exist while PipeWire has them suspended (filter-chain drops the plugin instance of an idle
// node, so no control socket knows them) and the values `hearctl reset` returns to.
//
// A chain is a filter-chain node of `type = ladspa` whose `label` is hear_mono or hear_stereo or
// whose `plugin` is a libhear.so; its `control = { ... }` gives the configured values, and its
// `"chain"` control (default 0) the chain number. The drop-ins are PipeWire's SPA-JSON, read with
// libspa's own tokenizer (modules/CSPAJSON), so a file means to hearctl what it means to PipeWire:
// objects `{ key = value ... }` (`=`, `:` and `,` optional), arrays `[ ... ]`, quoted or bare
// strings, `#` comments. A control value is read as filter-chain reads it (spa_json_parse_float)
// and held in the schema's range as the plugin holds its port (ParameterBounds.clamp): a drop-in's
// `gain = 1e39` is the +24 dB the plugin runs. Files are read from where PipeWire reads them
// (DropIns.directories).

import CSPAJSON
import HearControl
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
    /// Where PipeWire daemons read drop-ins, lowest precedence first: /usr/share/pipewire, /etc/pipewire,
    /// then $XDG_CONFIG_HOME/pipewire (else ~/.config/pipewire), each with the `.conf.d` of every
    /// configuration that can run a filter-chain. PIPEWIRE_CONFIG_DIR replaces the last two, as in PipeWire.
    public static func directories(environment: (String) -> String?) -> [String] {
        var bases = ["/usr/share/pipewire"]
        if let explicit = environment("PIPEWIRE_CONFIG_DIR"), explicit.hasPrefix("/") {
            bases.append(SocketPath.trimmed(explicit))
        } else {
            bases.append("/etc/pipewire")
            if let config = environment("XDG_CONFIG_HOME"), config.hasPrefix("/") {
                bases.append(SocketPath.trimmed(config) + "/pipewire")
            } else if let home = environment("HOME"), home.hasPrefix("/") {
                bases.append(SocketPath.trimmed(home) + "/.config/pipewire")
            }
        }
        return bases.flatMap { base in configurations.map { base + "/" + $0 + ".conf.d" } }
    }

    /// The daemons whose drop-ins can hold a filter-chain: PipeWire itself, and a separate
    /// `pipewire -c filter-chain.conf` (the way Debian 12's PipeWire documents filter-chains).
    public static let configurations = ["pipewire", "filter-chain"]

    /// Why a drop-in's text could not be read as PipeWire config.
    public struct Unreadable: Error, Equatable, Sendable, CustomStringConvertible {
        public let reason: String
        public var description: String { reason }

        public init(reason: String) { self.reason = reason }
    }

    /// The hear chains one drop-in configures; a text that is not SPA-JSON, or nests deeper than
    /// SPAValue.maximumDepth, throws (the caller skips the file and says so).
    public static func chains(in text: String, path: String) throws(Unreadable) -> [ConfiguredChain] {
        let root: SPAValue
        switch SPAValue.document(text) {
        case .success(let value): root = value
        case .failure(let problem): throw problem
        }
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
                let bounds = ParameterBounds()
                var chain = 0
                if case .object(let controls)? = members.first(where: { $0.key == "control" })?.value {
                    for (key, value) in controls {
                        guard let number = value.number else { continue }
                        if key == "chain" { chain = ChainName.number(port: number); continue }
                        if let parameter = Parameter(key: key) { settings[parameter] = bounds.clamp(number, parameter) }
                    }
                }
                result.append(ConfiguredChain(chain: chain, label: label, description: here, settings: settings, path: path))
                return
            }
            for (_, member) in members { collect(member, description: here, path: path, into: &result) }
        case .scalar:
            return
        }
    }
}

/// A parsed SPA-JSON value: a token keeps its text and, when it is one, its number.
enum SPAValue {
    case scalar(text: String, number: Float?)
    case array([SPAValue])
    case object([(key: String, value: SPAValue)])

    var string: String? { if case .scalar(let text, _) = self { return text }; return nil }
    var number: Float? { if case .scalar(_, let number) = self { return number }; return nil }

    /// Containers nested deeper than this are refused: the reading recurses per level, and a file
    /// of brackets alone (8 KB, 4,000 levels) would otherwise overflow the stack. PipeWire's own
    /// configs nest about 8 levels.
    static let maximumDepth = 64

    /// A whole file as PipeWire reads its configs: the members of one object without braces, or
    /// one object in braces.
    static func document(_ text: String) -> Result<SPAValue, DropIns.Unreadable> {
        var tooDeep = false
        let parsed = parse(text, tooDeep: &tooDeep)
        if tooDeep { return .failure(DropIns.Unreadable(reason: "nested more than \(maximumDepth) levels deep")) }
        return parsed.map { .success($0) } ?? .failure(DropIns.Unreadable(reason: "not PipeWire's SPA-JSON"))
    }

    private static func parse(_ text: String, tooDeep: inout Bool) -> SPAValue? {
        // NUL-terminated for spa_json_parse_float (modules/CSPAJSON/shim.h).
        var bytes = Array(text.utf8CString)
        let size = bytes.count - 1
        return bytes.withUnsafeMutableBufferPointer { buffer -> SPAValue? in
            guard let base = buffer.baseAddress else { return nil }
            var root = spa_json()
            return withUnsafeMutablePointer(to: &root) { iter -> SPAValue? in
                hear_json_init(iter, base, size)
                var probe = iter.pointee
                var token: UnsafePointer<CChar>?
                let length = hear_json_next(&probe, &token)
                if length > 0, let opening = token, hear_json_is_object(opening, length) {
                    // One object in braces, and nothing after it.
                    _ = hear_json_next(iter, &token)
                    guard let object = container(iter, token: opening, length: length, depth: 1, tooDeep: &tooDeep) else { return nil }
                    return hear_json_next(iter, &token) == 0 ? object : nil
                }
                return members(iter, topLevel: true, depth: 0, tooDeep: &tooDeep).map(SPAValue.object)
            }
        }
    }

    /// The members of an object up to its closing brace (or the end of the text at the top level).
    static func members(_ iter: UnsafeMutablePointer<spa_json>, topLevel: Bool = false, depth: Int,
                        tooDeep: inout Bool) -> [(key: String, value: SPAValue)]? {
        var result: [(key: String, value: SPAValue)] = []
        while true {
            var token: UnsafePointer<CChar>?
            let length = hear_json_next(iter, &token)
            if length == 0 { return topLevel || hear_json_closed(iter) ? result : nil }
            guard length > 0, let token, !hear_json_is_object(token, length), !hear_json_is_array(token, length),
                  let key = text(token, length) else { return nil }
            var valueToken: UnsafePointer<CChar>?
            let valueLength = hear_json_next(iter, &valueToken)
            guard valueLength > 0, let valueToken,
                  let value = value(iter, token: valueToken, length: valueLength, depth: depth, tooDeep: &tooDeep) else { return nil }
            result.append((key, value))
        }
    }

    /// The value a token starts: a container is read to its end.
    static func value(_ iter: UnsafeMutablePointer<spa_json>, token: UnsafePointer<CChar>, length: Int32, depth: Int,
                      tooDeep: inout Bool) -> SPAValue? {
        if hear_json_is_object(token, length) || hear_json_is_array(token, length) {
            return container(iter, token: token, length: length, depth: depth + 1, tooDeep: &tooDeep)
        }
        guard let decoded = text(token, length) else { return nil }
        var number: Float = 0
        return .scalar(text: decoded, number: hear_json_number(token, length, &number) ? number : nil)
    }

    static func container(_ iter: UnsafeMutablePointer<spa_json>, token: UnsafePointer<CChar>, length: Int32, depth: Int,
                          tooDeep: inout Bool) -> SPAValue? {
        guard depth <= maximumDepth else {
            tooDeep = true
            return nil
        }
        let isObject = hear_json_is_object(token, length)
        var sub = spa_json()
        return withUnsafeMutablePointer(to: &sub) { sub -> SPAValue? in
            hear_json_enter(iter, sub)
            if isObject { return members(sub, depth: depth, tooDeep: &tooDeep).map(SPAValue.object) }
            var items: [SPAValue] = []
            while true {
                var item: UnsafePointer<CChar>?
                let itemLength = hear_json_next(sub, &item)
                if itemLength == 0 { return hear_json_closed(sub) ? .array(items) : nil }
                guard itemLength > 0, let item, let value = value(sub, token: item, length: itemLength, depth: depth, tooDeep: &tooDeep) else { return nil }
                items.append(value)
            }
        }
    }

    static func text(_ token: UnsafePointer<CChar>, _ length: Int32) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(length) + 1)
        let count = hear_json_text(token, length, &buffer)
        guard count >= 0 else { return nil }
        return String(decoding: buffer[..<Int(count)].lazy.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// Where an object and some of its members lie in a drop-in's text (UTF-8 byte offsets), read with
/// the same tokenizer as everything else here: for editing a file in place, every other byte kept
/// (`hearctl device set` writes `target.object` into a chain's `capture.props` or `playback.props`).
public struct SPAObjectSpan: Equatable, Sendable {
    /// The offsets of the object's `{` and `}`.
    public var open: Int
    public var close: Int
    /// Its own members with the name asked for, in order: from the key's first byte to just after
    /// the value's last, and the value's text when it is not a container.
    public var members: [Member]

    public struct Member: Equatable, Sendable {
        public var bytes: Range<Int>
        public var value: String?
    }

    /// The first object, at any depth, that is the value of a member named `key` (an object inside
    /// an array counts too), with its members named `member`. Nil when there is none or the text is
    /// not SPA-JSON.
    public static func find(_ key: String, member: String, in text: String) -> SPAObjectSpan? {
        var bytes = Array(text.utf8CString)
        let size = bytes.count - 1
        return bytes.withUnsafeMutableBufferPointer { buffer -> SPAObjectSpan? in
            guard let base = buffer.baseAddress else { return nil }
            var root = spa_json()
            return withUnsafeMutablePointer(to: &root) { iter -> SPAObjectSpan? in
                hear_json_init(iter, base, size)
                var search = Search(base: UnsafePointer(base), key: key, member: member)
                var probe = iter.pointee
                var token: UnsafePointer<CChar>?
                let length = hear_json_next(&probe, &token)
                if length > 0, let opening = token, hear_json_is_object(opening, length) {
                    _ = hear_json_next(iter, &token)
                    return search.container(iter, token: opening, length: length, depth: 1, named: nil)
                }
                return search.members(iter, depth: 0)
            }
        }
    }

    private struct Search {
        let base: UnsafePointer<CChar>
        let key: String
        let member: String

        func offset(_ pointer: UnsafePointer<CChar>) -> Int { base.distance(to: pointer) }

        /// Reads an object's members; the span if it or an object within it is the one.
        mutating func members(_ iter: UnsafeMutablePointer<spa_json>, depth: Int) -> SPAObjectSpan? {
            while true {
                var token: UnsafePointer<CChar>?
                let length = hear_json_next(iter, &token)
                guard length > 0, let token, !hear_json_is_object(token, length), !hear_json_is_array(token, length),
                      let name = SPAValue.text(token, length) else { return nil }
                var valueToken: UnsafePointer<CChar>?
                let valueLength = hear_json_next(iter, &valueToken)
                guard valueLength > 0, let valueToken else { return nil }
                if hear_json_is_object(valueToken, valueLength) || hear_json_is_array(valueToken, valueLength),
                   let found = container(iter, token: valueToken, length: valueLength, depth: depth + 1, named: name) {
                    return found
                }
            }
        }

        /// Reads a container (its opening token just returned by `iter`); the span if it is the
        /// object asked for (named `key`) or holds it.
        mutating func container(_ iter: UnsafeMutablePointer<spa_json>, token: UnsafePointer<CChar>, length: Int32, depth: Int,
                                named name: String?) -> SPAObjectSpan? {
            guard depth <= SPAValue.maximumDepth else { return nil }
            let isObject = hear_json_is_object(token, length)
            var sub = spa_json()
            return withUnsafeMutablePointer(to: &sub) { sub -> SPAObjectSpan? in
                hear_json_enter(iter, sub)
                if isObject && name == key { return span(sub, open: offset(token), depth: depth) }
                if isObject { return members(sub, depth: depth) }
                while true {
                    var item: UnsafePointer<CChar>?
                    let itemLength = hear_json_next(sub, &item)
                    guard itemLength > 0, let item else { return nil }
                    if hear_json_is_object(item, itemLength) || hear_json_is_array(item, itemLength),
                       let found = container(sub, token: item, length: itemLength, depth: depth + 1, named: nil) {
                        return found
                    }
                }
            }
        }

        /// The object asked for, read to its closing brace: where its `member` members lie.
        func span(_ iter: UnsafeMutablePointer<spa_json>, open: Int, depth: Int) -> SPAObjectSpan? {
            var found: [Member] = []
            while true {
                var token: UnsafePointer<CChar>?
                let length = hear_json_next(iter, &token)
                if length == 0 {
                    guard hear_json_closed(iter), let close = hear_json_position(iter) else { return nil }
                    return SPAObjectSpan(open: open, close: offset(close), members: found)
                }
                guard length > 0, let token, let name = SPAValue.text(token, length) else { return nil }
                var valueToken: UnsafePointer<CChar>?
                let valueLength = hear_json_next(iter, &valueToken)
                guard valueLength > 0, let valueToken else { return nil }
                var end = offset(valueToken) + Int(valueLength)
                var value: String?
                if hear_json_is_object(valueToken, valueLength) || hear_json_is_array(valueToken, valueLength) {
                    guard let closing = skip(iter, depth: depth + 1) else { return nil }
                    end = closing + 1
                } else {
                    value = SPAValue.text(valueToken, valueLength)
                }
                if name == member { found.append(Member(bytes: offset(token)..<end, value: value)) }
            }
        }

        /// Reads a container whose opening token `iter` just returned to its end: its closing offset.
        func skip(_ iter: UnsafeMutablePointer<spa_json>, depth: Int) -> Int? {
            guard depth <= SPAValue.maximumDepth else { return nil }
            var sub = spa_json()
            return withUnsafeMutablePointer(to: &sub) { sub -> Int? in
                hear_json_enter(iter, sub)
                while true {
                    var token: UnsafePointer<CChar>?
                    let length = hear_json_next(sub, &token)
                    if length == 0 {
                        guard hear_json_closed(sub), let close = hear_json_position(sub) else { return nil }
                        return offset(close)
                    }
                    guard length > 0, let token else { return nil }
                    if hear_json_is_object(token, length) || hear_json_is_array(token, length) {
                        guard skip(sub, depth: depth + 1) != nil else { return nil }
                    }
                }
            }
        }
    }
}
