// A comment that names a test, a test suite or a document names one that exists: a reader who
// follows `NoiseSuppressorTests.everyPartLivesInTheOneArena` or `EVALUATION.md` finds it. Read from
// the comments of Sources/ and Tests/ (Swift) and training/ (Python), and from the documents:
// `SuiteTests` and `SuiteTests.method` must be a test target, or a suite and one of its
// functions, in Tests/; `NAME.md` a document of the repository.

import Foundation
import Testing

@Suite struct CommentCitationTests {
    struct Citation: Equatable {
        let place: String
        let name: String
    }

    enum Kind { case swift, python, markdown }

    /// The comment part of each line (after `//` in Swift, `# ` in Python; a document's every line).
    static func comments(in text: String, kind: Kind) -> [(line: Int, text: Substring)] {
        var found: [(Int, Substring)] = []
        for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            switch kind {
            case .markdown: found.append((index + 1, line))
            case .swift, .python:
                if let range = line.range(of: kind == .python ? "# " : "//") { found.append((index + 1, line[range.upperBound...])) }
            }
        }
        return found
    }

    /// Test suites (`…Tests`, optionally `.method`) and documents (`….md`) that comments in `text` name.
    static func citations(in text: String, file: String, kind: Kind) -> (tests: [Citation], documents: [Citation]) {
        var tests: [Citation] = [], documents: [Citation] = []
        for (line, comment) in comments(in: text, kind: kind) {
            // (`SuiteTests.swift` names a file, not a method.)
            for match in comment.matches(of: /\b([A-Z][A-Za-z0-9]*Tests)(\.(?!swift\b)[a-z][A-Za-z0-9]*)?/) {
                tests.append(Citation(place: "\(file):\(line)", name: String(match.output.0)))
            }
            // (What a run writes under .build/ is not the repository's.)
            for match in comment.matches(of: /([A-Za-z0-9_.\/-]*[A-Za-z0-9_-]\.md)\b/) where !match.output.1.hasPrefix(".build/") {
                documents.append(Citation(place: "\(file):\(line)", name: String(match.output.1)))
            }
        }
        return (tests, documents)
    }

    /// Every file below `folder` (relative to the repository) ending in `suffix`.
    static func files(in folder: String, suffix: String) -> [String] {
        let root = Repository.url(folder)
        guard let walker = FileManager.default.enumerator(atPath: root.path) else { return [] }
        return walker.compactMap { $0 as? String }.filter { $0.hasSuffix(suffix) && !$0.contains(".build") }
            .map { folder + "/" + $0 }.sorted()
    }

    /// Test targets (the folders of Tests/), suites (`struct NameTests`) and, per suite, its functions.
    static func testInventory() throws -> (targets: Set<String>, suites: [String: Set<String>]) {
        var targets = Set<String>(), suites: [String: Set<String>] = [:]
        for file in files(in: "Tests", suffix: ".swift") {
            targets.insert(String(file.split(separator: "/")[1]))
            let text = try String(contentsOf: Repository.url(file), encoding: .utf8)
            var current: String?
            for line in text.split(separator: "\n") {
                if let suite = line.firstMatch(of: /(?:struct|class|extension) ([A-Z][A-Za-z0-9]*Tests)\b/) {
                    current = String(suite.output.1)
                    suites[current!, default: []].formUnion([])
                }
                if let current, let function = line.firstMatch(of: /func ([a-z][A-Za-z0-9]*)\(/) {
                    suites[current, default: []].insert(String(function.output.1))
                }
            }
        }
        return (targets, suites)
    }

    /// The citations in `tests` that name no test target, suite, or function of that suite.
    static func missing(_ tests: [Citation], targets: Set<String>, suites: [String: Set<String>]) -> [Citation] {
        tests.filter { citation in
            let parts = citation.name.split(separator: ".")
            let suite = String(parts[0])
            if parts.count == 1 { return !targets.contains(suite) && suites[suite] == nil }
            return !(suites[suite]?.contains(String(parts[1])) ?? false)
        }
    }

    /// The cited documents that do not exist, relative to the repository, to docs/, or to the citing file's folder.
    static func missingDocuments(_ documents: [Citation]) -> [Citation] {
        documents.filter { citation in
            let folder = citation.place.split(separator: "/").dropLast().joined(separator: "/")
            let candidates = [citation.name, "docs/" + citation.name, folder + "/" + citation.name,
                              "docs/results/" + citation.name]
            return !candidates.contains { FileManager.default.fileExists(atPath: Repository.url($0).path) }
        }
    }

    @Test func everyCitedTestAndDocumentExists() throws {
        let (targets, suites) = try Self.testInventory()
        var tests: [Citation] = [], documents: [Citation] = []
        let sources = Self.files(in: "Sources", suffix: ".swift") + Self.files(in: "Tests", suffix: ".swift")
        let documentsRead = ["README.md", "EVALUATION.md", "BENCHMARKS.md", "training/README.md"] + Self.files(in: "docs", suffix: ".md")
        // This file's own comments and examples name missing ones on purpose.
        for file in sources + Self.files(in: "training", suffix: ".py") + documentsRead
        where !file.hasSuffix("/CommentCitationTests.swift") {
            let text = try String(contentsOf: Repository.url(file), encoding: .utf8)
            let kind: Kind = file.hasSuffix(".py") ? .python : file.hasSuffix(".md") ? .markdown : .swift
            let found = Self.citations(in: text, file: file, kind: kind)
            tests += found.tests
            documents += found.documents
        }
        print("comments cite \(tests.count) tests or suites and \(documents.count) documents")
        #expect(tests.count > 5 && documents.count > 5, "the scan found too little to mean anything")
        #expect(Self.missing(tests, targets: targets, suites: suites).isEmpty,
                "comments name tests that do not exist: \(Self.missing(tests, targets: targets, suites: suites))")
        #expect(Self.missingDocuments(documents).isEmpty,
                "comments name documents that do not exist: \(Self.missingDocuments(documents))")
    }

    /// The check itself: a suite, a method and a document that do not exist are found; real ones pass.
    @Test func theCheckFindsAMissingCitation() throws {
        let (targets, suites) = try Self.testInventory()
        let text = """
            // see NoiseSuppressorTests.everyPartLivesInTheOneArena and README.md
            // ArenaTests, NoiseSuppressorTests.noSuchTest and MISSING.md (FaultInjectionTests.swift is a file)
            """
        let found = Self.citations(in: text, file: "Sources/HearDSP/Example.swift", kind: .swift)
        #expect(found.tests.map(\.name) == ["NoiseSuppressorTests.everyPartLivesInTheOneArena", "ArenaTests",
                                            "NoiseSuppressorTests.noSuchTest", "FaultInjectionTests"])
        #expect(Self.missing(found.tests, targets: targets, suites: suites).map(\.name) == ["ArenaTests", "NoiseSuppressorTests.noSuchTest"])
        #expect(Self.missingDocuments(found.documents).map(\.name) == ["MISSING.md"])
    }
}
