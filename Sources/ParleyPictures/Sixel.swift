/// DEC sixel graphics: an RGB picture as a DCS string with a palette of its own.
///
/// ```
/// ESC P 0;1;0 q          DCS, P2=1: pixels left out keep what is there (the last band may overhang)
/// "1;1;W;H               raster attributes: square pixels, W x H
/// #n;2;R;G;B             colour register n in percent, one per palette entry
/// #n ?~~}… $ #m … -      a band of 6 rows: per colour, one character per column (63 + 6 bits, top row = bit 0),
///                        "!count c" repeats c, $ back to the band's start, - next band
/// ESC \                  ST
/// ```
///
/// The palette is made per frame by median cut over a 15-bit colour histogram (at most `colors` entries, the
/// terminal's colour registers), each pixel taking its histogram box's colour. Each band writes, per colour, only
/// the columns between that colour's first and last pixel, so the work follows the picture, not colours x width.
public struct SixelEncoder: Sendable {
    // Scratch reused between frames: histogram of 5-bit-per-channel colours, their sums, bucket -> palette index.
    private var counts = [UInt32](repeating: 0, count: 1 << 15)
    private var sums = [UInt32](repeating: 0, count: 3 << 15)
    private var paletteOf = [UInt16](repeating: 0, count: 1 << 15)
    private var indices: [UInt16] = []
    private var bandBits: [UInt8] = []
    private var slotOf = [Int16](repeating: -1, count: 256)

    /// An encoder with empty scratch.
    public init() {}

    /// The DCS string that draws `raster` at the cursor with at most `colors` colours.
    public mutating func encode(_ raster: PixelRaster, colors: Int = 256) -> [UInt8] {
        let width = raster.width
        let height = raster.height
        var out: [UInt8] = Array("\u{1B}P0;1;0q\"1;1;\(width);\(height)".utf8)
        guard width > 0, height > 0 else { return out + [0x1B, 0x5C] }
        let palette = quantize(raster, colors: max(2, min(256, colors)))
        for (index, color) in palette.enumerated() {
            out += Array("#\(index);2;\(Self.percent(color.r));\(Self.percent(color.g));\(Self.percent(color.b))".utf8)
        }
        if bandBits.count < 256 * width { bandBits = [UInt8](repeating: 0, count: 256 * width) }
        var slotColor = [Int](repeating: 0, count: 256)
        var first = [Int](repeating: 0, count: 256)
        var last = [Int](repeating: 0, count: 256)
        indices.withUnsafeBufferPointer { indices in
            bandBits.withUnsafeMutableBufferPointer { bits in
                slotOf.withUnsafeMutableBufferPointer { slotOf in
                    for top in stride(from: 0, to: height, by: 6) {
                        var slots = 0
                        for row in top..<min(height, top + 6) {
                            let bit = UInt8(1) << UInt8(row - top)
                            var pixel = row * width
                            for x in 0..<width {
                                let color = Int(indices[pixel])
                                pixel += 1
                                var slot = Int(slotOf[color])
                                if slot < 0 {
                                    slot = slots
                                    slots += 1
                                    slotOf[color] = Int16(slot)
                                    slotColor[slot] = color
                                    first[slot] = x
                                    last[slot] = x
                                    let base = slot * width
                                    for clear in base..<(base + width) { bits[clear] = 0 }
                                } else {
                                    if x < first[slot] { first[slot] = x }
                                    if x > last[slot] { last[slot] = x }
                                }
                                bits[slot * width + x] |= bit
                            }
                        }
                        for slot in 0..<slots {
                            if slot > 0 { out.append(0x24) }  // $
                            out.append(0x23)  // #
                            Self.appendNumber(slotColor[slot], to: &out)
                            if first[slot] > 0 { Self.appendRun(63, count: first[slot], to: &out) }
                            let base = slot * width
                            var x = first[slot]
                            while x <= last[slot] {
                                let value = bits[base + x]
                                var end = x + 1
                                while end <= last[slot], bits[base + end] == value { end += 1 }
                                Self.appendRun(63 + value, count: end - x, to: &out)
                                x = end
                            }
                            slotOf[slotColor[slot]] = -1
                        }
                        if top + 6 < height { out.append(0x2D) }  // -
                    }
                }
            }
        }
        out += [0x1B, 0x5C]
        return out
    }

    /// Builds the palette of `raster` and each pixel's entry in `indices`.
    private mutating func quantize(_ raster: PixelRaster, colors: Int) -> [PixelTile.RGB] {
        let pixels = raster.width * raster.height
        if indices.count < pixels { indices = [UInt16](repeating: 0, count: pixels) }
        var used = countBuckets(raster, pixels: pixels)
        let boxes = medianCut(&used, colors: colors)
        let palette = averages(of: boxes, in: used)
        raster.rgb.withUnsafeBufferPointer { rgb in
            paletteOf.withUnsafeBufferPointer { paletteOf in
                indices.withUnsafeMutableBufferPointer { indices in
                    for pixel in 0..<pixels {
                        let bucket =
                            (Int(rgb[3 * pixel]) >> 3) << 10 | (Int(rgb[3 * pixel + 1]) >> 3) << 5
                            | (Int(rgb[3 * pixel + 2]) >> 3)
                        indices[pixel] = paletteOf[bucket]
                    }
                }
            }
        }
        for bucket in used {
            counts[bucket] = 0
            sums[3 * bucket] = 0
            sums[3 * bucket + 1] = 0
            sums[3 * bucket + 2] = 0
        }
        return palette
    }

    /// Counts the raster's pixels into 15-bit colour buckets (with their channel sums); returns the buckets used.
    private mutating func countBuckets(_ raster: PixelRaster, pixels: Int) -> [Int] {
        var used: [Int] = []
        raster.rgb.withUnsafeBufferPointer { rgb in
            counts.withUnsafeMutableBufferPointer { counts in
                sums.withUnsafeMutableBufferPointer { sums in
                    for pixel in 0..<pixels {
                        let r = Int(rgb[3 * pixel])
                        let g = Int(rgb[3 * pixel + 1])
                        let b = Int(rgb[3 * pixel + 2])
                        let bucket = (r >> 3) << 10 | (g >> 3) << 5 | (b >> 3)
                        if counts[bucket] == 0 { used.append(bucket) }
                        counts[bucket] += 1
                        sums[3 * bucket] += UInt32(r)
                        sums[3 * bucket + 1] += UInt32(g)
                        sums[3 * bucket + 2] += UInt32(b)
                    }
                }
            }
        }
        return used
    }

    /// Median cut over the used buckets: split the box with the widest channel range (weighted by how many pixels
    /// it holds) at its pixel median along that channel, until there are `colors` boxes (or none can split). Sorts
    /// `used` so each box is a range of it.
    private func medianCut(_ used: inout [Int], colors: Int) -> [Range<Int>] {
        var boxes: [Range<Int>] = [0..<used.count]
        func channel(_ bucket: Int, _ c: Int) -> Int { (bucket >> (10 - 5 * c)) & 31 }
        func widest(_ box: Range<Int>) -> (channel: Int, score: Int) {
            var low = [31, 31, 31]
            var high = [0, 0, 0]
            var population = 0
            for index in box {
                let bucket = used[index]
                population += Int(counts[bucket])
                for c in 0..<3 {
                    let value = channel(bucket, c)
                    low[c] = min(low[c], value)
                    high[c] = max(high[c], value)
                }
            }
            let c = (0..<3).max { high[$0] - low[$0] < high[$1] - low[$1] } ?? 0
            let range = high[c] - low[c]
            return (c, range == 0 || box.count < 2 ? -1 : range * range * population)
        }
        var scores = [widest(boxes[0])]
        while boxes.count < colors {
            guard let pick = scores.indices.max(by: { scores[$0].score < scores[$1].score }),
                scores[pick].score > 0
            else { break }
            let box = boxes[pick]
            let c = scores[pick].channel
            used[box].sort { channel($0, c) < channel($1, c) }
            let total = used[box].reduce(0) { $0 + Int(counts[$1]) }
            var running = 0
            var split = box.lowerBound + 1
            for index in box {
                running += Int(counts[used[index]])
                if running * 2 >= total {
                    split = index + 1
                    break
                }
            }
            split = min(box.upperBound - 1, max(box.lowerBound + 1, split))
            boxes[pick] = box.lowerBound..<split
            boxes.append(split..<box.upperBound)
            scores[pick] = widest(boxes[pick])
            scores.append(widest(boxes[boxes.count - 1]))
        }
        return boxes
    }

    /// One palette entry per box, its pixels' average colour; each bucket's entry goes to `paletteOf`.
    private mutating func averages(of boxes: [Range<Int>], in used: [Int]) -> [PixelTile.RGB] {
        var palette: [PixelTile.RGB] = []
        palette.reserveCapacity(boxes.count)
        for (entry, box) in boxes.enumerated() {
            var r: UInt64 = 0
            var g: UInt64 = 0
            var b: UInt64 = 0
            var n: UInt64 = 0
            for index in box {
                let bucket = used[index]
                r += UInt64(sums[3 * bucket])
                g += UInt64(sums[3 * bucket + 1])
                b += UInt64(sums[3 * bucket + 2])
                n += UInt64(counts[bucket])
                paletteOf[bucket] = UInt16(entry)
            }
            let half = n / 2
            palette.append(
                PixelTile.RGB(
                    r: UInt8((r + half) / max(1, n)), g: UInt8((g + half) / max(1, n)),
                    b: UInt8((b + half) / max(1, n))))
        }
        return palette
    }

    @inline(__always)
    private static func percent(_ value: UInt8) -> Int { (Int(value) * 100 + 127) / 255 }

    @inline(__always)
    private static func appendRun(_ character: UInt8, count: Int, to out: inout [UInt8]) {
        if count > 3 {
            out.append(0x21)  // !
            Self.appendNumber(count, to: &out)
            out.append(character)
        } else {
            for _ in 0..<count { out.append(character) }
        }
    }

    @inline(__always)
    private static func appendNumber(_ value: Int, to out: inout [UInt8]) {
        if value >= 10 { Self.appendNumber(value / 10, to: &out) }
        out.append(UInt8(48 + value % 10))
    }
}

/// Reads sixel images back into pixels (the subset `SixelEncoder` writes and terminals accept: raster attributes,
/// RGB and HLS-free colour registers in percent, repeats, `$` and `-`), for tests and the picture bench.
public enum SixelDecoder {
    /// Why bytes could not be read as a sixel image.
    public struct Unreadable: Error, CustomStringConvertible, Equatable {
        /// What was wrong.
        public var reason: String
        public var description: String { "not a sixel image: \(reason)" }
    }

    /// The first sixel image in `bytes`; pixels it never sets are `background`.
    public static func decode(_ bytes: [UInt8], background: PixelTile.RGB = PixelTile.RGB(r: 0, g: 0, b: 0))
        throws(Unreadable) -> PixelRaster
    {
        guard let start = (0..<max(0, bytes.count - 1)).first(where: { bytes[$0] == 0x1B && bytes[$0 + 1] == 0x50 })
        else { throw Unreadable(reason: "no DCS (ESC P)") }
        var index = start + 2
        while index < bytes.count, bytes[index] != 0x71 { index += 1 }  // q
        guard index < bytes.count else { throw Unreadable(reason: "no 'q' after ESC P") }
        index += 1
        func number() -> Int? {
            var value: Int?
            while index < bytes.count, (0x30...0x39).contains(bytes[index]) {
                value = (value ?? 0) * 10 + Int(bytes[index] - 0x30)
                guard value! < 1 << 20 else { return value }
                index += 1
            }
            return value
        }
        func parameters() -> [Int] {
            var values: [Int] = []
            repeat {
                values.append(number() ?? 0)
                guard index < bytes.count, bytes[index] == 0x3B else { break }
                index += 1
            } while true
            return values
        }
        var width = 0
        var height = 0
        if index < bytes.count, bytes[index] == 0x22 {
            index += 1
            let raster = parameters()
            guard raster.count >= 4 else { throw Unreadable(reason: "raster attributes need 4 numbers") }
            width = raster[2]
            height = raster[3]
        }
        guard width > 0, height > 0, width <= 8192, height <= 8192 else {
            throw Unreadable(reason: "raster size \(width)x\(height) is missing or too large")
        }
        var image = PixelRaster(width: width, height: height, fill: background)
        var registers = [PixelTile.RGB](repeating: PixelTile.RGB(r: 0, g: 0, b: 0), count: 1024)
        var color = 0
        var x = 0
        var band = 0
        func paint(_ bits: UInt8, count: Int) {
            let rgb = registers[color]
            for _ in 0..<count {
                defer { x += 1 }
                guard x < width else { continue }
                for bit in 0..<6 where bits & (1 << bit) != 0 {
                    let y = band * 6 + bit
                    guard y < height else { continue }
                    let offset = (y * width + x) * 3
                    image.rgb[offset] = rgb.r
                    image.rgb[offset + 1] = rgb.g
                    image.rgb[offset + 2] = rgb.b
                }
            }
        }
        while index < bytes.count {
            let byte = bytes[index]
            if byte == 0x1B { break }
            index += 1
            switch byte {
            case 0x23:  // #
                let values = parameters()
                guard values[0] < registers.count else { throw Unreadable(reason: "colour register \(values[0])") }
                color = values[0]
                if values.count >= 5 {
                    guard values[1] == 2 else { throw Unreadable(reason: "colour space \(values[1]) is not RGB") }
                    func level(_ p: Int) -> UInt8 { UInt8((min(100, p) * 255 + 50) / 100) }
                    registers[color] = PixelTile.RGB(r: level(values[2]), g: level(values[3]), b: level(values[4]))
                }
            case 0x21:  // !
                let count = number() ?? 1
                guard index < bytes.count, (63...126).contains(bytes[index]) else {
                    throw Unreadable(reason: "a repeat at byte \(index) is not followed by a sixel")
                }
                paint(bytes[index] - 63, count: count)
                index += 1
            case 0x24: x = 0
            case 0x2D:
                x = 0
                band += 1
            case 63...126: paint(byte - 63, count: 1)
            case 0x0A, 0x0D: break
            default: throw Unreadable(reason: "byte 0x\(String(byte, radix: 16)) at \(index - 1)")
            }
        }
        return image
    }
}
