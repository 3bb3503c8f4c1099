// Hidden test helper (not shipped): draws a known screen through `Terminal` so that ParleyTUITests can check it in a
// real tmux pane, and runs the in-pane half of RenderBench.
//
//   parley-tui-probe            red/blue video split, text, last key read; 'q' quits, 'c' toggles the text cursor,
//                               'p' first cycles through every colour pair (to run curses out of pairs),
//                               'o' toggles a text box over part of the video, 'v' swaps the video's colours
//                               PARLEY_PROBE_PICTURE=MODE draws with `--picture MODE` and shows the choice on row 10;
//                               in a pixel mode (kitty, sixel) the video is `ProbePicture.gradient` (96x64) instead
//                               PARLEY_PROBE_STATUS=FILE writes the choice there as "label|cell WxH|reason" once drawn
//   parley-tui-probe --crash    draws, then traps (checks that a crash restores the terminal)
//   parley-tui-probe --bench …  see RenderBench.pane (`--help` lists the options)
import ArgumentParser
import Foundation
import ParleyBench
import ParleyMedia
import ParleyPictures
import ParleyRoom
import ParleyTUI
import ParleyTestSupport

/// 40x20 frame: red above blue, the boundary inside the middle cell row of a 20x5 tile.
func splitFrame(swapped: Bool = false) -> VideoFrame {
    let width = 40
    let height = 20
    var y = [UInt8](repeating: 0, count: width * height)
    var u = [UInt8](repeating: 0, count: width * height / 4)
    var v = u
    for row in 0..<height {
        let red = (row < 10) != swapped
        for column in 0..<width { y[row * width + column] = red ? 81 : 41 }
        if row % 2 == 0 {
            for column in 0..<(width / 2) {
                u[(row / 2) * (width / 2) + column] = red ? 90 : 240
                v[(row / 2) * (width / 2) + column] = red ? 240 : 110
            }
        }
    }
    return VideoFrame(width: width, height: height, y: y, u: u, v: v)
}

func probeScreen(
    size: TerminalSize, theme: Theme, renderer: inout VideoCellRenderer, lastKey: String,
    overlay: Bool = false, swapped: Bool = false, picture: PictureChoice? = nil
) -> Screen {
    var screen = Screen(width: size.columns, height: size.rows)
    screen.write("Parley probe pid=\(getpid()) depth=\(theme.depth)", column: 0, row: 0, style: theme.style(.text))
    let frame =
        renderer.pixels
        ? ProbePicture.gradient(width: 96, height: 64, timestamp: swapped ? 1 : 0)
        : splitFrame(swapped: swapped)
    renderer.draw(frame, into: &screen, in: CellRect(x: 0, y: 1, width: 20, height: 5))
    if overlay { screen.write(" OVER ", column: 6, row: 3, style: theme.style(.header)) }
    let box = CellRect(x: 21, y: 1, width: 12, height: 5)
    screen.drawBox(box, style: theme.style(.tileBorderSpeaking), title: "Ada", titleStyle: theme.participantStyle(0))
    screen.write("日本 ok", column: 22, row: 3, style: theme.style(.tileName))
    screen.write("key: \(lastKey)", column: 0, row: 7, style: theme.style(.text))
    screen.write("header role", column: 0, row: 8, style: theme.style(.header))
    if picture != nil, size.rows > 11 {
        screen.write("picture: \(picture!.label)", column: 0, row: 10, style: theme.style(.text))
    }
    screen.write("q quits", column: 0, row: size.rows - 1, style: theme.style(.placeholder))
    return screen
}

/// Draws screens that together use every foreground/background combination of the palette (65536, one more than
/// tmux-256color has pairs), so the terminal's pair cache must start over.
func cycleColorPairs(_ terminal: Terminal) {
    let size = terminal.size
    var combination = 0
    while combination < 256 * 256 + 1000 {
        var screen = Screen(width: size.columns, height: size.rows)
        for index in 0..<(size.columns * size.rows) {
            let style = CellStyle(
                foreground: .palette(UInt8(combination & 255)),
                background: .palette(UInt8((combination >> 8) & 255)))
            screen.put("x", column: index % size.columns, row: index / size.columns, style: style)
            combination += 1
        }
        terminal.draw(screen)
    }
}

func runProbe(crash: Bool) -> Int32 {
    do {
        var options = Terminal.Options()
        let environment = ProcessInfo.processInfo.environment
        if let picture = environment["PARLEY_PROBE_PICTURE"] { options.picture = try PictureMode.parse(picture) }
        return try Terminal.withTerminal(options: options) { terminal in
            var renderer = VideoCellRenderer(
                mode: terminal.videoColorMode, cells: terminal.pictureCells,
                pixels: terminal.pixelCanvas != nil)
            let showChoice = environment["PARLEY_PROBE_PICTURE"] != nil
            let statusPath = environment["PARLEY_PROBE_STATUS"]
            var statusWritten = ""
            var lastKey = "none"
            var cursor = false
            var overlay = false
            var swapped = false
            while true {
                // The choice can change after start-up (a re-attach inside tmux): follow it as the app does.
                if renderer.mode != terminal.videoColorMode || renderer.cells != terminal.pictureCells {
                    renderer = VideoCellRenderer(
                        mode: terminal.videoColorMode, cells: terminal.pictureCells,
                        pixels: terminal.pixelCanvas != nil)
                }
                let shownChoice = showChoice ? terminal.pictureChoice : nil
                terminal.draw(
                    probeScreen(
                        size: terminal.size, theme: terminal.theme, renderer: &renderer,
                        lastKey: lastKey, overlay: overlay, swapped: swapped,
                        picture: shownChoice),
                    cursor: cursor ? (column: 5, row: 9) : nil)
                if let path = statusPath {
                    let cell = terminal.pixelCanvas.map { "\($0.cell)" } ?? "none"
                    let status = "\(terminal.pictureChoice.label)|\(cell)|\(terminal.pictureChoice.reason)\n"
                    if status != statusWritten {
                        // Whole or not at all: a test that saw the file before its bytes read it as empty.
                        try? Data(status.utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
                        statusWritten = status
                    }
                }
                if crash { fatalError("probe: crashing on purpose") }
                guard let key = terminal.readKey(timeout: 1000) else { continue }
                if key == .char("q") { return 0 }
                if key == .char("c") { cursor.toggle() }
                if key == .char("p") { cycleColorPairs(terminal) }
                if key == .char("o") { overlay.toggle() }
                if key == .char("v") { swapped.toggle() }
                lastKey = String(describing: key)
            }
        }
    } catch {
        FileHandle.standardError.write(Data("parley-tui-probe: \(error)\n".utf8))
        return 1
    }
}

/// The probe's command line: no option draws the probe screen, `--crash` traps after drawing, `--bench` renders frames
/// for RenderBench.
struct ProbeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "parley-tui-probe",
        abstract: "Draws a known screen for the tmux tests, or RenderBench's pane half.")

    @Flag(help: "Draw, then trap (checks that a crash restores the terminal).")
    var crash = false

    @Flag(help: "Render --frames frames of --tiles tiles for RenderBench and write timings to --out.")
    var bench = false

    @Option(help: "With --bench: frames measured.")
    var frames: Int?

    @Option(help: "With --bench: tiles in an equal grid.")
    var tiles: Int?

    @Option(help: "With --bench: where the timings go.")
    var out: String?

    @Option(help: "With --bench: frames drawn before measuring.")
    var warmup = 20

    @Option(help: "With --bench: call or motion.")
    var content = BenchPattern.Content.motion.rawValue

    @Option(help: "With --bench: \(PictureCells.allCases.map(\.rawValue).joined(separator: ", ")).")
    var cells = PictureCells.halfBlocks.rawValue

    func validate() throws {
        guard bench else { return }
        guard let frames, frames > 0 else { throw ValidationError("--bench needs --frames N above 0") }
        guard let tiles, tiles > 0 else { throw ValidationError("--bench needs --tiles N above 0") }
        guard out != nil else { throw ValidationError("--bench needs --out PATH") }
        guard warmup >= 0 else { throw ValidationError("--warmup must be 0 or more, got \(warmup)") }
        guard BenchPattern.Content(rawValue: content) != nil else {
            throw ValidationError("--content must be call or motion, got \(content)")
        }
        guard PictureCells(rawValue: cells) != nil else {
            throw ValidationError("--cells must be one of \(PictureCells.allCases.map(\.rawValue)), got \(cells)")
        }
    }

    func run() throws {
        if bench, let frames, let tiles, let out, let content = BenchPattern.Content(rawValue: content),
            let cells = PictureCells(rawValue: cells)
        {
            throw ExitCode(
                RenderBench.pane(
                    frames: frames, tiles: tiles, out: out, warmup: warmup, content: content,
                    cells: cells))
        }
        throw ExitCode(runProbe(crash: crash))
    }
}

ProbeCommand.main()
