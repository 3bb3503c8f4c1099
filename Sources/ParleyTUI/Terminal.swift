// `Terminal` is the only type that calls ncurses. This file opens and closes it (restoring the terminal on every exit
// path); what it can show is found in Terminal+Capabilities.swift, keys are read in Terminal+Keys.swift, cells are
// written in Terminal+Cells.swift with the colours of CursesColors.swift.
import CCursesShim
import CNcursesw
import Foundation
import ParleyPictures
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
    public var colorDepth: ColorDepth { colors.depth }
    /// How video is drawn here, and why.
    public internal(set) var pictureChoice = PictureChoice(colors: .shades, cells: .halfBlocks, reason: "")
    /// The theme file's styles.
    private let themeOverrides: [ColorRole: CellStyle]

    private let screenPointer: OpaquePointer
    let window: UnsafeMutablePointer<WINDOW>
    var isOpen = true
    /// The screen last drawn, which the next `draw` writes the differences from; nil repaints every cell.
    var previous: Screen?
    var cursorVisible = false
    private var savedStandardError: Int32 = -1

    var colors: CursesColors
    /// Curses attribute bits of each combination of `CellAttributes`.
    let attributeBits: [attr_t]
    // Scratch for one run of cells handed to curses at once, reused between frames.
    var runCharacters: [wchar_t] = []
    var runAttributes: [attr_t] = []
    var runPairs: [Int32] = []
    // Picture cells (block characters in two concrete colours) bypass curses' output: see `PictureOutput`. Curses
    // holds a placeholder for each ('▀' in `colors.placeholderPair`, a pair nothing else uses). Nil when the
    // terminal lacks a capability, has fewer than 256 colours, or PARLEY_PICTURES_VIA_CURSES=1.
    var pictureOutput: PictureOutput?
    var pictureIndices: [Int] = []
    // Pixel modes (kitty, sixel): what the terminal shows and what to send; nil in the cell modes.
    var pixelWriter: PixelPictureWriter?
    var pictureCapabilities: PictureCapabilities?
    /// Writes picture bursts while the caller draws the next frame: see `draw` and `readKey`.
    let writer = TerminalWriter()
    // Inside tmux: what its client terminal can do, asked again after start-up (a re-attach from another
    // terminal), with what the choice was made from. `tmuxChanges` counts the changes already followed.
    var tmuxWatch: TmuxClientWatch?
    var tmuxChanges = 0
    let requestedPicture: PictureMode
    let environment: [String: String]

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
            savedStandardError = try Self.redirectStandardError(to: path)
        }

        // Without a UTF-8 locale, curses writes U+2580 and every other non-ASCII character as garbage. Use the
        // user's locale; when it is not UTF-8 (LANG unset in a container, over a bare ssh), take C.UTF-8 for the
        // character type only, which glibc always has: every terminal Parley supports speaks UTF-8.
        setlocale(LC_ALL, "")
        Self.ensureUTF8CharacterType()
        // Ask the terminal about graphics before curses owns the input (its answers would arrive as keys).
        let graphics = Self.askGraphics(options)
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
        Self.setModes(window, options)

        let noColor = !(options.environment["NO_COLOR"] ?? "").isEmpty
        if !noColor && has_colors() {
            start_color()
            use_default_colors()
        }
        let depth = ColorDepth.detect(
            colors: has_colors() ? Int(parley_curses_colors()) : 0,
            environment: options.environment)
        colors = CursesColors(
            depth: depth, pairLimit: Int32(max(1, min(Int(parley_curses_color_pairs()), Int(Int32.max)))))
        attributeBits = Self.cursesAttributeBits()

        let pictures = Self.choosePictures(depth: depth, options: options, graphics: graphics)
        pictureChoice = pictures.choice
        pictureOutput = pictures.output
        pictureCapabilities = pictures.capabilities
        pixelWriter = pictures.pixelWriter
        tmuxWatch = pictures.tmuxWatch
        colors.pictureTrueColor = pictures.trueColor
        if pictures.output != nil {
            colors.reservePlaceholderPair()
            // Curses must not shift cells sideways (insert/delete character) or scroll lines: it would move
            // pictures it only knows as placeholders.
            idcok(window, false)
            idlok(window, false)
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

    /// Sends standard error to the file at `path`; returns a descriptor of the standard error it replaced.
    private static func redirectStandardError(to path: String) throws(TerminalError) -> Int32 {
        let fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw TerminalError.cannotOpenLog(path: path, errno: errno) }
        let saved = dup(STDERR_FILENO)
        dup2(fd, STDERR_FILENO)
        Glibc.close(fd)
        return saved
    }

    private static func restoreStandardError(_ saved: Int32) {
        guard saved >= 0 else { return }
        dup2(saved, STDERR_FILENO)
        Glibc.close(saved)
    }

    /// Raw keys, no echo, no newline translation, the keypad decoded, the cursor hidden.
    private static func setModes(_ window: UnsafeMutablePointer<WINDOW>, _ options: Options) {
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

    /// Makes the next `draw` repaint every cell (after something else wrote to the terminal).
    public func invalidate() {
        previous = nil
        pixelWriter?.forget()
        clearok(window, true)
    }

    /// Writes bytes to the terminal past curses at once (escape sequences curses has no call for), after the
    /// picture bursts still being written.
    func writeNow(_ bytes: [UInt8]) {
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
}
