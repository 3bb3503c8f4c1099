import Foundation
import ParleyMedia
import ParleyPictures
import ParleyProcesses
import ParleyRoom
import ParleyTUI

/// How close each picture mode comes to the source: the same frames drawn on the same cell grid by Parley's
/// modes and by chafa, every output read back into pixels the same way (`CellPicture`, cells of 10x20 pixels)
/// and compared with the source scaled to that pixel size.
public enum RenderQualityBench {
    /// Pixels of one cell when pictures are read back (a common terminal font at about 13 pt).
    static let cellWidth = 10, cellHeight = 20
    /// Cell grids measured: a tile of a 3x3 grid on a 200x60 terminal, and a small tile (both exactly 16:9).
    static let grids: [(columns: Int, rows: Int)] = [(64, 18), (32, 9)]
    /// Frames compared per content.
    static let framesPerContent = 4

    /// What the frames show.
    enum Content: String, CaseIterable {
        /// The render bench's call picture: gradient background, a head-and-shoulders shape, sensor noise.
        case call
        /// The render bench's moving colour bands and shapes.
        case motion
        /// The synthetic camera Parley sends in demos: text, a moving pattern, noise.
        case camera
    }

    /// One way of drawing: who draws, with which symbols, in which colours.
    struct Drawer {
        var tool: String
        var symbols: String
        var colors: String
        /// Parley's renderer, or nil for chafa.
        var parley: (mode: VideoColorMode, cells: PictureCells)?
        /// chafa's `--symbols` and `--colors` values.
        var chafa: (symbols: String, colors: String)?
        /// Parley's pixel modes: the picture sent (kitty) or decoded back from the sixel sent.
        var pixels: PixelProtocol?
    }

    static let drawers: [Drawer] = {
        var drawers: [Drawer] = []
        for (mode, colors) in [(VideoColorMode.trueColor, "24-bit"), (.palette256, "256")] {
            for cells in PictureCells.allCases {
                drawers.append(Drawer(tool: "Parley", symbols: cells.rawValue, colors: colors, parley: (mode, cells)))
            }
            for symbols in ["vhalf", "quad", "sextant", "block+sextant"] {
                drawers.append(
                    Drawer(
                        tool: "chafa", symbols: symbols, colors: colors,
                        chafa: (symbols, colors == "256" ? "256" : "full")))
            }
        }
        for kind in PixelProtocol.allCases {
            drawers.append(
                Drawer(
                    tool: "Parley", symbols: kind.rawValue,
                    colors: kind == .kitty ? "24-bit" : "256 a frame", pixels: kind))
        }
        return drawers
    }()

    /// Runs every content, grid and drawer. With `pictures`, also writes PNGs of the first call frame in every
    /// mode on the small grid there (for docs/terminal.md).
    public static func run(pictures: String? = nil, progress: (String) -> Void = { _ in }) throws -> BenchTable {
        let chafa = try RenderBench.findExecutable("chafa")
        let ffmpeg = try? RenderBench.findExecutable("ffmpeg")
        let directory = NSTemporaryDirectory() + "parley-render-quality-\(getpid())"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        if let pictures { try FileManager.default.createDirectory(atPath: pictures, withIntermediateDirectories: true) }

        var results: [Result] = []
        for content in Content.allCases {
            let frames = sourceFrames(content)
            var pngPaths: [String] = []
            for (index, frame) in frames.enumerated() {
                let path = "\(directory)/\(content.rawValue)-\(index).png"
                try Data(PNG.encode(rgb: BenchPattern.rgb(of: frame), width: frame.width, height: frame.height))
                    .write(to: URL(fileURLWithPath: path))
                pngPaths.append(path)
            }
            for grid in grids {
                progress("render quality: \(content.rawValue) on \(grid.columns)x\(grid.rows) cells")
                let width = grid.columns * cellWidth
                let height = grid.rows * cellHeight
                let references = frames.map {
                    scaleRGB(
                        BenchPattern.rgb(of: $0), width: $0.width, height: $0.height, toWidth: width,
                        toHeight: height)
                }
                for drawer in drawers {
                    guard
                        let shown = try drawn(
                            by: drawer, frames: frames, grid: grid, pngPaths: pngPaths, chafa: chafa)
                    else { continue }
                    var ssim: Double?
                    if let ffmpeg {
                        ssim = try BenchImage.ssim(
                            ffmpeg: ffmpeg, shown, references, width: width, height: height,
                            directory: directory)
                    }
                    results.append(
                        Result(
                            content: content.rawValue, grid: "\(grid.columns)x\(grid.rows)", drawer: drawer,
                            psnr: BenchImage.psnr(shown, references), ssim: ssim))
                    if let pictures, content == .call, grid == grids.last! {
                        let name =
                            "\(pictures)/\(drawer.tool.lowercased())-\(drawer.symbols)"
                            + (drawer.pixels != nil ? ".png" : "-\(drawer.colors == "256" ? "256" : "truecolor").png")
                        try BenchImage.writePNG(shown[0], width: width, height: height, to: name, ffmpeg: ffmpeg)
                    }
                }
                if let pictures, content == .call, grid == grids.last! {
                    try BenchImage.writePNG(
                        references[0], width: width, height: height,
                        to: "\(pictures)/source.png", ffmpeg: ffmpeg)
                }
            }
        }
        var table = Self.table(results)
        table.notes =
            [
                "Sources: \(framesPerContent) frames of each content at 640x360 (I420): call and motion as in the "
                    + "renderer bench, camera the synthetic camera demos send (text and a moving pattern). In bold, "
                    + "each row's best cell mode by PSNR. Pixel modes: kitty sends 24-bit pictures, sixel a palette of "
                    + "up to 256 colours made for each frame.",
                "Each drawing is read back as pixels (cells of 10x20, a block character's shapes in its foreground "
                    + "over its background, palette colours as xterm draws them) against the source in RGB (BT.601) "
                    + "scaled by an exact box filter to that size (64x18 cells = 640x360, the source itself). PSNR "
                    + "over R, G and B of all frames"
                    + (ffmpeg == nil ? " (no ffmpeg, so no SSIM)." : "; SSIM ffmpeg's All figure, mean over frames."),
                "Parley: `VideoCellRenderer`, a fresh renderer per frame (no hysteresis). chafa "
                    + "\(chafaVersion(chafa)): the same frames as RGB PNG, --size WxH --stretch --dither none --work 9 "
                    + "--format symbols, --colors full (24-bit) or 256.",
            ] + goalNotes(results)
        return table
    }

    /// `frames` as `drawer` shows them on `grid`, read back as RGB pixels; nil for a drawer that draws nothing here.
    static func drawn(
        by drawer: Drawer, frames: [VideoFrame], grid: (columns: Int, rows: Int), pngPaths: [String], chafa: String
    ) throws
        -> [[UInt8]]?
    {
        let width = grid.columns * cellWidth
        let height = grid.rows * cellHeight
        if let parley = drawer.parley {
            return try frames.map { frame in
                var renderer = VideoCellRenderer(mode: parley.mode, cells: parley.cells)
                var screen = Screen(width: grid.columns, height: grid.rows)
                renderer.draw(frame, into: &screen, in: screen.bounds)
                return try CellPicture.rgb(of: screen, in: screen.bounds, cellWidth: cellWidth, cellHeight: cellHeight)
            }
        } else if let kind = drawer.pixels {
            return try frames.map { try pixelPicture($0, kind: kind, width: width, height: height) }
        } else if let options = drawer.chafa {
            return try chafaPictures(
                chafa: chafa, files: pngPaths, grid: grid, symbols: options.symbols, colors: options.colors)
        }
        return nil
    }

    /// One drawer's figures on one content and grid.
    struct Result {
        var content: String
        var grid: String
        var drawer: Drawer
        var psnr: Double
        var ssim: Double?

        /// The table row it belongs to: pixel modes sit in the row of the colours they come nearest (kitty 24-bit,
        /// sixel 256).
        var rowColors: String { drawer.pixels == .sixel ? "256" : drawer.colors }
        /// The column it fills: one per cell drawer, one for both pixel modes.
        var column: String { drawer.pixels == nil ? "\(drawer.tool) \(drawer.symbols)" : "kitty or sixel" }
        /// The cell's text: PSNR, SSIM after it when measured, pixel modes named.
        var cell: String {
            (drawer.pixels.map { "\($0.rawValue) " } ?? "") + formatted(psnr, decimals: 2)
                + (ssim.map { " (\(formatted($0, decimals: 3)))" } ?? "")
        }
    }

    /// The results pivoted: one row per content, grid and colours, a column per drawer, each row's best cell mode
    /// (not counting the pixel modes, which are not cells) in bold.
    static func table(_ results: [Result]) -> BenchTable {
        let withSSIM = results.contains { $0.ssim != nil }
        var columns: [String] = []
        for result in results where !columns.contains(result.column) { columns.append(result.column) }
        var table = BenchTable(
            title: "Picture quality: PSNR dB\(withSSIM ? " (SSIM)" : "") of each mode's drawing against the source, "
                + "cells read back as 10x20 pixels",
            columns: ["Content", "Grid", "Colours"] + columns)
        var keys: [[String]] = []
        for result in results where !keys.contains([result.content, result.grid, result.rowColors]) {
            keys.append([result.content, result.grid, result.rowColors])
        }
        for key in keys {
            let row = results.filter { [$0.content, $0.grid, $0.rowColors] == key }
            let best = row.filter { $0.drawer.pixels == nil }.map(\.psnr).max()
            table.add(
                key
                    + columns.map { column in
                        guard let result = row.first(where: { $0.column == column }) else { return "" }
                        return result.drawer.pixels == nil && result.psnr == best ? "**\(result.cell)**" : result.cell
                    })
        }
        return table
    }

    /// The two picture goals: Parley's best cell mode at least 2 dB over its half blocks in 24-bit colour, and at
    /// or above chafa's best, on every content, grid and colours.
    static func goalNotes(_ results: [Result]) -> [String] {
        var gains: [Double] = []
        var margins: [(case: String, margin: Double)] = []
        var keys: [[String]] = []
        for result in results
        where result.drawer.pixels == nil && !keys.contains([result.content, result.grid, result.rowColors]) {
            keys.append([result.content, result.grid, result.rowColors])
        }
        for key in keys {
            let row = results.filter { [$0.content, $0.grid, $0.rowColors] == key && $0.drawer.pixels == nil }
            let parley = row.filter { $0.drawer.tool == "Parley" }
            let chafa = row.filter { $0.drawer.tool == "chafa" }
            guard let best = parley.map(\.psnr).max() else { continue }
            if key[2] == "24-bit", let half = parley.first(where: { $0.drawer.symbols == "half" }) {
                gains.append(best - half.psnr)
            }
            if let theirs = chafa.map(\.psnr).max() { margins.append((key.joined(separator: " "), best - theirs)) }
        }
        var notes: [String] = []
        if let low = gains.min(), let high = gains.max() {
            notes.append(
                goalNote(
                    "Parley's best cell mode at least 2 dB over its half blocks, 24-bit, every content and grid",
                    met: low >= 2, "\(signed(low, decimals: 1)) to \(signed(high, decimals: 1)) dB"))
        }
        if let closest = margins.min(by: { $0.margin < $1.margin }) {
            let above = margins.filter { $0.margin >= 0 }.count
            notes.append(
                goalNote(
                    "Parley's best cell mode at or above chafa's best, every row", met: above == margins.count,
                    "\(above) of \(margins.count) rows; closest \(closest.case), "
                        + "\(signed(closest.margin, decimals: 2)) dB"))
        }
        return notes
    }

    /// A difference with its sign: "+0.50", "-1.2".
    static func signed(_ value: Double, decimals: Int) -> String {
        (value >= 0 ? "+" : "") + formatted(value, decimals: decimals)
    }

    /// The frames compared for one content.
    static func sourceFrames(_ content: Content) -> [VideoFrame] {
        let width = 640
        let height = 360
        switch content {
        case .call, .motion:
            let pattern = BenchPattern.frames(
                content == .call ? .call : .motion, count: 24, width: width,
                height: height)
            return (0..<framesPerContent).map { pattern[$0 * 24 / framesPerContent] }
        case .camera:
            let camera = SyntheticCamera(
                name: "Bench", participant: 1, width: width, height: height,
                framesPerSecond: 30)
            return (0..<framesPerContent).map { camera.render(frameNumber: UInt32(10 * $0)) }
        }
    }

    /// What a pixel mode shows of `frame` on a `width`×`height` pixel tile: kitty's picture as it travels, sixel's
    /// decoded back from the bytes sent.
    static func pixelPicture(_ frame: VideoFrame, kind: PixelProtocol, width: Int, height: Int) throws -> [UInt8] {
        var scaler = PixelScaler()
        let canvas = PixelCanvas(kind: kind, cell: CellPixelSize(width: cellWidth, height: cellHeight))
        let area = canvas.pictureArea(
            frameWidth: frame.width, frameHeight: frame.height,
            columns: width / cellWidth, rows: height / cellHeight)
        let raster = scaler.raster(
            of: frame, width: width, height: height, area: area,
            background: PixelTile.RGB(r: 0, g: 0, b: 0))
        switch kind {
        case .kitty:
            let bytes = KittyGraphics.show(raster, id: 1, columns: width / cellWidth, rows: height / cellHeight)
            return try KittyGraphics.pictures(in: bytes)[0].raster.rgb
        case .sixel:
            var encoder = SixelEncoder()
            return try SixelDecoder.decode(encoder.encode(raster)).rgb
        }
    }

    /// chafa's drawing of each file, read back into pixels.
    static func chafaPictures(
        chafa: String, files: [String], grid: (columns: Int, rows: Int), symbols: String,
        colors: String
    ) throws -> [[UInt8]] {
        let arguments =
            [
                "--size", "\(grid.columns)x\(grid.rows)", "--stretch", "--symbols", symbols,
                "--colors", colors, "--dither", "none", "--work", "9", "--format", "symbols",
                "--animate", "off",
            ] + files
        let result = try ChildProcess.run(chafa, arguments, captureOutput: true)
        guard result.status == 0 else {
            throw RenderBenchError.commandFailed(
                command: "chafa " + arguments.joined(separator: " "),
                status: result.status, output: result.output)
        }
        let screen = try ANSIText.screen(
            from: Array(result.output.utf8), width: grid.columns,
            height: grid.rows * files.count)
        return try (0..<files.count).map { index in
            try CellPicture.rgb(
                of: screen,
                in: CellRect(
                    x: 0, y: index * grid.rows, width: grid.columns,
                    height: grid.rows),
                cellWidth: cellWidth, cellHeight: cellHeight)
        }
    }

    static func chafaVersion(_ chafa: String) -> String {
        let output = (try? ChildProcess.run(chafa, ["--version"], captureOutput: true).output) ?? ""
        return output.split(separator: "\n").first.map { String($0.split(separator: " ").last ?? "") } ?? "?"
    }

    /// RGB scaled by an exact box filter (each target pixel the area-weighted mean of the source pixels it covers;
    /// when enlarging, the source pixel it falls in).
    static func scaleRGB(_ rgb: [UInt8], width: Int, height: Int, toWidth: Int, toHeight: Int) -> [UInt8] {
        if width == toWidth && height == toHeight { return rgb }
        func weights(_ source: Int, _ target: Int) -> [[(Int, Double)]] {
            let scale = Double(source) / Double(target)
            return (0..<target).map { index in
                let start = Double(index) * scale
                let end = start + scale
                var taps: [(Int, Double)] = []
                var position = Int(start)
                while Double(position) < end && position < source {
                    let overlap = min(end, Double(position + 1)) - max(start, Double(position))
                    if overlap > 0 { taps.append((position, overlap / scale)) }
                    position += 1
                }
                return taps
            }
        }
        let columns = weights(width, toWidth)
        let rows = weights(height, toHeight)
        var out = [UInt8](repeating: 0, count: toWidth * toHeight * 3)
        for y in 0..<toHeight {
            for x in 0..<toWidth {
                for channel in 0..<3 {
                    var sum = 0.0
                    for (row, wy) in rows[y] {
                        for (column, wx) in columns[x] {
                            sum += wx * wy * Double(rgb[(row * width + column) * 3 + channel])
                        }
                    }
                    out[(y * toWidth + x) * 3 + channel] = UInt8(min(255, max(0, sum.rounded())))
                }
            }
        }
        return out
    }
}

/// Comparing and saving RGB pictures.
enum BenchImage {
    /// PSNR in dB over all channels of all pictures (the pooled mean squared error).
    static func psnr(_ shown: [[UInt8]], _ references: [[UInt8]]) -> Double {
        var sum = 0.0
        var count = 0
        for (a, b) in zip(shown, references) {
            for index in 0..<min(a.count, b.count) {
                let d = Double(a[index]) - Double(b[index])
                sum += d * d
            }
            count += min(a.count, b.count)
        }
        let mse = sum / Double(max(1, count))
        return mse == 0 ? 99 : 10 * log10(255 * 255 / mse)
    }

    /// ffmpeg's SSIM (All) between each pair, averaged.
    static func ssim(
        ffmpeg: String, _ shown: [[UInt8]], _ references: [[UInt8]], width: Int, height: Int,
        directory: String
    ) throws -> Double? {
        for (index, (a, b)) in zip(shown, references).enumerated() {
            try Data(PNG.encode(rgb: a, width: width, height: height))
                .write(to: URL(fileURLWithPath: "\(directory)/shown-\(index).png"))
            try Data(PNG.encode(rgb: b, width: width, height: height))
                .write(to: URL(fileURLWithPath: "\(directory)/reference-\(index).png"))
        }
        let result = try ChildProcess.run(
            ffmpeg,
            [
                "-hide_banner", "-nostdin", "-framerate", "1", "-i", "\(directory)/shown-%d.png", "-framerate", "1",
                "-i", "\(directory)/reference-%d.png", "-lavfi", "ssim", "-f", "null", "-",
            ], captureOutput: true)
        guard result.status == 0, let range = result.output.range(of: "All:") else { return nil }
        return Double(result.output[range.upperBound...].prefix { $0 == "." || $0.isNumber })
    }

    /// Writes a PNG, compressed by ffmpeg when it is there (the plain writer stores pixels uncompressed).
    static func writePNG(_ rgb: [UInt8], width: Int, height: Int, to path: String, ffmpeg: String?) throws {
        let raw = ffmpeg == nil ? path : path + ".raw.png"
        try Data(PNG.encode(rgb: rgb, width: width, height: height)).write(to: URL(fileURLWithPath: raw))
        guard let ffmpeg else { return }
        defer { unlink(raw) }
        let result = try ChildProcess.run(
            ffmpeg,
            [
                "-hide_banner", "-nostdin", "-loglevel", "error", "-y", "-i", raw,
                "-compression_level", "100", path,
            ], captureOutput: true)
        guard result.status == 0 else {
            throw RenderBenchError.commandFailed(
                command: "ffmpeg -i \(raw) \(path)", status: result.status,
                output: result.output)
        }
    }
}

/// Terminal output (text, SGR colours, line feeds) replayed onto a `Screen`: enough of ECMA-48 to read what image
/// tools such as chafa print. Empty lines are skipped.
enum ANSIText {
    /// Why the output cannot be read.
    struct Unreadable: Error, CustomStringConvertible {
        var reason: String
        var description: String { "cannot read terminal output: \(reason)" }
    }

    static func screen(from bytes: [UInt8], width: Int, height: Int) throws -> Screen {
        var screen = Screen(width: width, height: height)
        var graphics = GraphicRendition()
        var row = 0
        var column = 0
        let text = String(decoding: bytes, as: UTF8.self)
        var scalars = text.unicodeScalars.makeIterator()
        while let scalar = scalars.next() {
            switch scalar {
            case "\u{1B}":
                guard let next = scalars.next() else { throw Unreadable(reason: "output ends inside an escape") }
                guard next == "[" else { continue }
                var body = ""
                var final: Unicode.Scalar?
                while let c = scalars.next() {
                    if (0x40...0x7E).contains(c.value) {
                        final = c
                        break
                    }
                    body.unicodeScalars.append(c)
                }
                guard final == "m" else { continue }
                guard !body.hasPrefix("?") else { continue }
                try graphics.apply(body.split(separator: ";", omittingEmptySubsequences: false).map { Int($0) ?? 0 })
            case "\n":
                // chafa separates images with an empty line: empty lines are skipped.
                if column > 0 { row += 1 }
                column = 0
            case "\r":
                column = 0
            default:
                guard row < height, column < width else {
                    throw Unreadable(reason: "text past the \(width)x\(height) grid at (\(column),\(row))")
                }
                screen.write(String(Character(scalar)), column: column, row: row, style: graphics.cellStyle)
                column += 1
            }
        }
        return screen
    }

    /// The colours and reverse video that SGR sequences (`ESC [ … m`) set, as a terminal keeps them.
    struct GraphicRendition {
        var style = CellStyle.plain
        var reverse = false

        /// The style a character written now gets.
        var cellStyle: CellStyle {
            var cellStyle = style
            if reverse { swap(&cellStyle.foreground, &cellStyle.background) }
            return cellStyle
        }

        /// Applies one SGR sequence's parameters.
        mutating func apply(_ parameters: [Int]) throws {
            var index = 0
            let list = parameters.isEmpty ? [0] : parameters
            while index < list.count {
                switch list[index] {
                case 0:
                    style = .plain
                    reverse = false
                case 7: reverse = true
                case 27: reverse = false
                case 39: style.foreground = .default
                case 49: style.background = .default
                case 30...37: style.foreground = .palette(UInt8(list[index] - 30))
                case 40...47: style.background = .palette(UInt8(list[index] - 40))
                case 90...97: style.foreground = .palette(UInt8(list[index] - 82))
                case 100...107: style.background = .palette(UInt8(list[index] - 92))
                case 38, 48:
                    let color: TerminalColor
                    if index + 2 < list.count, list[index + 1] == 5 {
                        color = .palette(UInt8(clamping: list[index + 2]))
                        index += 2
                    } else if index + 4 < list.count, list[index + 1] == 2 {
                        color = .rgb(
                            UInt8(clamping: list[index + 2]), UInt8(clamping: list[index + 3]),
                            UInt8(clamping: list[index + 4]))
                        index += 4
                    } else {
                        throw Unreadable(reason: "incomplete colour in SGR \(list)")
                    }
                    if list[index - (color.isPalette ? 2 : 4)] == 38 {
                        style.foreground = color
                    } else {
                        style.background = color
                    }
                default: break
                }
                index += 1
            }
        }
    }
}

extension TerminalColor {
    fileprivate var isPalette: Bool { if case .palette = self { return true } else { return false } }
}
