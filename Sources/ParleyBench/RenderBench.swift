import Foundation
import ParleyMedia
import ParleyPictures
import ParleyProcesses
import ParleyTUI

#if canImport(Glibc)
import Glibc
import ParleyRoom
#endif

/// Why the renderer benchmark could not run.
public enum RenderBenchError: Error, CustomStringConvertible {
    /// A tool the benchmark needs is not installed.
    case missingTool(String)
    /// The in-pane helper executable was not found.
    case missingProbe(searched: [String])
    /// The pane did not finish in time.
    case paneTimedOut(columns: Int, rows: Int, tiles: Int, seconds: Int)
    /// The pane wrote a result the driver cannot read.
    case badPaneResult(String)
    /// A command failed.
    case commandFailed(command: String, status: Int32, output: String)

    /// What went wrong and what to do.
    public var description: String {
        switch self {
        case .missingTool(let tool):
            return "\(tool) is not installed; run `make bench-deps` (Debian package \(tool))"
        case .missingProbe(let searched):
            return "parley-tui-probe not found (looked in \(searched.joined(separator: ", "))); run `swift build` "
                + "or set PARLEY_TUI_PROBE"
        case .paneTimedOut(let columns, let rows, let tiles, let seconds):
            return "the tmux pane rendering \(tiles) tiles at \(columns)x\(rows) did not finish in \(seconds) s"
        case .badPaneResult(let text):
            return "cannot read the pane's result: \(text)"
        case .commandFailed(let command, let status, let output):
            return "`\(command)` exited with status \(status): \(output)"
        }
    }
}

/// Frames per second of the terminal renderer (scaling, colour mapping and ncurses output into a real tmux pane),
/// next to chafa converting the same frames to the same cell sizes in the same run.
public enum RenderBench {
    /// Terminal sizes measured, in cells.
    public static let sizes: [(columns: Int, rows: Int)] = [(80, 24), (200, 60)]
    /// Tile counts measured at each size.
    public static let tileCounts = [1, 4, 9]
    /// Source frame size (a typical camera stream).
    static let frameWidth = 640, frameHeight = 360
    /// Distinct frames cycled through (each tile starts at a different one).
    static let patternLength = 24

    /// Runs every content, size and tile count; each Parley figure is the best of `repeats` runs of `frames`
    /// frames, each chafa figure the best of two rounds of its work levels on `chafaFrames` frames. `probePath` is
    /// the parley-tui-probe executable (default: PARLEY_TUI_PROBE, or next to this executable).
    public static func run(
        frames: Int = 300, chafaFrames: Int = 60, repeats: Int = 3, probePath: String? = nil,
        progress: (String) -> Void = { _ in }
    ) throws -> [BenchTable] {
        let tmux = try findExecutable("tmux")
        let chafa = try findExecutable("chafa")
        let probe = try findProbe(probePath)
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("parley-render-bench-\(getpid())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }

        var table = BenchTable(
            title: "Renderer: frames/s, \(frameWidth)x\(frameHeight) I420 video into block cells, 256 colours",
            columns: [
                "Content", "Cells", "Size", "Tiles", "Cells changed/frame", "Parley render only",
                "Parley + ncurses + tmux", "CPU ms/frame Parley + tmux", "chafa", "chafa --work", "Parley/chafa",
            ])
        var runIndex = 0
        var measured: [Measured] = []
        for content in BenchPattern.Content.allCases {
            // chafa reads the same frames as uncompressed PNG files (its cheapest loader for RGB input).
            let pattern = BenchPattern.frames(content, count: patternLength, width: frameWidth, height: frameHeight)
            var pngPaths: [String] = []
            for (index, frame) in pattern.enumerated() {
                let path = "\(directory)/\(content.rawValue)\(index).png"
                try Data(PNG.encode(rgb: BenchPattern.rgb(of: frame), width: frame.width, height: frame.height))
                    .write(to: URL(fileURLWithPath: path))
                pngPaths.append(path)
            }
            // Half blocks at every size and tile count; the other cell kinds where the goal is set (9 tiles, 200x60).
            var runs: [(cells: PictureCells, size: (columns: Int, rows: Int), tiles: Int)] = []
            for size in sizes { for tiles in tileCounts { runs.append((.halfBlocks, size, tiles)) } }
            runs += [(.quadrants, (200, 60), 9), (.sextants, (200, 60), 9)]
            // PARLEY_RENDER_BENCH_CELLS=sextant,quadrant measures only those cell kinds (for quick comparisons).
            if let only = ProcessInfo.processInfo.environment["PARLEY_RENDER_BENCH_CELLS"] {
                let kinds = Set(only.split(separator: ",").compactMap { PictureCells(rawValue: String($0)) })
                runs = runs.filter { kinds.contains($0.cells) }
            }
            for (cells, size, tiles) in runs {
                do {
                    let label = "\(content.rawValue) \(cells.rawValue) \(size.columns)x\(size.rows), \(tiles) tile(s)"
                    var best: PaneResult?
                    for attempt in 1...max(1, repeats) {
                        runIndex += 1
                        progress("render bench: \(label): Parley in tmux, run \(attempt)")
                        let pane = try runPane(
                            tmux: tmux, probe: probe, directory: directory, content: content,
                            cells: cells, columns: size.columns, rows: size.rows, tiles: tiles,
                            frames: frames, index: runIndex)
                        if best == nil || pane.totalSeconds < best!.totalSeconds { best = pane }
                    }
                    let pane = best!
                    progress("render bench: \(label): chafa")
                    let rects = equalGrid(count: tiles, columns: size.columns, rows: size.rows)
                    let reference = try timeChafa(
                        chafa: chafa, pngPaths: pngPaths, tiles: rects, frames: chafaFrames,
                        symbols: chafaSymbols(cells))
                    let parleyFPS = Double(pane.frames) / pane.totalSeconds
                    let chafaFPS = Double(chafaFrames) / reference.seconds
                    measured.append(
                        Measured(
                            label: "\(content.rawValue) \(cells.rawValue) \(size.columns)x\(size.rows), \(tiles) "
                                + (tiles == 1 ? "tile" : "tiles"),
                            goalCase: size == (200, 60) && tiles == 9, fps: parleyFPS, ratio: parleyFPS / chafaFPS))
                    table.add([
                        content.rawValue, cells.rawValue, "\(size.columns)x\(size.rows)", "\(tiles)",
                        formatted(pane.changedCellsPerFrame, decimals: 0),
                        formatted(Double(pane.frames) / pane.renderSeconds, decimals: 0),
                        formatted(parleyFPS, decimals: 0),
                        formatted(pane.cpuSeconds * 1000 / Double(pane.frames), decimals: 1) + " + "
                            + formatted(pane.tmuxSecondsPerFrame * 1000, decimals: 1),
                        formatted(chafaFPS, decimals: 0), reference.work,
                        formatted(parleyFPS / chafaFPS, decimals: 1) + "x",
                    ])
                }
            }
        }
        var load = [Double](repeating: 0, count: 3)
        getloadavg(&load, 3)
        table.notes =
            [
                "Content: call = still background gradient, a moving head-and-shoulders shape and sensor noise (a camera "
                    + "in a call); motion = every pixel moves every frame (scrolling gradient, moving colour bands and "
                    + "shapes), the worst case for a renderer that redraws only changed cells. Tiles: an equal grid over "
                    + "the whole terminal, no borders. Load average at the end \(formatted(load[0], decimals: 1)) (2 cores).",
                "Parley: best of \(repeats) runs of \(frames) frames after 20 warm-up frames, drawn by parley-tui-probe "
                    + "in a detached tmux pane (tmux -f /dev/null, TERM=tmux-256color). Each frame: every tile scaled from "
                    + "I420 (box filter), BT.601 to RGB; half: nearest of 240 palette colours per pixel; quadrant/sextant: "
                    + "two colours fitted per cell, each mapped to the palette in OKLab; then `Terminal` writes the changed "
                    + "cells, timed until tmux has read them (tcdrain). Render only = the same frames into a Screen "
                    + "without a terminal. CPU ms/frame: the probe, then the tmux server parsing its output (in parallel "
                    + "on 2 cores).",
                "chafa \(chafaVersion(chafa)): the same frames as uncompressed RGB PNG, one conversion per tile at its "
                    + "size, --colors 256 --dither none --format symbols, --symbols vhalf, quad or sextant as the row's "
                    + "cells, output to /dev/null, all cores, the fastest of two rounds of --work 5, 7 and 9 on "
                    + "\(chafaFrames) frames, start-up time subtracted. It only builds an ANSI string and redraws every "
                    + "cell; Parley also writes into a real terminal but sends only changed cells.",
            ] + goalNotes(measured)
        return [table]
    }

    /// One row's figures for the goals.
    struct Measured {
        var label: String
        /// 9 tiles on a 200x60 terminal: where the frame-rate goal is set.
        var goalCase: Bool
        /// Frames a second through ncurses into tmux.
        var fps: Double
        /// Parley's frames a second over chafa's.
        var ratio: Double
    }

    /// The renderer's goals: at least 60 frames a second through tmux for 9 tiles at 200x60 in every cell mode,
    /// and at least 3x chafa on every row.
    static func goalNotes(_ rows: [Measured]) -> [String] {
        var notes: [String] = []
        if let worst = rows.filter(\.goalCase).min(by: { $0.fps < $1.fps }) {
            notes.append(
                goalNote(
                    "≥ 60 frames/s through tmux, 9 tiles at 200x60, every cell mode", met: worst.fps >= 60,
                    "\(formatted(worst.fps, decimals: 0)) at worst, \(worst.label)"))
        }
        if let worst = rows.min(by: { $0.ratio < $1.ratio }) {
            let below = rows.filter { $0.ratio < 3 }.map { "\($0.label): \(formatted($0.ratio, decimals: 2))x" }
            notes.append(
                goalNote(
                    "≥ 3x chafa, every row", met: below.isEmpty,
                    below.isEmpty
                        ? "\(formatted(worst.ratio, decimals: 1))x at worst"
                        : "below on " + below.joined(separator: "; ")))
        }
        return notes
    }

    // MARK: - The pane side

    struct PaneResult {
        var frames: Int
        var renderSeconds: Double
        var totalSeconds: Double
        var changedCellsPerFrame: Double
        /// CPU time of the rendering process (user + system), for comparing work independent of machine load.
        var cpuSeconds: Double
        /// CPU time of the tmux server per drawn frame (NaN when it could not be read).
        var tmuxSecondsPerFrame: Double = .nan
    }

    /// The in-pane half, run by `parley-tui-probe --bench --frames N --tiles T --out PATH [--content call|motion]`
    /// inside tmux: renders `frames` frames of `tiles` tiles through `Terminal` after `warmup` more and writes timings
    /// to `out`. Returns the exit status.
    public static func pane(
        frames: Int, tiles: Int, out: String, warmup: Int = 20,
        content: BenchPattern.Content = .motion, cells: PictureCells = .halfBlocks
    ) -> Int32 {
        let pattern = BenchPattern.frames(content, count: patternLength, width: frameWidth, height: frameHeight)
        do {
            let result = try Terminal.withTerminal { terminal -> PaneResult in
                let size = terminal.size
                let rects = equalGrid(count: tiles, columns: size.columns, rows: size.rows)
                var renderer = VideoCellRenderer(mode: terminal.videoColorMode, cells: cells)
                var previous: Screen?
                var renderNanos: UInt64 = 0
                var changed = 0
                var start: UInt64 = 0
                var cpuStart = 0.0
                for frame in 0..<(warmup + frames) {
                    if frame == warmup {
                        start = monotonicNanos()
                        cpuStart = ownCPUSeconds()
                    }
                    let t0 = monotonicNanos()
                    var screen = Screen(width: size.columns, height: size.rows)
                    for (tile, rect) in rects.enumerated() {
                        renderer.draw(pattern[(frame + 5 * tile) % pattern.count], into: &screen, in: rect)
                    }
                    let t1 = monotonicNanos()
                    terminal.draw(screen)
                    if frame >= warmup {
                        renderNanos += t1 - t0
                        if let previous {
                            let t2 = monotonicNanos()
                            changed += zip(screen.cells, previous.cells).reduce(0) { $0 + ($1.0 == $1.1 ? 0 : 1) }
                            start += monotonicNanos() - t2  // counting is not part of the renderer's time
                        }
                    }
                    previous = screen
                }
                tcdrain(STDOUT_FILENO)
                let total = monotonicNanos() - start
                return PaneResult(
                    frames: frames, renderSeconds: Double(renderNanos) / 1e9,
                    totalSeconds: Double(total) / 1e9,
                    changedCellsPerFrame: Double(changed) / Double(max(1, frames - 1)),
                    cpuSeconds: ownCPUSeconds() - cpuStart)
            }
            let text =
                "frames=\(result.frames)\nrender=\(result.renderSeconds)\ntotal=\(result.totalSeconds)\n"
                + "changed=\(result.changedCellsPerFrame)\ncpu=\(result.cpuSeconds)\ndrawn=\(warmup + frames)\ndone\n"
            try Data(text.utf8).write(to: URL(fileURLWithPath: out))
            return 0
        } catch {
            try? Data("error=\(error)\ndone\n".utf8).write(to: URL(fileURLWithPath: out))
            return 1
        }
    }

    /// `count` equal tiles in a near-square grid covering `columns`×`rows` cells (rows filled first; the last row may
    /// hold fewer tiles). A stand-in until the room's layout lands.
    static func equalGrid(count: Int, columns: Int, rows: Int) -> [CellRect] {
        guard count > 0 else { return [] }
        var gridColumns = 1
        while gridColumns * gridColumns < count { gridColumns += 1 }
        let gridRows = (count + gridColumns - 1) / gridColumns
        var rects: [CellRect] = []
        for index in 0..<count {
            let r = index / gridColumns
            let c = index % gridColumns
            let left = c * columns / gridColumns
            let right = (c + 1) * columns / gridColumns
            let top = r * rows / gridRows
            let bottom = (r + 1) * rows / gridRows
            rects.append(CellRect(x: left, y: top, width: right - left, height: bottom - top))
        }
        return rects
    }

    // MARK: - The driver side

    private static func runPane(
        tmux: String, probe: String, directory: String, content: BenchPattern.Content,
        cells: PictureCells, columns: Int, rows: Int, tiles: Int, frames: Int, index: Int
    ) throws -> PaneResult {
        let out = "\(directory)/pane\(index).txt"
        let socket = "parley-bench-\(getpid())-\(index)"
        let command =
            "TERM=tmux-256color NO_COLOR= \(ResultsPage.shellQuoted(probe)) --bench --frames \(frames) --tiles \(tiles) "
            + "--content \(content.rawValue) --cells \(cells.rawValue) --out \(ResultsPage.shellQuoted(out)); sleep 30"
        // The tmux server started here inherits stdout/stderr, so they must not be a pipe we read to the end.
        _ = try timeCommand(
            tmux,
            [
                "-u", "-L", socket, "-f", "/dev/null", "new-session", "-d", "-x", "\(columns)",
                "-y", "\(rows)", "-e", "TERM=tmux-256color", "-e", "NO_COLOR=", command,
            ])
        let socketPath =
            (try? runCommand(tmux, ["-L", socket, "display", "-p", "#{socket_path}"]))?
            .trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
        let serverPID = (try? runCommand(tmux, ["-L", socket, "display", "-p", "#{pid}"]))
            .flatMap { Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
        defer {
            _ = try? runCommand(tmux, ["-L", socket, "kill-server"])
            if socketPath.hasSuffix("/" + socket) { unlink(socketPath) }
        }
        let limit = 300
        let deadline = Date().addingTimeInterval(TimeInterval(limit))
        while Date() < deadline {
            if let text = try? String(contentsOfFile: out, encoding: .utf8), text.hasSuffix("done\n") {
                var values: [String: String] = [:]
                for line in text.split(separator: "\n") {
                    let parts = line.split(separator: "=", maxSplits: 1).map(String.init)
                    if parts.count == 2 { values[parts[0]] = parts[1] }
                }
                if let error = values["error"] { throw RenderBenchError.badPaneResult(error) }
                guard let frames = values["frames"].flatMap(Int.init),
                    let render = values["render"].flatMap(Double.init),
                    let total = values["total"].flatMap(Double.init),
                    let changed = values["changed"].flatMap(Double.init),
                    let cpu = values["cpu"].flatMap(Double.init),
                    let drawn = values["drawn"].flatMap(Int.init)
                else {
                    throw RenderBenchError.badPaneResult(text)
                }
                // The server was idle before the first frame, so its CPU time over all drawn frames (warm-up
                // included) is its cost per frame. The pane's shell keeps it alive until it is read here.
                let tmuxSeconds = serverPID.flatMap(ProcessProbe.cpuSeconds) ?? .nan
                return PaneResult(
                    frames: frames, renderSeconds: render, totalSeconds: total,
                    changedCellsPerFrame: changed, cpuSeconds: cpu,
                    tmuxSecondsPerFrame: tmuxSeconds / Double(drawn))
            }
            usleep(50_000)
        }
        throw RenderBenchError.paneTimedOut(columns: columns, rows: rows, tiles: tiles, seconds: limit)
    }

    /// Seconds chafa needs for `frames` frames of every tile (start-up subtracted): the best of two rounds over
    /// its work levels 5 (the default), 7 and 9.
    private static func timeChafa(
        chafa: String, pngPaths: [String], tiles: [CellRect], frames: Int,
        symbols: String
    ) throws -> (seconds: Double, work: String) {
        var sizes: [String: Int] = [:]
        for tile in tiles { sizes["\(tile.width)x\(tile.height)", default: 0] += 1 }
        var best: (seconds: Double, work: String)?
        for work in [5, 7, 9, 5, 7, 9] {
            var seconds = 0.0
            for (size, count) in sizes.sorted(by: { $0.key < $1.key }) {
                let files = (0..<(frames * count)).map { pngPaths[$0 % pngPaths.count] }
                let arguments = [
                    "--size", size, "--symbols", symbols, "--colors", "256", "--dither", "none",
                    "--format", "symbols", "--animate", "off", "--work", "\(work)",
                ]
                let startup = try timeCommand(chafa, arguments + [pngPaths[0]])
                let all = try timeCommand(chafa, arguments + files)
                seconds += max(0, all - startup) * Double(files.count) / Double(files.count - 1)
            }
            if best == nil || seconds < best!.seconds { best = (seconds, "\(work)") }
        }
        return best!
    }

    /// chafa's symbol set drawing the same cells as a Parley cell kind.
    static func chafaSymbols(_ cells: PictureCells) -> String {
        switch cells {
        case .halfBlocks: return "vhalf"
        case .quadrants: return "quad"
        case .sextants: return "sextant"
        }
    }

    private static func chafaVersion(_ chafa: String) -> String {
        let output = (try? runCommand(chafa, ["--version"])) ?? ""
        return output.split(separator: "\n").first.map { String($0.split(separator: " ").last ?? "") } ?? "?"
    }

    // MARK: - Processes

    static func findExecutable(_ name: String) throws -> String {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for directory in path.split(separator: ":") {
            let candidate = "\(directory)/\(name)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        throw RenderBenchError.missingTool(name)
    }

    private static func findProbe(_ given: String?) throws -> String {
        var candidates: [String] = []
        if let given { candidates.append(given) }
        if let fromEnvironment = ProcessInfo.processInfo.environment["PARLEY_TUI_PROBE"] {
            candidates.append(fromEnvironment)
        }
        if let executable = Bundle.main.executableURL {
            candidates.append(executable.deletingLastPathComponent().appendingPathComponent("parley-tui-probe").path)
        }
        for candidate in candidates where FileManager.default.isExecutableFile(atPath: candidate) {
            return candidate
        }
        throw RenderBenchError.missingProbe(searched: candidates)
    }

    @discardableResult
    private static func runCommand(_ executable: String, _ arguments: [String]) throws -> String {
        let result = try ChildProcess.run(executable, arguments, captureOutput: true)
        guard result.status == 0 else {
            throw RenderBenchError.commandFailed(
                command: ([executable] + arguments).joined(separator: " "),
                status: result.status, output: result.output)
        }
        return result.output
    }

    /// Wall-clock seconds of a command whose output goes to /dev/null.
    private static func timeCommand(_ executable: String, _ arguments: [String]) throws -> Double {
        let start = monotonicNanos()
        let result = try ChildProcess.run(executable, arguments, captureOutput: false)
        let elapsed = Double(monotonicNanos() - start) / 1e9
        guard result.status == 0 else {
            throw RenderBenchError.commandFailed(
                command: ([executable] + arguments.prefix(14)).joined(separator: " "),
                status: result.status, output: "")
        }
        return elapsed
    }

    static func monotonicNanos() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }
}

/// Synthetic camera video for the benchmark, in two kinds (see `Content`).
public enum BenchPattern {
    /// What the frames show.
    public enum Content: String, CaseIterable, Sendable {
        /// A still background gradient, a head-and-shoulders shape swaying and moving its "mouth", sensor noise.
        case call
        /// A gradient scrolling diagonally with moving colour bands, a white disc and a red square crossing the
        /// picture, and noise: every cell changes every frame.
        case motion
    }

    static func frames(_ content: Content, count: Int, width: Int, height: Int) -> [VideoFrame] {
        var seed: UInt32 = 12345
        return (0..<count).map { t in
            let phase = Double(t) / Double(count) * 2 * Double.pi
            var y = [UInt8](repeating: 0, count: width * height)
            let chromaWidth = (width + 1) / 2
            let chromaHeight = (height + 1) / 2
            var u = [UInt8](repeating: 128, count: chromaWidth * chromaHeight)
            var v = u
            // Shapes in luma coordinates.
            let motion = content == .motion
            let discX = Double(width) / 2 + (motion ? Double(width) / 3 * cos(phase) : 12 * sin(phase))
            let discY = motion ? Double(height) / 2 + Double(height) / 4 * sin(phase) : Double(height) * 0.42
            let radius = motion ? 60.0 : Double(height) / 4
            let squareX = motion ? Int(Double(width) / 2 - Double(width) / 3 * cos(phase)) : Int(discX)
            let squareY = motion ? Int(Double(height) / 2 - Double(height) / 4 * sin(2 * phase)) : height - 40
            let squareHalf = motion ? 40 : width / 5
            let mouthOpen = 3 + 5 * abs(sin(3 * phase))
            let shift = motion ? 9 * t : 0
            for row in 0..<height {
                for column in 0..<width {
                    seed = seed &* 1_103_515_245 &+ 12345
                    let noise = Int((seed >> 16) % 5) - 2
                    var luma =
                        motion
                        ? 16 + (column + 2 * row + shift) % 220 : 60 + (column + row) * 120 / (width + height)
                    let dx = Double(column) - discX
                    let dy = Double(row) - discY
                    let inDisc = dx * dx + dy * dy < radius * radius
                    if inDisc { luma = motion ? 235 : 170 }
                    if !motion && inDisc && abs(dx) < 20 && abs(dy - radius / 2) < mouthOpen { luma = 70 }
                    if abs(column - squareX) < squareHalf && abs(row - squareY) < 40 { luma = motion ? 81 : 50 }
                    y[row * width + column] = UInt8(min(255, max(0, luma + noise)))
                }
            }
            for row in 0..<chromaHeight {
                for column in 0..<chromaWidth {
                    let lumaX = 2 * column
                    let lumaY = 2 * row
                    var cb: Int
                    var cr: Int
                    if motion {
                        cb = 128 + Int(90 * sin(Double(lumaX) / 60 + phase))
                        cr = 128 + Int(90 * cos(Double(lumaY) / 45 - 2 * phase))
                    } else {
                        cb = 140 - lumaX * 30 / width
                        cr = 120 + lumaY * 20 / height
                    }
                    let dx = Double(lumaX) - discX
                    let dy = Double(lumaY) - discY
                    if dx * dx + dy * dy < radius * radius { (cb, cr) = motion ? (128, 128) : (110, 150) }
                    if abs(lumaX - squareX) < squareHalf && abs(lumaY - squareY) < 40 {
                        (cb, cr) = motion ? (90, 240) : (150, 110)
                    }
                    u[row * chromaWidth + column] = UInt8(min(255, max(0, cb)))
                    v[row * chromaWidth + column] = UInt8(min(255, max(0, cr)))
                }
            }
            return VideoFrame(width: width, height: height, y: y, u: u, v: v, timestampMicros: Int64(t) * 33_333)
        }
    }

    /// Packed RGB of a frame (BT.601 limited range, the same conversion the renderer uses).
    static func rgb(of frame: VideoFrame) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: frame.width * frame.height * 3)
        for row in 0..<frame.height {
            for column in 0..<frame.width {
                let c = 76284 * (Int(frame.y[row * frame.width + column]) - 16)
                let chroma = (row / 2) * frame.chromaWidth + column / 2
                let d = Int(frame.u[chroma]) - 128
                let e = Int(frame.v[chroma]) - 128
                let index = (row * frame.width + column) * 3
                out[index] = UInt8(min(255, max(0, (c + 104595 * e + 32768) >> 16)))
                out[index + 1] = UInt8(min(255, max(0, (c - 25624 * d - 53281 * e + 32768) >> 16)))
                out[index + 2] = UInt8(min(255, max(0, (c + 132252 * d + 32768) >> 16)))
            }
        }
        return out
    }
}

/// A minimal PNG writer: 8-bit RGB, zlib "stored" blocks (no compression), so decoding costs chafa next to nothing.
enum PNG {
    static func encode(rgb: [UInt8], width: Int, height: Int) -> [UInt8] {
        var raw: [UInt8] = []
        raw.reserveCapacity((width * 3 + 1) * height)
        for row in 0..<height {
            raw.append(0)  // filter type: none
            raw.append(contentsOf: rgb[(row * width * 3)..<((row + 1) * width * 3)])
        }
        var zlib: [UInt8] = [0x78, 0x01]
        var offset = 0
        repeat {
            let length = min(65535, raw.count - offset)
            zlib.append(offset + length == raw.count ? 1 : 0)
            zlib += [UInt8(length & 0xFF), UInt8(length >> 8), UInt8(~length & 0xFF), UInt8((~length >> 8) & 0xFF)]
            zlib.append(contentsOf: raw[offset..<(offset + length)])
            offset += length
        } while offset < raw.count
        zlib += bigEndian(adler32(raw))

        var header: [UInt8] = bigEndian(UInt32(width)) + bigEndian(UInt32(height))
        header += [8, 2, 0, 0, 0]
        return [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + chunk("IHDR", header) + chunk("IDAT", zlib)
            + chunk("IEND", [])
    }

    private static func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
        let typeBytes = Array(type.utf8)
        return bigEndian(UInt32(data.count)) + typeBytes + data + bigEndian(crc32(typeBytes + data))
    }

    private static func bigEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)]
    }

    private static let crcTable: [UInt32] = (0..<256).map { n in
        var c = UInt32(n)
        for _ in 0..<8 { c = c & 1 != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
        return c
    }

    private static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes { crc = crcTable[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
        return crc ^ 0xFFFF_FFFF
    }

    private static func adler32(_ bytes: [UInt8]) -> UInt32 {
        var a: UInt32 = 1
        var b: UInt32 = 0
        for byte in bytes {
            a = (a + UInt32(byte)) % 65521
            b = (b + a) % 65521
        }
        return b << 16 | a
    }
}
