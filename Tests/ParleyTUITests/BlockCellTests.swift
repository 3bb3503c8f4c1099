import ParleyMedia
import Testing

@testable import ParleyPictures
@testable import ParleyTUI

@Suite("Quadrant and sextant cells")
struct BlockCellTests {
    static let red = TerminalColor.rgb(254, 0, 0)
    static let blue = TerminalColor.rgb(0, 0, 255)

    /// One cell of a renderer's drawing of `frame` into a 1x1-cell tile (a cell is twice as tall as wide, so
    /// frames of that shape fill it).
    static func oneCell(_ frame: VideoFrame, _ cells: PictureCells, mode: VideoColorMode = .trueColor) -> Cell {
        var screen = Screen(width: 1, height: 1)
        var renderer = VideoCellRenderer(mode: mode, cells: cells)
        renderer.draw(frame, into: &screen, in: screen.bounds)
        return screen[0, 0]
    }

    struct SymbolCase: CustomTestStringConvertible, Sendable {
        var pattern: Int, scalar: UInt32
        var testDescription: String { "pattern \(pattern) is U+\(String(scalar, radix: 16, uppercase: true))" }
    }

    @Test(
        "sextant patterns map to Unicode's sextant code points, with the old block elements where they exist",
        arguments: [
            SymbolCase(pattern: 1, scalar: 0x1FB00), SymbolCase(pattern: 20, scalar: 0x1FB13),
            SymbolCase(pattern: 21, scalar: 0x258C), SymbolCase(pattern: 22, scalar: 0x1FB14),
            SymbolCase(pattern: 42, scalar: 0x2590), SymbolCase(pattern: 43, scalar: 0x1FB28),
            SymbolCase(pattern: 48, scalar: 0x1FB2D), SymbolCase(pattern: 62, scalar: 0x1FB3B),
            SymbolCase(pattern: 63, scalar: 0x2588), SymbolCase(pattern: 0, scalar: 0x20),
        ])
    func sextantCodePoints(_ c: SymbolCase) {
        #expect(BlockSymbols.sextants[c.pattern].unicodeScalars.first?.value == c.scalar)
    }

    @Test("every quadrant and sextant reads back as exactly the pixels of its pattern")
    func partsMatchPatterns() throws {
        for (symbols, across, down) in [(BlockSymbols.quadrants, 2, 2), (BlockSymbols.sextants, 2, 3)] {
            for (pattern, character) in symbols.enumerated() {
                let parts = try #require(BlockSymbols.parts(of: character.unicodeScalars.first!))
                let mask = CellPicture.coverage(parts, cellWidth: 2 * across, cellHeight: 2 * down)
                for k in 0..<(across * down) {
                    let x = 2 * (k % across)
                    let y = 2 * (k / across)
                    let expected = pattern & (1 << k) != 0 ? 1.0 : 0.0
                    #expect(mask[y * 2 * across + x] == expected, "\(character) pixel \(k)")
                }
            }
        }
    }

    struct EighthCase: CustomTestStringConvertible, Sendable {
        var name: String
        var cells: PictureCells
        /// White where true, black elsewhere, on a 16x32 frame (one cell of 16x32 source pixels).
        var white: @Sendable (Int, Int) -> Bool
        var character: Character
        var testDescription: String { name }
    }

    @Test(
        "an edge between the pattern's rows or columns is drawn with the eighth block or quadrant that places it",
        arguments: [
            EighthCase(
                name: "lower 3/8 in a sextant cell: '▃'", cells: .sextants, white: { _, y in y >= 20 },
                character: "▃"),
            EighthCase(
                name: "left 1/4 in a sextant cell: '▎'", cells: .sextants, white: { x, _ in x < 4 },
                character: "▎"),
            EighthCase(
                name: "lower 7/8 in a quadrant cell: '▇'", cells: .quadrants, white: { _, y in y >= 4 },
                character: "▇"),
            EighthCase(
                name: "a sextant's own row: its pattern, not an eighth", cells: .sextants,
                white: { _, y in y >= 21 }, character: "\u{1FB2D}"),
            EighthCase(
                name: "a corner in a sextant cell: the quadrant '▗' (no sextant has it)", cells: .sextants,
                white: { x, y in x >= 8 && y >= 16 }, character: "▗"),
            EighthCase(
                name: "a corner in a sextant cell: the quadrant '▘'", cells: .sextants,
                white: { x, y in x < 8 && y < 16 }, character: "▘"),
        ])
    func eighths(_ c: EighthCase) {
        let frame = TestFrames.make(width: 16, height: 32) { x, y in c.white(x, y) ? TestFrames.white : TestFrames.black
        }
        let cell = Self.oneCell(frame, c.cells)
        #expect(cell.character == c.character)
        #expect(
            cell.style.foreground == .rgb(255, 255, 255) && cell.style.background == .rgb(0, 0, 0),
            "\(cell.style)")
    }

    @Test("a left/right split in one quadrant cell is '▐' in the right colours, pixel 0 in the background")
    func quadrantSplit() {
        let frame = TestFrames.make(width: 4, height: 8) { column, _ in
            column < 2 ? TestFrames.red : TestFrames.blue
        }
        let cell = Self.oneCell(frame, .quadrants)
        #expect(cell.character == "▐")
        #expect(cell.style.foreground == Self.blue && cell.style.background == Self.red)
    }

    @Test("a white bottom third over black in one sextant cell is U+1FB2D")
    func sextantBottomRow() {
        let frame = TestFrames.make(width: 6, height: 12) { _, row in row >= 8 ? TestFrames.white : TestFrames.black }
        let cell = Self.oneCell(frame, .sextants)
        #expect(cell.character == Character(Unicode.Scalar(0x1FB2D)!))
        #expect(cell.style.foreground == .rgb(255, 255, 255) && cell.style.background == .rgb(0, 0, 0))
    }

    @Test("a diagonal in a quadrant cell picks '▚' or '▞'")
    func diagonal() {
        let frame = TestFrames.make(width: 4, height: 8) { column, row in
            (column < 2) == (row < 4) ? TestFrames.white : TestFrames.black
        }
        // White top left and bottom right: pixel 0 white in the background, '▞' in black.
        let cell = Self.oneCell(frame, .quadrants)
        #expect(cell.character == "▞")
        #expect(cell.style.background == .rgb(255, 255, 255) && cell.style.foreground == .rgb(0, 0, 0))
    }

    @Test("a flat cell is one colour, drawn as '▀' in two equal colours")
    func flatCell() {
        for cells in [PictureCells.quadrants, .sextants] {
            let cell = Self.oneCell(TestFrames.solid(TestFrames.red, width: 4, height: 8), cells)
            #expect(cell.character == "▀" && cell.style.foreground == Self.red && cell.style.background == Self.red)
        }
    }

    @Test("in 256 colours both colours come from the palette, and a cell whose colours meet is flat")
    func palette() {
        let frame = TestFrames.make(width: 4, height: 8) { column, _ in
            column < 2 ? TestFrames.red : TestFrames.blue
        }
        let cell = Self.oneCell(frame, .quadrants, mode: .palette256)
        #expect(cell.character == "▐")
        #expect(cell.style.foreground == .palette(Palette.perceptualIndex(r: 0, g: 0, b: 255)))
        #expect(cell.style.background == .palette(Palette.perceptualIndex(r: 254, g: 0, b: 0)))
        // Two greys one level apart land on the same palette grey: flat.
        let close = TestFrames.make(width: 4, height: 8) { column, _ in column < 2 ? (120, 128, 128) : (121, 128, 128) }
        let flat = Self.oneCell(close, .quadrants, mode: .palette256)
        #expect(flat.character == "▀" && flat.style.foreground == flat.style.background)
    }

    @Test("sextant letterbox: picture pixels over the tile's background at the edge")
    func letterboxEdge() {
        // 6:1 into 4x2 cells (8x6 sextant pixels, physically 4:4): picture 8x1.33 -> 8x1 pixels at row 2..
        var screen = Screen(width: 4, height: 2)
        var renderer = VideoCellRenderer(mode: .trueColor, cells: .sextants)
        let background = TerminalColor.palette(17)
        renderer.draw(
            TestFrames.solid(TestFrames.red, width: 48, height: 8), into: &screen, in: screen.bounds,
            background: background)
        let area = VideoCellRenderer.pictureArea(frameWidth: 48, frameHeight: 8, columns: 4, rows: 2, cells: .sextants)
        #expect(area == PictureArea(x: 0, y: 2, width: 8, height: 1))
        // Pixel row 2 is the bottom row of the top cells: pattern 48, red over the background.
        #expect(
            screen[0, 0]
                == Cell(
                    BlockSymbols.sextants[48],
                    style: CellStyle(
                        foreground: Self.red,
                        background: background)))
        #expect(screen[0, 1] == Cell(" ", style: CellStyle(background: background)))
    }

    struct AreaCase: CustomTestStringConvertible, Sendable {
        var name: String
        var frameWidth: Int, frameHeight: Int, columns: Int, rows: Int
        var cells: PictureCells
        var area: PictureArea
        var testDescription: String { name }
    }

    @Test(
        "picture areas in quadrant and sextant pixels keep the aspect",
        arguments: [
            AreaCase(
                name: "16:9 fills a 64x18 tile in sextants", frameWidth: 640, frameHeight: 360, columns: 64, rows: 18,
                cells: .sextants, area: PictureArea(x: 0, y: 0, width: 128, height: 54)),
            AreaCase(
                name: "16:9 fills a 64x18 tile in quadrants", frameWidth: 640, frameHeight: 360, columns: 64,
                rows: 18, cells: .quadrants, area: PictureArea(x: 0, y: 0, width: 128, height: 36)),
            AreaCase(
                name: "4:3 in a 16:9 tile is pillarboxed in sextants", frameWidth: 640, frameHeight: 480,
                columns: 64, rows: 18, cells: .sextants, area: PictureArea(x: 16, y: 0, width: 96, height: 54)),
            AreaCase(
                name: "16:9 in 80x24 quadrants", frameWidth: 640, frameHeight: 360, columns: 80, rows: 24,
                cells: .quadrants, area: PictureArea(x: 0, y: 1, width: 160, height: 45)),
        ])
    func areas(_ c: AreaCase) {
        #expect(
            VideoCellRenderer.pictureArea(
                frameWidth: c.frameWidth, frameHeight: c.frameHeight,
                columns: c.columns, rows: c.rows, cells: c.cells) == c.area)
    }

    @Test("a sextant picture reads back close to its source; sharper than half blocks on fine detail")
    func readBack() throws {
        // Vertical stripes two source pixels wide: half blocks (1 pixel per cell across) blur them to grey,
        // sextants (2 across) show them.
        let frame = TestFrames.make(width: 32, height: 24) { column, _ in
            (column / 2) % 2 == 0 ? TestFrames.white : TestFrames.black
        }
        func error(_ cells: PictureCells) throws -> Double {
            var screen = Screen(width: 8, height: 3)
            var renderer = VideoCellRenderer(mode: .trueColor, cells: cells)
            renderer.draw(frame, into: &screen, in: screen.bounds)
            let shown = try CellPicture.rgb(of: screen, in: screen.bounds, cellWidth: 4, cellHeight: 6)
            var sum = 0.0
            for y in 0..<18 {
                for x in 0..<32 {
                    let expected = (x / 2) % 2 == 0 ? 255.0 : 0.0
                    sum += abs(Double(shown[(y * 32 + x) * 3]) - expected)
                }
            }
            return sum / Double(32 * 18)
        }
        #expect(try error(.sextants) < 20)
        #expect(try error(.halfBlocks) > 100)
    }

    @Test("the perceptual palette keeps hues a nearest-RGB match turns grey")
    func perceptual() {
        #expect(Palette.perceptualIndex(r: 255, g: 0, b: 0) == 196)
        #expect(Palette.perceptualIndex(r: 0, g: 0, b: 0) == 16)
        #expect(Palette.perceptualIndex(r: 255, g: 255, b: 255) == 231)
        #expect((232...255).contains(Palette.perceptualIndex(r: 128, g: 128, b: 128)))
        // A dark blue: its nearest by weighted RGB is a grey, perceptually a blue of the cube.
        let index = Palette.perceptualIndex(r: 20, g: 20, b: 70)
        let rgb = Palette.rgb(ofIndex: index)
        #expect(rgb.b > rgb.r && rgb.b > rgb.g, "index \(index) is \(rgb)")
    }
}

@Suite("Choosing the picture mode")
struct PictureChoiceTests {
    struct Case: CustomTestStringConvertible, Sendable {
        var name: String
        var requested: PictureMode
        var depth: ColorDepth
        var environment: [String: String]
        var label: String
        var testDescription: String { name }
    }

    @Test(
        "auto and the explicit modes",
        arguments: [
            Case(
                name: "kitty draws sextants", requested: .auto, depth: .direct,
                environment: ["TERM": "xterm-kitty"], label: "sextant 24-bit"),
            Case(
                name: "WezTerm draws sextants", requested: .auto, depth: .palette256,
                environment: ["TERM_PROGRAM": "WezTerm"], label: "sextant 256"),
            Case(
                name: "foot draws sextants", requested: .auto, depth: .direct, environment: ["TERM": "foot"],
                label: "sextant 24-bit"),
            Case(
                name: "xterm 390 draws sextants", requested: .auto, depth: .palette256,
                environment: ["XTERM_VERSION": "XTerm(390)"], label: "sextant 256"),
            Case(
                name: "old xterm: quadrants in 24-bit", requested: .auto, depth: .direct,
                environment: ["XTERM_VERSION": "XTerm(353)"], label: "quadrant 24-bit"),
            Case(
                name: "inside tmux never sextants", requested: .auto, depth: .direct,
                environment: ["TERM_PROGRAM": "WezTerm", "TMUX": "/tmp/tmux-0/default,1,0"], label: "quadrant 24-bit"),
            Case(
                name: "unknown terminal, 256 colours: half blocks", requested: .auto, depth: .palette256,
                environment: ["TERM": "xterm-256color"], label: "half 256"),
            Case(name: "16 colours: shades", requested: .sextant, depth: .ansi16, environment: [:], label: "shade"),
            Case(
                name: "asked for sextants", requested: .sextant, depth: .palette256, environment: [:],
                label: "sextant 256"),
            Case(
                name: "asked for half blocks in kitty", requested: .half, depth: .direct,
                environment: ["TERM": "xterm-kitty"], label: "half 24-bit"),
            Case(name: "asked for shades", requested: .shade, depth: .direct, environment: [:], label: "shade"),
        ])
    func choose(_ c: Case) {
        let choice = PictureChoice.choose(
            c.requested, colors: c.depth, colorReason: "test",
            environment: c.environment)
        #expect(choice.label == c.label, "\(choice.reason)")
    }

    struct ColorCase: CustomTestStringConvertible, Sendable {
        var name: String
        var colors: Int
        var rgbFlag: Bool
        var environment: [String: String]
        var tmux: String?
        var trueColor: Bool
        var testDescription: String { name }
    }

    @Test(
        "24-bit colour is detected from terminfo, COLORTERM and tmux's client features",
        arguments: [
            ColorCase(
                name: "direct terminfo", colors: 1 << 24, rgbFlag: false, environment: [:], tmux: nil,
                trueColor: true),
            ColorCase(name: "RGB flag", colors: 256, rgbFlag: true, environment: [:], tmux: nil, trueColor: true),
            ColorCase(
                name: "COLORTERM=truecolor", colors: 256, rgbFlag: false, environment: ["COLORTERM": "truecolor"],
                tmux: nil, trueColor: true),
            ColorCase(
                name: "COLORTERM=24bit", colors: 256, rgbFlag: false, environment: ["COLORTERM": "24bit"],
                tmux: nil, trueColor: true),
            ColorCase(
                name: "nothing says so", colors: 256, rgbFlag: false, environment: [:], tmux: nil,
                trueColor: false),
            ColorCase(
                name: "tmux with an RGB client", colors: 256, rgbFlag: false,
                environment: ["TMUX": "x", "COLORTERM": "truecolor"], tmux: "256,RGB,title", trueColor: true),
            ColorCase(
                name: "tmux without: COLORTERM does not count", colors: 256, rgbFlag: false,
                environment: ["TMUX": "x", "COLORTERM": "truecolor"], tmux: "256,title", trueColor: false),
            ColorCase(
                name: "NO_COLOR wins", colors: 1 << 24, rgbFlag: true, environment: ["NO_COLOR": "1"], tmux: nil,
                trueColor: false),
            ColorCase(
                name: "8 colours", colors: 8, rgbFlag: false, environment: ["COLORTERM": "truecolor"], tmux: nil,
                trueColor: false),
        ])
    func trueColor(_ c: ColorCase) {
        let result = TrueColorDetection.detect(
            colors: c.colors, terminfoRGB: c.rgbFlag, environment: c.environment,
            tmuxClientFeatures: c.tmux)
        #expect(result.trueColor == c.trueColor, "\(result.reason)")
        #expect(!result.reason.isEmpty)
    }

    @Test("--picture values: the modes, the pixel modes, garbage refused with the list")
    func parse() throws {
        #expect(try PictureMode.parse("Sextant") == .sextant)
        #expect(try PictureMode.parse("auto") == .auto)
        #expect(try PictureMode.parse("kitty") == .kitty)
        #expect(try PictureMode.parse("SIXEL") == .sixel)
        #expect(throws: PictureModeError.unknown("hd")) { try PictureMode.parse("hd") }
        #expect(
            PictureModeError.unknown("hd").description.contains("auto, kitty, sixel, sextant, quadrant, half, shade"))
    }
}
