import CCursesShim
import CNcursesw
import Foundation
import ParleyPictures

#if canImport(Glibc)
import Glibc
#endif

/// Where one run of narrow cells is gathered before curses gets it in one call.
struct CellRunBuffers {
    let characters: UnsafeMutablePointer<wchar_t>
    let attributes: UnsafeMutablePointer<attr_t>
    let pairs: UnsafeMutablePointer<Int32>
}

/// Cell output: screens written to curses as the cells that changed, picture cells past curses.
extension Terminal {
    /// Shows `screen`: writes the cells that differ from the last drawn screen, then updates the terminal once.
    /// With `cursor`, the text cursor shows at that cell (for typing); without, it is hidden.
    public func draw(_ screen: Screen, cursor: (column: Int, row: Int)? = nil) {
        guard isOpen else { return }
        // Curses writes below: the last frame's picture bytes go out first.
        writer.wait()
        followTmuxClient()
        var full = previous.map { $0.width != screen.width || $0.height != screen.height } ?? true
        for _ in 0..<2 {
            colors.pairsWereReset = false
            if full { werase(window) }
            writeCells(screen, comparedTo: full ? nil : previous)
            // Running out of colour pairs mid-frame re-defines pairs already on the screen: paint it all again.
            if !colors.pairsWereReset { break }
            full = true
        }
        showCursor(at: cursor)
        var pixelPlan: PixelPictureWriter.Plan?
        if pixelWriter != nil {
            let plan = pixelWriter!.plan(screen, repaintAll: full)
            // Sixel pictures that go away: curses paints their rows again over what the terminal still shows.
            for row in plan.repaintRows where row < screen.height { wredrawln(window, Int32(row), 1) }
            pixelPlan = plan
        }
        wnoutrefresh(window)
        doupdate()
        // Pictures left out for a pending resize are missing from the terminal: the next draw repaints everything.
        previous = pictureIndices.isEmpty || writePictures(screen) ? screen : nil
        if let plan = pixelPlan { writePixels(plan, screen) }
    }

    private func showCursor(at cursor: (column: Int, row: Int)?) {
        if let cursor {
            if !cursorVisible { curs_set(1) }
            leaveok(window, false)
            wmove(window, Int32(cursor.row), Int32(cursor.column))
        } else if cursorVisible {
            curs_set(0)
            leaveok(window, true)
        }
        cursorVisible = cursor != nil
    }

    /// Sends the kitty or sixel pictures `plan` holds, unless a resize is pending (then the next draw repaints).
    private func writePixels(_ plan: PixelPictureWriter.Plan, _ screen: Screen) {
        guard let capabilities = pictureCapabilities else { return }
        if Self.resizePending(screen) {
            pixelWriter!.forget()
            previous = nil
        } else if !plan.isEmpty {
            let bytes = pixelWriter!.output(plan, capabilities: capabilities)
            if !bytes.isEmpty {
                writer.send(bytes)
                parley_curses_assume_normal_attributes()
            }
            pixelWriter!.commit(plan)
        }
    }

    /// True when the kernel's size of the terminal differs from `screen`'s: curses has not caught up yet.
    static func resizePending(_ screen: Screen) -> Bool {
        var columns: Int32 = 0
        var rows: Int32 = 0
        return parley_terminal_size(STDOUT_FILENO, &columns, &rows) == 0 && columns > 0 && rows > 0
            && (Int(columns) != screen.width || Int(rows) != screen.height)
    }

    /// The character of a picture cell (a block element U+2580–259F or a sextant U+1FB00–1FB3B, both colours
    /// concrete, no attributes), else nil.
    @inline(__always)
    static func pictureScalar(_ cell: Cell) -> UInt32? {
        guard cell.style.attributes.isEmpty, cell.style.foreground != .default, cell.style.background != .default,
            !cell.isContinuation
        else { return nil }
        let value = cell.glyph.raw
        guard (0x2580...0x259F).contains(value) || (0x1FB00...0x1FB3B).contains(value) else { return nil }
        return value
    }

    /// Hands the picture cells listed in `pictureIndices` to the writer thread in one burst; false when they were
    /// left out.
    ///
    /// Not while a resize is pending (the kernel's size differs from the screen's): curses has not caught up yet,
    /// and a burst placed for the old size could land past the edge, wrap and scroll. The next frame, drawn at
    /// the new size, brings the pictures back.
    private func writePictures(_ screen: Screen) -> Bool {
        if Self.resizePending(screen) {
            pictureIndices.removeAll(keepingCapacity: true)
            return false
        }
        guard var output = pictureOutput else { return true }
        pictureOutput = nil  // keep the buffer uniquely referenced while building
        let width = screen.width
        let colors = self.colors
        output.begin(width: width)
        screen.cells.withUnsafeBufferPointer { cells in
            for index in pictureIndices {
                let cell = cells[index]
                guard let scalar = Self.pictureScalar(cell) else { continue }
                let row = index / width
                output.add(
                    scalar: scalar, foreground: colors.pictureColorNumber(cell.style.foreground),
                    background: colors.pictureColorNumber(cell.style.background), row: row,
                    column: index - row * width
                ) { column in
                    let neighbour = cells[row * width + column]
                    guard let scalar = Self.pictureScalar(neighbour) else { return nil }
                    return (
                        scalar, colors.pictureColorNumber(neighbour.style.foreground),
                        colors.pictureColorNumber(neighbour.style.background)
                    )
                }
            }
        }
        output.finish()
        writer.send(output.bytes)
        parley_curses_assume_normal_attributes()
        pictureOutput = output
        pictureIndices.removeAll(keepingCapacity: true)
        return true
    }

    /// Hands curses the cells of `screen` that differ from `old` (all of them without `old`), and lists the
    /// picture cells to write past curses in `pictureIndices`.
    func writeCells(_ screen: Screen, comparedTo old: Screen?) {
        pictureIndices.removeAll(keepingCapacity: true)
        let rows = min(screen.height, Int(getmaxy(window)))
        let columns = min(screen.width, Int(getmaxx(window)))
        guard rows > 0, columns > 0 else { return }
        let width = screen.width
        if runCharacters.count < columns {
            runCharacters = [wchar_t](repeating: 0, count: columns)
            runAttributes = [attr_t](repeating: 0, count: columns)
            runPairs = [Int32](repeating: 0, count: columns)
        }
        screen.cells.withUnsafeBufferPointer { cells in
            (old?.cells ?? []).withUnsafeBufferPointer { oldCells in
                runCharacters.withUnsafeMutableBufferPointer { characters in
                    runAttributes.withUnsafeMutableBufferPointer { attributes in
                        runPairs.withUnsafeMutableBufferPointer { pairs in
                            let run = CellRunBuffers(
                                characters: characters.baseAddress!, attributes: attributes.baseAddress!,
                                pairs: pairs.baseAddress!)
                            let compare = oldCells.count == cells.count
                            // A cell that became a picture this frame gets its placeholder from curses, which may
                            // then have written placeholders over neighbouring pictures too (moving the cursor by
                            // rewriting cells): after such a frame every picture is written again. Rare: tiles
                            // appearing, dialogs closing.
                            var placeholdersWritten = !compare
                            for row in 0..<rows {
                                let wrote = writeRow(
                                    row, columns: columns, width: width, cells: cells,
                                    oldCells: compare ? oldCells : nil, run: run)
                                placeholdersWritten = placeholdersWritten || wrote
                            }
                            if pictureOutput != nil && placeholdersWritten && compare {
                                pictureIndices.removeAll(keepingCapacity: true)
                                for row in 0..<rows {
                                    for index in (row * width)..<(row * width + columns)
                                    where Self.pictureScalar(cells[index]) != nil {
                                        pictureIndices.append(index)
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    /// Writes the cells of one row that differ from `oldCells` (all of them without); true when curses got a
    /// picture placeholder it did not hold.
    ///
    /// Consecutive changed one-scalar narrow cells go to curses as one run (mvwadd_wchnstr); anything else (wide
    /// characters, clusters) one cell at a time.
    private func writeRow(
        _ row: Int, columns: Int, width: Int, cells: UnsafeBufferPointer<Cell>, oldCells: UnsafeBufferPointer<Cell>?,
        run: CellRunBuffers
    ) -> Bool {
        let pictures = pictureOutput != nil
        var placeholdersWritten = false
        var runStart = 0
        var runLength = 0
        func flush() {
            if runLength > 0 {
                parley_curses_put_run(
                    window, Int32(row), Int32(runStart), run.characters, run.attributes, run.pairs, Int32(runLength))
                runLength = 0
            }
        }
        var index = row * width
        for column in 0..<columns {
            defer { index += 1 }
            let cell = cells[index]
            if cell.isContinuation || (oldCells.map { cell == $0[index] } ?? false) {
                flush()
                continue
            }
            if pictures, Self.pictureScalar(cell) != nil {
                pictureIndices.append(index)
                // Every placeholder is '▀' whatever the picture cell shows: a quadrant or sextant cell that changes
                // shape must not make curses repaint its placeholder (which forces every picture to be written
                // again).
                if let oldCells, Self.pictureScalar(oldCells[index]) != nil {
                    flush()  // curses already holds this placeholder
                    continue
                }
                placeholdersWritten = true
                if runLength == 0 { runStart = column }
                run.characters[runLength] = wchar_t(0x2580)
                run.attributes[runLength] = attributeBits[0]
                run.pairs[runLength] = colors.placeholderPair
                runLength += 1
                continue
            }
            guard let scalar = Self.singleNarrowScalar(cell.glyph) else {
                flush()
                put(cell, row: row, column: column)
                continue
            }
            if runLength == 0 { runStart = column }
            run.characters[runLength] = wchar_t(scalar.value)
            run.attributes[runLength] = attributeBits[Int(cell.style.attributes.rawValue & 15)]
            run.pairs[runLength] = colors.pair(cell.style)
            runLength += 1
        }
        flush()
        return placeholdersWritten
    }

    /// The character's only scalar when it is one narrow scalar (the run fast path), else nil.
    @inline(__always)
    private static func singleNarrowScalar(_ glyph: Glyph) -> Unicode.Scalar? {
        guard let first = glyph.scalar else { return nil }
        let value = first.value
        if (0x20..<0x7F).contains(value) || (0x2500...0x259F).contains(value) || (0x1FB00...0x1FB3B).contains(value) {
            return first
        }
        return DisplayWidth.of(first) == 1 ? first : nil
    }

    @inline(__always)
    private func put(_ cell: Cell, row: Int, column: Int) {
        let pair = colors.pair(cell.style)
        let attributes = attributeBits[Int(cell.style.attributes.rawValue & 15)]
        // A cluster: base plus combining or joining characters. curses holds at most 5 per cell; longer clusters
        // (family emoji) show their first character rather than a broken sequence.
        var text = cell.character.unicodeScalars.map { wchar_t($0.value) }
        if text.count > Int(CCHARW_MAX) { text = [text[0]] }
        parley_curses_put_cluster(window, Int32(row), Int32(column), text, Int32(text.count), attributes, pair)
    }

    /// The curses attribute bits of each of the 16 combinations of `CellAttributes`.
    static func cursesAttributeBits() -> [attr_t] {
        let bold = parley_curses_a_bold()
        let dim = parley_curses_a_dim()
        let reverse = parley_curses_a_reverse()
        let underline = parley_curses_a_underline()
        return (0..<16).map { raw in
            let attributes = CellAttributes(rawValue: UInt8(raw))
            var bits = parley_curses_a_normal()
            if attributes.contains(.bold) { bits |= bold }
            if attributes.contains(.dim) { bits |= dim }
            if attributes.contains(.reverse) { bits |= reverse }
            if attributes.contains(.underline) { bits |= underline }
            return bits
        }
    }
}
