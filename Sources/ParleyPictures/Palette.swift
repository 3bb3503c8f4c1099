/// The xterm 256-colour palette and fast nearest-colour lookups into it.
public enum Palette {
    /// The six levels of each channel in the 6x6x6 colour cube (indices 16–231).
    public static let cubeLevels: [UInt8] = [0, 95, 135, 175, 215, 255]

    /// The red, green and blue of a palette index, as xterm draws it by default.
    public static func rgb(ofIndex index: UInt8) -> (r: UInt8, g: UInt8, b: UInt8) {
        switch index {
        case 0..<16:
            return systemColors[Int(index)]
        case 16..<232:
            let cube = Int(index) - 16
            return (cubeLevels[cube / 36], cubeLevels[(cube / 6) % 6], cubeLevels[cube % 6])
        default:
            let grey = UInt8(8 + 10 * (Int(index) - 232))
            return (grey, grey, grey)
        }
    }

    /// The nearest colour among indices 16–255 (the cube and the grey ramp, which users do not re-theme).
    ///
    /// Exact for a channel-weighted distance, without a search: the nearest cube colour is the nearest level on each
    /// channel separately, and the nearest grey is the ramp step closest to the weighted mean; the closer of the two
    /// wins. Two 256-byte tables, so it stays in the L1 cache (a 2^18-entry table did not, and stalled).
    @inline(__always)
    public static func nearestIndex(r: UInt8, g: UInt8, b: UInt8) -> UInt8 {
        levelTable.withUnsafeBufferPointer { levels in
            greyTable.withUnsafeBufferPointer { greys in
                nearestIndex(r: Int(r), g: Int(g), b: Int(b), levels: levels, greys: greys)
            }
        }
    }

    /// `nearestIndex` with the tables passed in, for hot loops that hold them already (`levelTable`, `greyTable`).
    @inline(__always)
    static func nearestIndex(
        r: Int, g: Int, b: Int, levels: UnsafeBufferPointer<UInt8>,
        greys: UnsafeBufferPointer<UInt8>
    ) -> UInt8 {
        let lr = Int(levels[r])
        let lg = Int(levels[g])
        let lb = Int(levels[b])
        let cr = lr == 0 ? 0 : 55 &+ 40 &* lr
        let cg = lg == 0 ? 0 : 55 &+ 40 &* lg
        let cb = lb == 0 ? 0 : 55 &+ 40 &* lb
        let dr = r &- cr
        let dg = g &- cg
        let db = b &- cb
        let cubeDistance = 2 &* dr &* dr &+ 4 &* dg &* dg &+ 3 &* db &* db
        // Weighted mean (2r + 4g + 3b) / 9 rounded, then the nearest of the 24 greys 8, 18, …, 238.
        let step = Int(greys[(2 &* r &+ 4 &* g &+ 3 &* b &+ 4) / 9])
        let grey = 8 &+ 10 &* step
        let gr = r &- grey
        let gg = g &- grey
        let gb = b &- grey
        let greyDistance = 2 &* gr &* gr &+ 4 &* gg &* gg &+ 3 &* gb &* gb
        return greyDistance < cubeDistance
            ? UInt8(truncatingIfNeeded: 232 &+ step)
            : UInt8(truncatingIfNeeded: 16 &+ 36 &* lr &+ 6 &* lg &+ lb)
    }

    /// Red, green and blue of all 256 indices, three bytes each, for hot loops.
    static let rgbTable: [UInt8] = (0..<256).flatMap { index -> [UInt8] in
        let rgb = rgb(ofIndex: UInt8(index))
        return [rgb.r, rgb.g, rgb.b]
    }

    /// For each channel value, the index (0–5) of the nearest cube level.
    static let levelTable: [UInt8] = (0..<256).map { value in
        var best = 0
        for level in 1..<6 where abs(Int(cubeLevels[level]) - value) < abs(Int(cubeLevels[best]) - value) {
            best = level
        }
        return UInt8(best)
    }

    /// For each grey value, the step (0–23) of the nearest ramp grey 8 + 10 * step.
    static let greyTable: [UInt8] = (0..<256).map { UInt8(min(23, max(0, ($0 - 8 + 5) / 10))) }

    /// The nearest of the first `count` system colours (8 or 16), for terminals without the 256-colour palette.
    public static func nearestSystemIndex(r: UInt8, g: UInt8, b: UInt8, count: Int) -> UInt8 {
        var best = 0
        var bestDistance = Int.max
        for index in 0..<min(max(count, 1), 16) {
            let candidate = systemColors[index]
            let distance = weightedDistance(r, g, b, candidate.r, candidate.g, candidate.b)
            if distance < bestDistance {
                bestDistance = distance
                best = index
            }
        }
        return UInt8(best)
    }

    /// The palette index a `.palette` or `.rgb` colour is closest to (nil for `.default`).
    public static func index(of color: TerminalColor) -> UInt8? {
        switch color {
        case .default: return nil
        case .palette(let index): return index
        case .rgb(let r, let g, let b): return nearestIndex(r: r, g: g, b: b)
        }
    }

    /// The 24-bit value of a colour (nil for `.default`).
    public static func rgb(of color: TerminalColor) -> (r: UInt8, g: UInt8, b: UInt8)? {
        switch color {
        case .default: return nil
        case .palette(let index): return rgb(ofIndex: index)
        case .rgb(let r, let g, let b): return (r, g, b)
        }
    }

    /// xterm's default system colours 0–15.
    static let systemColors: [(r: UInt8, g: UInt8, b: UInt8)] = [
        (0, 0, 0), (205, 0, 0), (0, 205, 0), (205, 205, 0), (0, 0, 238), (205, 0, 205), (0, 205, 205),
        (229, 229, 229), (127, 127, 127), (255, 0, 0), (0, 255, 0), (255, 255, 0), (92, 92, 255), (255, 0, 255),
        (0, 255, 255), (255, 255, 255),
    ]

    /// Channel weights of the distance (green counts most, as the eye sees it).
    static let weights = (r: 2, g: 4, b: 3)

    static func weightedDistance(_ r1: UInt8, _ g1: UInt8, _ b1: UInt8, _ r2: UInt8, _ g2: UInt8, _ b2: UInt8) -> Int {
        let dr = Int(r1) - Int(r2)
        let dg = Int(g1) - Int(g2)
        let db = Int(b1) - Int(b2)
        return weights.r * dr * dr + weights.g * dg * dg + weights.b * db * db
    }
}
