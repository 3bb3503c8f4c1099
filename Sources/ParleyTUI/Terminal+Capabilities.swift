import CCursesShim
import CNcursesw
import Foundation
import ParleyPictures

#if canImport(Glibc)
import Glibc
#endif

/// How a terminal shows pictures, found when it opens.
struct PictureSetup {
    /// How video is drawn, and why.
    var choice: PictureChoice
    /// Picture cells in 24-bit colour on a terminal whose terminfo has 256 (COLORTERM, RGB/Tc, tmux's RGB feature):
    /// `PictureOutput` writes them as SGR 38;2/48;2 itself.
    var trueColor = false
    /// Parley's own output of picture cells, with the terminfo strings it writes; nil to leave them to curses.
    var output: PictureOutput?
    var capabilities: PictureCapabilities?
    /// The kitty or sixel writer in the pixel modes.
    var pixelWriter: PixelPictureWriter?
    /// Inside tmux, a watch on its client terminal (which a re-attach may change).
    var tmuxWatch: TmuxClientWatch?
}

/// What the terminal can show: the character type, colours, pictures, and tmux's client terminal.
extension Terminal {
    /// Switches LC_CTYPE to C.UTF-8 (or C.utf8) when the current one is not UTF-8.
    static func ensureUTF8CharacterType() {
        func isUTF8() -> Bool {
            guard let codeset = nl_langinfo(nl_item(CODESET)) else { return false }
            let name = String(cString: codeset).uppercased()
            return name == "UTF-8" || name == "UTF8"
        }
        guard !isUTF8() else { return }
        for candidate in ["C.UTF-8", "C.utf8", "en_US.UTF-8"] where setlocale(LC_CTYPE, candidate) != nil {
            if isUTF8() { return }
        }
    }

    /// What the terminal answers about kitty graphics, sixel and its cell size, when a pixel mode may be chosen
    /// (not with PARLEY_NO_TERMINAL_QUERY=1 or TERM=dumb).
    static func askGraphics(_ options: Options) -> TerminalGraphics {
        guard options.picture == .auto || options.picture == .kitty || options.picture == .sixel,
            options.environment["PARLEY_NO_TERMINAL_QUERY"] != "1", (options.environment["TERM"] ?? "") != "dumb"
        else { return TerminalGraphics() }
        return TerminalGraphics.ask()
    }

    /// How pictures are drawn on a terminal of `depth` (curses is open: its terminfo is read).
    static func choosePictures(depth: ColorDepth, options: Options, graphics: TerminalGraphics) -> PictureSetup {
        var trueColor = (depth == .direct, depth == .direct ? "terminfo has 16M colours" : "")
        let terminfoRGB = parley_curses_flag_capability("RGB") != 0 || parley_curses_flag_capability("Tc") != 0
        let clientFeatures = depth == .palette256 ? Self.tmuxClientFeatures(options.environment) : nil
        if depth == .palette256 {
            trueColor = TrueColorDetection.detect(
                colors: Int(parley_curses_colors()), terminfoRGB: terminfoRGB,
                environment: options.environment, tmuxClientFeatures: clientFeatures)
        } else if depth != .direct {
            trueColor.1 =
                depth == .monochrome
                ? "no colour (NO_COLOR or a monochrome terminal)"
                : "the terminal has \(depth == .ansi16 ? 16 : 8) colours"
        }
        var setup = PictureSetup(choice: PictureChoice(colors: .shades, cells: .halfBlocks, reason: ""))
        if depth == .palette256 || depth == .direct,
            options.environment["PARLEY_PICTURES_VIA_CURSES"] != "1",
            case let capabilities = Self.terminfoPictureCapabilities(directSGR: depth == .palette256 && trueColor.0),
            let output = PictureOutput(capabilities: capabilities)
        {
            setup.trueColor = depth == .palette256 && trueColor.0
            setup.output = output
            setup.capabilities = capabilities
        }

        let videoDepth: ColorDepth = depth == .direct || setup.trueColor ? .direct : depth
        let colorReason =
            trueColor.0 && videoDepth != .direct
            ? "\(trueColor.1), but 24-bit pictures need Parley's own picture output (PARLEY_PICTURES_VIA_CURSES=1)"
            : trueColor.1
        setup.choice = PictureChoice.choose(
            options.picture, colors: videoDepth, colorReason: colorReason,
            environment: options.environment, graphics: graphics)
        if let canvas = setup.choice.pixels {
            if setup.capabilities != nil {
                setup.pixelWriter = PixelPictureWriter(canvas: canvas)
            } else {
                setup.choice = PictureChoice.choose(
                    .auto, colors: videoDepth, colorReason: colorReason,
                    environment: options.environment)
                setup.choice.reason +=
                    "; \(canvas.kind.rawValue) needs Parley's own picture output, which this "
                    + "terminal's terminfo or PARLEY_PICTURES_VIA_CURSES=1 rules out"
            }
        }

        if depth == .palette256, !terminfoRGB, setup.output != nil, setup.pixelWriter == nil,
            !(options.environment["TMUX"] ?? "").isEmpty,
            (options.environment["NO_COLOR"] ?? "").isEmpty
        {
            let environment = options.environment
            setup.tmuxWatch = TmuxClientWatch(initial: clientFeatures) { Self.tmuxClientFeatures(environment) }
        }
        return setup
    }

    /// What tmux knows of the terminal its client runs in (`#{client_termfeatures}`), or nil outside tmux or
    /// when tmux does not answer within a second.
    static func tmuxClientFeatures(_ environment: [String: String]) -> String? {
        guard !(environment["TMUX"] ?? "").isEmpty else { return nil }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["tmux", "display-message", "-p", "#{client_termfeatures}"]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return nil }
        let deadline = Date().addingTimeInterval(1)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        if process.isRunning {
            process.terminate()
            return nil
        }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Inside tmux, after the client terminal changed (a re-attach): pictures in 24-bit colour or in 256 as the
    /// new client allows, every cell repainted.
    func followTmuxClient() {
        guard let watch = tmuxWatch, case let latest = watch.latest, latest.changes != tmuxChanges else { return }
        tmuxChanges = latest.changes
        let trueColor = TrueColorDetection.detect(
            colors: Int(parley_curses_colors()), terminfoRGB: false,
            environment: environment, tmuxClientFeatures: latest.features)
        guard trueColor.trueColor != colors.pictureTrueColor else { return }
        let capabilities = Self.terminfoPictureCapabilities(directSGR: trueColor.trueColor)
        guard let output = PictureOutput(capabilities: capabilities) else { return }
        colors.pictureTrueColor = trueColor.trueColor
        pictureOutput = output
        pictureCapabilities = capabilities
        pictureChoice = PictureChoice.choose(
            requestedPicture, colors: trueColor.trueColor ? .direct : colorDepth,
            colorReason: trueColor.reason + " (after a re-attach)",
            environment: environment)
        previous = nil
    }

    /// Reads the terminfo strings the picture path needs (copied: terminfo's buffers belong to curses).
    static func terminfoPictureCapabilities(directSGR: Bool) -> PictureCapabilities {
        func string(_ name: String) -> [CChar]? {
            guard let value = parley_curses_string_capability(name) else { return nil }
            return Array(UnsafeBufferPointer(start: value, count: strlen(value) + 1))
        }
        func bytes(_ value: UnsafePointer<CChar>?) -> [UInt8]? {
            guard let value else { return nil }
            return Array(UnsafeRawBufferPointer(start: value, count: strlen(value)))
        }
        let setaf = string("setaf")
        let setab = string("setab")
        let cup = string("cup")
        let cuf = string("cuf")
        let cub = string("cub")
        return PictureCapabilities(
            saveCursor: string("sc").flatMap { bytes($0) } ?? [],
            restoreCursor: string("rc").flatMap { bytes($0) } ?? [],
            resetAttributes: string("sgr0").flatMap { bytes($0) } ?? [],
            foreground: { color in
                if directSGR && color >= 1 << 24 { return PictureCapabilities.directSGR(38, color) }
                return setaf.flatMap { bytes(parley_curses_tiparm1($0, color)) }
            },
            background: { color in
                if directSGR && color >= 1 << 24 { return PictureCapabilities.directSGR(48, color) }
                return setab.flatMap { bytes(parley_curses_tiparm1($0, color)) }
            },
            moveTo: { row, column in cup.flatMap { bytes(parley_curses_tiparm2($0, Int32(row), Int32(column))) } },
            moveRight: { columns in cuf.flatMap { bytes(parley_curses_tiparm1($0, Int32(columns))) } },
            moveLeft: { columns in cub.flatMap { bytes(parley_curses_tiparm1($0, Int32(columns))) } })
    }
}
