import CNcursesw
import ParleyPictures

/// The curses colour numbers and colour pairs of one open terminal.
///
/// Pairs are handed out in order as cells need them and all dropped when curses runs out (`pairsWereReset`, which
/// forces a full redraw: pairs already on the screen get new colours). Palette terminals cache them in a flat table
/// indexed by (fg + 1) * 257 + (bg + 1), 0 meaning "not yet allocated"; direct-colour terminals in a dictionary.
struct CursesColors {
    /// What the terminal can show (NO_COLOR honoured).
    let depth: ColorDepth
    /// Picture cells are written in 24-bit colour on a terminal whose terminfo has 256 (see `pictureColorNumber`).
    var pictureTrueColor = false
    /// Set when the pairs ran out during a frame and were all dropped.
    var pairsWereReset = false
    /// The pair picture placeholders use (nothing else does), or 0 when there is none.
    private(set) var placeholderPair: Int32 = 0
    private let pairLimit: Int32
    private let systemColorFor: [Int32]
    private var pairTable: [Int32] = []
    private var directPairs: [UInt64: Int32] = [:]
    private var nextPair: Int32 = 1
    private var firstFreePair: Int32 = 1

    /// Colours for a terminal of `depth` that has `pairLimit` colour pairs.
    init(depth: ColorDepth, pairLimit: Int32) {
        self.depth = depth
        self.pairLimit = max(1, pairLimit)
        if depth != .direct { pairTable = [Int32](repeating: 0, count: 257 * 257) }
        let systemCount = depth == .ansi16 ? 16 : 8
        systemColorFor = (0..<256).map { index in
            if index < systemCount { return Int32(index) }
            let rgb = Palette.rgb(ofIndex: UInt8(index))
            return Int32(Palette.nearestSystemIndex(r: rgb.r, g: rgb.g, b: rgb.b, count: systemCount))
        }
    }

    /// Sets aside pair 1, in the terminal's default colours, for picture placeholders.
    mutating func reservePlaceholderPair() {
        placeholderPair = 1
        firstFreePair = 2
        nextPair = 2
        init_extended_pair(placeholderPair, -1, -1)
    }

    /// The colour number `PictureOutput` writes for a picture cell's colour: the curses number, or for 24-bit
    /// pictures on a 256-colour terminfo, 2^24 + 0xRRGGBB (written as SGR 38;2/48;2).
    @inline(__always)
    func pictureColorNumber(_ color: TerminalColor) -> Int32 {
        if pictureTrueColor, case .rgb(let r, let g, let b) = color {
            return 1 << 24 | Int32(r) << 16 | Int32(g) << 8 | Int32(b)
        }
        return colorNumber(color)
    }

    /// The curses colour number of a colour on this terminal (-1 for the default colour).
    @inline(__always)
    func colorNumber(_ color: TerminalColor) -> Int32 {
        switch depth {
        case .monochrome:
            return -1
        case .ansi8, .ansi16:
            switch color {
            case .default: return -1
            case .palette(let index): return systemColorFor[Int(index)]
            case .rgb(let r, let g, let b):
                return Int32(Palette.nearestSystemIndex(r: r, g: g, b: b, count: depth == .ansi16 ? 16 : 8))
            }
        case .palette256:
            switch color {
            case .default: return -1
            case .palette(let index): return Int32(index)
            case .rgb(let r, let g, let b): return Int32(Palette.nearestIndex(r: r, g: g, b: b))
            }
        case .direct:
            // Direct-colour terminfo treats 0–7 as the ANSI colours and everything else as 0xRRGGBB.
            guard let rgb = Palette.rgb(of: color) else { return -1 }
            if case .palette(let index) = color, index < 8 { return Int32(index) }
            return max(8, Int32(rgb.r) << 16 | Int32(rgb.g) << 8 | Int32(rgb.b))
        }
    }

    /// The pair of a cell's style, allocated the first time it is asked for.
    @inline(__always)
    mutating func pair(_ style: CellStyle) -> Int32 {
        pairNumber(foreground: colorNumber(style.foreground), background: colorNumber(style.background))
    }

    @inline(__always)
    private mutating func pairNumber(foreground: Int32, background: Int32) -> Int32 {
        if foreground < 0 && background < 0 { return 0 }
        if depth == .direct {
            let key = UInt64(UInt32(bitPattern: foreground)) << 32 | UInt64(UInt32(bitPattern: background))
            if let pair = directPairs[key] { return pair }
            let pair = allocatePair(foreground: foreground, background: background)
            directPairs[key] = pair
            return pair
        }
        let slot = Int(foreground + 1) * 257 + Int(background + 1)
        let cached = pairTable[slot]
        if cached != 0 { return cached }
        let pair = allocatePair(foreground: foreground, background: background)
        pairTable[slot] = pair
        return pair
    }

    private mutating func allocatePair(foreground: Int32, background: Int32) -> Int32 {
        if nextPair >= pairLimit {
            for index in pairTable.indices { pairTable[index] = 0 }
            directPairs.removeAll(keepingCapacity: true)
            nextPair = firstFreePair
            pairsWereReset = true
        }
        let pair = nextPair
        nextPair += 1
        init_extended_pair(pair, foreground, background)
        return pair
    }
}
