// Where control sockets live. Every process that hosts the plugin has its own socket in one
// per-user directory, so hearctl finds them all by listing it.

public enum SocketPath {
    /// `HEAR_RUNTIME_DIR` if set, else `$XDG_RUNTIME_DIR/hear`, else `/tmp/hear-<uid>`. Relative
    /// values are ignored, as the XDG base directory rules ask: they would name a different
    /// directory for every working directory (the plugin's is PipeWire's, often `/`).
    public static func directory(environment: (String) -> String?, uid: UInt32) -> String {
        if let explicit = environment("HEAR_RUNTIME_DIR"), explicit.hasPrefix("/") { return trimmed(explicit) }
        if let runtime = environment("XDG_RUNTIME_DIR"), runtime.hasPrefix("/") { return trimmed(runtime) + "/hear" }
        return "/tmp/hear-\(uid)"
    }

    /// Why a set `HEAR_RUNTIME_DIR` is not used, for a warning; nil when it is used or unset.
    public static func ignoredSetting(environment: (String) -> String?, uid: UInt32) -> String? {
        guard let explicit = environment("HEAR_RUNTIME_DIR"), !explicit.isEmpty, !explicit.hasPrefix("/") else { return nil }
        return "HEAR_RUNTIME_DIR=\(explicit) is not an absolute path; ignored, using \(directory(environment: environment, uid: uid))"
    }

    public static func socketName(pid: Int32) -> String { "hear-\(pid).sock" }

    /// The pid in a socket file name, or nil if the name is not one of ours.
    public static func pid(socketName name: String) -> Int32? {
        guard name.hasPrefix("hear-"), name.hasSuffix(".sock") else { return nil }
        let digits = name.dropFirst(5).dropLast(5)
        guard !digits.isEmpty, digits.allSatisfy({ $0 >= "0" && $0 <= "9" }), let pid = Int32(digits), pid > 0 else { return nil }
        return pid
    }

    public static func trimmed(_ path: String) -> String {
        var path = Substring(path)
        while path.count > 1 && path.hasSuffix("/") { path = path.dropLast() }
        return String(path)
    }
}

/// Where settings live: the state of each chain, and user presets (same text format).
public enum SettingsPath {
    /// `$XDG_STATE_HOME/hear`, else `~/.local/state/hear`; nil without either.
    public static func stateDirectory(environment: (String) -> String?) -> String? {
        if let state = environment("XDG_STATE_HOME"), state.hasPrefix("/") { return SocketPath.trimmed(state) + "/hear" }
        if let home = environment("HOME"), home.hasPrefix("/") { return SocketPath.trimmed(home) + "/.local/state/hear" }
        return nil
    }

    public static func stateFileName(chain: Int) -> String { ChainName.name(chain) + ".conf" }
}
