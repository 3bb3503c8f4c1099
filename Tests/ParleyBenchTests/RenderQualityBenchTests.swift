import ParleyPictures
import ParleyRoom
import ParleyTUI
import Testing

@testable import ParleyBench

@Suite("Picture quality bench")
struct RenderQualityBenchTests {
    @Test("chafa-style output replays onto a screen: 256 and 24-bit SGR, reverse video, empty lines between images")
    func replay() throws {
        let text =
            "\u{1B}[0m\u{1B}[38;5;196;48;5;21m▀▐\u{1B}[0m\n\u{1B}[38;2;1;2;3;48;2;4;5;6m\u{1FB2D}"
            + "\u{1B}[7m▌\u{1B}[0m\n\n\u{1B}[?25l\u{1B}[38;5;46m██\n"
        let screen = try ANSIText.screen(from: Array(text.utf8), width: 2, height: 3)
        #expect(screen[0, 0] == Cell("▀", style: CellStyle(foreground: .palette(196), background: .palette(21))))
        #expect(screen[1, 0].character == "▐")
        #expect(
            screen[0, 1] == Cell("\u{1FB2D}", style: CellStyle(foreground: .rgb(1, 2, 3), background: .rgb(4, 5, 6))))
        #expect(screen[1, 1] == Cell("▌", style: CellStyle(foreground: .rgb(4, 5, 6), background: .rgb(1, 2, 3))))
        #expect(screen[0, 2] == Cell("█", style: CellStyle(foreground: .palette(46))))
    }

    @Test("output past the grid or cut inside an escape is refused with where")
    func refused() {
        #expect(throws: ANSIText.Unreadable.self) { try ANSIText.screen(from: Array("abc".utf8), width: 2, height: 1) }
        #expect(throws: ANSIText.Unreadable.self) { try ANSIText.screen(from: [0x1B], width: 2, height: 1) }
        #expect(throws: ANSIText.Unreadable.self) {
            try ANSIText.screen(from: Array("\u{1B}[38;5m▀".utf8), width: 2, height: 1)
        }
    }

    @Test("read-back: half a cell covered blends at the boundary; a non-block character is refused")
    func readBack() throws {
        var screen = Screen(width: 2, height: 1)
        screen.write(
            "▂", column: 0, row: 0, style: CellStyle(foreground: .rgb(255, 255, 255), background: .rgb(0, 0, 0)))
        screen.write("a", column: 1, row: 0, style: .plain)
        #expect(throws: CellPicture.Unreadable.self) {
            try CellPicture.rgb(of: screen, in: screen.bounds, cellWidth: 10, cellHeight: 20)
        }
        // '▂' covers the bottom quarter: rows 15-19 of 20 white.
        let pixels = try CellPicture.rgb(
            of: screen, in: CellRect(x: 0, y: 0, width: 1, height: 1),
            cellWidth: 10, cellHeight: 20)
        #expect(pixels[14 * 30] == 0 && pixels[15 * 30] == 255 && pixels[19 * 30] == 255)
        // A sextant row boundary falls inside pixel row 6 of a 20-pixel cell (20/3): blended.
        var sextant = Screen(width: 1, height: 1)
        sextant.write(
            String(BlockSymbols.sextants[3]), column: 0, row: 0,
            style: CellStyle(foreground: .rgb(255, 255, 255), background: .rgb(0, 0, 0)))
        let top = try CellPicture.rgb(of: sextant, in: sextant.bounds, cellWidth: 10, cellHeight: 20)
        #expect(top[5 * 30] == 255 && top[6 * 30] == 170 && top[7 * 30] == 0)
    }

    @Test("PSNR: equal pictures 99 dB, one level off everywhere 48.13 dB")
    func psnr() {
        let a = [UInt8](repeating: 100, count: 300)
        #expect(BenchImage.psnr([a], [a]) == 99)
        let b = [UInt8](repeating: 101, count: 300)
        #expect(abs(BenchImage.psnr([a], [b]) - 48.13) < 0.01)
    }

    @Test("the reference scaler averages exactly: 4x2 to 2x1")
    func scale() {
        let rgb: [UInt8] = [
            0, 0, 0, 100, 100, 100, 10, 10, 10, 20, 20, 20,
            0, 0, 0, 100, 100, 100, 30, 30, 30, 40, 40, 40,
        ]
        #expect(
            RenderQualityBench.scaleRGB(rgb, width: 4, height: 2, toWidth: 2, toHeight: 1)
                == [50, 50, 50, 25, 25, 25])
    }
}

@Suite("Picture quality table")
struct RenderQualityTableTests {
    /// Every drawer on one content and grid, each PSNR from `psnr` by the drawer's column name.
    static func results(_ content: String, _ psnr: [String: Double], ssim: Double? = nil)
        -> [RenderQualityBench.Result]
    {
        RenderQualityBench.drawers.map { drawer in
            let column = drawer.pixels?.rawValue ?? "\(drawer.tool) \(drawer.symbols) \(drawer.colors)"
            return RenderQualityBench.Result(
                content: content, grid: "64x18", drawer: drawer, psnr: psnr[column] ?? 20, ssim: ssim)
        }
    }

    @Test("one row per content, grid and colours; a column per drawer; kitty in the 24-bit row, sixel in the 256")
    func pivot() {
        let table = RenderQualityBench.table(
            Self.results("call", ["Parley sextant 24-bit": 34.21, "kitty": 50, "sixel": 41.875, "chafa quad 256": 25]))
        #expect(
            table.columns == [
                "Content", "Grid", "Colours", "Parley half", "Parley quadrant", "Parley sextant", "chafa vhalf",
                "chafa quad", "chafa sextant", "chafa block+sextant", "kitty or sixel",
            ])
        #expect(
            table.rows == [
                [
                    "call", "64x18", "24-bit", "20.00", "20.00", "**34.21**", "20.00", "20.00", "20.00", "20.00",
                    "kitty 50.00",
                ],
                [
                    "call", "64x18", "256", "20.00", "20.00", "20.00", "20.00", "**25.00**", "20.00", "20.00",
                    "sixel 41.88",
                ],
            ])
        #expect(table.title.hasPrefix("Picture quality: PSNR dB of"))
    }

    @Test("with ffmpeg each cell carries SSIM after PSNR, and the title says so")
    func ssim() {
        let table = RenderQualityBench.table(Self.results("call", ["Parley sextant 24-bit": 30], ssim: 0.91234))
        #expect(table.rows[0][3] == "20.00 (0.912)")
        #expect(table.title.hasPrefix("Picture quality: PSNR dB (SSIM) of"))
    }

    @Test("goals: Parley's best cell mode over its half blocks (24-bit) and against chafa's best, every row")
    func goals() {
        let met =
            Self.results("call", ["Parley half 24-bit": 30, "Parley sextant 24-bit": 33, "chafa sextant 24-bit": 32.5])
            + Self.results("motion", ["Parley half 24-bit": 18, "Parley quadrant 24-bit": 20.5])
        #expect(
            RenderQualityBench.goalNotes(met) == [
                "Goal: Parley's best cell mode at least 2 dB over its half blocks, 24-bit, every content and grid: met "
                    + "(+2.5 to +3.0 dB).",
                "Goal: Parley's best cell mode at or above chafa's best, every row: met (4 of 4 rows; closest "
                    + "call 64x18 256, +0.00 dB).",
            ])
        let missed = Self.results("camera", ["Parley sextant 24-bit": 21.5, "chafa block+sextant 24-bit": 22])
        #expect(
            RenderQualityBench.goalNotes(missed) == [
                "Goal: Parley's best cell mode at least 2 dB over its half blocks, 24-bit, every content and grid: "
                    + "NOT met (+1.5 to +1.5 dB).",
                "Goal: Parley's best cell mode at or above chafa's best, every row: NOT met (1 of 2 rows; closest "
                    + "camera 64x18 24-bit, -0.50 dB).",
            ])
    }
}
