// One file, one thing: `Terminal` is the only type that calls ncurses (start-up, drawing, keys, resize, restore on
// every exit path); splitting it would spread curses state that must change together across files.
import CCursesShim
import CNcursesw
import Foundation
import ParleyRoom

#if canImport(Glibc)
import Glibc
#endif

/// Why the terminal could not be used.
public enum TerminalError: Error, Equatable, CustomStringConvertible {
    /// Standard input or output is not a terminal (redirected to a file or a pipe).
    case notATerminal(stream: String)
    /// Another `Terminal` is open in this process; curses drives one screen at a time.
    case alreadyOpen
    /// `newterm` refused the terminal type (unknown TERM, missing terminfo entry).
    case unknownTerminalType(String)
    /// The log file for standard error could not be opened.
    case cannotOpenLog(path: String, errno: Int32)

    /// A message naming what was wrong and what to do.
    public var description: String {
        switch self {
        case .notATerminal(let stream):
            return "standard \(stream) is not a terminal; run Parley in a terminal without redirecting it"
        case .alreadyOpen:
            return "a terminal screen is already open in this process"
        case .unknownTerminalType(let term):
            return "terminal type '\(term)' is unknown to terminfo; set TERM to e.g. xterm-256color or tmux-256color"
        case .cannotOpenLog(let path, let code):
            return "cannot open log file \(path): \(String(cString: strerror(code)))"
        }
    }
}

/// A terminal's size in character cells.
public struct TerminalSize: Hashable, Sendable {
    /// Width in columns.
    public var columns: Int
    /// Height in rows.
    public var rows: Int

    /// A size from columns and rows.
    public init(columns: Int, rows: Int) {
        self.columns = columns
        self.rows = rows
    }
}

/// The one type that calls curses: opens the screen, draws `Screen`s by writing only changed cells, reads keys,
/// and always restores the terminal (on `close`, on deinit, on SIGINT/SIGTERM/SIGHUP and on crashes).
///
/// Not thread-safe, like the ncursesw underneath: create, use and close it on one thread. `readKey` blocks for up
/// to its timeout, so run the loop that owns it on a dedicated thread, not on the Swift concurrency pool.
///
/// Signals: an async-signal-safe C handler (in CCursesShim) writes the terminfo strings that undo the screen
/// setup, restores the terminal modes saved before curses started, and exits with 128 + signal. Chosen over a
/// DispatchSource because it still works when the owning thread is stuck or busy, never calls curses from a second
/// thread, and covers crashes (Swift traps) as well, which a dispatch queue cannot.
public final class Terminal {
    /// How to open the terminal.
    public struct Options: Sendable {
        /// Report left clicks and double clicks as keys.
        public var mouse: Bool
        /// How long a lone Esc waits for the rest of an escape sequence, in milliseconds.
        public var escapeDelayMilliseconds: Int
        /// Longest gap between the clicks of a double click, in milliseconds.
        public var doubleClickMilliseconds: Int
        /// The environment read for TERM and NO_COLOR.
        public var environment: [String: String]
        /// A file that receives standard error while the screen is open, so stray log lines and library warnings
        /// never land on the screen. Nil leaves standard error alone.
        public var standardErrorPath: String?
        /// Styles from a theme file (`Theme.parseOverrides`), replacing the built-in 256-colour looks.
        public var themeOverrides: [ColorRole: CellStyle] = [:]
        /// How video is drawn (`--picture`).
        public var picture: PictureMode = .auto

        /// Options with Parley's defaults: mouse on, 25 ms Esc delay, 250 ms double clicks, the process environment.
        public init(
            mouse: Bool = true, escapeDelayMilliseconds: Int = 25, doubleClickMilliseconds: Int = 250,
            environment: [String: String] = ProcessInfo.processInfo.environment,
            standardErrorPath: String? = nil
        ) {
            self.mouse = mouse
            self.escapeDelayMilliseconds = escapeDelayMilliseconds
            self.doubleClickMilliseconds = doubleClickMilliseconds
            self.environment = environment
            self.standardErrorPath = standardErrorPath
        }
    }

    /// What the terminal can show (NO_COLOR honoured).
    public let colorDepth: ColorDepth
    /// How video is drawn here, and why.
    public private(set) var pictureChoice = PictureChoice(colors: .shades, cells: .halfBlocks, reason: "")
    // Picture cells in 24-bit colour on a terminal whose terminfo has 256 (COLORTERM, RGB/Tc, tmux's RGB feature):
    // `PictureOutput` writes them as SGR 38;2/48;2 itself.
    private var pictureTrueColor = false
    /// The theme file's styles.
    private let themeOverrides: [ColorRole: CellStyle]

    private let screenPointer: OpaquePointer
    private let window: UnsafeMutablePointer<WINDOW>
    private var isOpen = true
    private var previous: Screen?
    private var cursorVisible = false
    private var savedStandardError: Int32 = -1

    // Colour pair cache. Palette terminals: a flat table indexed by (fg + 1) * 257 + (bg + 1), 0 meaning "not yet
    // allocated"; direct-colour terminals: a dictionary. Pairs are handed out in order and all dropped when curses
    // runs out, which forces a full redraw.
    private var pairTable: [Int32] = []
    private var directPairs: [UInt64: Int32] = [:]
    private var nextPair: Int32 = 1
    private let pairLimit: Int32
    private var pairsWereReset = false
    private let attributeBits: [attr_t]
    // Scratch for one run of cells handed to curses at once, reused between frames.
    private var runChars: [wchar_t] = []
    private var runAttributes: [attr_t] = []
    private var runPairs: [Int32] = []
    private let systemColorFor: [Int32]
    // Picture cells (block characters in two concrete colours) bypass curses' output: see `PictureOutput`. Curses
    // holds a placeholder for each ('▀' in `placeholderPair`, a pair nothing else uses). Nil when the
    // terminal lacks a capability, has fewer than 256 colours, or PARLEY_PICTURES_VIA_CURSES=1.
    private var pictureOutput: PictureOutput?
    private var placeholderPair: Int32 = 0
    private var firstFreePair: Int32 = 1
    private var pictureIndices: [Int] = []
    // Pixel modes (kitty, sixel): what the terminal shows and what to send; nil in the cell modes.
    private var pixelWriter: PixelPictureWriter?
    private var pictureCapabilities: PictureCapabilities?
    // Writes picture bursts while the caller draws the next frame: see `draw` and `readKey`.
    private let writer = TerminalWriter()
    // Inside tmux: what its client terminal can do, asked again after start-up (a re-attach from another
    // terminal), with what the choice was made from. `tmuxChanges` counts the changes already followed.
    private var tmuxWatch: TmuxClientWatch?
    private var tmuxChanges = 0
    private let requestedPicture: PictureMode
    private let environment: [String: String]

    private static let openLock = NSLock()
    nonisolated(unsafe) private static var someTerminalIsOpen = false

    /// Opens the terminal in full-screen mode (alternate screen, raw keys, no echo, hidden cursor).
    ///
    /// Raw mode means Ctrl-C, Ctrl-Z and Ctrl-S arrive as keys (`.control("c")`) for the app to handle, instead
    /// of signals.
    public init(options: Options = Options()) throws {
        guard isatty(STDIN_FILENO) != 0 else { throw TerminalError.notATerminal(stream: "input") }
        guard isatty(STDOUT_FILENO) != 0 else { throw TerminalError.notATerminal(stream: "output") }
        try Self.openLock.withLock {
            if Self.someTerminalIsOpen { throw TerminalError.alreadyOpen }
            Self.someTerminalIsOpen = true
        }
        var cleanup = true
        defer {
            if cleanup { Self.openLock.withLock { Self.someTerminalIsOpen = false } }
        }

        themeOverrides = options.themeOverrides
        requestedPicture = options.picture
        environment = options.environment
        if let path = options.standardErrorPath {
            let fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
            guard fd >= 0 else { throw TerminalError.cannotOpenLog(path: path, errno: errno) }
            savedStandardError = dup(STDERR_FILENO)
            dup2(fd, STDERR_FILENO)
            Glibc.close(fd)
        }

        // Without a UTF-8 locale, curses writes U+2580 and every other non-ASCII character as garbage. Use the
        // user's locale; when it is not UTF-8 (LANG unset in a container, over a bare ssh), take C.UTF-8 for the
        // character type only, which glibc always has: every terminal Parley supports speaks UTF-8.
        setlocale(LC_ALL, "")
        Self.ensureUTF8CharacterType()
        // Ask the terminal about graphics before curses owns the input (its answers would arrive as keys).
        var graphics = TerminalGraphics()
        if options.picture == .auto || options.picture == .kitty || options.picture == .sixel,
            options.environment["PARLEY_NO_TERMINAL_QUERY"] != "1", (options.environment["TERM"] ?? "") != "dumb"
        {
            graphics = TerminalGraphics.ask()
        }
        _ = parley_curses_save_tty(STDOUT_FILENO)
        let term = options.environment["TERM"] ?? ""
        guard let screen = term.withCString({ parley_curses_newterm(term.isEmpty ? nil : $0) }) else {
            Self.restoreStandardError(savedStandardError)
            throw TerminalError.unknownTerminalType(term.isEmpty ? "(TERM not set)" : term)
        }
        screenPointer = screen
        guard let window = parley_curses_stdscr() else {
            endwin()
            delscreen(screen)
            Self.restoreStandardError(savedStandardError)
            throw TerminalError.unknownTerminalType(term)
        }
        self.window = window
        // Each screen update in one write (see the shim: ncurses' "initial" state flushes at every cursor jump).
        // Before the modes below, which suspending would reset (keypad mode would wait for the first read).
        parley_curses_leave_initial_state()

        raw()
        noecho()
        nonl()
        keypad(window, true)
        intrflush(window, false)
        set_escdelay(Int32(options.escapeDelayMilliseconds))
        curs_set(0)
        leaveok(window, true)

        let noColor = !(options.environment["NO_COLOR"] ?? "").isEmpty
        if !noColor && has_colors() {
            start_color()
            use_default_colors()
        }
        colorDepth = ColorDepth.detect(
            colors: has_colors() ? Int(parley_curses_colors()) : 0,
            environment: options.environment)
        pairLimit = Int32(max(1, min(Int(parley_curses_color_pairs()), Int(Int32.max))))
        if colorDepth != .direct { pairTable = [Int32](repeating: 0, count: 257 * 257) }

        let bold = parley_curses_a_bold()
        let dim = parley_curses_a_dim()
        let reverse = parley_curses_a_reverse()
        let underline = parley_curses_a_underline()
        attributeBits = (0..<16).map { raw in
            let attributes = CellAttributes(rawValue: UInt8(raw))
            var bits = parley_curses_a_normal()
            if attributes.contains(.bold) { bits |= bold }
            if attributes.contains(.dim) { bits |= dim }
            if attributes.contains(.reverse) { bits |= reverse }
            if attributes.contains(.underline) { bits |= underline }
            return bits
        }
        let systemCount = colorDepth == .ansi16 ? 16 : 8
        systemColorFor = (0..<256).map { index in
            if index < systemCount { return Int32(index) }
            let rgb = Palette.rgb(ofIndex: UInt8(index))
            return Int32(Palette.nearestSystemIndex(r: rgb.r, g: rgb.g, b: rgb.b, count: systemCount))
        }

        var trueColor = (colorDepth == .direct, colorDepth == .direct ? "terminfo has 16M colours" : "")
        let terminfoRGB = parley_curses_flag_capability("RGB") != 0 || parley_curses_flag_capability("Tc") != 0
        let clientFeatures = colorDepth == .palette256 ? Self.tmuxClientFeatures(options.environment) : nil
        if colorDepth == .palette256 {
            trueColor = TrueColorDetection.detect(
                colors: Int(parley_curses_colors()), terminfoRGB: terminfoRGB,
                environment: options.environment, tmuxClientFeatures: clientFeatures)
        } else if colorDepth != .direct {
            trueColor.1 =
                colorDepth == .monochrome
                ? "no colour (NO_COLOR or a monochrome terminal)"
                : "the terminal has \(colorDepth == .ansi16 ? 16 : 8) colours"
        }
        if colorDepth == .palette256 || colorDepth == .direct,
            options.environment["PARLEY_PICTURES_VIA_CURSES"] != "1",
            case let capabilities = Self.terminfoPictureCapabilities(
                directSGR: colorDepth == .palette256 && trueColor.0),
            let output = PictureOutput(capabilities: capabilities)
        {
            pictureTrueColor = colorDepth == .palette256 && trueColor.0
            pictureOutput = output
            pictureCapabilities = capabilities
            placeholderPair = 1
            firstFreePair = 2
            nextPair = 2
            init_extended_pair(placeholderPair, -1, -1)
            // Curses must not shift cells sideways (insert/delete character) or scroll lines: it would move
            // pictures it only knows as placeholders.
            idcok(window, false)
            idlok(window, false)
        }

        let videoDepth: ColorDepth = colorDepth == .direct || pictureTrueColor ? .direct : colorDepth
        let colorReason =
            trueColor.0 && videoDepth != .direct
            ? "\(trueColor.1), but 24-bit pictures need Parley's own picture output (PARLEY_PICTURES_VIA_CURSES=1)"
            : trueColor.1
        pictureChoice = PictureChoice.choose(
            options.picture, colors: videoDepth, colorReason: colorReason,
            environment: options.environment, graphics: graphics)
        if let canvas = pictureChoice.pixels {
            if pictureCapabilities != nil {
                pixelWriter = PixelPictureWriter(canvas: canvas)
            } else {
                pictureChoice = PictureChoice.choose(
                    .auto, colors: videoDepth, colorReason: colorReason,
                    environment: options.environment)
                pictureChoice.reason +=
                    "; \(canvas.kind.rawValue) needs Parley's own picture output, which this "
                    + "terminal's terminfo or PARLEY_PICTURES_VIA_CURSES=1 rules out"
            }
        }

        if colorDepth == .palette256, !terminfoRGB, pictureOutput != nil, pixelWriter == nil,
            !(options.environment["TMUX"] ?? "").isEmpty,
            (options.environment["NO_COLOR"] ?? "").isEmpty
        {
            let environment = options.environment
            tmuxWatch = TmuxClientWatch(initial: clientFeatures) { Self.tmuxClientFeatures(environment) }
        }

        if options.mouse {
            mousemask(KeyDecoder.mouseEvents, nil)
            mouseinterval(Int32(options.doubleClickMilliseconds))
        }
        _ = parley_curses_arm_restore()
        cleanup = false
    }

    deinit {
        close()
    }

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

    /// Opens a terminal, runs `body` with it, and closes it however `body` ends (returning or throwing).
    public static func withTerminal<T>(options: Options = Options(), _ body: (Terminal) throws -> T) throws -> T {
        let terminal = try Terminal(options: options)
        defer { terminal.close() }
        return try body(terminal)
    }

    /// Leaves full-screen mode and gives the terminal back as it was. Safe to call more than once.
    public func close() {
        guard isOpen else { return }
        isOpen = false
        tmuxWatch?.stop()
        writer.stop()
        if pixelWriter != nil, case let closing = pixelWriter!.closing(), !closing.isEmpty { writeNow(closing) }
        // The alternate screen is left blank. Left at a size other than the one it was entered at, tmux first rewraps
        // the alternate screen to the size the shell's screen was saved at: call lines wider than that spill into the
        // scrollback, and the resize back to the current size pulls them onto the shell's screen, above its own
        // lines. A blank screen has nothing to spill. (Without an alternate screen the last frame stays, as before.)
        if parley_curses_string_capability("rmcup") != nil {
            wclear(window)
            wrefresh(window)
        }
        endwin()
        delscreen(screenPointer)
        parley_curses_disarm_restore()
        Self.restoreStandardError(savedStandardError)
        savedStandardError = -1
        Self.openLock.withLock { Self.someTerminalIsOpen = false }
    }

    /// The terminal's current size.
    public var size: TerminalSize {
        TerminalSize(columns: Int(getmaxx(window)), rows: Int(getmaxy(window)))
    }

    /// The theme for this terminal's colour depth.
    public var theme: Theme { Theme(depth: colorDepth, overrides: themeOverrides) }

    /// The video colour mode: the terminal's colour depth, or 24-bit for pictures where the terminal takes it.
    public var videoColorMode: VideoColorMode { pictureChoice.colors }

    /// The block characters video is drawn with.
    public var pictureCells: PictureCells { pictureChoice.cells }

    /// The pixel canvas pictures are drawn on (kitty, sixel), or nil in the cell modes.
    public var pixelCanvas: PixelCanvas? { pixelWriter?.canvas }

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
    private func followTmuxClient() {
        guard let watch = tmuxWatch, case let latest = watch.latest, latest.changes != tmuxChanges else { return }
        tmuxChanges = latest.changes
        let trueColor = TrueColorDetection.detect(
            colors: Int(parley_curses_colors()), terminfoRGB: false,
            environment: environment, tmuxClientFeatures: latest.features)
        guard trueColor.trueColor != pictureTrueColor else { return }
        let capabilities = Self.terminfoPictureCapabilities(directSGR: trueColor.trueColor)
        guard let output = PictureOutput(capabilities: capabilities) else { return }
        pictureTrueColor = trueColor.trueColor
        pictureOutput = output
        pictureCapabilities = capabilities
        pictureChoice = PictureChoice.choose(
            requestedPicture, colors: trueColor.trueColor ? .direct : colorDepth,
            colorReason: trueColor.reason + " (after a re-attach)",
            environment: environment)
        previous = nil
    }

    /// Makes the next `draw` repaint every cell (after something else wrote to the terminal).
    public func invalidate() {
        previous = nil
        pixelWriter?.forget()
        clearok(window, true)
    }

    /// Shows `screen`: writes the cells that differ from the last drawn screen, then updates the terminal once.
    /// With `cursor`, the text cursor shows at that cell (for typing); without, it is hidden.
    public func draw(_ screen: Screen, cursor: (column: Int, row: Int)? = nil) {
        guard isOpen else { return }
        // Curses writes below: the last frame's picture bytes go out first.
        writer.wait()
        followTmuxClient()
        var full = previous.map { $0.width != screen.width || $0.height != screen.height } ?? true
        for _ in 0..<2 {
            pairsWereReset = false
            if full { werase(window) }
            writeCells(screen, comparedTo: full ? nil : previous)
            // Running out of colour pairs mid-frame re-defines pairs already on the screen: paint it all again.
            if !pairsWereReset { break }
            full = true
        }
        if let cursor {
            if !cursorVisible { curs_set(1) }
            leaveok(window, false)
            wmove(window, Int32(cursor.row), Int32(cursor.column))
        } else if cursorVisible {
            curs_set(0)
            leaveok(window, true)
        }
        cursorVisible = cursor != nil
        var pixelPlan: PixelPictureWriter.Plan?
        if pixelWriter != nil {
            let plan = pixelWriter!.plan(screen, repaintAll: full)
            // Sixel pictures that go away: curses paints their rows again over what the terminal still shows.
            for row in plan.repaintRows where row < screen.height { wredrawln(window, Int32(row), 1) }
            pixelPlan = plan
        }
        wnoutrefresh(window)
        doupdate()
        // Pictures left out for a pending resize are missing from the terminal: the next draw repaints everything.
        previous = pictureIndices.isEmpty || writePictures(screen) ? screen : nil
        if let plan = pixelPlan, let capabilities = pictureCapabilities {
            if Self.resizePending(screen) {
                pixelWriter!.forget()
                previous = nil
            } else if !plan.isEmpty {
                let bytes = pixelWriter!.output(plan, capabilities: capabilities)
                if !bytes.isEmpty {
                    writer.send(bytes)
                    parley_curses_assume_normal_attributes()
                }
                pixelWriter!.commit(plan)
            }
        }
    }

    /// True when the kernel's size of the terminal differs from `screen`'s: curses has not caught up yet.
    private static func resizePending(_ screen: Screen) -> Bool {
        var columns: Int32 = 0
        var rows: Int32 = 0
        return parley_terminal_size(STDOUT_FILENO, &columns, &rows) == 0 && columns > 0 && rows > 0
            && (Int(columns) != screen.width || Int(rows) != screen.height)
    }

    /// Reads the terminfo strings the picture path needs (copied: terminfo's buffers belong to curses).
    private static func terminfoPictureCapabilities(directSGR: Bool) -> PictureCapabilities {
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

    /// The character of a picture cell (a block element U+2580–259F or a sextant U+1FB00–1FB3B, both colours
    /// concrete, no attributes), else nil.
    @inline(__always)
    private static func pictureScalar(_ cell: Cell) -> UInt32? {
        guard cell.style.attributes.isEmpty, cell.style.foreground != .default, cell.style.background != .default,
            !cell.isContinuation
        else { return nil }
        let value = cell.glyph.raw
        guard (0x2580...0x259F).contains(value) || (0x1FB00...0x1FB3B).contains(value) else { return nil }
        return value
    }

    /// Writes bytes to the terminal past curses at once (escape sequences curses has no call for), after the
    /// picture bursts still being written.
    private func writeNow(_ bytes: [UInt8]) {
        writer.wait()
        TerminalWriter.writeAll(bytes)
    }

    /// Puts `text` on the clipboard of the terminal in front of the user (OSC 52): it works over ssh, and inside
    /// tmux when `set-clipboard` is on. A terminal without OSC 52 ignores it.
    public func copyToClipboard(_ text: String) {
        writeNow(Self.clipboardSequence(text))
    }

    /// The OSC 52 sequence that sets the clipboard ("c") to `text`: ESC ] 52 ; c ; base64 BEL.
    public static func clipboardSequence(_ text: String) -> [UInt8] {
        Array("\u{1B}]52;c;".utf8) + Array(Data(text.utf8).base64EncodedString().utf8) + [0x07]
    }

    /// Hands the picture cells listed in `pictureIndices` to the writer thread in one burst; false when they were
    /// left out.
    ///
    /// Not while a resize is pending (the kernel's size differs from the screen's): curses has not caught up yet,
    /// and a burst placed for the old size could land past the edge, wrap and scroll. The next frame, drawn at
    /// the new size, brings the pictures back.
    private func writePictures(_ screen: Screen) -> Bool {
        if Self.resizePending(screen) {
            pictureIndices.removeAll(keepingCapacity: true)
            return false
        }
        guard var output = pictureOutput else { return true }
        pictureOutput = nil  // keep the buffer uniquely referenced while building
        let width = screen.width
        output.begin(width: width)
        screen.cells.withUnsafeBufferPointer { cells in
            for index in pictureIndices {
                let cell = cells[index]
                guard let scalar = Self.pictureScalar(cell) else { continue }
                let row = index / width
                output.add(
                    scalar: scalar, foreground: pictureColorNumber(cell.style.foreground),
                    background: pictureColorNumber(cell.style.background), row: row,
                    column: index - row * width
                ) { column in
                    let neighbour = cells[row * width + column]
                    guard let scalar = Self.pictureScalar(neighbour) else { return nil }
                    return (
                        scalar, pictureColorNumber(neighbour.style.foreground),
                        pictureColorNumber(neighbour.style.background)
                    )
                }
            }
        }
        output.finish()
        writer.send(output.bytes)
        parley_curses_assume_normal_attributes()
        pictureOutput = output
        pictureIndices.removeAll(keepingCapacity: true)
        return true
    }

    /// Waits up to `milliseconds` (nil: forever, 0: just look) for a key or mouse click.
    ///
    /// Returns nil when nothing arrived in time or the input means nothing to Parley (other mouse buttons,
    /// unmapped keys). A resize returns `.resize`; the next `draw` repaints everything. With a `wake`, the wait
    /// also ends (returning nil unless a key came too) as soon as the wake is signalled.
    public func readKey(timeout milliseconds: Int? = nil, wake: LoopWake? = nil) -> Key? {
        guard isOpen else { return nil }
        var milliseconds = milliseconds
        if let wake, milliseconds != 0 {
            // Wait for a key or the wake without curses, then let curses look without waiting: it still reads the
            // key, and notices a resize signalled meanwhile.
            var waits = [
                pollfd(fd: STDIN_FILENO, events: Int16(POLLIN), revents: 0),
                pollfd(fd: wake.descriptor, events: Int16(POLLIN), revents: 0),
            ]
            _ = poll(&waits, 2, Int32(clamping: milliseconds ?? -1))
            if waits[1].revents != 0 { wake.drain() }
            writer.wait()
            milliseconds = 0
        } else if writer.isBusy {
            // Curses repaints before it reads when the window changed (after a resize), and its bytes must not land
            // inside a picture burst: wait for input without curses, then for the burst.
            let start = DispatchTime.now().uptimeNanoseconds
            var input = pollfd(fd: STDIN_FILENO, events: Int16(POLLIN), revents: 0)
            let ready = poll(&input, 1, Int32(clamping: milliseconds ?? -1))
            writer.wait()
            if ready == 0 { return nil }
            if let limit = milliseconds {
                let waited = Int((DispatchTime.now().uptimeNanoseconds - start) / 1_000_000)
                milliseconds = max(0, limit - waited)
            }
        }
        wtimeout(window, Int32(clamping: milliseconds ?? -1))
        var value: wint_t = 0
        let status = wget_wch(window, &value)
        switch status {
        case KEY_CODE_YES:
            let code = Int32(bitPattern: value)
            if code == KEY_MOUSE {
                var event = MEVENT()
                guard getmouse(&event) == OK else { return nil }
                return KeyDecoder.key(mouseState: event.bstate, column: Int(event.x), row: Int(event.y))
            }
            if code == KEY_RESIZE {
                previous = nil
                tmuxWatch?.askNow()
                // A font change or a re-attach from another terminal changes the cell's pixels.
                if pixelWriter != nil {
                    pixelWriter!.forget()
                    if let cell = TerminalGraphics.kernelCellSize(), cell != pixelWriter!.canvas.cell {
                        pixelWriter!.canvas.cell = cell
                        pictureChoice.pixels?.cell = cell
                    }
                }
            }
            return KeyDecoder.key(keyCode: code)
        case OK:
            return KeyDecoder.key(character: UInt32(value))
        default:
            return nil
        }
    }

    // MARK: - Drawing

    private func writeCells(_ screen: Screen, comparedTo old: Screen?) {
        pictureIndices.removeAll(keepingCapacity: true)
        let rows = min(screen.height, Int(getmaxy(window)))
        let columns = min(screen.width, Int(getmaxx(window)))
        guard rows > 0, columns > 0 else { return }
        let width = screen.width
        if runChars.count < columns {
            runChars = [wchar_t](repeating: 0, count: columns)
            runAttributes = [attr_t](repeating: 0, count: columns)
            runPairs = [Int32](repeating: 0, count: columns)
        }
        screen.cells.withUnsafeBufferPointer { cells in
            (old?.cells ?? []).withUnsafeBufferPointer { oldCells in
                runChars.withUnsafeMutableBufferPointer { runChars in
                    runAttributes.withUnsafeMutableBufferPointer { runAttributes in
                        runPairs.withUnsafeMutableBufferPointer { runPairs in
                            let compare = oldCells.count == cells.count
                            let pictures = pictureOutput != nil
                            // A cell that became a picture this frame gets its placeholder from curses, which may then have
                            // written placeholders over neighbouring pictures too (moving the cursor by rewriting cells): after
                            // such a frame every picture is written again. Rare: tiles appearing, dialogs closing.
                            var placeholdersWritten = !compare
                            for row in 0..<rows {
                                // Consecutive changed one-scalar narrow cells go to curses as one run (mvwadd_wchnstr); anything
                                // else (wide characters, clusters) one cell at a time.
                                var runStart = 0
                                var runLength = 0
                                func flush() {
                                    if runLength > 0 {
                                        parley_curses_put_run(
                                            window, Int32(row), Int32(runStart), runChars.baseAddress,
                                            runAttributes.baseAddress, runPairs.baseAddress, Int32(runLength))
                                        runLength = 0
                                    }
                                }
                                var index = row * width
                                for column in 0..<columns {
                                    defer { index += 1 }
                                    let cell = cells[index]
                                    if cell.isContinuation || (compare && cell == oldCells[index]) {
                                        flush()
                                        continue
                                    }
                                    if pictures, Self.pictureScalar(cell) != nil {
                                        pictureIndices.append(index)
                                        // Every placeholder is '▀' whatever the picture cell shows: a quadrant or sextant cell that
                                        // changes shape must not make curses repaint its placeholder (which forces every picture
                                        // to be written again).
                                        if compare && Self.pictureScalar(oldCells[index]) != nil {
                                            flush()  // curses already holds this placeholder
                                            continue
                                        }
                                        placeholdersWritten = true
                                        if runLength == 0 { runStart = column }
                                        runChars[runLength] = wchar_t(0x2580)
                                        runAttributes[runLength] = attributeBits[0]
                                        runPairs[runLength] = placeholderPair
                                        runLength += 1
                                        continue
                                    }
                                    guard let scalar = Self.singleNarrowScalar(cell.glyph) else {
                                        flush()
                                        put(cell, row: row, column: column)
                                        continue
                                    }
                                    if runLength == 0 { runStart = column }
                                    runChars[runLength] = wchar_t(scalar.value)
                                    runAttributes[runLength] = attributeBits[Int(cell.style.attributes.rawValue & 15)]
                                    runPairs[runLength] = pairNumber(
                                        foreground: colorNumber(cell.style.foreground),
                                        background: colorNumber(cell.style.background))
                                    runLength += 1
                                }
                                flush()
                            }
                            if pictures && placeholdersWritten && compare {
                                pictureIndices.removeAll(keepingCapacity: true)
                                for row in 0..<rows {
                                    for index in (row * width)..<(row * width + columns)
                                    where Self.pictureScalar(cells[index]) != nil {
                                        pictureIndices.append(index)
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    /// The character's only scalar when it is one narrow scalar (the run fast path), else nil.
    @inline(__always)
    private static func singleNarrowScalar(_ glyph: Glyph) -> Unicode.Scalar? {
        guard let first = glyph.scalar else { return nil }
        let value = first.value
        if (0x20..<0x7F).contains(value) || (0x2500...0x259F).contains(value) || (0x1FB00...0x1FB3B).contains(value) {
            return first
        }
        return DisplayWidth.of(first) == 1 ? first : nil
    }

    @inline(__always)
    private func put(_ cell: Cell, row: Int, column: Int) {
        let pair = pairNumber(
            foreground: colorNumber(cell.style.foreground),
            background: colorNumber(cell.style.background))
        let attributes = attributeBits[Int(cell.style.attributes.rawValue & 15)]
        // A cluster: base plus combining or joining characters. curses holds at most 5 per cell; longer clusters
        // (family emoji) show their first character rather than a broken sequence.
        var text = cell.character.unicodeScalars.map { wchar_t($0.value) }
        if text.count > Int(CCHARW_MAX) { text = [text[0]] }
        parley_curses_put_cluster(window, Int32(row), Int32(column), text, Int32(text.count), attributes, pair)
    }

    /// The colour number `PictureOutput` writes for a picture cell's colour: the curses number, or for 24-bit
    /// pictures on a 256-colour terminfo, 2^24 + 0xRRGGBB (written as SGR 38;2/48;2).
    @inline(__always)
    private func pictureColorNumber(_ color: TerminalColor) -> Int32 {
        if pictureTrueColor, case .rgb(let r, let g, let b) = color {
            return 1 << 24 | Int32(r) << 16 | Int32(g) << 8 | Int32(b)
        }
        return colorNumber(color)
    }

    /// The curses colour number of a colour on this terminal (-1 for the default colour).
    @inline(__always)
    private func colorNumber(_ color: TerminalColor) -> Int32 {
        switch colorDepth {
        case .monochrome:
            return -1
        case .ansi8, .ansi16:
            switch color {
            case .default: return -1
            case .palette(let index): return systemColorFor[Int(index)]
            case .rgb(let r, let g, let b):
                return Int32(Palette.nearestSystemIndex(r: r, g: g, b: b, count: colorDepth == .ansi16 ? 16 : 8))
            }
        case .palette256:
            switch color {
            case .default: return -1
            case .palette(let index): return Int32(index)
            case .rgb(let r, let g, let b): return Int32(Palette.nearestIndex(r: r, g: g, b: b))
            }
        case .direct:
            // Direct-colour terminfo treats 0–7 as the ANSI colours and everything else as 0xRRGGBB.
            guard let rgb = Palette.rgb(of: color) else { return -1 }
            if case .palette(let index) = color, index < 8 { return Int32(index) }
            return max(8, Int32(rgb.r) << 16 | Int32(rgb.g) << 8 | Int32(rgb.b))
        }
    }

    @inline(__always)
    private func pairNumber(foreground: Int32, background: Int32) -> Int32 {
        if foreground < 0 && background < 0 { return 0 }
        if colorDepth == .direct {
            let key = UInt64(UInt32(bitPattern: foreground)) << 32 | UInt64(UInt32(bitPattern: background))
            if let pair = directPairs[key] { return pair }
            let pair = allocatePair(foreground: foreground, background: background)
            directPairs[key] = pair
            return pair
        }
        let slot = Int(foreground + 1) * 257 + Int(background + 1)
        let cached = pairTable[slot]
        if cached != 0 { return cached }
        let pair = allocatePair(foreground: foreground, background: background)
        pairTable[slot] = pair
        return pair
    }

    private func allocatePair(foreground: Int32, background: Int32) -> Int32 {
        if nextPair >= pairLimit {
            for index in pairTable.indices { pairTable[index] = 0 }
            directPairs.removeAll(keepingCapacity: true)
            nextPair = firstFreePair
            pairsWereReset = true
        }
        let pair = nextPair
        nextPair += 1
        init_extended_pair(pair, foreground, background)
        return pair
    }

    private static func restoreStandardError(_ saved: Int32) {
        guard saved >= 0 else { return }
        dup2(saved, STDERR_FILENO)
        Glibc.close(saved)
    }
}
