import Foundation
import ParleyProcesses
import Testing

/// One cell of `tmux capture-pane -e`: its character and the SGR state it was drawn with.
struct CapturedCell: Equatable {
    var character: Character
    var foreground = "default"
    var background = "default"
    var bold = false
}

/// Colour goldens: the chrome (header, borders, names, chat, control bar) compared colour for colour, and every
/// picture checked to be a picture: enough distinct colours that a blank, flat or placeholder tile fails.
enum ColourGolden {
    /// Parses capture-pane -e rows into cells (each row starts from a reset, as tmux writes them).
    static func cells(_ rows: [String]) -> [[CapturedCell]] {
        var style = CapturedCell(character: " ")
        return rows.map { row in
            var cells: [CapturedCell] = []
            var scalars = Array(row.unicodeScalars)[...]
            while let scalar = scalars.first {
                if scalar == "\u{1B}", scalars.dropFirst().first == "[" {
                    guard let end = scalars.firstIndex(where: { $0 == "m" }) else { break }
                    let body = String(String.UnicodeScalarView(scalars[(scalars.startIndex + 2)..<end]))
                    apply(body, to: &style)
                    scalars = scalars[(end + 1)...]
                    continue
                }
                var cell = style
                cell.character = Character(scalar)
                cells.append(cell)
                scalars = scalars.dropFirst()
            }
            return cells
        }
    }

    static func apply(_ body: String, to style: inout CapturedCell) {
        var codes = body.split(separator: ";", omittingEmptySubsequences: false).map { Int($0) ?? 0 }[...]
        if codes.isEmpty { codes = [0] }
        while let code = codes.popFirst() {
            switch code {
            case 0: style = CapturedCell(character: " ")
            case 1: style.bold = true
            case 22: style.bold = false
            case 39: style.foreground = "default"
            case 49: style.background = "default"
            case 30...37: style.foreground = "\(code - 30)"
            case 40...47: style.background = "\(code - 40)"
            case 90...97: style.foreground = "\(code - 90 + 8)"
            case 100...107: style.background = "\(code - 100 + 8)"
            case 38, 48:
                var value = "?"
                if codes.first == 5 {
                    codes = codes.dropFirst()
                    value = "\(codes.popFirst() ?? 0)"
                } else if codes.first == 2 {
                    codes = codes.dropFirst()
                    value = "#" + (0..<3).map { _ in String(format: "%02x", codes.popFirst() ?? 0) }.joined()
                }
                if code == 38 { style.foreground = value } else { style.background = value }
            default: break
            }
        }
    }

    /// A picture cell: '▀' or '▄', or '█' for one in a single colour (never bold, unlike the microphone meter's).
    static func isPicture(_ cell: CapturedCell) -> Bool {
        cell.character == "▀" || cell.character == "▄" || (cell.character == "█" && !cell.bold)
    }
    static let borders = Set("┌┐└┘─│┏┓┗┛━┃╔╗╚╝═║▛▜▙▟")

    /// The chrome's colours, one line per row as runs `fg/bg[/b]×count`, with what changes from run to run made
    /// fixed: pictures are `picture`, tile borders `border` (the speaking and selected highlights follow live
    /// audio and timers), the call clock's digits and the microphone meter take their row's neighbours' style.
    static func chrome(_ rows: [[CapturedCell]]) -> String {
        rows.map { row -> String in
            var runs: [(String, Int)] = []
            for cell in row {
                let code: String
                if isPicture(cell) {
                    code = "picture"
                } else if borders.contains(cell.character) {
                    code = "border"
                } else if cell.character == "█" || cell.character == "·" {
                    code = "meter"
                } else {
                    code = "\(cell.foreground)/\(cell.background)" + (cell.bold ? "/b" : "")
                }
                if let last = runs.last, last.0 == code {
                    runs[runs.count - 1].1 += 1
                } else {
                    runs.append((code, 1))
                }
            }
            return runs.map { "\($0.0)×\($0.1)" }.joined(separator: " ")
        }.joined(separator: "\n")
    }

    /// Compares the chrome with `NAME.colours.txt` (recorded with PARLEY_RECORD_GOLDEN=1) and checks that every
    /// picture on screen (runs of 8 cells or more) shows at least `minimumColours` colours over its rows; with
    /// `picturesExpected`, at least one must be there.
    static func check(
        _ escapes: [String], named name: String, minimumColours: Int = 8, picturesExpected: Bool = true
    ) throws {
        let rows = cells(escapes)
        let actual = chrome(rows)
        let url = Golden.folder.appendingPathComponent(name + ".colours.txt")
        if ProcessInfo.processInfo.environment["PARLEY_RECORD_GOLDEN"] == "1" {
            try (actual + "\n").write(to: url, atomically: true, encoding: .utf8)
        } else if let stored = try? String(contentsOf: url, encoding: .utf8) {
            let expected = stored.hasSuffix("\n") ? String(stored.dropLast()) : stored
            if actual != expected {
                let a = actual.components(separatedBy: "\n")
                let e = expected.components(separatedBy: "\n")
                let row = zip(a, e).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? min(a.count, e.count)
                Issue.record(
                    """
                    colours differ from golden \(name).colours.txt at row \(row):
                      expected: \(row < e.count ? e[row] : "(end)")
                      actual:   \(row < a.count ? a[row] : "(end)")
                    """)
            }
        } else {
            Issue.record("golden \(name).colours.txt is missing; record it with PARLEY_RECORD_GOLDEN=1 swift test")
        }
        // A picture is a block of consecutive rows whose picture runs start in the same column.
        var pictures: [(column: Int, firstRow: Int, lastRow: Int, colours: Set<String>)] = []
        for (y, row) in rows.enumerated() {
            var x = 0
            while x < row.count {
                guard isPicture(row[x]) else {
                    x += 1
                    continue
                }
                let start = x
                var colours = Set<String>()
                while x < row.count, isPicture(row[x]) {
                    colours.insert(row[x].foreground)
                    // Under '█' the background does not show.
                    if row[x].character != "█" { colours.insert(row[x].background) }
                    x += 1
                }
                guard x - start >= 8 else { continue }
                if let index = pictures.lastIndex(where: { $0.column == start && $0.lastRow == y - 1 }) {
                    pictures[index].lastRow = y
                    pictures[index].colours.formUnion(colours)
                } else {
                    pictures.append((start, y, y, colours))
                }
            }
        }
        #expect(!pictures.isEmpty || !picturesExpected, "\(name): no picture on screen")
        for picture in pictures {
            #expect(
                picture.colours.count >= minimumColours,
                """
                \(name): the picture at row \(picture.firstRow), column \(picture.column) shows \(picture.colours.count) \
                colours over \(picture.lastRow - picture.firstRow + 1) rows
                """)
        }
    }
}
