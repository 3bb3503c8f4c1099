/// The terminfo strings `PictureOutput` needs, as functions so tests can supply an xterm-like set without a
/// terminal. Each returns nil when the terminal cannot do it.
struct PictureCapabilities {
    /// Saves the cursor position and attributes (`sc`).
    var saveCursor: [UInt8]
    /// Restores what `saveCursor` saved (`rc`).
    var restoreCursor: [UInt8]
    /// Turns every attribute off (`sgr0`).
    var resetAttributes: [UInt8]
    /// Sets the foreground colour (`setaf` with the colour number).
    var foreground: (Int32) -> [UInt8]?
    /// Sets the background colour (`setab`).
    var background: (Int32) -> [UInt8]?
    /// Moves the cursor to a row and column (`cup`).
    var moveTo: (_ row: Int, _ column: Int) -> [UInt8]?
    /// Moves the cursor right by a number of columns (`cuf`); nil where the terminal has no such string.
    var moveRight: (_ columns: Int) -> [UInt8]? = { _ in nil }
    /// Moves the cursor left by a number of columns (`cub`); nil where the terminal has no such string.
    var moveLeft: (_ columns: Int) -> [UInt8]? = { _ in nil }
}

/// Turns the picture cells of one frame into a single burst of terminal output.
///
/// Why not curses: ncurses flushes its output buffer (one `write` to the terminal) after every cursor jump, and
/// expands `setaf`/`setab` through `tparm` on every colour change. A video tile whose cells change in scattered
/// places made ~130 writes per frame (3,900 system calls a second for one 88x36 tile). Curses still owns the
/// screen: it holds a placeholder for every picture cell ('▀' in a colour pair used for nothing else), so
/// its model of the screen stays true enough for its own optimisations, and `Terminal` only hands picture cells
/// here. The burst starts with save-cursor and ends with reset-attributes + restore-cursor, so curses finds the
/// cursor and attributes where it left them.
///
/// Colour and cursor-address strings come from terminfo once and are cached; nothing is formatted per cell.
struct PictureOutput {
    /// Bytes of the burst being built (reused between frames).
    private(set) var bytes: [UInt8] = []
    private let capabilities: PictureCapabilities
    // setaf/setab for colours 0…255, flat: `store[offset..<offset+length]`, offset << 8 | length per colour, with
    // `plainBit` set when the string is a plain SGR (it can share one sequence with the other colour).
    private var paletteStore: [UInt8] = []
    private var foregroundSpans: [UInt32] = []
    private var backgroundSpans: [UInt32] = []
    // Direct colours (above 255): cached as met, dropped when the cache grows past `directCacheLimit` entries.
    private var directForeground: [Int32: (sequence: [UInt8], plain: Bool)] = [:]
    private var directBackground: [Int32: (sequence: [UInt8], plain: Bool)] = [:]
    private static let directCacheLimit = 1 << 16
    // cup per cell of the current screen width, filled as used: offset << 8 | length into `cupStore`, 0 = not yet.
    private var cupStore: [UInt8] = [0]
    private var cupSpans: [UInt32] = []
    private var cupWidth = 0
    // cuf and cub per distance (up to the screen's width), filled as used, at 2 × distance and 2 × distance + 1 (nil:
    // not asked yet; empty: the terminal has none): a jump along the row is about half the bytes of a cup.
    private var jumpStrings: [[UInt8]?] = []
    // The changed cells of the row being built, written out (in the order that changes colour least) when the
    // row ends.
    private var rowCells: [RowCell] = []
    private var rowOfCells = -1
    // What the terminal shows while the burst is built.
    private var pen: (foreground: Int32, background: Int32) = (.min, .min)
    private var cursor: (row: Int, column: Int) = (-1, -1)

    /// Gaps of at most this many unchanged picture cells on a row are written again rather than jumped over, on a
    /// terminal without `cuf`: a cursor address costs about as many bytes as three cells with unchanged colours.
    /// With `cuf` a jump along the row (4 bytes) costs no more than one such cell, and a rewritten cell is also
    /// one more the terminal must parse and store (a third of a camera picture's cell writes were such rewrites).
    static let maximumGap = 3
    /// `maximumGap`, or 0 where the terminal can jump along the row.
    private let gapLimit: Int
    /// The terminal can jump both ways along a row, so a row's cells may be written in any order.
    private let reorders: Bool

    /// Rows with more changed cells than this are written left to right: choosing the order costs the square of
    /// the count, and a row changing almost everywhere gains little from it.
    static let reorderLimit = 64

    private struct RowCell {
        var column: Int
        var scalar: UInt32
        var foreground: Int32
        var background: Int32
    }

    /// A writer for these capabilities, or nil when one is missing.
    init?(capabilities: PictureCapabilities) {
        guard !capabilities.saveCursor.isEmpty, !capabilities.restoreCursor.isEmpty,
            capabilities.moveTo(0, 0) != nil
        else { return nil }
        for color in Int32(0)...255 {
            guard let foreground = capabilities.foreground(color), let background = capabilities.background(color),
                foreground.count < 256, background.count < 256
            else { return nil }
            foregroundSpans.append(
                UInt32(paletteStore.count) << 8 | UInt32(foreground.count)
                    | (Self.isPlainSGR(foreground) ? Self.plainBit : 0))
            paletteStore += foreground
            backgroundSpans.append(
                UInt32(paletteStore.count) << 8 | UInt32(background.count)
                    | (Self.isPlainSGR(background) ? Self.plainBit : 0))
            paletteStore += background
        }
        self.capabilities = capabilities
        let right = capabilities.moveRight(2)?.isEmpty == false
        gapLimit = right ? 0 : Self.maximumGap
        reorders = right && capabilities.moveLeft(2)?.isEmpty == false
    }

    /// Starts a burst for a screen `width` columns wide.
    mutating func begin(width: Int) {
        if width != cupWidth {
            cupWidth = width
            cupSpans.removeAll(keepingCapacity: true)
            cupStore = [0]
        }
        bytes.removeAll(keepingCapacity: true)
        bytes += capabilities.saveCursor
        bytes += capabilities.resetAttributes
        pen = (.min, .min)
        cursor = (-1, -1)
        rowCells.removeAll(keepingCapacity: true)
        rowOfCells = -1
    }

    /// Adds one cell: `scalar` (a narrow character) in two concrete curses colour numbers at `row`, `column`.
    /// `gapFiller` gives the cell at a column of the same row, for gaps worth writing over instead of jumping
    /// (nil: not a picture cell, so jump).
    @inline(__always)
    mutating func add(
        scalar: UInt32, foreground: Int32, background: Int32, row: Int, column: Int,
        gapFiller: (Int) -> (scalar: UInt32, foreground: Int32, background: Int32)?
    ) {
        if reorders {
            if row != rowOfCells { writeRow() }
            rowOfCells = row
            rowCells.append(RowCell(column: column, scalar: scalar, foreground: foreground, background: background))
            return
        }
        write(scalar: scalar, foreground: foreground, background: background, row: row, column: column, gapFiller)
    }

    /// Writes one cell where it goes, jumping or filling the gap from the cursor.
    @inline(__always)
    private mutating func write(
        scalar: UInt32, foreground: Int32, background: Int32, row: Int, column: Int,
        _ gapFiller: (Int) -> (scalar: UInt32, foreground: Int32, background: Int32)?
    ) {
        if cursor.row == row && column >= cursor.column && column - cursor.column <= gapLimit {
            var fill = cursor.column
            while fill < column, let cell = gapFiller(fill) {
                put(cell.scalar, cell.foreground, cell.background)
                fill += 1
            }
            cursor.column = fill
            if fill < column { move(row, column) }
        } else if cursor.row != row || cursor.column != column {
            move(row, column)
        }
        put(scalar, foreground, background)
        cursor.column += 1
        // Past the last column the terminal's cursor waits to wrap: where it is exactly is not known.
        if cursor.column >= cupWidth { cursor = (-1, -1) }
    }

    /// Writes the row's cells held back, each next the one that costs fewest bytes from the pen and the cursor
    /// (a colour change is 10–19 bytes, a jump along the row 4): runs of a colour scattered along the row are written
    /// one after another. On a camera picture at 256 colours this takes a third of the colour changes out of a frame
    /// (13 % of its bytes), and colour changes are what a terminal spends most on parsing.
    private mutating func writeRow() {
        defer { rowCells.removeAll(keepingCapacity: true) }
        let row = rowOfCells
        guard rowCells.count > 1, rowCells.count <= Self.reorderLimit else {
            for cell in rowCells { write(cell, row: row) }
            return
        }
        while !rowCells.isEmpty {
            var best = 0
            var bestCost = Int.max
            var bestDistance = Int.max
            for k in rowCells.indices {
                let cell = rowCells[k]
                var cost = colourCost(cell)
                var distance = cell.column
                if cursor.row == row {
                    distance = cell.column - cursor.column
                    // Behind the cursor: a jump back costs as much as one forward, but is taken last on a tie.
                    if distance != 0 { cost &+= 4 }
                    distance = distance < 0 ? (1 << 20) &- distance : distance
                }
                if cost < bestCost || (cost == bestCost && distance < bestDistance) {
                    best = k
                    bestCost = cost
                    bestDistance = distance
                }
            }
            let cell = rowCells[best]
            rowCells[best] = rowCells[rowCells.count - 1]
            rowCells.removeLast()
            write(cell, row: row)
        }
    }

    /// Writes one held-back cell of `row` (jumps only: a reordering terminal has `cuf`, so no gap is filled).
    @inline(__always)
    private mutating func write(_ cell: RowCell, row: Int) {
        write(
            scalar: cell.scalar, foreground: cell.foreground, background: cell.background, row: row,
            column: cell.column
        ) { _ in nil }
    }

    /// About how many bytes of colour change writing `cell` next takes, spelt the way `put` spells it.
    @inline(__always)
    private func colourCost(_ cell: RowCell) -> Int {
        let (_, foreground, background) = spelling(cell.scalar, cell.foreground, cell.background)
        return ((foreground != pen.foreground ? 1 : 0) + (background != pen.background ? 1 : 0)) * 10
    }

    /// Ends the burst: attributes off, cursor and attributes back where curses left them.
    mutating func finish() {
        writeRow()
        bytes += capabilities.resetAttributes
        bytes += capabilities.restoreCursor
    }

    /// How a cell goes out given the pen: one colour in both halves as '█' in it, leaving the background as the
    /// pen has it (half of a camera picture's cells are flat at 256 colours; this cuts a third of the bytes, and of
    /// tmux's parsing. A space on the background would save three bytes more a cell, but then what the terminal
    /// holds, and what `capture-pane` shows, would depend on the picture instead of marking it); two colours as
    /// '▀' or, with the colours swapped, '▄', whichever changes fewer colours from the pen's (parsing colour changes
    /// is most of what a picture costs a terminal).
    @inline(__always)
    private func spelling(_ scalar: UInt32, _ foreground: Int32, _ background: Int32) -> (UInt32, Int32, Int32) {
        guard scalar == Self.upperHalf || scalar == Self.lowerHalf else { return (scalar, foreground, background) }
        if foreground == background { return (Self.fullBlock, foreground, pen.background) }
        let kept = (foreground != pen.foreground ? 1 : 0) + (background != pen.background ? 1 : 0)
        let swapped = (background != pen.foreground ? 1 : 0) + (foreground != pen.background ? 1 : 0)
        guard swapped < kept else { return (scalar, foreground, background) }
        return (scalar == Self.upperHalf ? Self.lowerHalf : Self.upperHalf, background, foreground)
    }

    @inline(__always)
    private mutating func put(_ scalar: UInt32, _ foreground: Int32, _ background: Int32) {
        let (scalar, foreground, background) = spelling(scalar, foreground, background)
        var foregroundPlain = false
        if foreground != pen.foreground {
            foregroundPlain = appendColor(
                foreground, spans: foregroundSpans, direct: \.directForeground,
                make: capabilities.foreground)
            pen.foreground = foreground
        }
        if background != pen.background {
            // Both colours in one SGR ("ESC[38;5;1;48;5;2m" rather than two sequences) where both are plain SGRs.
            let joinAt = bytes.count
            let backgroundPlain = appendColor(
                background, spans: backgroundSpans, direct: \.directBackground,
                make: capabilities.background)
            if foregroundPlain && backgroundPlain {
                bytes[joinAt - 1] = UInt8(ascii: ";")
                bytes.removeSubrange(joinAt..<(joinAt + 2))
            }
            pen.background = background
        }
        appendUTF8(scalar)
    }

    static let upperHalf: UInt32 = 0x2580, lowerHalf: UInt32 = 0x2584, fullBlock: UInt32 = 0x2588
    private static let plainBit: UInt32 = 1 << 31

    /// True when `sequence` is one SGR of numbers only: ESC [ digits, ';' or ':' … m.
    static func isPlainSGR(_ sequence: [UInt8]) -> Bool {
        guard sequence.count >= 3, sequence[0] == 0x1B, sequence[1] == UInt8(ascii: "["),
            sequence[sequence.count - 1] == UInt8(ascii: "m")
        else { return false }
        return sequence[2..<(sequence.count - 1)].allSatisfy {
            ($0 >= 0x30 && $0 <= 0x39) || $0 == UInt8(ascii: ";") || $0 == UInt8(ascii: ":")
        }
    }

    /// Appends the colour's sequence; true when it is a plain SGR (worked out once per colour, not per cell).
    @inline(__always)
    private mutating func appendColor(
        _ color: Int32, spans: [UInt32], direct: WritableKeyPath<Self, [Int32: (sequence: [UInt8], plain: Bool)]>,
        make: (Int32) -> [UInt8]?
    ) -> Bool {
        if color >= 0 && color < 256 {
            let span = spans[Int(color)]
            let start = Int((span & ~Self.plainBit) >> 8)
            let length = Int(span & 0xFF)
            paletteStore.withUnsafeBufferPointer { store in
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: store[start..<(start + length)]))
            }
            return span & Self.plainBit != 0
        }
        if let cached = self[keyPath: direct][color] {
            bytes += cached.sequence
            return cached.plain
        }
        let sequence = make(color) ?? []
        let plain = Self.isPlainSGR(sequence)
        if self[keyPath: direct].count >= Self.directCacheLimit { self[keyPath: direct].removeAll() }
        self[keyPath: direct][color] = (sequence, plain)
        bytes += sequence
        return plain
    }

    private mutating func move(_ row: Int, _ column: Int) {
        let index = row * cupWidth + column
        if index >= cupSpans.count {
            cupSpans += [UInt32](repeating: 0, count: index + 1 - cupSpans.count)
        }
        var span = cupSpans[index]
        if span == 0 {
            let sequence = capabilities.moveTo(row, column) ?? []
            span = UInt32(cupStore.count) << 8 | UInt32(min(255, sequence.count))
            cupStore += sequence.prefix(255)
            cupSpans[index] = span
        }
        let start = Int(span >> 8)
        let length = Int(span & 0xFF)
        if row == cursor.row, column != cursor.column, column >= 0, abs(column - cursor.column) < cupWidth,
            case let jump = alongRow(column - cursor.column), !jump.isEmpty, jump.count < length
        {
            bytes += jump
            cursor.column = column
            return
        }
        cupStore.withUnsafeBufferPointer { store in
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: store[start..<(start + length)]))
        }
        cursor = (row, column)
    }

    /// `cuf` (positive `distance`) or `cub` (negative) for a jump along the row; empty where the terminal has none.
    private mutating func alongRow(_ distance: Int) -> [UInt8] {
        let slot = 2 * abs(distance) + (distance > 0 ? 0 : 1)
        if slot >= jumpStrings.count { jumpStrings += Array(repeating: nil, count: slot + 1 - jumpStrings.count) }
        if let jump = jumpStrings[slot] { return jump }
        let jump = (distance > 0 ? capabilities.moveRight(distance) : capabilities.moveLeft(-distance)) ?? []
        jumpStrings[slot] = jump
        return jump
    }

    @inline(__always)
    private mutating func appendUTF8(_ scalar: UInt32) {
        switch scalar {
        case ..<0x80:
            bytes.append(UInt8(scalar))
        case ..<0x800:
            bytes.append(UInt8(0xC0 | (scalar >> 6)))
            bytes.append(UInt8(0x80 | (scalar & 0x3F)))
        case ..<0x10000:
            bytes.append(UInt8(0xE0 | (scalar >> 12)))
            bytes.append(UInt8(0x80 | ((scalar >> 6) & 0x3F)))
            bytes.append(UInt8(0x80 | (scalar & 0x3F)))
        default:
            bytes.append(UInt8(0xF0 | (scalar >> 18)))
            bytes.append(UInt8(0x80 | ((scalar >> 12) & 0x3F)))
            bytes.append(UInt8(0x80 | ((scalar >> 6) & 0x3F)))
            bytes.append(UInt8(0x80 | (scalar & 0x3F)))
        }
    }
}

extension PictureCapabilities {
    /// SGR `selector`;2;R;G;B (38 foreground, 48 background) for a colour 2^24 + 0xRRGGBB: 24-bit colour where the
    /// terminal takes it but its terminfo entry describes 256 colours.
    static func directSGR(_ selector: Int, _ color: Int32) -> [UInt8] {
        Array("\u{1B}[\(selector);2;\((color >> 16) & 0xFF);\((color >> 8) & 0xFF);\(color & 0xFF)m".utf8)
    }

    /// xterm's strings (ECMA-48 SGR 38;5/48;5, CUP), for tests.
    static var xterm: PictureCapabilities {
        PictureCapabilities(
            saveCursor: Array("\u{1B}7".utf8), restoreCursor: Array("\u{1B}8".utf8),
            resetAttributes: Array("\u{1B}[m".utf8),
            foreground: { Array("\u{1B}[38;5;\($0)m".utf8) }, background: { Array("\u{1B}[48;5;\($0)m".utf8) },
            moveTo: { Array("\u{1B}[\($0 + 1);\($1 + 1)H".utf8) }, moveRight: { Array("\u{1B}[\($0)C".utf8) })
    }
}
