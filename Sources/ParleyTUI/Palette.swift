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
    /// One table lookup: the table holds the answer for every colour at 6 bits per channel.
    @inline(__always)
    public static func nearestIndex(r: UInt8, g: UInt8, b: UInt8) -> UInt8 {
        nearestTable[Int(r >> 2) << 12 | Int(g >> 2) << 6 | Int(b >> 2)]
    }

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
        let dr = Int(r1) - Int(r2), dg = Int(g1) - Int(g2), db = Int(b1) - Int(b2)
        return weights.r * dr * dr + weights.g * dg * dg + weights.b * db * db
    }

    /// 2^18 entries, one per 6-bit RGB triple.
    ///
    /// With a per-channel weighted distance the nearest cube colour is the nearest level on each channel separately,
    /// and the nearest grey is the ramp step closest to the weighted mean, so each entry costs two candidates.
    static let nearestTable: [UInt8] = {
        var nearestLevel = [Int](repeating: 0, count: 256)
        for value in 0..<256 {
            var best = 0
            for level in 1..<6 where abs(Int(cubeLevels[level]) - value) < abs(Int(cubeLevels[best]) - value) {
                best = level
            }
            nearestLevel[value] = best
        }
        let weightSum = weights.r + weights.g + weights.b
        var table = [UInt8](repeating: 0, count: 1 << 18)
        for q in 0..<(1 << 18) {
            // The 6-bit value stands for the middle of its range, with the ends pinned to 0 and 255.
            func expand(_ v: Int) -> UInt8 { UInt8((v * 255 + 31) / 63) }
            let r = expand(q >> 12), g = expand((q >> 6) & 63), b = expand(q & 63)
            let lr = nearestLevel[Int(r)], lg = nearestLevel[Int(g)], lb = nearestLevel[Int(b)]
            let cubeIndex = 16 + 36 * lr + 6 * lg + lb
            let cubeDistance = weightedDistance(r, g, b, cubeLevels[lr], cubeLevels[lg], cubeLevels[lb])
            let mean = (weights.r * Int(r) + weights.g * Int(g) + weights.b * Int(b)) / weightSum
            let step = min(23, max(0, (mean - 8 + 5) / 10))
            let grey = UInt8(8 + 10 * step)
            let greyDistance = weightedDistance(r, g, b, grey, grey, grey)
            table[q] = greyDistance < cubeDistance ? UInt8(232 + step) : UInt8(cubeIndex)
        }
        return table
    }()
}
