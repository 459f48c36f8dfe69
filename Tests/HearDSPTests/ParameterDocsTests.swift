// docs/PARAMETERS.md's parameter table is generated from the schema. This test fails when they
// drift; `HEAR_UPDATE_DOCS=1 make test` rewrites the table between its markers.

import Foundation
import HearDSP
import Testing

@Suite struct ParameterDocsTests {
    static let begin = "<!-- parameters:begin (generated from Sources/HearDSP/Parameters.swift) -->"
    static let end = "<!-- parameters:end -->"

    static func number(_ value: Float) -> String {
        value == value.rounded() ? String(Int(value)) : String(value)
    }

    static var table: String {
        var lines = ["| key | range | default | unit | what it does |", "|---|---|---|---|---|"]
        for parameter in Parameter.allCases {
            let spec = parameter.spec
            let range = spec.scale == .toggle ? (spec.choices.count == 2 ? "0 (\(spec.choices[0])) or 1 (\(spec.choices[1]))" : "0 or 1") : "\(number(spec.minimum)) to \(number(spec.maximum))"
            lines.append("| `\(spec.key)` | \(range) | \(number(spec.defaultValue)) | \(spec.unit) | \(spec.help) |")
        }
        return lines.joined(separator: "\n")
    }

    @Test func parameterTableMatchesTheSchema() throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("docs/PARAMETERS.md")
        let document = try String(contentsOf: url, encoding: .utf8)
        let start = try #require(document.range(of: Self.begin), "docs/PARAMETERS.md has no parameter table marker")
        let stop = try #require(document.range(of: Self.end, range: start.upperBound..<document.endIndex))
        let current = document[start.upperBound..<stop.lowerBound].trimmingCharacters(in: .whitespacesAndNewlines)
        if ProcessInfo.processInfo.environment["HEAR_UPDATE_DOCS"] == "1" {
            let updated = document.replacingCharacters(in: start.upperBound..<stop.lowerBound, with: "\n" + Self.table + "\n")
            try updated.write(to: url, atomically: true, encoding: .utf8)
            return
        }
        #expect(current == Self.table, "docs/PARAMETERS.md's table is out of date; run HEAR_UPDATE_DOCS=1 make test")
    }
}
