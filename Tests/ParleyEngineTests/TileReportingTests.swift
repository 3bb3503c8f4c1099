import ParleyWire
import Testing

@testable import ParleyEngine

@Suite struct TileReportingTests {
    static let small = [TileSize(id: 1, width: 150, height: 84)]
    static let large = [TileSize(id: 1, width: 640, height: 360)]
    static let none = [TileSize(id: 1, width: 0, height: 0)]

    /// One event: at `ms`, tiles shown (or nil: a wake-up), whether in a room, whether a wake-up is pending; and
    /// what should happen.
    struct Row: Sendable, CustomTestStringConvertible {
        var ms: Int
        var shown: [TileSize]?
        var joined = true
        var waiting = false
        var step: TileReporting.Step
        var testDescription: String { "at \(ms) ms: \(step)" }
    }

    @Test("sent when changed, at most every 250 ms, the last size after a burst, nothing before joining")
    func reportsAreRateLimitedAndOnlyOnChange() {
        let rows: [Row] = [
            Row(ms: 0, shown: Self.small, joined: false, step: .nothing),  // not in a room yet
            Row(ms: 10, shown: nil, step: .send(Self.small)),  // joined: what is shown goes at once
            Row(ms: 20, shown: Self.small, step: .nothing),  // unchanged
            Row(ms: 100, shown: Self.large, step: .wait(.milliseconds(160))),  // changed, too soon
            Row(ms: 150, shown: Self.none, waiting: true, step: .nothing),  // a wake-up is pending
            Row(ms: 260, shown: nil, step: .send(Self.none)),  // the wake-up: the last size, not each step
            Row(ms: 600, shown: Self.large, step: .send(Self.large)),  // long enough after
        ]
        var tiles = TileReporting()
        for row in rows {
            if let shown = row.shown { tiles.want(shown) }
            #expect(
                tiles.next(now: .milliseconds(row.ms), joined: row.joined, waiting: row.waiting) == row.step,
                "\(row.testDescription)")
        }
    }

    @Test func aNewConnectionGetsTheTilesAgainAtOnce() {
        var tiles = TileReporting()
        tiles.want(Self.small)
        #expect(tiles.next(now: .zero, joined: true, waiting: false) == .send(Self.small))
        #expect(tiles.next(now: .milliseconds(50), joined: true, waiting: false) == .nothing)
        tiles.forgetSent()
        #expect(tiles.next(now: .milliseconds(60), joined: true, waiting: false) == .send(Self.small))
    }

    @Test("the downlink estimate goes with the tiles when a limit appears, moves 10 % or more, or goes")
    func theDownlinkGoesWhenItIsNews() {
        // At each ms, the estimate (kbit/s, nil for no limit), and whether a report goes with it.
        let rows: [(ms: Int, kbps: Int?, sends: Bool)] = [
            (1_000, nil, false),  // no limit, tiles unchanged: nothing
            (2_000, 900, true),  // a limit appeared
            (3_000, 950, false),  // 5.6 % up: not news
            (4_000, 990, true),  // 10 % above the 900 reported
            (5_000, 900, false),  // 9.1 % below 990
            (6_000, nil, true),  // the limit went
        ]
        var tiles = TileReporting()
        tiles.want(Self.small)
        #expect(tiles.next(now: .zero, joined: true, waiting: false) == .send(Self.small))
        for row in rows {
            tiles.setDownlink(row.kbps)
            let step = tiles.next(now: .milliseconds(row.ms), joined: true, waiting: false)
            #expect(step == (row.sends ? .send(Self.small) : .nothing), "at \(row.ms) ms")
            if row.sends { #expect(tiles.sentDownlink == row.kbps) }
        }
        // A member that draws nothing reports its downlink with no tiles (every sender's full layer, to the relay).
        var bot = TileReporting()
        #expect(bot.next(now: .zero, joined: true, waiting: false) == .nothing)
        bot.setDownlink(700)
        #expect(bot.next(now: .zero, joined: true, waiting: false) == .send([]))
    }
}
