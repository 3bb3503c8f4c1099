import ParleyRoom
import Testing

/// A container placed away from the screen origin so that absolute coordinates are exercised.
struct Container: CustomStringConvertible, Sendable {
    let name: String
    let rect: CellRect
    var description: String { name }
}

private let containers: [Container] = [
    Container(name: "80x24", rect: CellRect(x: 0, y: 1, width: 80, height: 24)),
    Container(name: "120x40", rect: CellRect(x: 2, y: 1, width: 120, height: 40)),
    Container(name: "200x60", rect: CellRect(x: 0, y: 0, width: 200, height: 60)),
    Container(name: "tall 40x60", rect: CellRect(x: 5, y: 3, width: 40, height: 60)),
    Container(name: "small 50x14", rect: CellRect(x: 1, y: 1, width: 50, height: 14)),
]

private let options = LayoutOptions()

private func sources(_ count: Int) -> (self: TileSource, peers: [TileSource]) {
    let me = TileSource(id: ParticipantID(1), videoSize: VideoSize(width: 640, height: 480))
    let peers = (2...max(2, count)).prefix(count - 1).map {
        TileSource(id: ParticipantID(UInt32($0)), videoSize: $0 % 2 == 0 ? VideoSize(width: 1280, height: 720) : nil)
    }
    return (me, peers)
}

private func layouts(count: Int, in container: CellRect, full: ParticipantID?) -> [VideoLayout] {
    let (me, peers) = sources(count)
    let first = VideoViewLayouter.layout(self: me, peers: peers, full: full, page: 0, in: container)
    return (0..<first.pageCount).map {
        VideoViewLayouter.layout(self: me, peers: peers, full: full, page: $0, in: container)
    }
}

/// The tile a user would click on at a cell: the topmost one covering it.
private func expectedHit(_ layout: VideoLayout, column: Int, row: Int) -> ParticipantID? {
    var hit: ParticipantID?
    for tile in layout.tiles where tile.rect.contains(column: column, row: row) { hit = tile.id }
    return hit
}

@Suite("VideoViewLayouter")
struct LayoutTests {
    static let cases: [(count: Int, container: Container, fullscreen: Bool)] =
        (1...16).flatMap { count in containers.flatMap { c in [(count, c, false), (count, c, true)] } }

    @Test("every count 1–16 x container x fullscreen", arguments: cases)
    func invariants(count: Int, container: Container, fullscreen: Bool) throws {
        let box = container.rect
        let full: ParticipantID? = fullscreen ? ParticipantID(UInt32(count)) : nil
        let pages = layouts(count: count, in: box, full: full)
        let honoursFull = fullscreen && count >= 3

        var seen: [ParticipantID] = []
        for layout in pages {
            #expect(layout.pageCount == pages.count)
            #expect(!layout.tiles.isEmpty)
            for tile in layout.tiles {
                #expect(box.contains(tile.rect), "\(tile.rect) outside \(box)")
                #expect(!tile.rect.isEmpty)
            }
            // No overlaps, except the self inset, which must sit inside the peer it covers.
            let flat = layout.tiles.filter { $0.kind != .corner }
            for (i, a) in flat.enumerated() {
                for b in flat[(i + 1)...] {
                    #expect(!a.rect.intersects(b.rect), "\(a.id) \(a.rect) overlaps \(b.id) \(b.rect)")
                }
            }
            for corner in layout.tiles where corner.kind == .corner {
                #expect(flat.count == 1 && flat[0].rect.contains(corner.rect))
            }

            if honoursFull {
                #expect(layout.fullscreen == full)
                let fullTiles = layout.tiles.filter { $0.kind == .full }
                #expect(fullTiles.map(\.id) == [full])
                let strip = layout.tiles.filter { $0.kind == .strip }
                #expect(strip.count == min(4, count - 1))
                #expect(!strip.contains { $0.id == full })
                let tall = Double(box.height) * 2 > Double(box.width)
                for tile in strip {
                    if tall {
                        #expect(tile.rect.maxY == box.maxY && tile.rect.width <= box.width / 4 + 1)
                    } else {
                        #expect(tile.rect.maxX == box.maxX && tile.rect.height <= box.height / 4 + 1)
                    }
                }
                // Reference rule: no hit-testing while a tile is fullscreen.
                #expect(layout.participant(atColumn: box.x + 1, row: box.y + 1) == nil)
            } else {
                #expect(layout.fullscreen == nil)
                let grid = layout.tiles.filter { $0.kind == .grid }
                if count >= 3 {
                    let widths = grid.map(\.rect.width)
                    let heights = grid.map(\.rect.height)
                    #expect(widths.max()! - widths.min()! <= 1, "widths \(widths)")
                    #expect(heights.max()! - heights.min()! <= 1, "heights \(heights)")
                    #expect(grid.map(\.number) == Array(1...grid.count).map { Optional($0) })
                }
                seen += grid.map(\.id)
                // Hit-testing agrees with the rectangles on a lattice of cells plus every tile's corners.
                var probes: [(Int, Int)] = []
                for row in stride(from: box.y - 1, through: box.maxY, by: 2) {
                    for column in stride(from: box.x - 1, through: box.maxX, by: 3) { probes.append((column, row)) }
                }
                for tile in layout.tiles {
                    let r = tile.rect
                    probes += [(r.x, r.y), (r.maxX - 1, r.y), (r.x, r.maxY - 1), (r.maxX - 1, r.maxY - 1)]
                }
                for (column, row) in probes {
                    #expect(
                        layout.participant(atColumn: column, row: row) == expectedHit(layout, column: column, row: row))
                }
            }
        }

        if !honoursFull && count >= 3 {
            // Every participant appears on exactly one page, in order.
            #expect(seen == (1...count).map { ParticipantID(UInt32($0)) })
            let size = pages[0].pageSize
            let minimumMet = pages.allSatisfy { page in
                page.tiles.allSatisfy { $0.rect.width >= 16 && $0.rect.height >= 6 }
            }
            #expect(minimumMet, "a tile fell below 16x6")
            if pages.count > 1 {
                // Paging kicks in exactly at the minimum: one more tile per page would be unreadable.
                let shape = VideoViewLayouter.gridShape(count: size + 1, in: box)
                #expect(box.width / shape.columns < 16 || box.height / shape.rows < 6)
            } else {
                #expect(size == count)
            }
        }
    }

    @Test("alone: self fills the container")
    func alone() {
        let box = CellRect(x: 0, y: 1, width: 80, height: 22)
        let layout = VideoViewLayouter.layout(self: TileSource(id: ParticipantID(1)), peers: [], full: nil, in: box)
        #expect(layout.tiles == [LayoutTile(id: ParticipantID(1), rect: box, kind: .grid, number: 1)])
    }

    @Test(
        "one peer: peer fills, self is a quarter-width inset at the top right keeping its aspect",
        arguments: [
            (
                VideoSize(width: 640, height: 480), CellRect(x: 0, y: 0, width: 80, height: 24),
                CellRect(x: 59, y: 1, width: 20, height: 8)
            ),
            (
                VideoSize(width: 1280, height: 720), CellRect(x: 0, y: 0, width: 80, height: 24),
                CellRect(x: 59, y: 1, width: 20, height: 6)
            ),
            (
                VideoSize(width: 1280, height: 720), CellRect(x: 10, y: 2, width: 200, height: 60),
                CellRect(x: 159, y: 3, width: 50, height: 14)
            ),
            // A portrait camera in a short container: height capped at container - 2, width shrinks to keep aspect.
            (
                VideoSize(width: 360, height: 640), CellRect(x: 0, y: 0, width: 120, height: 20),
                CellRect(x: 99, y: 1, width: 20, height: 18)
            ),
        ])
    func onePeer(selfSize: VideoSize, box: CellRect, corner: CellRect) {
        let layout = VideoViewLayouter.layout(
            self: TileSource(id: ParticipantID(1), videoSize: selfSize), peers: [TileSource(id: ParticipantID(7))],
            full: ParticipantID(7), in: box)
        #expect(
            layout.tiles == [
                LayoutTile(id: ParticipantID(7), rect: box, kind: .grid, number: 2),
                LayoutTile(id: ParticipantID(1), rect: corner, kind: .corner, number: 1),
            ])
        #expect(layout.fullscreen == nil, "fullscreen needs three tiles")
        #expect(layout.participant(atColumn: corner.x, row: corner.y) == ParticipantID(1))
        #expect(layout.participant(atColumn: corner.x - 1, row: corner.y) == ParticipantID(7))
    }

    @Test(
        "equal grid, exact rectangles",
        arguments: [
            // 3 tiles in 80x24 (wide): 2 columns x 2 rows, the short last row centred.
            (
                3, CellRect(x: 0, y: 0, width: 80, height: 24),
                [
                    CellRect(x: 0, y: 0, width: 40, height: 12), CellRect(x: 40, y: 0, width: 40, height: 12),
                    CellRect(x: 20, y: 12, width: 40, height: 12),
                ]
            ),
            // 5 tiles in 121x40: 3 columns, widths 41/40/40, 2 rows of 20.
            (
                5, CellRect(x: 0, y: 0, width: 121, height: 40),
                [
                    CellRect(x: 0, y: 0, width: 41, height: 20), CellRect(x: 41, y: 0, width: 40, height: 20),
                    CellRect(x: 81, y: 0, width: 40, height: 20),
                    CellRect(x: 20, y: 20, width: 41, height: 20), CellRect(x: 61, y: 20, width: 40, height: 20),
                ]
            ),
            // 3 tiles in a tall 40x60: 2 rows of 2 columns, the last row centred.
            (
                3, CellRect(x: 0, y: 0, width: 40, height: 60),
                [
                    CellRect(x: 0, y: 0, width: 20, height: 30), CellRect(x: 20, y: 0, width: 20, height: 30),
                    CellRect(x: 10, y: 30, width: 20, height: 30),
                ]
            ),
            // 2 peers with the self view hidden, tall: 1 column, 2 rows.
            (
                2, CellRect(x: 0, y: 0, width: 40, height: 60),
                [
                    CellRect(x: 0, y: 0, width: 40, height: 30), CellRect(x: 0, y: 30, width: 40, height: 30),
                ]
            ),
        ])
    func exactGrid(count: Int, box: CellRect, expected: [CellRect]) {
        let peers = (1...count).map { TileSource(id: ParticipantID(UInt32($0))) }
        // count 2 uses no self tile (hidden) so it is a plain grid; others put the first source in as self.
        let layout =
            count == 2
            ? VideoViewLayouter.layout(self: nil, peers: peers, full: nil, in: box)
            : VideoViewLayouter.layout(self: peers[0], peers: Array(peers.dropFirst()), full: nil, in: box)
        #expect(layout.tiles.map(\.rect) == expected)
    }

    @Test(
        "fullscreen with 6 tiles: strip of four along the right (wide) or bottom (tall)",
        arguments: [
            (
                CellRect(x: 0, y: 0, width: 80, height: 24), CellRect(x: 0, y: 0, width: 60, height: 24),
                [
                    CellRect(x: 60, y: 0, width: 20, height: 6), CellRect(x: 60, y: 6, width: 20, height: 6),
                    CellRect(x: 60, y: 12, width: 20, height: 6), CellRect(x: 60, y: 18, width: 20, height: 6),
                ]
            ),
            (
                CellRect(x: 0, y: 0, width: 40, height: 60), CellRect(x: 0, y: 0, width: 40, height: 45),
                [
                    CellRect(x: 0, y: 45, width: 10, height: 15), CellRect(x: 10, y: 45, width: 10, height: 15),
                    CellRect(x: 20, y: 45, width: 10, height: 15), CellRect(x: 30, y: 45, width: 10, height: 15),
                ]
            ),
        ])
    func fullscreenStrip(box: CellRect, fullRect: CellRect, strip: [CellRect]) {
        let (me, peers) = sources(6)
        let layout = VideoViewLayouter.layout(self: me, peers: peers, full: ParticipantID(3), in: box)
        #expect(layout.tiles.map(\.rect) == [fullRect] + strip)
        // Others in order after the full tile: 1, 2, 4, 5 (6 does not fit the strip of four).
        #expect(layout.tiles.map(\.id.rawValue) == [3, 1, 2, 4, 5])
        #expect(layout.tiles.map(\.number) == [3, 1, 2, 4, 5])
        #expect(layout.participant(numbered: 6) == ParticipantID(6))
    }

    @Test("paging: a tall 40x60 container holds 6 readable tiles per page")
    func paging() {
        let box = CellRect(x: 0, y: 0, width: 40, height: 60)
        let (me, peers) = sources(7)
        let first = VideoViewLayouter.layout(self: me, peers: peers, full: nil, page: 0, in: box)
        #expect(first.pageSize == 6 && first.pageCount == 2)
        #expect(first.tiles.map(\.id.rawValue) == [1, 2, 3, 4, 5, 6])
        let second = VideoViewLayouter.layout(self: me, peers: peers, full: nil, page: 1, in: box)
        #expect(second.tiles == [LayoutTile(id: ParticipantID(7), rect: box, kind: .grid, number: 1)])
        #expect(second.participant(numbered: 1) == ParticipantID(7))
        #expect(second.participant(numbered: 2) == nil)
        // Out-of-range pages clamp to the last page.
        #expect(VideoViewLayouter.layout(self: me, peers: peers, full: nil, page: 9, in: box).page == 1)
    }

    @Test("a container below the minimum shows one tile per page")
    func tinyContainer() {
        let box = CellRect(x: 0, y: 0, width: 20, height: 8)
        let (me, peers) = sources(4)
        let layout = VideoViewLayouter.layout(self: me, peers: peers, full: nil, in: box)
        #expect(layout.pageSize == 1 && layout.pageCount == 4)
        #expect(layout.tiles.map(\.rect) == [box])
    }

    @Test("empty inputs give an empty layout")
    func empty() {
        #expect(
            VideoViewLayouter.layout(self: nil, peers: [], full: nil, in: CellRect(x: 0, y: 0, width: 80, height: 24))
                == .empty)
        #expect(
            VideoViewLayouter.layout(
                self: TileSource(id: ParticipantID(1)), peers: [], full: nil,
                in: CellRect(x: 0, y: 0, width: 0, height: 24)) == .empty)
    }
}

@Suite("CellRect")
struct CellRectTests {
    @Test("contains and intersects")
    func geometry() {
        let r = CellRect(x: 2, y: 3, width: 4, height: 2)
        #expect(r.contains(column: 2, row: 3) && r.contains(column: 5, row: 4))
        #expect(!r.contains(column: 6, row: 3) && !r.contains(column: 2, row: 5) && !r.contains(column: 1, row: 3))
        #expect(r.intersects(CellRect(x: 5, y: 4, width: 3, height: 3)))
        #expect(!r.intersects(CellRect(x: 6, y: 3, width: 3, height: 3)))
        #expect(!r.intersects(CellRect(x: 3, y: 3, width: 0, height: 3)))
    }

    @Test(
        "fitting letterboxes a picture with its aspect",
        arguments: [
            (CellRect(x: 0, y: 0, width: 80, height: 24), 16.0 / 9, CellRect(x: 0, y: 0, width: 80, height: 23)),
            (CellRect(x: 0, y: 0, width: 80, height: 24), 4.0 / 3, CellRect(x: 8, y: 0, width: 64, height: 24)),
            (CellRect(x: 10, y: 5, width: 40, height: 40), 1.0, CellRect(x: 10, y: 15, width: 40, height: 20)),
        ])
    func fitting(box: CellRect, aspect: Double, expected: CellRect) {
        #expect(box.fitting(aspect: aspect) == expected)
    }
}
