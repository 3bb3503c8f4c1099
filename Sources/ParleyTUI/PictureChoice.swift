import ParleyPictures

/// What `--picture` asks for.
public enum PictureMode: String, CaseIterable, Sendable {
    /// Pick the best the terminal can show (see `PictureChoice.choose`).
    case auto
    /// kitty's graphics protocol (real pixels).
    case kitty
    /// Sixel graphics (real pixels).
    case sixel
    /// 2x3 pixels per cell.
    case sextant
    /// 2x2 pixels per cell.
    case quadrant
    /// 1x2 pixels per cell (upper-half blocks).
    case half
    /// Luminance as shade characters, no colour.
    case shade

    /// Reads a `--picture` value, or says what the values are.
    public static func parse(_ text: String) throws(PictureModeError) -> PictureMode {
        guard let mode = PictureMode(rawValue: text.lowercased()) else {
            throw PictureModeError.unknown(text)
        }
        return mode
    }
}

/// Why a `--picture` value was refused.
public enum PictureModeError: Error, CustomStringConvertible, Equatable {
    /// Not one of the modes.
    case unknown(String)

    public var description: String {
        switch self {
        case .unknown(let text):
            return "'\(text)' is not a picture mode; use one of "
                + PictureMode.allCases.map(\.rawValue).joined(separator: ", ")
        }
    }
}

/// How a terminal draws video, and why: shown on the settings screen.
public struct PictureChoice: Hashable, Sendable {
    /// The colours of picture cells.
    public var colors: VideoColorMode
    /// The block characters (ignored when `colors` is `.shades` or `pixels` is set).
    public var cells: PictureCells
    /// Real pixels through a graphics protocol, or nil for character cells.
    public var pixels: PixelCanvas?
    /// Why, in a few words ("auto: 24-bit colour (COLORTERM=truecolor), quadrants (sextants not known to render
    /// here)").
    public var reason: String

    /// The mode's short name: "sextant 24-bit", "half 256", "shade".
    public var label: String {
        if let pixels { return "\(pixels.kind.rawValue) \(pixels.cell)" }
        switch colors {
        case .shades: return "shade"
        case .trueColor: return "\(cells.rawValue) 24-bit"
        case .palette256: return "\(cells.rawValue) 256"
        }
    }

    /// A choice from its parts.
    public init(colors: VideoColorMode, cells: PictureCells, pixels: PixelCanvas? = nil, reason: String) {
        self.colors = colors
        self.cells = cells
        self.pixels = pixels
        self.reason = reason
    }

    /// Chooses how to draw: `requested` wins where the colours allow it; `auto` takes sextants where the terminal is
    /// known to draw them (kitty, WezTerm, foot, Ghostty, Konsole, xterm 370+, never inside tmux, whose outer
    /// terminal is unknown), else quadrants in 24-bit colour and half blocks in 256 colours (in 256 colours a
    /// quadrant's two palette colours gain little over half blocks for several times the cost: docs/terminal.md).
    ///
    /// Pixel modes: `--picture kitty|sixel` is taken as asked (with an 8x16 cell when the terminal did not tell
    /// its cell size); `auto` takes kitty's protocol, then sixel, where the terminal answered that it has them and
    /// its cell size is known, never inside tmux (which drops kitty's commands and, before 3.4, sixel).
    public static func choose(
        _ requested: PictureMode, colors: ColorDepth, colorReason: String,
        environment: [String: String],
        graphics: TerminalGraphics = TerminalGraphics()
    ) -> PictureChoice {
        let videoColors = VideoColorMode(depth: colors)
        if videoColors == .shades || requested == .shade {
            return PictureChoice(
                colors: .shades, cells: .halfBlocks,
                reason: requested == .shade ? "--picture shade" : "shades: \(colorReason)")
        }
        let registers = graphics.colorRegisters ?? 256
        let cellText = graphics.cell.map { "cell \($0) pixels" } ?? "cell size unknown, 8x16 assumed"
        if requested == .kitty || requested == .sixel {
            let kind: PixelProtocol = requested == .kitty ? .kitty : .sixel
            return PictureChoice(
                colors: videoColors, cells: .halfBlocks,
                pixels: PixelCanvas(
                    kind: kind,
                    cell: graphics.cell
                        ?? CellPixelSize(
                            width: 8,
                            height: 16),
                    colorRegisters: registers,
                    sharedMemory: graphics.kittySharedMemory),
                reason: "--picture \(kind.rawValue), \(cellText)")
        }
        let inTmux = !(environment["TMUX"] ?? "").isEmpty
        if requested == .auto, !inTmux, let cell = graphics.cell, cell.width >= 2, cell.height >= 2 {
            if graphics.kitty {
                return PictureChoice(
                    colors: videoColors, cells: .halfBlocks,
                    pixels: PixelCanvas(
                        kind: .kitty, cell: cell,
                        sharedMemory: graphics.kittySharedMemory),
                    reason: "auto: kitty graphics (the terminal answered its query), \(cellText)"
                        + (graphics.kittySharedMemory ? ", pictures through shared memory" : ""))
            }
            if graphics.sixel {
                return PictureChoice(
                    colors: videoColors, cells: .halfBlocks,
                    pixels: PixelCanvas(kind: .sixel, cell: cell, colorRegisters: registers),
                    reason: "auto: sixel (device attributes list it), \(cellText), "
                        + "\(min(256, registers)) colours an image")
            }
        }
        let colorText = "\(videoColors == .trueColor ? "24-bit colour" : "256 colours") (\(colorReason))"
        switch requested {
        case .sextant:
            return PictureChoice(colors: videoColors, cells: .sextants, reason: "--picture sextant, \(colorText)")
        case .quadrant:
            return PictureChoice(colors: videoColors, cells: .quadrants, reason: "--picture quadrant, \(colorText)")
        case .half:
            return PictureChoice(colors: videoColors, cells: .halfBlocks, reason: "--picture half, \(colorText)")
        case .auto, .kitty, .sixel, .shade:
            if let terminal = sextantTerminal(environment) {
                return PictureChoice(
                    colors: videoColors, cells: .sextants,
                    reason: "auto: sextants (\(terminal) draws them), \(colorText)")
            }
            let why = inTmux ? "inside tmux the outer terminal is unknown" : "sextants not known to render here"
            return PictureChoice(
                colors: videoColors, cells: videoColors == .trueColor ? .quadrants : .halfBlocks,
                reason: "auto: \(videoColors == .trueColor ? "quadrants" : "half blocks") (\(why)), "
                    + colorText)
        }
    }

    /// The terminal that draws sextant characters itself (not from a font), as far as the environment tells.
    static func sextantTerminal(_ environment: [String: String]) -> String? {
        if !(environment["TMUX"] ?? "").isEmpty { return nil }
        let term = environment["TERM"] ?? ""
        let program = environment["TERM_PROGRAM"] ?? ""
        if term == "xterm-kitty" || environment["KITTY_WINDOW_ID"] != nil { return "kitty" }
        if program == "WezTerm" { return "WezTerm" }
        if program == "ghostty" || term == "xterm-ghostty" { return "Ghostty" }
        if term.hasPrefix("foot") { return "foot" }
        if environment["KONSOLE_VERSION"] != nil { return "Konsole" }
        if let version = environment["XTERM_VERSION"], let number = Int(version.filter(\.isNumber).prefix(3)),
            number >= 370
        {
            return "xterm \(number)"
        }
        return nil
    }
}

/// Whether video cells can be sent in 24-bit colour, and why.
public enum TrueColorDetection {
    /// Decides from what curses reports (`colors`, the terminfo `RGB`/`Tc` flags), the environment, and, inside
    /// tmux, the features tmux knows of its client terminal (`#{client_termfeatures}`; nil when not asked).
    ///
    /// Inside tmux only tmux's word counts: it turns 24-bit colour into 256 colours itself for a client without
    /// the RGB feature, whatever COLORTERM was inherited.
    public static func detect(
        colors: Int, terminfoRGB: Bool, environment: [String: String],
        tmuxClientFeatures: String?
    ) -> (trueColor: Bool, reason: String) {
        if let noColor = environment["NO_COLOR"], !noColor.isEmpty { return (false, "NO_COLOR is set") }
        if colors >= 1 << 24 { return (true, "terminfo \(environment["TERM"] ?? "") has 16M colours") }
        guard colors >= 256 else { return (false, "terminfo has \(colors) colours") }
        if terminfoRGB { return (true, "terminfo RGB flag") }
        if !(environment["TMUX"] ?? "").isEmpty {
            let features = (tmuxClientFeatures ?? "").split(separator: ",").map {
                $0.trimmingCharacters(in: .whitespaces)
            }
            if features.contains("RGB") { return (true, "tmux: the client terminal has RGB") }
            return (false, "tmux: the client terminal lacks RGB (terminal-features)")
        }
        let colorTerm = (environment["COLORTERM"] ?? "").lowercased()
        if colorTerm == "truecolor" || colorTerm == "24bit" { return (true, "COLORTERM=\(colorTerm)") }
        return (false, "terminfo has 256 colours, COLORTERM is not truecolor")
    }
}
