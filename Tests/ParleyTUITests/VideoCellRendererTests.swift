import ParleyMedia
import ParleyRoom
import Testing

@testable import ParleyPictures
@testable import ParleyTUI

/// I420 frames with known content, built pixel by pixel (chroma taken from the top-left pixel of each 2x2 block).
enum TestFrames {
    typealias YUV = (y: UInt8, u: UInt8, v: UInt8)
    // BT.601 limited range.
    static let red: YUV = (81, 90, 240)
    static let blue: YUV = (41, 240, 110)
    static let green: YUV = (145, 54, 34)
    static let white: YUV = (235, 128, 128)
    static let black: YUV = (16, 128, 128)

    static func make(width: Int, height: Int, pixel: (Int, Int) -> YUV) -> VideoFrame {
        var y = [UInt8](repeating: 0, count: width * height)
        let chromaWidth = (width + 1) / 2
        let chromaHeight = (height + 1) / 2
        var u = [UInt8](repeating: 0, count: chromaWidth * chromaHeight)
        var v = u
        for row in 0..<height {
            for column in 0..<width {
                let p = pixel(column, row)
                y[row * width + column] = p.y
                if row % 2 == 0 && column % 2 == 0 {
                    u[(row / 2) * chromaWidth + column / 2] = p.u
                    v[(row / 2) * chromaWidth + column / 2] = p.v
                }
            }
        }
        return VideoFrame(width: width, height: height, y: y, u: u, v: v)
    }

    static func solid(_ color: YUV, width: Int = 16, height: Int = 16) -> VideoFrame {
        VideoFrame(width: width, height: height, fillY: color.y, fillU: color.u, fillV: color.v)
    }
}

@Suite("Video cell renderer")
struct VideoCellRendererTests {
    static let red = [TerminalColor.palette(196), .palette(196)]
    static let blue = [TerminalColor.palette(21), .palette(21)]

    /// What a viewer sees in a cell: top and bottom colour (nil for a cell that is not a block).
    static func seen(_ cell: Cell) -> [TerminalColor]? {
        cell.visibleHalves.map { [$0.top, $0.bottom] }
    }

    /// What a viewer sees along one screen row inside a rectangle.
    static func row(_ screen: Screen, _ row: Int, from column: Int = 0, width: Int? = nil) -> [[TerminalColor]?] {
        let count = width ?? screen.width - column
        return (column..<(column + count)).map { seen(screen[$0, row]) }
    }

    static func repeated(_ colors: [TerminalColor], _ count: Int) -> [[TerminalColor]?] {
        Array(repeating: colors, count: count)
    }

    @Test("a solid red frame gives red half blocks in every cell")
    func solidRed() {
        var screen = Screen(width: 8, height: 4)
        var renderer = VideoCellRenderer(mode: .palette256)
        renderer.draw(TestFrames.solid(TestFrames.red), into: &screen, in: screen.bounds)
        #expect(screen.cells.allSatisfy { Self.seen($0) == Self.red })
        #expect(screen.text == String(repeating: "▀▀▀▀▀▀▀▀\n", count: 3) + "▀▀▀▀▀▀▀▀", "picture cells are '▀'")
    }

    @Test("a top/bottom split puts red above blue inside the boundary cell")
    func split() {
        // 16x16 source into 8x4 cells (8x8 pixels): source rows 0–5 red give pixel rows 0–2.
        let frame = TestFrames.make(width: 16, height: 16) { _, row in row < 6 ? TestFrames.red : TestFrames.blue }
        var screen = Screen(width: 8, height: 4)
        var renderer = VideoCellRenderer(mode: .palette256)
        renderer.draw(frame, into: &screen, in: screen.bounds)
        #expect(Self.row(screen, 0) == Self.repeated(Self.red, 8))
        #expect(Self.row(screen, 1) == Self.repeated([.palette(196), .palette(21)], 8))
        #expect(Self.row(screen, 2) == Self.repeated(Self.blue, 8))
        #expect(Self.row(screen, 3) == Self.repeated(Self.blue, 8))
        #expect(screen[0, 1].character == "▀")
    }

    @Test("a left/right split keeps its columns")
    func leftRight() {
        let frame = TestFrames.make(width: 16, height: 16) { column, _ in
            column < 8 ? TestFrames.green : TestFrames.white
        }
        var screen = Screen(width: 8, height: 4)
        var renderer = VideoCellRenderer(mode: .palette256)
        renderer.draw(frame, into: &screen, in: screen.bounds)
        let green = Palette.nearestIndex(r: 0, g: 255, b: 0)
        for row in 0..<4 {
            #expect(
                Self.row(screen, row)
                    == Self.repeated([.palette(green), .palette(green)], 4)
                    + Self.repeated([.palette(231), .palette(231)], 4))
        }
    }

    struct AreaCase: CustomTestStringConvertible, Sendable {
        var name: String
        var frameWidth: Int, frameHeight: Int, columns: Int, rows: Int
        var area: PictureArea
        var testDescription: String { name }
    }

    @Test(
        "pictures keep their aspect and are centred",
        arguments: [
            AreaCase(
                name: "16:9 in 80x24 is letterboxed by a pixel and a half", frameWidth: 640, frameHeight: 360,
                columns: 80, rows: 24, area: PictureArea(x: 0, y: 1, width: 80, height: 45)),
            AreaCase(
                name: "16:9 in a tall tile", frameWidth: 640, frameHeight: 360, columns: 20, rows: 20,
                area: PictureArea(x: 0, y: 14, width: 20, height: 11)),
            AreaCase(
                name: "16:9 in a wide tile is pillarboxed", frameWidth: 640, frameHeight: 360, columns: 100,
                rows: 10, area: PictureArea(x: 32, y: 0, width: 36, height: 20)),
            AreaCase(
                name: "square in square pixels fills", frameWidth: 16, frameHeight: 16, columns: 8, rows: 4,
                area: PictureArea(x: 0, y: 0, width: 8, height: 8)),
            AreaCase(
                name: "tiny tile still shows a pixel", frameWidth: 640, frameHeight: 360, columns: 1, rows: 1,
                area: PictureArea(x: 0, y: 0, width: 1, height: 1)),
            AreaCase(
                name: "empty tile", frameWidth: 640, frameHeight: 360, columns: 0, rows: 5,
                area: PictureArea(x: 0, y: 0, width: 0, height: 0)),
        ])
    func pictureArea(_ c: AreaCase) {
        #expect(
            VideoCellRenderer.pictureArea(
                frameWidth: c.frameWidth, frameHeight: c.frameHeight,
                columns: c.columns, rows: c.rows) == c.area)
    }

    @Test("a wide frame is letterboxed with half-cell bars in the background colour")
    func letterbox() {
        // 32x8 (4:1) into 8x4 cells (8x8 pixels): picture 8x2 pixels at pixel rows 3 and 4.
        var screen = Screen(width: 8, height: 4)
        var renderer = VideoCellRenderer(mode: .palette256)
        let background = TerminalColor.palette(17)
        renderer.draw(
            TestFrames.solid(TestFrames.red, width: 32, height: 8), into: &screen, in: screen.bounds,
            background: background)
        let bar = Cell(" ", style: CellStyle(background: background))
        func cells(_ row: Int) -> [Cell] { (0..<8).map { screen[$0, row] } }
        #expect(cells(0) == Array(repeating: bar, count: 8))
        #expect(
            cells(1)
                == Array(
                    repeating: Cell(
                        "▄",
                        style: CellStyle(
                            foreground: .palette(196), background: background)), count: 8))
        #expect(
            cells(2)
                == Array(
                    repeating: Cell(
                        "▀",
                        style: CellStyle(
                            foreground: .palette(196), background: background)), count: 8))
        #expect(cells(3) == Array(repeating: bar, count: 8))
    }

    @Test("a tall frame is pillarboxed")
    func pillarbox() {
        // 8x16 (1:2) into 8x4 cells (8x8 pixels): picture 4x8 pixels at columns 2–5.
        var screen = Screen(width: 8, height: 4)
        var renderer = VideoCellRenderer(mode: .palette256)
        renderer.draw(TestFrames.solid(TestFrames.blue, width: 8, height: 16), into: &screen, in: screen.bounds)
        for row in 0..<4 {
            #expect(
                Self.row(screen, row).map { $0 == Self.blue }
                    == [false, false, true, true, true, true, false, false])
        }
        #expect(screen[0, 0] == Cell(" ", style: .plain))
        #expect(screen[7, 3] == Cell(" ", style: .plain))
    }

    @Test("enlarging a tiny frame repeats its pixels")
    func enlarge() {
        let frame = TestFrames.make(width: 2, height: 2) { column, _ in column == 0 ? TestFrames.red : TestFrames.blue }
        var screen = Screen(width: 8, height: 4)
        var renderer = VideoCellRenderer(mode: .palette256)
        renderer.draw(frame, into: &screen, in: screen.bounds)
        // Both chroma samples come from the left pixel (2x2 chroma block), so compare luma-driven results only.
        #expect(Self.row(screen, 0, from: 0, width: 4).allSatisfy { $0 == Self.row(screen, 3)[0] })
        #expect(Self.row(screen, 0, from: 4, width: 4).allSatisfy { $0 == Self.row(screen, 3)[7] })
        #expect(Self.seen(screen[0, 0]) != Self.seen(screen[7, 0]))
    }

    @Test("true colour gives exact RGB")
    func trueColor() {
        var screen = Screen(width: 2, height: 1)
        var renderer = VideoCellRenderer(mode: .trueColor)
        renderer.draw(TestFrames.solid(TestFrames.white, width: 4, height: 4), into: &screen, in: screen.bounds)
        #expect(
            screen[0, 0]
                == Cell(
                    "▀",
                    style: CellStyle(
                        foreground: .rgb(255, 255, 255),
                        background: .rgb(255, 255, 255))))
        renderer.draw(TestFrames.solid(TestFrames.red, width: 4, height: 4), into: &screen, in: screen.bounds)
        #expect(Self.seen(screen[1, 0]) == [.rgb(254, 0, 0), .rgb(254, 0, 0)])
    }

    @Test("shade mode draws luminance with shade characters")
    func shades() {
        // Five columns from black to white (luminance 0, 77, 128, 180, 255), 5x6 pixels into 5x3 cells.
        let levels: [UInt8] = [16, 82, 126, 171, 235]
        let frame = TestFrames.make(width: 5, height: 6) { column, _ in (levels[column], 128, 128) }
        var tile = Screen(width: 5, height: 3)
        var renderer = VideoCellRenderer(mode: .shades)
        renderer.draw(frame, into: &tile, in: tile.bounds)
        #expect(tile.text == String(repeating: " ░▒▓█\n", count: 2) + " ░▒▓█")
        #expect(tile.cells.allSatisfy { $0.style == .plain })
    }

    @Test("NO_COLOR gives shade mode and no colour in any cell")
    func noColor() {
        let depth = ColorDepth.detect(colors: 256, environment: ["NO_COLOR": "1"])
        #expect(VideoColorMode(depth: depth) == .shades)
        var screen = Screen(width: 8, height: 4)
        var renderer = VideoCellRenderer(mode: VideoColorMode(depth: depth))
        // White 4:1 letterboxed: the picture covers half of rows 1 and 2, so they carry half the ink.
        renderer.draw(TestFrames.solid(TestFrames.white, width: 32, height: 8), into: &screen, in: screen.bounds)
        #expect(screen.cells.allSatisfy { $0.style.foreground == .default && $0.style.background == .default })
        #expect(screen.text == "\n▒▒▒▒▒▒▒▒\n▒▒▒▒▒▒▒▒\n")
    }

    @Test("colour modes follow the terminal's depth")
    func modes() {
        #expect(VideoColorMode(depth: .direct) == .trueColor)
        #expect(VideoColorMode(depth: .palette256) == .palette256)
        #expect(VideoColorMode(depth: .ansi16) == .shades)
        #expect(VideoColorMode(depth: .ansi8) == .shades)
        #expect(VideoColorMode(depth: .monochrome) == .shades)
    }

    @Test("a tile partly off the screen is clipped, cells outside the tile are untouched")
    func clipping() {
        var screen = Screen(width: 10, height: 4)
        screen.write("abcdefghij", column: 0, row: 0, style: .plain)
        var renderer = VideoCellRenderer(mode: .palette256)
        renderer.draw(
            TestFrames.solid(TestFrames.red), into: &screen,
            in: CellRect(x: 6, y: 1, width: 8, height: 4))
        #expect(screen.text(row: 0) == "abcdefghij")
        // 16x16 into 8x4 cells fills it; the visible part is columns 6–9, rows 1–3.
        for row in 1..<4 {
            #expect(Self.row(screen, row, from: 6) == Self.repeated(Self.red, 4))
            #expect((0..<6).allSatisfy { screen[$0, row] == .blank })
        }
    }

    @Test("video over half of a wide character blanks the other half")
    func wideCharacterAtEdge() {
        var screen = Screen(width: 8, height: 1)
        screen.write("ab日cd", column: 0, row: 0, style: .plain)
        var renderer = VideoCellRenderer(mode: .palette256)
        renderer.draw(
            TestFrames.solid(TestFrames.red), into: &screen,
            in: CellRect(x: 3, y: 0, width: 2, height: 1))
        #expect(screen.text(row: 0) == "ab ▀▀d")
        #expect(Self.row(screen, 0, from: 3, width: 2) == Self.repeated(Self.red, 2))
        #expect(screen.cells.allSatisfy { !$0.isContinuation })
    }

    @Test("hysteresis: a small change near a palette boundary keeps the shown colour, a big change switches")
    func hysteresis() throws {
        func freshColor(_ luma: UInt8) -> TerminalColor? {
            var screen = Screen(width: 1, height: 1)
            var renderer = VideoCellRenderer(mode: .palette256)
            renderer.draw(TestFrames.solid((luma, 128, 128), width: 2, height: 2), into: &screen, in: screen.bounds)
            return screen[0, 0].visibleHalves?.top
        }
        // A grey level where two luma steps cross from one palette colour to the next.
        let boundary = try #require((UInt8(16)...UInt8(200)).first { freshColor($0) != freshColor($0 + 2) })
        var screen = Screen(width: 1, height: 1)
        var renderer = VideoCellRenderer(mode: .palette256)
        for (luma, expected) in [
            (boundary, freshColor(boundary)), (boundary + 2, freshColor(boundary)),
            (boundary, freshColor(boundary)), (boundary + 30, freshColor(boundary + 30)),
        ] {
            renderer.draw(TestFrames.solid((luma, 128, 128), width: 2, height: 2), into: &screen, in: screen.bounds)
            #expect(screen[0, 0].visibleHalves?.top == expected, "luma \(luma)")
        }
        // True colour: the same for exact RGB values.
        var exact = VideoCellRenderer(mode: .trueColor)
        exact.draw(TestFrames.solid((120, 128, 128), width: 2, height: 2), into: &screen, in: screen.bounds)
        let first = screen[0, 0].visibleHalves?.top
        exact.draw(TestFrames.solid((122, 128, 128), width: 2, height: 2), into: &screen, in: screen.bounds)
        #expect(screen[0, 0].visibleHalves?.top == first)
        exact.draw(TestFrames.solid((160, 128, 128), width: 2, height: 2), into: &screen, in: screen.bounds)
        #expect(screen[0, 0].visibleHalves?.top != first)
    }
}
