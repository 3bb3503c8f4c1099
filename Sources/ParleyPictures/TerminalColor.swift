/// A colour as a cell asks for it; the `Terminal` maps it to what the real terminal can show.
public enum TerminalColor: Hashable, Sendable {
    /// The terminal's own default foreground or background.
    case `default`
    /// An index into the xterm 256-colour palette (0–15 are the user's themable system colours).
    case palette(UInt8)
    /// A 24-bit colour, shown exactly on direct-colour terminals and as the nearest palette colour elsewhere.
    case rgb(UInt8, UInt8, UInt8)
}

/// Text attributes of a cell.
public struct CellAttributes: OptionSet, Hashable, Sendable {
    /// The attribute bits.
    public let rawValue: UInt8
    /// Attributes from their bits.
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Bold (often also brighter).
    public static let bold = CellAttributes(rawValue: 1 << 0)
    /// Dim (half-bright).
    public static let dim = CellAttributes(rawValue: 1 << 1)
    /// Foreground and background swapped.
    public static let reverse = CellAttributes(rawValue: 1 << 2)
    /// Underlined.
    public static let underline = CellAttributes(rawValue: 1 << 3)
}

/// How a cell is painted: foreground, background and attributes.
public struct CellStyle: Hashable, Sendable {
    /// Colour of the character.
    public var foreground: TerminalColor
    /// Colour behind the character.
    public var background: TerminalColor
    /// Bold, dim, reverse, underline.
    public var attributes: CellAttributes

    /// A style from its parts; everything defaults to the terminal's own look.
    public init(
        foreground: TerminalColor = .default, background: TerminalColor = .default,
        attributes: CellAttributes = []
    ) {
        self.foreground = foreground
        self.background = background
        self.attributes = attributes
    }

    /// The terminal's default colours, no attributes.
    public static let plain = CellStyle()
}

/// What a terminal can show, from its terminfo colour count and the user's environment.
public enum ColorDepth: Int, Comparable, Sendable, CaseIterable {
    /// No colour: NO_COLOR is set or the terminal has fewer than 8 colours. Attributes only.
    case monochrome
    /// The 8 ANSI colours.
    case ansi8
    /// The 8 ANSI colours and their bright variants.
    case ansi16
    /// The xterm 256-colour palette (the main path: TERM=tmux-256color, xterm-256color).
    case palette256
    /// 24-bit colour through a direct-colour terminfo entry (e.g. TERM=xterm-direct).
    case direct

    /// Orders depths from fewest to most colours.
    public static func < (lhs: ColorDepth, rhs: ColorDepth) -> Bool { lhs.rawValue < rhs.rawValue }

    /// The depth for a terminal reporting `colors` (curses' COLORS) in an environment.
    ///
    /// NO_COLOR (set and not empty, per no-color.org) wins. Direct colour needs a terminfo entry with 2^24 colours:
    /// COLORTERM=truecolor alone does not switch it on, because curses can only send what the terminfo describes.
    public static func detect(colors: Int, environment: [String: String]) -> ColorDepth {
        if let noColor = environment["NO_COLOR"], !noColor.isEmpty { return .monochrome }
        switch colors {
        case (1 << 24)...: return .direct
        case 256...: return .palette256
        case 16...: return .ansi16
        case 8...: return .ansi8
        default: return .monochrome
        }
    }
}
