/// A part of the results page (`docs/benchmarks.md`) that one benchmark run writes: its own marker pair holds the
/// tables it printed. Suites share sections where they run the same benchmark (`render` and `picture` both measure
/// `picture`; `call` and `picture` both measure `simulcast`), so a section is written by whichever ran it last.
public enum BenchSection: String, CaseIterable, Sendable {
    case codecs, wire, relay, load, messaging, cluster, latency, picture, render, echo, encryption, simulcast, call,
        broadcast
    case mouthToEar = "mouth-to-ear"
    case network
    case share
    case browser
    case firstRun = "first-run"
}

/// The results page as text with one marked block per section, and the one edit a run makes to it: replace what is
/// between a section's markers, keeping every other byte. Pure: reading and writing the file is the caller's.
public struct ResultsPage: Sendable, Equatable {
    /// The page's path, for messages.
    public var file: String
    /// The page's whole text.
    public private(set) var text: String

    /// A page read from `file`.
    public init(file: String, text: String) {
        self.file = file
        self.text = text
    }

    /// The line that opens a section's block.
    public static func beginMarker(_ section: String) -> String { "<!-- parley-bench \(section): begin -->" }

    /// The line that closes a section's block.
    public static func endMarker(_ section: String) -> String { "<!-- parley-bench \(section): end -->" }

    /// Throws unless the page holds exactly one begin and one end line for `section`, begin first.
    public func check(_ section: String) throws(ResultsPageError) {
        _ = try markerLines(section)
    }

    /// What is between a section's markers, without the newlines that end the begin line and precede the end line.
    public func content(of section: String) throws(ResultsPageError) -> Substring {
        let (begin, end) = try markerLines(section)
        // The begin line ends in "\n"; the end line starts after one (both found by lines(), so both exist).
        let start = text.utf8.index(after: begin.upperBound)
        guard start < end.lowerBound else { return "" }
        return text[start..<text.utf8.index(before: end.lowerBound)]
    }

    /// Puts `content` on the lines between a section's markers, in place of what was there. Leading and trailing
    /// newlines of `content` are dropped, so running twice with the same tables leaves the same page.
    public mutating func replace(_ section: String, with content: String) throws(ResultsPageError) {
        let (begin, end) = try markerLines(section)
        var trimmed = Substring(content)
        while trimmed.first == "\n" { trimmed.removeFirst() }
        while trimmed.last == "\n" { trimmed.removeLast() }
        let middle = trimmed.isEmpty ? "\n" : "\n" + trimmed + "\n"
        text = String(text[..<begin.upperBound]) + middle + String(text[end.lowerBound...])
    }

    /// Every section named by a marker line on the page, begin or end, in the order they first appear (stray or
    /// misspelt sections included, so a test can find them).
    public var markedSections: [String] {
        var seen: [String] = []
        for line in lines() {
            let words = text[line]
            for suffix in [": begin -->", ": end -->"]
            where words.hasPrefix("<!-- parley-bench ") && words.hasSuffix(suffix) {
                let name = String(words.dropFirst("<!-- parley-bench ".count).dropLast(suffix.count))
                if !seen.contains(name) { seen.append(name) }
            }
        }
        return seen
    }

    /// The block a run writes for a section: the line saying which run it was, then each table.
    public static func block(header: String, tables: [BenchTable]) -> String {
        ([header] + tables.map(\.markdown)).joined(separator: "\n\n")
    }

    /// The line that starts a block: the exact command, when and where it ran, and how long the section took.
    public static func header(command: String, machine: String, seconds: Int) -> String {
        "Measured with `\(command)` on \(machine); these tables took \(seconds) s."
    }

    /// A command line as a shell would take it back: `PARLEY_…=value` settings first (sorted), then the arguments,
    /// each quoted only when it holds a character the shell would read.
    public static func commandLine(settings: [String: String], arguments: [String]) -> String {
        let assignments = settings.sorted { $0.key < $1.key }.map { "\($0.key)=\(shellQuoted($0.value))" }
        return (assignments + arguments.map(shellQuoted)).joined(separator: " ")
    }

    /// `word` unchanged when the shell reads it as itself, else in single quotes (a quote inside as `'\''`).
    public static func shellQuoted(_ word: String) -> String {
        let plain = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./,:=+@%")
        if !word.isEmpty, word.allSatisfy(plain.contains) { return word }
        return "'" + word.replacingAll("'", with: #"'\''"#) + "'"
    }

    /// The begin and end lines of a section (each range without its "\n"), checked: one of each, begin first.
    private func markerLines(_ section: String) throws(ResultsPageError) -> (Range<String.Index>, Range<String.Index>) {
        let (beginLine, endLine) = (Self.beginMarker(section), Self.endMarker(section))
        let begins = lines().filter { text[$0] == beginLine }
        let ends = lines().filter { text[$0] == endLine }
        guard let begin = begins.first else {
            throw ResultsPageError.missingMarker(file: file, section: section, marker: beginLine)
        }
        guard let end = ends.first else {
            throw ResultsPageError.missingMarker(file: file, section: section, marker: endLine)
        }
        guard begins.count == 1 else {
            throw ResultsPageError.duplicatedMarker(
                file: file, section: section, marker: beginLine, count: begins.count)
        }
        guard ends.count == 1 else {
            throw ResultsPageError.duplicatedMarker(file: file, section: section, marker: endLine, count: ends.count)
        }
        guard begin.upperBound < end.lowerBound else {
            throw ResultsPageError.endBeforeBegin(file: file, section: section)
        }
        return (begin, end)
    }

    /// Each line's range, without its "\n"; split on the byte, so a "\r\n" line keeps its "\r" (and matches no
    /// marker) and every other byte of the page stays where it was.
    private func lines() -> [Range<String.Index>] {
        var ranges: [Range<String.Index>] = []
        var start = text.utf8.startIndex
        var index = start
        while index < text.utf8.endIndex {
            if text.utf8[index] == UInt8(ascii: "\n") {
                ranges.append(start..<index)
                start = text.utf8.index(after: index)
            }
            index = text.utf8.index(after: index)
        }
        ranges.append(start..<text.utf8.endIndex)
        return ranges
    }
}

/// Why a run cannot write its tables into the results page; each names the section and the file.
public enum ResultsPageError: Error, Equatable, CustomStringConvertible {
    /// A section's begin or end line is not on the page.
    case missingMarker(file: String, section: String, marker: String)
    /// A section's begin or end line is on the page more than once.
    case duplicatedMarker(file: String, section: String, marker: String, count: Int)
    /// A section's end line comes before its begin line.
    case endBeforeBegin(file: String, section: String)

    public var description: String {
        switch self {
        case .missingMarker(let file, let section, let marker):
            "\(file) has no line \(marker): put the \(section) section's begin and end lines where its tables belong"
        case .duplicatedMarker(let file, let section, let marker, let count):
            "\(file) has the line \(marker) \(count) times: keep one begin and one end line for the \(section) section"
        case .endBeforeBegin(let file, let section):
            "\(file) has the \(section) section's end line before its begin line: put the begin line first"
        }
    }
}

extension String {
    /// The string with every `target` replaced, without Foundation.
    fileprivate func replacingAll(_ target: Character, with replacement: String) -> String {
        var out = ""
        for character in self { if character == target { out += replacement } else { out.append(character) } }
        return out
    }
}
