import ParleyPictures

/// Why a theme file was rejected; `description` names the line and what to write instead.
public enum ThemeFileError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A line without `=`.
    case missingEquals(line: Int, text: String)
    /// The name before `=` is not a colour role.
    case unknownRole(line: Int, name: String)
    /// The same role on two lines.
    case duplicateRole(line: Int, role: String, firstLine: Int)
    /// Fewer than two colours after `=`.
    case missingColors(line: Int, role: String)
    /// A colour that is neither 0…255, `#rrggbb` nor `default`.
    case badColor(line: Int, text: String)
    /// An attribute other than bold, dim, reverse, underline.
    case unknownAttribute(line: Int, name: String)

    public var description: String {
        switch self {
        case .missingEquals(let line, let text):
            "line \(line): expected `role = foreground background [attributes]`, got \"\(text)\""
        case .unknownRole(let line, let name):
            "line \(line): unknown colour role \"\(name)\"; roles are "
                + ColorRole.allCases.map(\.configName).joined(separator: ", ")
        case .duplicateRole(let line, let role, let firstLine):
            "line \(line): \(role) is already set on line \(firstLine)"
        case .missingColors(let line, let role):
            "line \(line): \(role) needs a foreground and a background colour (0…255, #rrggbb or default)"
        case .badColor(let line, let text):
            "line \(line): \"\(text)\" is not a colour; write 0…255 (the 256-colour palette), #rrggbb or default"
        case .unknownAttribute(let line, let name):
            "line \(line): unknown attribute \"\(name)\"; use bold, dim, reverse or underline"
        }
    }
}

extension ColorRole {
    /// The role's name in a theme file: `tile-border-speaking` for `.tileBorderSpeaking`.
    public var configName: String {
        String("\(self)".flatMap { $0.isUppercase ? ["-", Character($0.lowercased())] : [$0] })
    }
}

extension Theme {
    /// Parses a theme file: one `role = foreground background [bold] [dim] [reverse] [underline]` per line, colours
    /// as 0…255, `#rrggbb` or `default`; `#` at the start of a line is a comment. The styles replace the built-in ones
    /// on 256-colour and direct-colour terminals (8/16 colours and NO_COLOR keep their built-in looks).
    public static func parseOverrides(_ text: String) throws(ThemeFileError) -> [ColorRole: CellStyle] {
        let roles = Dictionary(uniqueKeysWithValues: ColorRole.allCases.map { ($0.configName, $0) })
        var styles: [ColorRole: CellStyle] = [:]
        var lineOf: [ColorRole: Int] = [:]
        for (offset, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let number = offset + 1
            let line = raw.trimmingCharacters(in: [" ", "\t", "\r"])
            if line.isEmpty || line.hasPrefix("#") { continue }
            guard let equals = line.firstIndex(of: "=") else { throw .missingEquals(line: number, text: line) }
            let name = line[..<equals].trimmingCharacters(in: [" ", "\t"]).lowercased()
            guard let role = roles[name] else { throw .unknownRole(line: number, name: name) }
            if let first = lineOf[role] { throw .duplicateRole(line: number, role: name, firstLine: first) }
            let words = line[line.index(after: equals)...].split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard words.count >= 2 else { throw .missingColors(line: number, role: name) }
            var style = CellStyle(
                foreground: try color(words[0], line: number),
                background: try color(words[1], line: number))
            for word in words.dropFirst(2) {
                switch word.lowercased() {
                case "bold": style.attributes.insert(.bold)
                case "dim": style.attributes.insert(.dim)
                case "reverse": style.attributes.insert(.reverse)
                case "underline": style.attributes.insert(.underline)
                default: throw .unknownAttribute(line: number, name: String(word))
                }
            }
            styles[role] = style
            lineOf[role] = number
        }
        return styles
    }

    private static func color(_ word: Substring, line: Int) throws(ThemeFileError) -> TerminalColor {
        if word.lowercased() == "default" { return .default }
        if let index = UInt8(word) { return .palette(index) }
        if word.hasPrefix("#"), word.count == 7, let value = UInt32(word.dropFirst(), radix: 16) {
            return .rgb(UInt8(value >> 16), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF))
        }
        throw .badColor(line: line, text: String(word))
    }
}

extension String {
    fileprivate func trimmingCharacters(in set: Set<Character>) -> String {
        guard let first = firstIndex(where: { !set.contains($0) }), let last = lastIndex(where: { !set.contains($0) })
        else { return "" }
        return String(self[first...last])
    }
}

extension Substring {
    fileprivate func trimmingCharacters(in set: Set<Character>) -> String { String(self).trimmingCharacters(in: set) }
}
