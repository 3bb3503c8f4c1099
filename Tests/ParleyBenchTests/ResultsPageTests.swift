import Foundation
import Testing

@testable import ParleyBench

@Suite("Results page")
struct ResultsPageTests {
    struct Replacement: CustomTestStringConvertible, Sendable {
        var name: String
        var page: String
        var section: String
        var content: String
        var expected: String
        var testDescription: String { name }
    }

    static let replacements: [Replacement] = [
        Replacement(
            name: "a block is replaced; the bytes around it, non-ASCII and CRLF lines included, stay as they were",
            page: "# Ti\u{301}tle é — 1.14×\r\nintro\r\n\n<!-- parley-bench wire: begin -->\nold table\n\nold notes\n"
                + "<!-- parley-bench wire: end -->\ntrailer ✓\n\n",
            section: "wire",
            content: "new header\n\n### new table",
            expected: "# Ti\u{301}tle é — 1.14×\r\nintro\r\n\n<!-- parley-bench wire: begin -->\n"
                + "new header\n\n### new table\n<!-- parley-bench wire: end -->\ntrailer ✓\n\n"),
        Replacement(
            name: "an empty block is filled",
            page: "<!-- parley-bench codecs: begin -->\n<!-- parley-bench codecs: end -->",
            section: "codecs",
            content: "table",
            expected: "<!-- parley-bench codecs: begin -->\ntable\n<!-- parley-bench codecs: end -->"),
        Replacement(
            name: "newlines around the content are dropped, so the block has none at its edges",
            page: "<!-- parley-bench codecs: begin -->\nold\n<!-- parley-bench codecs: end -->\n",
            section: "codecs",
            content: "\n\ntable\n\n\n",
            expected: "<!-- parley-bench codecs: begin -->\ntable\n<!-- parley-bench codecs: end -->\n"),
        Replacement(
            name: "empty content leaves the two lines next to each other",
            page: "<!-- parley-bench codecs: begin -->\nold\n<!-- parley-bench codecs: end -->\n",
            section: "codecs",
            content: "",
            expected: "<!-- parley-bench codecs: begin -->\n<!-- parley-bench codecs: end -->\n"),
        Replacement(
            name: "only the named section changes; its neighbours' blocks and markers stay",
            page: "<!-- parley-bench wire: begin -->\nwire\n<!-- parley-bench wire: end -->\n"
                + "<!-- parley-bench relay: begin -->\nrelay\n<!-- parley-bench relay: end -->\n",
            section: "relay",
            content: "new relay",
            expected: "<!-- parley-bench wire: begin -->\nwire\n<!-- parley-bench wire: end -->\n"
                + "<!-- parley-bench relay: begin -->\nnew relay\n<!-- parley-bench relay: end -->\n"),
        Replacement(
            name: "a marker quoted inside a line is prose, not a marker",
            page: "Sections sit between `<!-- parley-bench wire: begin -->` and its end line.\n"
                + "<!-- parley-bench wire: begin -->\nold\n<!-- parley-bench wire: end -->\n",
            section: "wire",
            content: "new",
            expected: "Sections sit between `<!-- parley-bench wire: begin -->` and its end line.\n"
                + "<!-- parley-bench wire: begin -->\nnew\n<!-- parley-bench wire: end -->\n"),
    ]

    @Test("replacing a section's block", arguments: replacements)
    func replaces(_ row: Replacement) throws {
        var page = ResultsPage(file: "docs/benchmarks.md", text: row.page)
        try page.replace(row.section, with: row.content)
        #expect(Array(page.text.utf8) == Array(row.expected.utf8), "\(page.text.debugDescription)")
        // A second run with the same tables leaves the same page.
        try page.replace(row.section, with: row.content)
        #expect(Array(page.text.utf8) == Array(row.expected.utf8))
    }

    struct Refusal: CustomTestStringConvertible, Sendable {
        var name: String
        var page: String
        var error: ResultsPageError
        var testDescription: String { name }
    }

    static let file = "docs/benchmarks.md"
    static let begin = "<!-- parley-bench wire: begin -->"
    static let end = "<!-- parley-bench wire: end -->"
    static let refusals: [Refusal] = [
        Refusal(
            name: "no begin line", page: "intro\n\(end)\n",
            error: .missingMarker(file: file, section: "wire", marker: begin)),
        Refusal(
            name: "no end line", page: "\(begin)\ntable\n",
            error: .missingMarker(file: file, section: "wire", marker: end)),
        Refusal(
            name: "no lines at all, only another section's",
            page: "<!-- parley-bench relay: begin -->\n<!-- parley-bench relay: end -->\n",
            error: .missingMarker(file: file, section: "wire", marker: begin)),
        Refusal(
            name: "a begin line twice", page: "\(begin)\n\(begin)\ntable\n\(end)\n",
            error: .duplicatedMarker(file: file, section: "wire", marker: begin, count: 2)),
        Refusal(
            name: "an end line three times", page: "\(begin)\n\(end)\nx\n\(end)\ny\n\(end)\n",
            error: .duplicatedMarker(file: file, section: "wire", marker: end, count: 3)),
        Refusal(
            name: "a pair twice", page: "\(begin)\na\n\(end)\n\(begin)\nb\n\(end)\n",
            error: .duplicatedMarker(file: file, section: "wire", marker: begin, count: 2)),
        Refusal(
            name: "the end before its begin", page: "\(end)\ntable\n\(begin)\n",
            error: .endBeforeBegin(file: file, section: "wire")),
        Refusal(
            name: "a begin line with trailing text is not a begin line", page: "\(begin) old\ntable\n\(end)\n",
            error: .missingMarker(file: file, section: "wire", marker: begin)),
        Refusal(
            name: "a CRLF begin line is not a begin line", page: "\(begin)\r\ntable\n\(end)\n",
            error: .missingMarker(file: file, section: "wire", marker: begin)),
    ]

    @Test("a page that cannot take the section is refused and left as it was", arguments: refusals)
    func refuses(_ row: Refusal) {
        var page = ResultsPage(file: Self.file, text: row.page)
        #expect(throws: row.error) { try page.replace("wire", with: "new table") }
        #expect(throws: row.error) { try page.check("wire") }
        #expect(page.text == row.page)
    }

    @Test("errors name the file, the section and the line to add")
    func messages() {
        #expect(
            ResultsPageError.missingMarker(file: "docs/benchmarks.md", section: "wire", marker: Self.begin).description
                == "docs/benchmarks.md has no line <!-- parley-bench wire: begin -->: put the wire section's begin "
                + "and end lines where its tables belong")
        #expect(
            ResultsPageError.duplicatedMarker(file: "p.md", section: "call", marker: "<!-- x -->", count: 2).description
                == "p.md has the line <!-- x --> 2 times: keep one begin and one end line for the call section")
        #expect(
            ResultsPageError.endBeforeBegin(file: "p.md", section: "load").description
                == "p.md has the load section's end line before its begin line: put the begin line first")
    }

    @Test("a block is its header line, then each table, a blank line apart")
    func block() {
        var table = BenchTable(title: "Wire", columns: ["operation", "ns/op"], notes: ["one thread"])
        table.add(["peek", "1.5"])
        let header = ResultsPage.header(
            command: ".build/release/parley-bench wire --markdown docs/benchmarks.md",
            machine: "2026-11-26 09:41 UTC, AMD EPYC, 2 cores, load average 3.10", seconds: 1)
        #expect(
            ResultsPage.block(header: header, tables: [table, table])
                == "Measured with `.build/release/parley-bench wire --markdown docs/benchmarks.md` on 2026-11-26 "
                + "09:41 UTC, AMD EPYC, 2 cores, load average 3.10; these tables took 1 s.\n\n"
                + table.markdown + "\n\n" + table.markdown)
    }

    @Test(
        "words are quoted only where a shell would read them",
        arguments: [
            ("wire", "wire"), ("docs/benchmarks.md", "docs/benchmarks.md"), ("0,50", "0,50"), ("a b", "'a b'"),
            ("it's", #"'it'\''s'"#), ("", "''"), ("$HOME", "'$HOME'"), ("a*", "'a*'"),
        ])
    func quoting(word: String, quoted: String) {
        #expect(ResultsPage.shellQuoted(word) == quoted)
    }

    @Test("the command line puts PARLEY_ settings first, sorted")
    func commandLine() {
        let line = ResultsPage.commandLine(
            settings: ["PARLEY_CALL_BENCH_SECONDS": "20", "PARLEY_CALL_BENCH_RUNS": "3"],
            arguments: [".build/release/parley-bench", "call", "--markdown", "docs/benchmarks.md"])
        #expect(
            line == "PARLEY_CALL_BENCH_RUNS=3 PARLEY_CALL_BENCH_SECONDS=20 .build/release/parley-bench call "
                + "--markdown docs/benchmarks.md")
    }

    @Test("the results page has exactly one begin and one end line for every section a run writes, and no others")
    func benchmarksPage() throws {
        let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("docs/benchmarks.md").path
        let page = ResultsPage(file: file, text: try String(contentsOfFile: file, encoding: .utf8))
        for section in BenchSection.allCases {
            do { try page.check(section.rawValue) } catch { Issue.record("\(error)") }
        }
        #expect(Set(page.markedSections) == Set(BenchSection.allCases.map(\.rawValue)), "\(page.markedSections)")
    }
}
