// Numbers stated once: the noise suppressor's figures (PESQ-WB, STOI, CPU against RNNoise), the
// echo canceller's (PESQ-WB) and the chain's cost against sc4m live in docs/results/, written by
// `make eval-results` (evaluate.py), `make eval-echo` (echo.py) and `make bench`; a document that quotes one must quote what a results file holds, so a doc
// cannot keep a figure the code no longer earns.

import Foundation
import Testing

@Suite struct DocumentFiguresTests {
    /// The documents that may quote the suppressor's figures.
    static let documents = ["README.md", "EVALUATION.md", "BENCHMARKS.md", "training/README.md"]
        + ((try? FileManager.default.contentsOfDirectory(atPath: Repository.url("docs").path)) ?? [])
            .filter { $0.hasSuffix(".md") }.map { "docs/" + $0 }

    /// Lines that state a figure: they name the measure, RNNoise's CPU or sc4m's.
    static func statesAFigure(_ line: Substring) -> Bool {
        line.contains("PESQ") || line.contains("STOI") || line.contains("of RNNoise") || line.contains("sc4m")
    }

    /// Every decimal with two or three places on such a line (1.874, 0.836, 0.23; a sign or a
    /// sentence's full stop is not part of it).
    static func figures(in text: String) -> [(line: Int, value: String)] {
        var found: [(Int, String)] = []
        for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() where statesAFigure(line) {
            for match in line.matches(of: /[0-9.]+/) {
                var token = match.output
                while token.hasSuffix(".") { token = token.dropLast() }
                if token.wholeMatch(of: /[0-9]+\.[0-9]{2,3}/) != nil { found.append((index + 1, String(token))) }
            }
        }
        return found
    }

    /// What the results files hold, as tokens (a figure rounded to two places counts where the
    /// results hold it with two).
    static func resultTokens() throws -> Set<String> {
        let folder = Repository.url("docs/results")
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".md") }
        var tokens = Set<String>()
        for name in names {
            let text = try String(contentsOf: folder.appendingPathComponent(name), encoding: .utf8)
            for match in text.matches(of: /\d+\.\d+/) { tokens.insert(String(match.output)) }
        }
        return tokens
    }

    @Test func resultsAreGeneratedReports() throws {
        let folder = Repository.url("docs/results")
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".md") }
        #expect(Set(names) == ["deciding.md", "home.md", "bench.md", "echo.md"], "\(names)")
        for name in names where name != "bench.md" && name != "echo.md" {
            let text = try String(contentsOf: folder.appendingPathComponent(name), encoding: .utf8)
            #expect(text.hasPrefix("<!-- Written by `python -m hear_training.evaluate "), "\(name) is not an evaluate.py report")
            #expect(text.contains("Reference check"), "\(name): no reference check")
        }
        let bench = try String(contentsOf: folder.appendingPathComponent("bench.md"), encoding: .utf8)
        #expect(bench.hasPrefix("<!-- Written by `make bench`") && bench.contains("| swh sc4m (compressor)"), "bench.md is not make bench's table")
        let echo = try String(contentsOf: folder.appendingPathComponent("echo.md"), encoding: .utf8)
        #expect(echo.hasPrefix("<!-- Written by `make eval-echo`") && echo.contains("| 48 kHz |"), "echo.md is not make eval-echo's report")
    }

    @Test func everyQuotedFigureIsInTheResults() throws {
        let tokens = try Self.resultTokens()
        var quoted = 0
        var strays: [String] = []
        for document in Self.documents {
            guard let text = try? String(contentsOf: Repository.url(document), encoding: .utf8) else { continue }
            for (line, value) in Self.figures(in: text) {
                quoted += 1
                if !tokens.contains(value) { strays.append("\(document):\(line): \(value)") }
            }
        }
        print("documents quote \(quoted) suppressor figures; \(strays.count) not in docs/results")
        #expect(strays.isEmpty, "figures no results file holds (run `make eval-results`, quote what it wrote): \(strays)")
    }

    /// The check itself: a figure no report holds is found, one that is held passes.
    @Test func theCheckFindsAStrayFigure() throws {
        let tokens = try Self.resultTokens()
        let held = try #require(tokens.first { $0.split(separator: ".").last?.count == 3 })
        let text = "hear scores PESQ-WB \(held) against 9.876\nno figure here: 1.234"
        let found = Self.figures(in: text)
        #expect(found.map(\.value) == [held, "9.876"])
        #expect(found.filter { !tokens.contains($0.value) }.map(\.value) == ["9.876"])
    }
}
