/// A rectangle of character cells on the screen: column `x`, row `y`, 0-based from the top-left. The room core lays
/// tiles out in it and the terminal front end draws into it.
public struct CellRect: Hashable, Sendable, CustomStringConvertible {
    /// Leftmost column.
    public var x: Int
    /// Top row.
    public var y: Int
    /// Width in columns.
    public var width: Int
    /// Height in rows.
    public var height: Int

    /// A rectangle at (x, y) of the given size in cells.
    public init(x: Int, y: Int, width: Int, height: Int) {
        self.x = x
        self.y = y
        self.width = width
        self.height = height
    }

    /// One past the rightmost column.
    public var maxX: Int { x + width }
    /// One past the bottom row.
    public var maxY: Int { y + height }
    /// True when the rectangle holds no cell.
    public var isEmpty: Bool { width <= 0 || height <= 0 }
    /// Number of cells covered.
    public var area: Int { isEmpty ? 0 : width * height }

    /// True when the cell at (column, row) lies inside.
    public func contains(column: Int, row: Int) -> Bool {
        column >= x && column < maxX && row >= y && row < maxY
    }

    /// True when `other` lies entirely inside this rectangle.
    public func contains(_ other: CellRect) -> Bool {
        other.x >= x && other.y >= y && other.maxX <= maxX && other.maxY <= maxY
    }

    /// True when the two rectangles share at least one cell.
    public func intersects(_ other: CellRect) -> Bool {
        !isEmpty && !other.isEmpty && x < other.maxX && other.x < maxX && y < other.maxY && other.y < maxY
    }

    /// The cells inside both rectangles (an empty rectangle at the overlap's corner when they do not overlap).
    public func intersection(_ other: CellRect) -> CellRect {
        let left = max(x, other.x)
        let top = max(y, other.y)
        let right = min(maxX, other.maxX)
        let bottom = min(maxY, other.maxY)
        return CellRect(x: left, y: top, width: max(0, right - left), height: max(0, bottom - top))
    }

    /// The rectangle shrunk by `amount` cells on every side (never below zero size).
    public func inset(by amount: Int) -> CellRect {
        CellRect(x: x + amount, y: y + amount, width: max(0, width - 2 * amount), height: max(0, height - 2 * amount))
    }

    /// The largest rectangle centred inside this one whose picture keeps `aspect` (width / height in pixels),
    /// given that a cell is `cellAspect` times as tall as it is wide. Use it to letterbox video inside a tile.
    public func fitting(aspect: Double, cellAspect: Double = 2.0) -> CellRect {
        guard !isEmpty, aspect > 0, cellAspect > 0 else { return self }
        // In cells, a picture of pixel aspect a needs width/height = a * cellAspect.
        let cellRatio = aspect * cellAspect
        var fitWidth = width
        var fitHeight = Int((Double(width) / cellRatio).rounded())
        if fitHeight > height {
            fitHeight = height
            fitWidth = min(width, Int((Double(height) * cellRatio).rounded()))
        }
        fitWidth = max(1, fitWidth)
        fitHeight = max(1, fitHeight)
        return CellRect(
            x: x + (width - fitWidth) / 2, y: y + (height - fitHeight) / 2, width: fitWidth, height: fitHeight)
    }

    /// "80x24@0,1": size then origin.
    public var description: String { "\(width)x\(height)@\(x),\(y)" }
}

/// Splits `length` cells into `parts` runs whose sizes differ by at most one (larger runs first).
func splitCells(_ length: Int, into parts: Int) -> [Int] {
    guard parts > 0 else { return [] }
    let base = max(0, length) / parts
    let extra = max(0, length) % parts
    return (0..<parts).map { $0 < extra ? base + 1 : base }
}
