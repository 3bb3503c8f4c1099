import Testing

@testable import ParleyTUI

@Suite("Picture output")
struct PictureOutputTests {
    typealias Spec = (scalar: UInt32, foreground: Int32, background: Int32)
    static let upper: UInt32 = 0x2580

    /// Runs one burst over `cells` (row, column, colours), with the row's other picture cells from `row`.
    static func burst(
        width: Int = 10, _ cells: [(row: Int, column: Int, fg: Int32, bg: Int32)],
        neighbours: [Int: Spec] = [:], capabilities: PictureCapabilities = .xterm
    ) throws -> String {
        var output = try #require(PictureOutput(capabilities: capabilities))
        output.begin(width: width)
        for cell in cells {
            output.add(scalar: upper, foreground: cell.fg, background: cell.bg, row: cell.row, column: cell.column) {
                neighbours[cell.row * width + $0]
            }
        }
        output.finish()
        return String(decoding: output.bytes, as: UTF8.self)
    }

    @Test("a burst saves the cursor, resets attributes, and restores both at the end")
    func frame() throws {
        #expect(
            try Self.burst([(0, 0, 196, 21)]) == "\u{1B}7\u{1B}[m\u{1B}[1;1H\u{1B}[38;5;196;48;5;21m▀\u{1B}[m\u{1B}8")
    }

    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var cells: [[Int32]]  // row, column, foreground, background
        var middle: String
        var testDescription: String { name }
    }

    @Test(
        "colours are sent only when they change, the cursor only when it jumps",
        arguments: [
            Case(
                name: "three cells in a row, same colours: one address, one colour pair",
                cells: [[2, 3, 1, 2], [2, 4, 1, 2], [2, 5, 1, 2]], middle: "\u{1B}[3;4H\u{1B}[38;5;1;48;5;2m▀▀▀"),
            Case(
                name: "only the background changes", cells: [[0, 0, 1, 2], [0, 1, 1, 3]],
                middle: "\u{1B}[1;1H\u{1B}[38;5;1;48;5;2m▀\u{1B}[48;5;3m▀"),
            Case(
                name: "a new row: a new address, colours kept", cells: [[0, 0, 1, 2], [1, 0, 1, 2]],
                middle: "\u{1B}[1;1H\u{1B}[38;5;1;48;5;2m▀\u{1B}[2;1H▀"),
            Case(
                name: "a gap wider than three cells: jump along the row (cuf, shorter than an address)",
                cells: [[0, 0, 1, 2], [0, 5, 1, 2]], middle: "\u{1B}[1;1H\u{1B}[38;5;1;48;5;2m▀\u{1B}[4C▀"),
            Case(
                name: "past the last column the position is unknown", cells: [[0, 9, 1, 2], [1, 0, 1, 2]],
                middle: "\u{1B}[1;10H\u{1B}[38;5;1;48;5;2m▀\u{1B}[2;1H▀"),
            Case(
                name: "direct colours (above 255) through the same strings", cells: [[0, 0, 0x123456, 0x10]],
                middle: "\u{1B}[1;1H\u{1B}[38;5;1193046;48;5;16m▀"),
            Case(
                name: "the swapped spelling needs no colour change: '▄' with the colours swapped",
                cells: [[0, 0, 1, 2], [0, 1, 2, 1]], middle: "\u{1B}[1;1H\u{1B}[38;5;1;48;5;2m▀▄"),
            Case(
                name: "the swapped spelling changes one colour where '▀' would change two",
                cells: [[0, 0, 1, 2], [0, 1, 3, 1]], middle: "\u{1B}[1;1H\u{1B}[38;5;1;48;5;2m▀\u{1B}[48;5;3m▄"),
            Case(
                name: "one colour in both halves: '█' in it, the pen's background left as it is",
                cells: [[0, 0, 1, 2], [0, 1, 2, 2], [0, 2, 4, 4], [0, 3, 1, 2]],
                middle: "\u{1B}[1;1H\u{1B}[38;5;1;48;5;2m▀\u{1B}[38;5;2m█\u{1B}[38;5;4m█\u{1B}[38;5;1m▀"),
            Case(
                name: "one colour that is the pen's foreground: no colour sent at all",
                cells: [[0, 0, 1, 2], [0, 1, 1, 1]], middle: "\u{1B}[1;1H\u{1B}[38;5;1;48;5;2m▀█"),
        ])
    func table(_ test: Case) throws {
        let burst = try Self.burst(test.cells.map { (row: Int($0[0]), column: Int($0[1]), fg: $0[2], bg: $0[3]) })
        #expect(burst == "\u{1B}7\u{1B}[m" + test.middle + "\u{1B}[m\u{1B}8")
    }

    @Test("without cuf, short gaps of unchanged picture cells are written again instead of jumping over them")
    func gapFilling() throws {
        var noRight = PictureCapabilities.xterm
        noRight.moveRight = { _ in nil }
        let neighbours: [Int: Spec] = [1: (Self.upper, 1, 2), 2: (Self.upper, 7, 2)]
        #expect(
            try Self.burst([(0, 0, 1, 2), (0, 3, 1, 2)], neighbours: neighbours, capabilities: noRight)
                == "\u{1B}7\u{1B}[m\u{1B}[1;1H\u{1B}[38;5;1;48;5;2m▀▀\u{1B}[38;5;7m▀\u{1B}[38;5;1m▀\u{1B}[m\u{1B}8")
        // A cell in the gap that is not a picture (a tile border): jump over the gap.
        #expect(
            try Self.burst([(0, 0, 1, 2), (0, 3, 1, 2)], neighbours: [1: (Self.upper, 1, 2)], capabilities: noRight)
                == "\u{1B}7\u{1B}[m\u{1B}[1;1H\u{1B}[38;5;1;48;5;2m▀▀\u{1B}[1;4H▀\u{1B}[m\u{1B}8")
        // With cuf the same gap is jumped along the row.
        #expect(
            try Self.burst([(0, 0, 1, 2), (0, 3, 1, 2)], neighbours: neighbours)
                == "\u{1B}7\u{1B}[m\u{1B}[1;1H\u{1B}[38;5;1;48;5;2m▀\u{1B}[2C▀\u{1B}[m\u{1B}8")
    }

    @Test("a terminal without cuf gets cursor addresses for every jump")
    func noMoveRight() throws {
        var capabilities = PictureCapabilities.xterm
        capabilities.moveRight = { _ in nil }
        var output = try #require(PictureOutput(capabilities: capabilities))
        output.begin(width: 10)
        for column in [0, 5] {
            output.add(scalar: Self.upper, foreground: 1, background: 2, row: 0, column: column) { _ in nil }
        }
        output.finish()
        #expect(
            String(decoding: output.bytes, as: UTF8.self)
                == "\u{1B}7\u{1B}[m\u{1B}[1;1H\u{1B}[38;5;1;48;5;2m▀\u{1B}[1;6H▀\u{1B}[m\u{1B}8")
    }

    @Test("colours that are not plain SGRs are sent one after the other")
    func unjoinable() throws {
        var capabilities = PictureCapabilities.xterm
        capabilities.foreground = { Array("\u{1B}[38;5;\($0)m\u{1B}(B".utf8) }
        var output = try #require(PictureOutput(capabilities: capabilities))
        output.begin(width: 4)
        output.add(scalar: Self.upper, foreground: 1, background: 2, row: 0, column: 0) { _ in nil }
        output.finish()
        #expect(
            String(decoding: output.bytes, as: UTF8.self)
                == "\u{1B}7\u{1B}[m\u{1B}[1;1H\u{1B}[38;5;1m\u{1B}(B\u{1B}[48;5;2m▀\u{1B}[m\u{1B}8")
    }

    /// xterm's strings with cub as well: a row's cells may be written out of order.
    static var bothWays: PictureCapabilities {
        var capabilities = PictureCapabilities.xterm
        capabilities.moveLeft = { Array("\u{1B}[\($0)D".utf8) }
        return capabilities
    }

    @Test("with cub, a row's cells go out grouped by colour: each next the one that changes the pen least")
    func rowOrder() throws {
        // Two colours alternating along a row: written left to right that is a colour change a cell. Grouped, the
        // first colour's cells, then the second's (forward first on a tie, then back).
        let cells: [(row: Int, column: Int, fg: Int32, bg: Int32)] = [
            (0, 0, 1, 2), (0, 2, 3, 4), (0, 4, 1, 2), (0, 6, 3, 4), (1, 1, 3, 4),
        ]
        #expect(
            try Self.burst(cells, capabilities: Self.bothWays)
                == "\u{1B}7\u{1B}[m\u{1B}[1;1H\u{1B}[38;5;1;48;5;2m▀\u{1B}[3C▀\u{1B}[1C\u{1B}[38;5;3;48;5;4m▀"
                + "\u{1B}[5D▀\u{1B}[2;2H▀\u{1B}[m\u{1B}8")
        // Left to right without cub.
        #expect(
            try Self.burst(cells)
                == "\u{1B}7\u{1B}[m\u{1B}[1;1H\u{1B}[38;5;1;48;5;2m▀\u{1B}[1C\u{1B}[38;5;3;48;5;4m▀\u{1B}[1C"
                + "\u{1B}[38;5;1;48;5;2m▀\u{1B}[1C\u{1B}[38;5;3;48;5;4m▀\u{1B}[2;2H▀\u{1B}[m\u{1B}8")
    }

    /// What a terminal shows after `bytes`: each cell's character and colours, for the strings `PictureOutput`
    /// sends with `bothWays` (save, reset, CUP, CUF, CUB, SGR 38;5 and 48;5, characters).
    static func screen(_ bytes: [UInt8], width: Int, height: Int) -> [String] {
        var cells = [String](repeating: "", count: width * height)
        var row = 0
        var column = 0
        var foreground = -1
        var background = -1
        let text = Array(String(decoding: bytes, as: UTF8.self).unicodeScalars)
        var i = 0
        while i < text.count {
            if text[i] == "\u{1B}" {
                i += 1
                guard i < text.count, text[i] == "[" else {
                    i += 1
                    continue
                }
                i += 1
                var parameters = ""
                while i < text.count, !("A"..."z").contains(text[i]) {
                    parameters.unicodeScalars.append(text[i])
                    i += 1
                }
                let numbers = parameters.split(separator: ";").map { Int($0) ?? 0 }
                switch text[i] {
                case "H": (row, column) = (numbers[0] - 1, numbers[1] - 1)
                case "C": column += numbers.first ?? 1
                case "D": column -= numbers.first ?? 1
                case "m":
                    if numbers.isEmpty { (foreground, background) = (-1, -1) }
                    var k = 0
                    while k + 2 < numbers.count {
                        if numbers[k] == 38 { foreground = numbers[k + 2] } else { background = numbers[k + 2] }
                        k += 3
                    }
                default: break
                }
                i += 1
                continue
            }
            // A cell as seen: '█' is its foreground alone; '▀' and '▄' the top and the bottom colour.
            let seen: String
            switch text[i] {
            case "█": seen = "\(foreground)/\(foreground)"
            case "▀": seen = "\(foreground)/\(background)"
            case "▄": seen = "\(background)/\(foreground)"
            default: seen = "\(text[i]) \(foreground)/\(background)"
            }
            if row >= 0, row < height, column >= 0, column < width { cells[row * width + column] = seen }
            column += 1
            i += 1
        }
        return cells
    }

    @Test("written in any order, a burst leaves the screen exactly as left to right would (random rows)")
    func reorderedScreenIsTheSame() throws {
        var generator = SystemRandomNumberGenerator()
        let width = 40
        let height = 6
        for round in 0..<200 {
            var cells: [(row: Int, column: Int, fg: Int32, bg: Int32)] = []
            let palette = Int32.random(in: 2...6, using: &generator)
            for row in 0..<height {
                for column in 0..<width where Int.random(in: 0..<3, using: &generator) == 0 {
                    let top = Int32.random(in: 16..<(16 + palette), using: &generator)
                    let bottom =
                        Bool.random(using: &generator) ? top : Int32.random(in: 16..<(16 + palette), using: &generator)
                    cells.append((row, column, top, bottom))
                }
            }
            var expected = [String](repeating: "", count: width * height)
            for cell in cells { expected[cell.row * width + cell.column] = "\(cell.fg)/\(cell.bg)" }
            for capabilities in [PictureCapabilities.xterm, Self.bothWays] {
                let bytes = Array(try Self.burst(width: width, cells, capabilities: capabilities).utf8)
                #expect(Self.screen(bytes, width: width, height: height) == expected, "round \(round)")
            }
        }
    }

    @Test("a terminal without cursor save or addressing gets no picture output")
    func missingCapabilities() {
        var noSave = PictureCapabilities.xterm
        noSave.saveCursor = []
        #expect(PictureOutput(capabilities: noSave) == nil)
        var noAddress = PictureCapabilities.xterm
        noAddress.moveTo = { _, _ in nil }
        #expect(PictureOutput(capabilities: noAddress) == nil)
        var noColour = PictureCapabilities.xterm
        noColour.foreground = { $0 > 100 ? nil : [0x1B] }
        #expect(PictureOutput(capabilities: noColour) == nil)
    }
}
