// Where things are: the repository's drop-ins, the private-session config, and the built plugin.
// The committed drop-ins name the plugin as @HEAR_PLUGIN@; `make install` and these tests put an
// absolute path there the same way (packaging/install.sh does it with sed).

import Foundation

enum Repository {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    static func url(_ path: String) -> URL { root.appendingPathComponent(path) }

    static let placeholder = "@HEAR_PLUGIN@"

    /// `HEAR_PLUGIN` (set by `make test`), else the release build in this package.
    static var plugin: String {
        if let path = ProcessInfo.processInfo.environment["HEAR_PLUGIN"], !path.isEmpty { return path }
        return url(".build/release/libhear.so").path
    }

    /// The PipeWire drop-ins, by file name.
    static let dropIns = ["hear-microphone.conf", "hear-speaker.conf"]

    static func text(_ path: String) throws -> String { try String(contentsOf: url(path), encoding: .utf8) }

    /// A committed config with the plugin path filled in.
    static func configured(_ path: String, plugin: String = Repository.plugin) throws -> String {
        try text(path).replacingOccurrences(of: placeholder, with: plugin)
    }
}
