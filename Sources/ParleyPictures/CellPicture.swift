import ParleyRoom

/// What a viewer sees in block-character cells, as pixels: each cell drawn `cellWidth`×`cellHeight` pixels, the
/// character's foreground parts (`BlockSymbols.parts`) over its background, edges of parts that do not fall on a
/// pixel boundary blended. For reading pictures back in benchmarks and tests, from Parley's screens and from other
/// tools' output alike.
public enum CellPicture {
    /// Why cells cannot be read back.
    public struct Unreadable: Error, CustomStringConvertible {
        /// The character that is not a block.
        public var character: Character
        /// Where it was.
        public var column: Int, row: Int
        public var description: String {
            "cell (\(column),\(row)) holds '\(character)' (U+\(String(character.unicodeScalars.first?.value ?? 0, radix: 16, uppercase: true))), which is not a block character"
        }
    }

    /// RGB bytes (row-major, 3 per pixel) of `rect` of `screen`, `rect.width * cellWidth` pixels wide. Default
    /// colours show as `defaultColor`.
    public static func rgb(
        of screen: Screen, in rect: CellRect, cellWidth: Int, cellHeight: Int,
        defaultColor: (r: UInt8, g: UInt8, b: UInt8) = (0, 0, 0)
    ) throws -> [UInt8] {
        let width = rect.width * cellWidth
        let height = rect.height * cellHeight
        var pixels = [UInt8](repeating: 0, count: width * height * 3)
        var masks: [Unicode.Scalar: [Double]] = [:]
        for row in 0..<rect.height {
            for column in 0..<rect.width {
                let cell = screen[rect.x + column, rect.y + row]
                guard let scalar = cell.character.unicodeScalars.first, cell.character.unicodeScalars.count == 1
                else { throw Unreadable(character: cell.character, column: rect.x + column, row: rect.y + row) }
                let mask: [Double]
                if let known = masks[scalar] {
                    mask = known
                } else {
                    guard let parts = BlockSymbols.parts(of: scalar) else {
                        throw Unreadable(
                            character: cell.character, column: rect.x + column,
                            row: rect.y + row)
                    }
                    mask = coverage(parts, cellWidth: cellWidth, cellHeight: cellHeight)
                    masks[scalar] = mask
                }
                let fore = Palette.rgb(of: cell.style.foreground) ?? defaultColor
                let back = Palette.rgb(of: cell.style.background) ?? defaultColor
                for y in 0..<cellHeight {
                    var index = ((row * cellHeight + y) * width + column * cellWidth) * 3
                    for x in 0..<cellWidth {
                        let c = mask[y * cellWidth + x]
                        pixels[index] = blend(back.r, fore.r, c)
                        pixels[index + 1] = blend(back.g, fore.g, c)
                        pixels[index + 2] = blend(back.b, fore.b, c)
                        index += 3
                    }
                }
            }
        }
        return pixels
    }

    /// How much of each pixel of a cell the parts cover (0…1), row by row.
    static func coverage(_ parts: [BlockSymbols.Part], cellWidth: Int, cellHeight: Int) -> [Double] {
        var mask = [Double](repeating: 0, count: cellWidth * cellHeight)
        for part in parts {
            let left = part.left * Double(cellWidth)
            let right = part.right * Double(cellWidth)
            let top = part.top * Double(cellHeight)
            let bottom = part.bottom * Double(cellHeight)
            for y in 0..<cellHeight {
                let vertical = min(bottom, Double(y + 1)) - max(top, Double(y))
                guard vertical > 0 else { continue }
                for x in 0..<cellWidth {
                    let horizontal = min(right, Double(x + 1)) - max(left, Double(x))
                    guard horizontal > 0 else { continue }
                    mask[y * cellWidth + x] = min(1, mask[y * cellWidth + x] + vertical * horizontal * part.coverage)
                }
            }
        }
        return mask
    }

    @inline(__always)
    private static func blend(_ back: UInt8, _ fore: UInt8, _ coverage: Double) -> UInt8 {
        UInt8((Double(back) * (1 - coverage) + Double(fore) * coverage).rounded())
    }
}
