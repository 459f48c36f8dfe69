// How hearctl names a meter in its JSON (the plugin never needs it).

import HearDSP

extension Meter {
    /// The name in hearctl's JSON, split at its dots (`input.peak` -> ["input", "peak"]).
    public var namePath: [String] { String(describing: spec.name).split(separator: ".").map(String.init) }
}
