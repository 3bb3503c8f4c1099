/// Draws share updates as a terminal's escape sequences (cursor moves, SGR, text): how a recording's asciicast
/// holds a shared terminal, and how a terminal that should show the shared screen as it is can be driven. The
/// sequences are built from cells, never copied from the shared program, and hold no control characters but ESC's
/// own sequences: a cell's text is the emulator's characters, and a control character in it is drawn as U+FFFD.
public enum ScreenPainter {
    /// The bytes that take a terminal showing the screen update `base` left to the screen after `update` (a full
    /// screen first clears it).
    public static func bytes(for update: ShareUpdate) -> [UInt8] {
        var out = update.kind == .fullScreen ? "\u{1B}[0m\u{1B}[H\u{1B}[2J" : ""
        var current: ShareStyle?
        for span in update.spans {
            if current != span.style {
                out += sgr(span.style)
                current = span.style
            }
            var cursor: Int?
            for (offset, cell) in span.cells.enumerated() where cell.width != 0 {
                let column = span.column + offset
                // Each cell where it belongs, whatever the one before took.
                if cursor != column { out += "\u{1B}[\(span.row + 1);\(column + 1)H" }
                out += cell.text.isEmpty ? " " : printable(cell.text)
                cursor = column + Int(cell.width)
            }
        }
        out += "\u{1B}[0m\u{1B}[\(update.cursor.row + 1);\(update.cursor.column + 1)H"
        out += update.cursor.visible ? "\u{1B}[?25h" : "\u{1B}[?25l"
        return Array(out.utf8)
    }

    /// The SGR sequence that sets exactly `style` (reset first).
    static func sgr(_ style: ShareStyle) -> String {
        var codes = ["0"]
        let attributes: [(ShareAttributes, String)] = [
            (.bold, "1"), (.italic, "3"), (.underline, "4"), (.doubleUnderline, "21"), (.blink, "5"), (.reverse, "7"),
            (.strike, "9"),
        ]
        for (attribute, code) in attributes where style.attributes.contains(attribute) { codes.append(code) }
        codes += color(style.foreground, base: 38)
        codes += color(style.background, base: 48)
        return "\u{1B}[" + codes.joined(separator: ";") + "m"
    }

    static func color(_ color: ShareColor, base: Int) -> [String] {
        switch color {
        case .terminalDefault: []
        case .indexed(let index): ["\(base)", "5", "\(index)"]
        case .rgb(let red, let green, let blue): ["\(base)", "2", "\(red)", "\(green)", "\(blue)"]
        }
    }

    /// `text` with any control character (C0, DEL, C1) replaced.
    static func printable(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isControl) else { return text }
        return String(String.UnicodeScalarView(text.unicodeScalars.map { isControl($0) ? "\u{FFFD}" : $0 }))
    }

    static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
    }
}
