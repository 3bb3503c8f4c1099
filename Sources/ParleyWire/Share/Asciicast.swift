import Foundation

/// A shared terminal as an asciicast v2 file (asciinema's format: a JSON header line, then one JSON array a line,
/// `[seconds, "o", text]`), written beside a recording's WebM on the same timeline: each update drawn by
/// `ScreenPainter`.
public struct AsciicastWriter: Sendable {
    public let columns: Int
    public let rows: Int

    public init(columns: Int, rows: Int) {
        self.columns = columns
        self.rows = rows
    }

    /// The header line: the size, when the recording started (seconds since 1970) and its title.
    public func header(startedAt: Double, title: String) -> String {
        let object: [String: Any] = [
            "version": 2, "width": columns, "height": rows, "timestamp": Int(startedAt), "title": title,
            "env": ["TERM": "xterm-256color"],
        ]
        return Self.line(object)
    }

    /// The output event drawing `update`, `seconds` after the recording started.
    public func event(_ update: ShareUpdate, at seconds: Double) -> String {
        let text = String(decoding: ScreenPainter.bytes(for: update), as: UTF8.self)
        return Self.line([(seconds * 1_000_000).rounded() / 1_000_000, "o", text])
    }

    /// The event saying the shared terminal took a new size, `seconds` after the recording started.
    public func resize(columns: Int, rows: Int, at seconds: Double) -> String {
        Self.line([(seconds * 1_000_000).rounded() / 1_000_000, "r", "\(columns)x\(rows)"])
    }

    private static func line(_ object: Any) -> String {
        // Only strings, numbers, arrays and dictionaries of them: serialisation cannot fail.
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
        return String(decoding: data, as: UTF8.self) + "\n"
    }
}
