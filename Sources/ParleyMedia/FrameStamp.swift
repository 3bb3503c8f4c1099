/// A machine-readable stamp in the top band of a picture: participant id (16 bits), frame counter (24 bits) and a
/// CRC-8, as a 16x3 grid of black and white luma cells sized relative to the picture.
///
/// Cells are a sixteenth of the width and height, so the stamp survives scaling (simulcast, the terminal's
/// downscaler) and VP8 compression down to 160x120 at low rates: a reader averages the middle of each cell and
/// only accepts a clean black/white split with a matching checksum.
public enum FrameStamp {
    /// Cells per row.
    static let columns = 16
    /// Rows of cells.
    static let rows = 3
    /// The grid divides the picture height into this many cell rows.
    static let heightDivisions = 16
    /// Luma of a 0 and a 1 cell (video range black and white).
    static let black: UInt8 = 16
    static let white: UInt8 = 235

    /// Height in pixels of the band the stamp covers at the top of a picture of this height.
    public static func bandHeight(pictureHeight: Int) -> Int { rows * pictureHeight / heightDivisions }

    /// Draws the stamp (grey, no noise) over the top band of `picture`.
    public static func draw(participant: UInt32, frame: UInt32, into picture: inout VideoFrame) {
        let bits = encode(participant: participant, frame: frame)
        let width = picture.width
        let height = picture.height
        picture.y.withUnsafeMutableBufferPointer { luma in
            for index in 0..<(rows * columns) {
                let (left, right, top, bottom) = cell(index, width: width, height: height)
                let value = bits[index] ? white : black
                for row in top..<bottom {
                    for x in left..<right { luma[row * width + x] = value }
                }
            }
        }
        let chromaRows = (bandHeight(pictureHeight: height) + 1) / 2
        let count = min(picture.u.count, chromaRows * picture.chromaWidth)
        picture.u.withUnsafeMutableBufferPointer { for i in 0..<count { $0[i] = 128 } }
        picture.v.withUnsafeMutableBufferPointer { for i in 0..<count { $0[i] = 128 } }
    }

    /// Recovers (participant, frame) from a stamped picture, or nil if there is no stamp or it is damaged.
    public static func read(from picture: VideoFrame) -> (participant: UInt32, frame: UInt32)? {
        let width = picture.width
        let height = picture.height
        guard width >= columns * 2, height >= heightDivisions * 2 else { return nil }
        let means: [Int] = picture.y.withUnsafeBufferPointer { luma in
            (0..<(rows * columns)).map { index in
                var (left, right, top, bottom) = cell(index, width: width, height: height)
                // Only the middle half of each cell: edges blur under compression and scaling.
                let insetX = (right - left) / 4
                let insetY = (bottom - top) / 4
                left += insetX
                right -= insetX
                top += insetY
                bottom -= insetY
                var total = 0
                for row in top..<bottom {
                    for x in left..<right { total += Int(luma[row * width + x]) }
                }
                return total / max(1, (right - left) * (bottom - top))
            }
        }
        guard let darkest = means.min(), let brightest = means.max(), brightest - darkest >= 100 else { return nil }
        // Every cell must sit clearly on one side: a cell near the middle means this is not a stamp.
        let lowLimit = darkest + (brightest - darkest) * 35 / 100
        let highLimit = brightest - (brightest - darkest) * 35 / 100
        var bits: [Bool] = []
        bits.reserveCapacity(means.count)
        for mean in means {
            if mean <= lowLimit {
                bits.append(false)
            } else if mean >= highLimit {
                bits.append(true)
            } else {
                return nil
            }
        }
        return decode(bits)
    }

    /// The 48 cell values, most significant first: participant, frame, CRC-8 of both.
    static func encode(participant: UInt32, frame: UInt32) -> [Bool] {
        let payload = payloadBytes(participant: participant, frame: frame)
        let value = payload.reduce(UInt64(0)) { ($0 << 8) | UInt64($1) } << 8 | UInt64(crc8(payload))
        return (0..<48).map { value >> (47 - UInt64($0)) & 1 == 1 }
    }

    /// The inverse of `encode`; nil when the checksum does not match.
    static func decode(_ bits: [Bool]) -> (participant: UInt32, frame: UInt32)? {
        guard bits.count == 48 else { return nil }
        let value = bits.reduce(UInt64(0)) { ($0 << 1) | ($1 ? 1 : 0) }
        let participant = UInt32(value >> 32 & 0xFFFF)
        let frame = UInt32(value >> 8 & 0xFF_FFFF)
        guard crc8(payloadBytes(participant: participant, frame: frame)) == UInt8(value & 0xFF) else { return nil }
        return (participant, frame)
    }

    private static func payloadBytes(participant: UInt32, frame: UInt32) -> [UInt8] {
        [
            UInt8(participant >> 8 & 0xFF), UInt8(participant & 0xFF),
            UInt8(frame >> 16 & 0xFF), UInt8(frame >> 8 & 0xFF), UInt8(frame & 0xFF),
        ]
    }

    /// CRC-8, polynomial x^8+x^2+x+1, initial value 0xFF so an all-black band does not pass.
    static func crc8(_ bytes: [UInt8]) -> UInt8 {
        var crc: UInt8 = 0xFF
        for byte in bytes {
            crc ^= byte
            for _ in 0..<8 { crc = crc & 0x80 != 0 ? (crc << 1) ^ 0x07 : crc << 1 }
        }
        return crc
    }

    /// Pixel rectangle of cell `index` (row-major), right and bottom exclusive.
    private static func cell(_ index: Int, width: Int, height: Int) -> (Int, Int, Int, Int) {
        let column = index % columns
        let row = index / columns
        return (
            column * width / columns, (column + 1) * width / columns,
            row * height / heightDivisions, (row + 1) * height / heightDivisions
        )
    }
}
