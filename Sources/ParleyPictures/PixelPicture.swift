import ParleyMedia
import ParleyRoom

/// The graphics protocols that show real pixels in a terminal.
public enum PixelProtocol: String, Hashable, Sendable, CaseIterable {
    /// kitty's graphics protocol (kitty, WezTerm, Ghostty, Konsole).
    case kitty
    /// DEC sixel graphics (xterm -ti vt340, foot, WezTerm, mlterm, tmux 3.4+).
    case sixel
}

/// The size of one character cell in screen pixels.
public struct CellPixelSize: Hashable, Sendable, CustomStringConvertible {
    /// Pixels across a cell.
    public var width: Int
    /// Pixels down a cell.
    public var height: Int

    /// A cell size in pixels.
    public init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }

    /// "10x20".
    public var description: String { "\(width)x\(height)" }
}

/// How pictures are drawn in pixel mode: the protocol, the cell size in pixels, and (sixel) how many colour
/// registers the terminal has.
public struct PixelCanvas: Hashable, Sendable {
    /// The graphics protocol.
    public var kind: PixelProtocol
    /// One cell in pixels.
    public var cell: CellPixelSize
    /// Colours one sixel image may use (the terminal's colour registers, at most 256).
    public var colorRegisters: Int
    /// kitty reads pictures from POSIX shared memory (a terminal on this machine), not from the byte stream.
    public var sharedMemory: Bool

    /// A canvas for a protocol and cell size.
    public init(kind: PixelProtocol, cell: CellPixelSize, colorRegisters: Int = 256, sharedMemory: Bool = false) {
        self.kind = kind
        self.cell = cell
        self.colorRegisters = max(2, min(256, colorRegisters))
        self.sharedMemory = sharedMemory && kind == .kitty
    }

    /// Where a `frameWidth`×`frameHeight` picture lands in a tile of `columns`×`rows` cells, in screen pixels
    /// (aspect kept, centred).
    public func pictureArea(frameWidth: Int, frameHeight: Int, columns: Int, rows: Int) -> PictureArea {
        let pixelWidth = max(0, columns) * cell.width
        let pixelHeight = max(0, rows) * cell.height
        guard frameWidth > 0, frameHeight > 0, pixelWidth > 0, pixelHeight > 0 else {
            return PictureArea(x: 0, y: 0, width: 0, height: 0)
        }
        var width = pixelWidth
        var height = (pixelWidth * frameHeight + frameWidth / 2) / frameWidth
        if height > pixelHeight {
            height = pixelHeight
            width = min(pixelWidth, (pixelHeight * frameWidth + frameHeight / 2) / frameHeight)
        }
        width = max(1, width)
        height = max(1, height)
        return PictureArea(x: (pixelWidth - width) / 2, y: (pixelHeight - height) / 2, width: width, height: height)
    }
}

/// A picture a tile shows in pixel mode: the screen holds blank placeholder cells where it goes, and `Terminal`
/// draws the frame over them with the canvas's protocol after curses has drawn the text, scaled to the cells'
/// pixels (aspect kept, the rest `background`).
public struct PixelTile: Hashable, Sendable {
    /// Which tile this is across frames (the same key keeps the same terminal image).
    public var key: Int
    /// The cells the image covers (the tile's inside).
    public var rect: CellRect
    /// The frame to show.
    public var frame: VideoFrame
    /// The colour around the picture inside `rect` (letterbox), red, green, blue.
    public var background: RGB
    /// The placeholder every cell of `rect` holds on the screen; a cell holding anything else is covered.
    public var placeholder: Cell

    /// Red, green and blue bytes.
    public struct RGB: Hashable, Sendable {
        public var r: UInt8, g: UInt8, b: UInt8
        public init(r: UInt8, g: UInt8, b: UInt8) {
            self.r = r
            self.g = g
            self.b = b
        }
    }

    /// A tile's picture from its parts.
    public init(key: Int, rect: CellRect, frame: VideoFrame, background: RGB, placeholder: Cell) {
        self.key = key
        self.rect = rect
        self.frame = frame
        self.background = background
        self.placeholder = placeholder
    }

    public static func == (lhs: PixelTile, rhs: PixelTile) -> Bool {
        lhs.key == rhs.key && lhs.rect == rhs.rect && lhs.background == rhs.background
            && lhs.placeholder == rhs.placeholder && lhs.frame == rhs.frame
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(key)
        hasher.combine(rect)
        hasher.combine(frame.timestampMicros)
    }
}

/// An RGB picture, 3 bytes a pixel, row by row.
public struct PixelRaster: Hashable, Sendable {
    /// Width in pixels.
    public var width: Int
    /// Height in pixels.
    public var height: Int
    /// Red, green, blue per pixel.
    public var rgb: [UInt8]

    /// A raster filled with one colour.
    public init(width: Int, height: Int, fill: PixelTile.RGB = PixelTile.RGB(r: 0, g: 0, b: 0)) {
        self.width = max(0, width)
        self.height = max(0, height)
        rgb = [UInt8](repeating: 0, count: self.width * self.height * 3)
        if fill.r != 0 || fill.g != 0 || fill.b != 0 {
            for index in stride(from: 0, to: rgb.count, by: 3) {
                rgb[index] = fill.r
                rgb[index + 1] = fill.g
                rgb[index + 2] = fill.b
            }
        }
    }

    /// A raster from its bytes (`width * height * 3` of them).
    public init(width: Int, height: Int, rgb: [UInt8]) {
        precondition(rgb.count == width * height * 3, "raster holds \(rgb.count) bytes, expected \(width * height * 3)")
        self.width = width
        self.height = height
        self.rgb = rgb
    }
}

/// Scales I420 frames into RGB rasters with the cell renderer's box filter (`SampleTable`), keeping the tables of
/// the sizes met lately. One per render loop.
public struct PixelScaler: Sendable {
    private var tables = SampleTables()

    /// A scaler with no tables yet.
    public init() {}

    /// `frame` scaled into `area` of a `width`×`height` raster, the rest `background`.
    public mutating func raster(
        of frame: VideoFrame, width: Int, height: Int, area: PictureArea,
        background: PixelTile.RGB
    ) -> PixelRaster {
        var raster = PixelRaster(width: width, height: height, fill: background)
        let left = max(0, area.x)
        let top = max(0, area.y)
        let right = min(width, area.x + area.width)
        let bottom = min(height, area.y + area.height)
        guard right > left, bottom > top else { return raster }
        let columnTable = tables.table(source: frame.width, chromaSource: frame.chromaWidth, target: area.width)
        let rowTable = tables.table(source: frame.height, chromaSource: frame.chromaHeight, target: area.height)
        let frameWidth = frame.width
        let chromaWidth = frame.chromaWidth
        columnTable.withUnsafeBufferPointer { columnTaps in
            rowTable.withUnsafeBufferPointer { rowTaps in
                frame.y.withUnsafeBufferPointer { lumaPlane in
                    frame.u.withUnsafeBufferPointer { uPlane in
                        frame.v.withUnsafeBufferPointer { vPlane in
                            raster.rgb.withUnsafeMutableBufferPointer { pixels in
                                let sampler = PixelSampler(
                                    columns: columnTaps, rows: rowTaps, luma: lumaPlane, u: uPlane, v: vPlane,
                                    frameWidth: frameWidth, chromaWidth: chromaWidth)
                                for y in top..<bottom {
                                    var index = (y * width + left) * 3
                                    let py = y - area.y
                                    for x in left..<right {
                                        let (r, g, b) = sampler.rgb(x - area.x, py)
                                        pixels[index] = UInt8(truncatingIfNeeded: r)
                                        pixels[index + 1] = UInt8(truncatingIfNeeded: g)
                                        pixels[index + 2] = UInt8(truncatingIfNeeded: b)
                                        index += 3
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        return raster
    }
}
