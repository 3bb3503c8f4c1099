import Foundation
import ParleyWire
import Testing

@testable import ParleyShare

/// Updates drawn as escape sequences read back by libvterm as the same screen, and a share's asciicast played back
/// by a parser of the tests' own.
@Suite("Screen painter and asciicast")
struct ScreenPainterTests {
    /// Random output a program might write: text (wide, combining), colours of each kind, attributes, cursor moves,
    /// erasing, newlines.
    static func randomOutput(_ generator: inout SplitMix) -> String {
        let pieces = [
            "ls -la", "日本", "😀", "e\u{301}", "\r\n", "\u{1B}[1;32m", "\u{1B}[0m", "\u{1B}[38;2;200;10;10m",
            "\u{1B}[48;5;17m", "\u{1B}[4;7m", "\u{1B}[K", "\u{1B}[2;5H", "\u{1B}[9m", "x", "  ", "│█",
            "\u{1B}[3;1H", "\u{1B}[J", "\u{1B}[21m",
        ]
        return (0..<Int(1 + generator.next() % 6)).map { _ in pieces[Int(generator.next() % UInt64(pieces.count))] }
            .joined()
    }

    /// The cells (and cursor) two screens differ in, for a failure's message.
    static func differences(_ seen: TerminalScreen, _ wanted: TerminalScreen) -> [String] {
        var found: [String] = []
        if seen.cursor != wanted.cursor { found.append("cursor \(seen.cursor) for \(wanted.cursor)") }
        for row in 0..<min(seen.rows, wanted.rows) {
            for column in 0..<min(seen.columns, wanted.columns) where seen[row, column] != wanted[row, column] {
                found.append("\(row),\(column): \(seen[row, column]) for \(wanted[row, column])")
            }
        }
        return Array(found.prefix(4))
    }

    @Test func aFullScreenDrawnIsReadBackAsTheSameScreen() throws {
        var generator = SplitMix(seed: 7)
        for _ in 0..<40 {
            let sharer = try TerminalEmulator(rows: 5, columns: 16)
            for _ in 0..<8 { sharer.write(Array(Self.randomOutput(&generator).utf8)) }
            let screen = sharer.screen()
            let viewer = try TerminalEmulator(rows: 5, columns: 16)
            viewer.write(ScreenPainter.bytes(for: ShareUpdate.between(nil, screen, sequence: 1)))
            #expect(viewer.screen() == screen, "\(Self.differences(viewer.screen(), screen))")
        }
    }

    @Test func changesDrawnOneAfterAnotherFollowTheSharersScreen() throws {
        var generator = SplitMix(seed: 11)
        let sharer = try TerminalEmulator(rows: 6, columns: 20)
        let viewer = try TerminalEmulator(rows: 6, columns: 20)
        var session = ShareSession()
        for step in 0..<300 {
            sharer.write(Array(Self.randomOutput(&generator).utf8))
            guard let update = session.update(for: sharer.screen(), at: Double(step) * 40) else { continue }
            viewer.write(ScreenPainter.bytes(for: update))
            #expect(
                viewer.screen() == sharer.screen(),
                "after step \(step): \(Self.differences(viewer.screen(), sharer.screen()))")
        }
    }

    @Test func controlCharactersInACellAreNeverWritten() {
        var screen = TerminalScreen(rows: 1, columns: 4)
        screen[0, 0] = ShareCell("\u{1B}")
        screen[0, 1] = ShareCell("\u{9B}")
        let bytes = ScreenPainter.bytes(for: ShareUpdate.between(nil, screen, sequence: 1))
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(text.contains("\u{FFFD}\u{FFFD}") && !text.contains("\u{9B}"))
        // Every ESC is the painter's own: each starts a CSI sequence.
        let escapes = text.unicodeScalars.enumerated().filter { $0.element == "\u{1B}" }.map(\.offset)
        let scalars = Array(text.unicodeScalars)
        #expect(escapes.allSatisfy { scalars[$0 + 1] == "[" })
    }

    @Test func aSharesAsciicastPlaysBackToTheSharersScreen() throws {
        var generator = SplitMix(seed: 3)
        let sharer = try TerminalEmulator(rows: 4, columns: 12)
        var session = ShareSession()
        let writer = AsciicastWriter(columns: 12, rows: 4)
        var cast = writer.header(startedAt: 1_764_547_200, title: "alice's terminal")
        for step in 0..<50 {
            sharer.write(Array(Self.randomOutput(&generator).utf8))
            if let update = session.update(for: sharer.screen(), at: Double(step) * 50) {
                cast += writer.event(update, at: Double(step) * 0.05)
            }
        }
        // Played back by the tests' own reading of asciicast v2.
        let lines = cast.split(separator: "\n").map { Data($0.utf8) }
        let header = try #require(try JSONSerialization.jsonObject(with: lines[0]) as? [String: Any])
        #expect(header["version"] as? Int == 2 && header["width"] as? Int == 12 && header["height"] as? Int == 4)
        #expect(header["title"] as? String == "alice's terminal")
        let player = try TerminalEmulator(rows: 4, columns: 12)
        var last = -1.0
        for line in lines.dropFirst() {
            let event = try #require(try JSONSerialization.jsonObject(with: line) as? [Any])
            let time = try #require((event[0] as? NSNumber)?.doubleValue)
            #expect(time >= last && event[1] as? String == "o")
            last = time
            player.write(Array(try #require(event[2] as? String).utf8))
        }
        #expect(lines.count > 10)
        #expect(player.screen() == sharer.screen())
    }
}
