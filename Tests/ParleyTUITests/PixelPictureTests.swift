import Foundation
import ParleyMedia
import ParleyRoom
import ParleyTestSupport
import Testing

@testable import ParleyPictures
@testable import ParleyTUI

/// Peak signal-to-noise ratio of two RGB rasters of one size, in dB.
func psnr(_ a: PixelRaster, _ b: PixelRaster) -> Double {
    precondition(a.width == b.width && a.height == b.height)
    var total = 0.0
    for index in a.rgb.indices {
        let d = Double(a.rgb[index]) - Double(b.rgb[index])
        total += d * d
    }
    let mse = total / Double(max(1, a.rgb.count))
    return mse == 0 ? 99 : 10 * log10(255 * 255 / mse)
}

@Suite("Terminal graphics answers")
struct TerminalGraphicsTests {
    struct Case: CustomTestStringConvertible, Sendable {
        var name: String
        var answer: String
        var expected: TerminalGraphics
        var testDescription: String { name }
    }

    @Test(
        "device attributes, kitty's answer, cell size and colour registers",
        arguments: [
            Case(
                name: "xterm -ti vt340: sixel, cell from CSI 16 t, 1024 registers",
                answer: "\u{1B}[?1;0;1024S\u{1B}[6;20;10t\u{1B}[4;480;800t\u{1B}[?63;1;2;4;6;9;15;16;22;28;29c",
                expected: TerminalGraphics(
                    sixel: true, cell: CellPixelSize(width: 10, height: 20), colorRegisters: 1024,
                    answered: true)),
            Case(
                name: "xterm without sixel", answer: "\u{1B}[?64;1;2;6;9;15;16;17;18;21;22;28c",
                expected: TerminalGraphics(answered: true)),
            Case(
                name: "kitty: graphics OK, cell from the text area over 80x24",
                answer: "\u{1B}_Gi=31;OK\u{1B}\\\u{1B}[4;480;800t\u{1B}[?62;c",
                expected: TerminalGraphics(kitty: true, cell: CellPixelSize(width: 10, height: 20), answered: true)),
            Case(
                name: "kitty on this machine also reads shared memory",
                answer: "\u{1B}_Gi=32;OK\u{1B}\\\u{1B}_Gi=31;OK\u{1B}\\\u{1B}[?62;c",
                expected: TerminalGraphics(kitty: true, kittySharedMemory: true, answered: true)),
            Case(
                name: "kitty over ssh: no shared memory",
                answer: "\u{1B}_Gi=32;EBADF:no such object\u{1B}\\\u{1B}_Gi=31;OK\u{1B}\\\u{1B}[?62;c",
                expected: TerminalGraphics(kitty: true, answered: true)),
            Case(
                name: "a kitty error is no kitty", answer: "\u{1B}_Gi=31;EINVAL:bad\u{1B}\\\u{1B}[?62;c",
                expected: TerminalGraphics(answered: true)),
            Case(name: "tmux answers DA1 itself", answer: "\u{1B}[?1;2c", expected: TerminalGraphics(answered: true)),
            Case(name: "no answer at all", answer: "", expected: TerminalGraphics()),
            Case(
                name: "garbage and keys typed meanwhile are skipped",
                answer: "abc\u{1B}[6;;10t\u{1B}[?1;2;Sx\u{1B}[6;18;9t\u{1B}",
                expected: TerminalGraphics(
                    cell: CellPixelSize(width: 9, height: 18))),
        ])
    func parse(_ c: Case) {
        #expect(TerminalGraphics.parse(Array(c.answer.utf8), columns: 80, rows: 24) == c.expected)
    }

    struct ChoiceCase: CustomTestStringConvertible, Sendable {
        var name: String
        var requested: PictureMode
        var environment: [String: String]
        var graphics: TerminalGraphics
        var label: String
        var testDescription: String { name }
    }

    static let cell = CellPixelSize(width: 10, height: 20)

    @Test(
        "pixel modes: auto takes kitty, then sixel, where the cell size is known and never in tmux",
        arguments: [
            ChoiceCase(
                name: "kitty answered", requested: .auto, environment: ["TERM": "xterm-kitty"],
                graphics: TerminalGraphics(kitty: true, cell: cell, answered: true), label: "kitty 10x20"),
            ChoiceCase(
                name: "sixel listed", requested: .auto, environment: ["TERM": "xterm-256color"],
                graphics: TerminalGraphics(sixel: true, cell: cell, answered: true), label: "sixel 10x20"),
            ChoiceCase(
                name: "both: kitty wins", requested: .auto, environment: [:],
                graphics: TerminalGraphics(sixel: true, kitty: true, cell: cell, answered: true),
                label: "kitty 10x20"),
            ChoiceCase(
                name: "sixel without a cell size: cells", requested: .auto, environment: [:],
                graphics: TerminalGraphics(sixel: true, answered: true), label: "quadrant 24-bit"),
            ChoiceCase(
                name: "inside tmux: cells", requested: .auto, environment: ["TMUX": "/tmp/tmux-0/default,1,0"],
                graphics: TerminalGraphics(sixel: true, kitty: true, cell: cell, answered: true),
                label: "quadrant 24-bit"),
            ChoiceCase(
                name: "asked for sixel with no answer: 8x16 assumed", requested: .sixel, environment: [:],
                graphics: TerminalGraphics(), label: "sixel 8x16"),
            ChoiceCase(
                name: "asked for half blocks in kitty", requested: .half, environment: [:],
                graphics: TerminalGraphics(kitty: true, cell: cell, answered: true), label: "half 24-bit"),
        ])
    func choose(_ c: ChoiceCase) {
        let choice = PictureChoice.choose(
            c.requested, colors: .direct, colorReason: "test",
            environment: c.environment, graphics: c.graphics)
        #expect(choice.label == c.label, "\(choice.reason)")
    }

    @Test("the queries end with DA1, which every terminal answers")
    func queries() {
        let text = String(decoding: TerminalGraphics.queries, as: UTF8.self)
        #expect(text.hasSuffix("\u{1B}[c"))
        #expect(text.hasPrefix("\u{1B}_Gi=31,s=1,v=1,a=q,t=d,f=24;AAAA\u{1B}\\"))
    }
}

@Suite("kitty graphics")
struct KittyGraphicsTests {
    @Test("one small picture, byte for byte")
    func exactBytes() {
        let raster = PixelRaster(width: 2, height: 1, rgb: [255, 0, 0, 0, 0, 255])
        let bytes = KittyGraphics.show(raster, id: 7, columns: 1, rows: 1)
        #expect(
            String(decoding: bytes, as: UTF8.self)
                == "\u{1B}_Ga=T,f=24,s=2,v=1,i=7,p=1,c=1,r=1,C=1,q=2;/wAAAAD/\u{1B}\\")
        #expect(
            String(decoding: KittyGraphics.show(raster, id: 7, columns: 1, rows: 1, z: 2), as: UTF8.self)
                == "\u{1B}_Ga=T,f=24,s=2,v=1,i=7,p=1,c=1,r=1,C=1,q=2,z=2;/wAAAAD/\u{1B}\\")
        #expect(String(decoding: KittyGraphics.delete(id: 7), as: UTF8.self) == "\u{1B}_Ga=d,d=I,i=7,q=2\u{1B}\\")
    }

    @Test("shared memory: the command names the object, the object holds the picture, leftovers are unlinked")
    func sharedMemory() throws {
        #expect(
            String(
                decoding: KittyGraphics.showShared(name: "/p-1", width: 2, height: 1, id: 4, columns: 1, rows: 1),
                as: UTF8.self)
                == "\u{1B}_Ga=T,t=s,f=24,s=2,v=1,S=6,i=4,p=1,c=1,r=1,C=1,q=2;L3AtMQ==\u{1B}\\")
        var pictures = SharedPictures(prefix: "/parley-test-\(getpid())-")
        let name = try pictures.store([1, 2, 3, 4, 5, 6])
        #expect(try Data(contentsOf: URL(fileURLWithPath: "/dev/shm" + name)) == Data([1, 2, 3, 4, 5, 6]))
        for _ in 0..<SharedPictures.limit { _ = try pictures.store([0]) }
        #expect(!FileManager.default.fileExists(atPath: "/dev/shm" + name), "the oldest object is unlinked")
        pictures.removeAll()
        let left = try FileManager.default.contentsOfDirectory(atPath: "/dev/shm")
            .filter { $0.hasPrefix("parley-test-\(getpid())-") }
        #expect(left.isEmpty, "\(left)")
    }

    @Test("a large picture goes in chunks of 4096 base64 characters and decodes back to the same pixels")
    func chunks() throws {
        var raster = PixelRaster(width: 64, height: 48)
        for index in raster.rgb.indices { raster.rgb[index] = UInt8(truncatingIfNeeded: index * 7 + index / 3) }
        let bytes = KittyGraphics.show(raster, id: 3, columns: 8, rows: 3)
        let commands = try KittyGraphics.commands(in: bytes)
        let base64Length = (raster.rgb.count + 2) / 3 * 4
        #expect(commands.count == (base64Length + 4095) / 4096)
        #expect(commands.dropLast().allSatisfy { $0.payload.count == 4096 && $0.keys["m"] == "1" })
        #expect(commands.last?.keys["m"] == "0")
        #expect(commands.dropFirst().allSatisfy { $0.keys.count == 1 })
        let pictures = try KittyGraphics.pictures(in: Array("junk".utf8) + bytes)
        #expect(pictures.count == 1)
        #expect(pictures.first?.raster == raster)
        #expect(pictures.first?.id == 3 && pictures.first?.columns == 8 && pictures.first?.rows == 3)
    }

    @Test("broken output is refused with what is wrong")
    func unreadable() {
        #expect(throws: KittyGraphics.Unreadable(reason: "a command at byte 0 has no ESC \\")) {
            try KittyGraphics.commands(in: Array("\u{1B}_Ga=T;AAAA".utf8))
        }
        #expect(throws: KittyGraphics.Unreadable(reason: "image 1 carries 3 bytes for 2x1 RGB")) {
            try KittyGraphics.pictures(in: Array("\u{1B}_Ga=T,f=24,s=2,v=1,i=1;/wAA\u{1B}\\".utf8))
        }
        #expect(throws: KittyGraphics.Unreadable(reason: "the last transmission never ends (m=1 on its last chunk)")) {
            try KittyGraphics.pictures(in: Array("\u{1B}_Ga=T,f=24,s=2,v=1,i=1,m=1;/wAA\u{1B}\\".utf8))
        }
    }
}

@Suite("Sixel")
struct SixelTests {
    @Test("one colour, byte for byte: palette, raster attributes, repeats")
    func exactBytes() {
        var encoder = SixelEncoder()
        let white = PixelRaster(width: 3, height: 1, fill: PixelTile.RGB(r: 255, g: 255, b: 255))
        #expect(
            String(decoding: encoder.encode(white), as: UTF8.self)
                == "\u{1B}P0;1;0q\"1;1;3;1#0;2;100;100;100#0@@@\u{1B}\\")
        let wide = PixelRaster(width: 5, height: 7, fill: PixelTile.RGB(r: 0, g: 0, b: 255))
        #expect(
            String(decoding: encoder.encode(wide), as: UTF8.self)
                == "\u{1B}P0;1;0q\"1;1;5;7#0;2;0;0;100#0!5~-#0!5@\u{1B}\\")
    }

    @Test("two colours: each band writes a colour only between its first and last column")
    func spans() throws {
        var raster = PixelRaster(width: 8, height: 6, fill: PixelTile.RGB(r: 0, g: 0, b: 0))
        for y in 0..<6 { for x in 5..<7 { raster.rgb[(y * 8 + x) * 3] = 255 } }
        var encoder = SixelEncoder()
        let text = String(decoding: encoder.encode(raster), as: UTF8.self)
        let decoded = try SixelDecoder.decode(Array(text.utf8))
        #expect(decoded == raster)
        #expect(text.contains("!5?~~"), "\(text)")  // the red columns, after skipping five
    }

    @Test("a picture of many colours comes back within the palette's error, at most the registers asked")
    func roundTrip() throws {
        var scaler = PixelScaler()
        let frame = ProbePicture.gradient(width: 160, height: 120)
        let raster = scaler.raster(
            of: frame, width: 200, height: 150,
            area: PictureArea(
                x: 0, y: 0, width: 200,
                height: 150),
            background: PixelTile.RGB(r: 0, g: 0, b: 0))
        var encoder = SixelEncoder()
        for colors in [256, 16] {
            let bytes = encoder.encode(raster, colors: colors)
            let registers = Set(
                String(decoding: bytes, as: UTF8.self).split(separator: "#").compactMap {
                    $0.contains(";2;") ? $0.split(separator: ";").first : nil
                })
            #expect(registers.count <= colors)
            let decoded = try SixelDecoder.decode(bytes)
            let quality = psnr(decoded, raster)
            #expect(quality > (colors == 256 ? 30 : 20), "\(colors) colours: \(quality) dB")
        }
    }

    @Test("libsixel's decoder reads the same picture as Parley's (independent check of the encoder)")
    func libsixelAgrees() throws {
        let tool = URL(fileURLWithPath: "/usr/bin/sixel2png")
        let converter = URL(fileURLWithPath: "/usr/bin/pngtopnm")
        guard FileManager.default.isExecutableFile(atPath: tool.path),
            FileManager.default.isExecutableFile(atPath: converter.path)
        else {
            Issue.record("sixel2png (libsixel-bin) and pngtopnm (netpbm) are needed: make test installs them")
            return
        }
        var scaler = PixelScaler()
        let raster = scaler.raster(
            of: ProbePicture.gradient(width: 96, height: 64), width: 97, height: 65,
            area: PictureArea(x: 0, y: 0, width: 97, height: 65),
            background: PixelTile.RGB(r: 0, g: 0, b: 0))
        var encoder = SixelEncoder()
        let bytes = encoder.encode(raster)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("parley-sixel-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let input = directory.appendingPathComponent("picture.six")
        let png = directory.appendingPathComponent("p.png")
        try Data(bytes).write(to: input)
        try runTool(tool.path, ["-i", input.path, "-o", png.path])
        let ppm = try runTool(converter.path, [png.path])
        let theirs = try PPM.read(ppm)
        let ours = try SixelDecoder.decode(bytes)
        #expect(theirs.width == ours.width && theirs.height == ours.height)
        var largest = 0
        for index in ours.rgb.indices { largest = max(largest, abs(Int(ours.rgb[index]) - Int(theirs.rgb[index]))) }
        #expect(largest <= 2, "libsixel's pixels differ from Parley's by up to \(largest) levels")
        #expect(psnr(theirs, raster) > 30)
    }

    @Test("broken sixel is refused with what is wrong")
    func unreadable() {
        #expect(throws: SixelDecoder.Unreadable(reason: "no DCS (ESC P)")) { try SixelDecoder.decode([65, 66]) }
        #expect(throws: SixelDecoder.Unreadable(reason: "raster size 0x0 is missing or too large")) {
            try SixelDecoder.decode(Array("\u{1B}Pq#0~\u{1B}\\".utf8))
        }
        #expect(throws: SixelDecoder.Unreadable(reason: "colour space 1 is not RGB")) {
            try SixelDecoder.decode(Array("\u{1B}Pq\"1;1;1;1#0;1;0;0;0~\u{1B}\\".utf8))
        }
    }
}

/// Netpbm's binary RGB format (P6), as pngtopnm and xwdtopnm write it.
enum PPM {
    struct Unreadable: Error, CustomStringConvertible {
        var reason: String
        var description: String { "not a PPM: \(reason)" }
    }

    static func read(_ data: Data) throws -> PixelRaster {
        let bytes = [UInt8](data)
        var index = 0
        func token() throws -> String {
            while index < bytes.count {
                if bytes[index] == 0x23 {  // comment
                    while index < bytes.count, bytes[index] != 0x0A { index += 1 }
                } else if bytes[index] == 0x20 || bytes[index] == 0x0A || bytes[index] == 0x0D || bytes[index] == 0x09 {
                    index += 1
                } else {
                    break
                }
            }
            let start = index
            while index < bytes.count,
                !(bytes[index] == 0x20 || bytes[index] == 0x0A || bytes[index] == 0x0D
                    || bytes[index] == 0x09)
            { index += 1 }
            guard index > start else { throw Unreadable(reason: "header ends early") }
            return String(decoding: bytes[start..<index], as: UTF8.self)
        }
        guard try token() == "P6" else { throw Unreadable(reason: "not P6") }
        guard let width = Int(try token()), let height = Int(try token()), let maximum = Int(try token()),
            width > 0, height > 0, (1...65535).contains(maximum)
        else { throw Unreadable(reason: "size or depth") }
        index += 1
        // Samples of one byte up to 255, two (big-endian) above, scaled to 0…255.
        let sampleBytes = maximum > 255 ? 2 : 1
        let count = width * height * 3
        guard bytes.count - index >= count * sampleBytes else { throw Unreadable(reason: "pixels missing") }
        if sampleBytes == 1 && maximum == 255 {
            return PixelRaster(width: width, height: height, rgb: Array(bytes[index..<(index + count)]))
        }
        var rgb = [UInt8](repeating: 0, count: count)
        for sample in 0..<count {
            let value =
                sampleBytes == 2
                ? Int(bytes[index + 2 * sample]) << 8 | Int(bytes[index + 2 * sample + 1])
                : Int(bytes[index + sample])
            rgb[sample] = UInt8((value * 255 + maximum / 2) / maximum)
        }
        return PixelRaster(width: width, height: height, rgb: rgb)
    }
}

@Suite("Pixel pictures on the screen")
struct PixelPictureWriterTests {
    static let background = TerminalColor.rgb(20, 20, 30)

    static func screen(frame: VideoFrame, overlay: CellRect? = nil, rows: Int = 12) -> Screen {
        var screen = Screen(width: 30, height: rows)
        var renderer = VideoCellRenderer(mode: .trueColor, pixels: true)
        renderer.draw(
            frame, into: &screen, in: CellRect(x: 2, y: 1, width: 16, height: 8),
            background: background, key: 42)
        if let overlay { screen.fill(overlay, with: "x", style: CellStyle(background: .rgb(200, 0, 0))) }
        return screen
    }

    @Test("the renderer leaves placeholders and a tile for the terminal")
    func renderer() {
        let screen = Self.screen(frame: ProbePicture.gradient(width: 64, height: 48))
        #expect(screen.pixelTiles.count == 1)
        #expect(screen.pixelTiles.first?.rect == CellRect(x: 2, y: 1, width: 16, height: 8))
        #expect(screen[5, 4] == Cell(" ", style: CellStyle(background: Self.background)))
    }

    @Test(
        "sent once per frame; a new frame, a move or a repaint sends again; a cover takes it away",
        arguments:
            PixelProtocol.allCases)
    func plans(_ kind: PixelProtocol) {
        var writer = PixelPictureWriter(canvas: PixelCanvas(kind: kind, cell: CellPixelSize(width: 4, height: 8)))
        let first = Self.screen(frame: ProbePicture.gradient(width: 64, height: 48, timestamp: 1))
        var plan = writer.plan(first, repaintAll: false)
        #expect(plan.draw.map(\.rect) == [CellRect(x: 2, y: 1, width: 16, height: 8)])
        let bytes = writer.output(plan, capabilities: .xterm)
        #expect(bytes.starts(with: Array("\u{1B}7\u{1B}[2;3H".utf8)))
        #expect(bytes.suffix(2) == Array("\u{1B}8".utf8)[...])
        writer.commit(plan)
        #expect(writer.plan(first, repaintAll: false).isEmpty)
        #expect(writer.plan(first, repaintAll: true).draw.count == 1)
        let next = Self.screen(frame: ProbePicture.gradient(width: 64, height: 48, timestamp: 2))
        #expect(writer.plan(next, repaintAll: false).draw.count == 1)

        // Statistics on the bottom row: the picture is cut above them.
        let stats = Self.screen(
            frame: ProbePicture.gradient(width: 64, height: 48, timestamp: 1),
            overlay: CellRect(x: 2, y: 8, width: 16, height: 1))
        plan = writer.plan(stats, repaintAll: false)
        #expect(plan.draw.map(\.rect) == [CellRect(x: 2, y: 1, width: 16, height: 7)])
        #expect(plan.repaintRows == (kind == .sixel ? Array(1..<9) : []))
        writer.commit(plan)

        // A dialog over the middle: the picture goes away until it is clear again.
        let dialog = Self.screen(
            frame: ProbePicture.gradient(width: 64, height: 48, timestamp: 1),
            overlay: CellRect(x: 6, y: 3, width: 20, height: 3))
        plan = writer.plan(dialog, repaintAll: false)
        #expect(plan.draw.isEmpty)
        #expect(plan.remove == [42])
        #expect(plan.repaintRows == (kind == .sixel ? Array(1..<8) : []))
        let removal = writer.output(plan, capabilities: .xterm)
        if kind == .kitty { #expect(String(decoding: removal, as: UTF8.self).contains("a=d,d=I,i=1")) }
        writer.commit(plan)
        #expect(writer.plan(first, repaintAll: false).draw.count == 1)
    }

    @Test(
        "after forget every picture goes out again, and a kitty image gone meanwhile is still deleted; ids are reused")
    func forgetKeepsWhatIsShown() {
        var writer = PixelPictureWriter(canvas: PixelCanvas(kind: .kitty, cell: CellPixelSize(width: 4, height: 8)))
        let shown = Self.screen(frame: ProbePicture.gradient(width: 64, height: 48, timestamp: 1))
        var plan = writer.plan(shown, repaintAll: false)
        _ = writer.output(plan)
        writer.commit(plan)
        writer.forget()
        #expect(writer.plan(shown, repaintAll: false).draw.count == 1, "forget sends the picture again")
        plan = writer.plan(Screen(width: 30, height: 12), repaintAll: false)
        #expect(plan.remove == [42])
        #expect(String(decoding: writer.output(plan), as: UTF8.self).contains("a=d,d=I,i=1,"))
        writer.commit(plan)
        var other = Screen(width: 30, height: 12)
        var renderer = VideoCellRenderer(mode: .trueColor, pixels: true)
        renderer.draw(
            ProbePicture.gradient(width: 64, height: 48), into: &other,
            in: CellRect(x: 0, y: 0, width: 8, height: 4), key: 7)
        plan = writer.plan(other, repaintAll: false)
        #expect(String(decoding: writer.output(plan), as: UTF8.self).contains(",i=1,"), "the freed id is reused")
    }

    @Test("sixel pictures stay off the screen's last row; kitty's may use it")
    func lastRow() {
        let screen = Self.screen(frame: ProbePicture.gradient(width: 64, height: 48), rows: 9)
        var sixel = PixelPictureWriter(canvas: PixelCanvas(kind: .sixel, cell: CellPixelSize(width: 4, height: 8)))
        #expect(sixel.plan(screen, repaintAll: false).draw.map(\.rect.height) == [7])
        var kitty = PixelPictureWriter(canvas: PixelCanvas(kind: .kitty, cell: CellPixelSize(width: 4, height: 8)))
        #expect(kitty.plan(screen, repaintAll: false).draw.map(\.rect.height) == [8])
    }

    @Test("what goes out is the frame at the tile's pixel size, letterboxed in the tile's background")
    func pixels() throws {
        var writer = PixelPictureWriter(canvas: PixelCanvas(kind: .kitty, cell: CellPixelSize(width: 4, height: 8)))
        let frame = ProbePicture.gradient(width: 64, height: 48)
        let screen = Self.screen(frame: frame)
        let plan = writer.plan(screen, repaintAll: false)
        let pictures = try KittyGraphics.pictures(in: writer.output(plan, capabilities: .xterm))
        let raster = try #require(pictures.first?.raster)
        #expect(raster.width == 64 && raster.height == 64)  // 16x8 cells of 4x8 pixels
        // 64x48 fills the width: 48 rows of picture, 8 rows of background above and below.
        #expect(Array(raster.rgb[0..<3]) == [20, 20, 30])
        #expect(Array(raster.rgb[(63 * 64) * 3..<(63 * 64) * 3 + 3]) == [20, 20, 30])
        var scaler = PixelScaler()
        let expected = scaler.raster(
            of: frame, width: 64, height: 48,
            area: PictureArea(
                x: 0, y: 0, width: 64,
                height: 48),
            background: PixelTile.RGB(r: 0, g: 0, b: 0))
        #expect(Array(raster.rgb[(8 * 64 * 3)..<(56 * 64 * 3)]) == expected.rgb)
    }
}
