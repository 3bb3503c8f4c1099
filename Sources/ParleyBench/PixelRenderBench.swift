import Foundation
import ParleyMedia
import ParleyPictures
import ParleyTUI

#if canImport(Glibc)
import Glibc
import ParleyRoom
#endif

/// How fast the pixel modes turn video into terminal output, and how many bytes they write: 4 tiles of 320x240
/// pixels (cells of 10x20 pixels) through `VideoCellRenderer`'s pixel path and `PixelPictureWriter`, written to
/// /dev/null, every tile showing a new frame every time.
public enum PixelRenderBench {
    static let cell = CellPixelSize(width: 10, height: 20)
    /// Tile size in cells: 32x12 cells of 10x20 pixels = 320x240 pixels.
    static let tileColumns = 32, tileRows = 12
    static let tiles = 4
    static let patternLength = 24

    /// Runs both protocols on both contents for `frames` frames each.
    public static func run(frames: Int = 300, progress: (String) -> Void = { _ in }) throws -> BenchTable {
        var table = BenchTable(
            title: "Pixel modes: \(tiles) tiles of \(tileColumns * cell.width)x\(tileRows * cell.height) pixels, "
                + "640x480 I420 video, every tile a new frame each time",
            columns: [
                "Protocol", "Frames/s (all tiles), call / motion", "CPU ms/frame, call / motion",
                "Bytes/frame, call / motion", "kB/s at 30 fps, call / motion",
            ])
        var slowest: (fps: Double, label: String)?
        let sink = open("/dev/null", O_WRONLY)
        defer { close(sink) }
        let ways: [(kind: PixelProtocol, shared: Bool)] = [(.kitty, false), (.kitty, true), (.sixel, false)]
        for (kind, shared) in ways {
            let name = kind.rawValue + (shared ? " (shared memory)" : kind == .kitty ? " (direct)" : "")
            var cells: [[String]] = []
            for content in BenchPattern.Content.allCases {
                progress("pixel bench: \(name), \(content.rawValue)")
                let (fps, cpu, bytes) = measure(kind, shared: shared, content: content, frames: frames, sink: sink)
                let perFrame = Double(bytes) / Double(frames)
                cells.append([
                    formatted(fps, decimals: 0), formatted(cpu * 1000 / Double(frames), decimals: 1),
                    formatted(perFrame, decimals: 0), formatted(perFrame * 30 / 1e3, decimals: 0),
                ])
                if fps < slowest?.fps ?? .infinity { slowest = (fps, "\(name), \(content.rawValue)") }
            }
            table.add([name] + (0..<4).map { column in cells.map { $0[column] }.joined(separator: " / ") })
        }
        table.notes = [
            "One frame = all \(tiles) tiles: each scaled from 640x480 I420 to 320x240 RGB (box filter, BT.601), then "
                + "kitty: raw RGB, base64 in 4096-character chunks (a=T, one image id a tile, replaced in place); "
                + "sixel: a median-cut palette of up to 256 colours made for the frame, 6-row bands, each colour "
                + "only between its first and last column, run-length repeats. Output written to /dev/null; what a "
                + "terminal then spends decoding and drawing it is not counted.",
            "kitty (shared memory): the picture goes into a POSIX shared memory object and the terminal is sent its "
                + "name (t=s), as when kitty runs on the same machine; the bench reads and unlinks each object as "
                + "kitty would, and that is counted. Bytes/frame is what goes through the terminal.",
            "\(frames) frames after 10 warm-up frames, one thread; CPU ms/frame is this process's user + system time. "
                + "Content as in the renderer bench (call: mostly still; motion: every pixel moves). kB/s at 30 fps = "
                + "bytes a frame x 30: what a call drawn at 30 fps sends the terminal.",
        ]
        if let slowest {
            table.notes.append(
                goalNote(
                    "≥ 30 frames/s for all \(tiles) tiles, every protocol and content", met: slowest.fps >= 30,
                    "\(formatted(slowest.fps, decimals: 0)) at worst, \(slowest.label)"))
        }
        return table
    }

    /// Draws `frames` frames of `content` in every tile with `kind` and writes them to `sink`, after 10 warm-up
    /// frames: frames a second, CPU seconds and bytes written.
    static func measure(_ kind: PixelProtocol, shared: Bool, content: BenchPattern.Content, frames: Int, sink: Int32)
        -> (fps: Double, cpu: Double, bytes: Int)
    {
        let pattern = BenchPattern.frames(content, count: patternLength, width: 640, height: 480)
        var writer = PixelPictureWriter(canvas: PixelCanvas(kind: kind, cell: cell, sharedMemory: shared))
        var renderer = VideoCellRenderer(mode: .trueColor, pixels: true)
        let rects = (0..<tiles).map { index in
            CellRect(
                x: (index % 2) * tileColumns, y: (index / 2) * tileRows, width: tileColumns,
                height: tileRows)
        }
        // One spare row: sixel pictures never use the screen's last row.
        let width = 2 * tileColumns
        let height = 2 * tileRows + 1
        var bytes = 0
        func draw(_ index: Int) {
            var screen = Screen(width: width, height: height)
            for (tile, rect) in rects.enumerated() {
                var frame = pattern[(index + 5 * tile) % patternLength]
                frame.timestampMicros = Int64(index)
                renderer.draw(frame, into: &screen, in: rect, background: .rgb(0, 0, 0), key: tile)
            }
            let plan = writer.plan(screen, repaintAll: false)
            let output = writer.output(plan)
            output.withUnsafeBytes { _ = write(sink, $0.baseAddress, $0.count) }
            bytes += output.count
            writer.commit(plan)
            // No terminal takes the shared memory here: take it as kitty would (read, unlink).
            if shared { takeSharedPictures(from: output) }
        }
        for index in 0..<10 { draw(index) }  // warm-up: tables, scratch
        bytes = 0
        let cpuStart = ownCPUSeconds()
        let start = RenderBench.monotonicNanos()
        for index in 0..<frames { draw(10 + index) }
        let seconds = Double(RenderBench.monotonicNanos() - start) / 1e9
        let cpu = ownCPUSeconds() - cpuStart
        return (Double(frames) / seconds, cpu, bytes)
    }

    /// Reads and unlinks the shared memory objects `output` names, as kitty does.
    static func takeSharedPictures(from output: [UInt8]) {
        guard let commands = try? KittyGraphics.commands(in: output) else { return }
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        for command in commands where command.keys["t"] == "s" {
            guard let data = Data(base64Encoded: Data(command.payload)),
                let name = String(data: data, encoding: .utf8)
            else { continue }
            let descriptor = shm_open(name, O_RDONLY, 0)
            guard descriptor >= 0 else { continue }
            while read(descriptor, &buffer, buffer.count) > 0 {}
            close(descriptor)
            shm_unlink(name)
        }
    }
}
