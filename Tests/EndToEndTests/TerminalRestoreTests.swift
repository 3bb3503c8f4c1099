import Foundation
import ParleyProcesses
import Testing

/// The shell's screen after a call is the one before it, however the window was resized during the call and whatever
/// size it has when the call is left; and keys that arrive in a burst all count.
@Suite(.serialized)
struct TerminalRestoreTests {
    /// The sizes a pane that started at 100x30 is left at: larger and smaller. Leaving the alternate screen at another
    /// size, tmux first rewraps what is left on it to the size the shell's screen was saved at; lines wider than that
    /// spill over and come back on the shell's screen, above its own lines.
    static let leaveSizes = [(columns: 140, rows: 45), (columns: 80, rows: 24)]

    /// A shell in a pane, with a few lines of its own on the screen.
    /// `variables` are set in the shell (short names keep command lines on one row).
    func shell(_ variables: String = "") throws -> (pane: TmuxPane, before: [String]) {
        let pane = try TmuxPane(
            command: "env -u NO_COLOR \(variables) PS1='$ ' bash --norc --noprofile", columns: 100, rows: 30)
        try pane.sendLiteral("printf 'before %s\\n' one two three")
        try pane.send(["Enter"])
        // Until the next prompt is there too: a look between the last line and the prompt would take the last line
        // for the prompt.
        let lines = try pane.waitFor(seconds: 10) { $0.contains("before three") && Self.content($0).last == "$" }
        #expect(lines.contains("before three") && Self.content(lines).last == "$", "\(lines)")
        // The last row is the prompt, which the next command line is typed on.
        return (pane, Array(Self.content(lines).dropLast()))
    }

    /// The pane's rows up to the last non-empty one.
    static func content(_ lines: [String]) -> [String] {
        Array(lines.prefix((lines.lastIndex { !$0.trimmingCharacters(in: .whitespaces).isEmpty } ?? -1) + 1))
    }

    /// Resizes the window through a few sizes and back to 100x30, a moment at each.
    func resizeAround(_ pane: TmuxPane) throws {
        for (columns, rows) in [(130, 40), (70, 20), (90, 35), (100, 30)] {
            try resize(pane, columns: columns, rows: rows)
        }
    }

    /// Resizes the window and gives the program in it a moment to repaint.
    func resize(_ pane: TmuxPane, columns: Int, rows: Int) throws {
        try pane.run(["resize-window", "-x", "\(columns)", "-y", "\(rows)"])
        usleep(600_000)
    }

    @Test(
        "less, as a control: resized while open and left at another size, it leaves the shell's screen as it was",
        arguments: leaveSizes)
    func lessRestores(columns: Int, rows: Int) throws {
        let (pane, before) = try shell()
        try pane.sendLiteral("less /etc/os-release")
        try pane.send(["Enter"])
        // The typed command line shows at once; less is open when the pane is on the alternate screen.
        var onAlternate = false
        for _ in 0..<100 where !onAlternate {
            usleep(50_000)
            onAlternate = try pane.modes().contains("alt=1")
        }
        let shown = try pane.text().joined(separator: "\n")
        #expect(onAlternate, "less is on the alternate screen:\n\(shown)")
        try resizeAround(pane)
        try resize(pane, columns: columns, rows: rows)
        try pane.send(["q"])
        let after = Self.content(try pane.waitFor(seconds: 10) { Self.content($0).last == "$" })
        #expect(after == before + ["$ less /etc/os-release", "$"], "the pane:\n\(after.joined(separator: "\n"))")
    }

    @Test(
        "a call resized and left with q y at another size leaves exactly the shell's screen; pasted, held keys count",
        arguments: leaveSizes)
    func callRestores(columns: Int, rows: Int) throws {
        let parley = try #require(parleyBinaryPath(), "the parley binary was not built")
        let log = NSTemporaryDirectory() + "parley-restore-\(getpid()).log"
        defer { try? FileManager.default.removeItem(atPath: log) }
        let (pane, before) = try shell("P=\(parley) L=\(log)")
        let command = "$P demo --bots 3 --chat-every 900 --toggle-video-every 900 --log $L"
        try pane.sendLiteral(command)
        try pane.send(["Enter"])
        let call = try pane.waitFor(seconds: 20) {
            $0.contains { $0.contains("4 people · connected") } && !$0.contains { $0.contains("waiting for video") }
        }
        #expect(call.contains { $0.contains("4 people · connected") }, "\(call.joined(separator: "\n"))")

        // A pasted line arrives as one burst of bytes; a held arrow key as a run of escape sequences.
        let pasted = "pasted: the quick brown fox jumps over the lazy dog 0123456789 ✓ end"
        try pane.send(["t"])
        try pane.sendLiteral(pasted)
        try pane.send(Array(repeating: "Left", count: 20) + ["X", "Enter"])
        var expected = pasted
        expected.insert("X", at: expected.index(expected.endIndex, offsetBy: -20))
        let chat = try pane.waitFor(seconds: 10) { $0.contains { $0.contains("you: " + expected) } }
        #expect(
            chat.contains { $0.contains("you: " + expected) }, "every key counted:\n\(chat.joined(separator: "\n"))")
        try pane.send(["Escape"])

        try resizeAround(pane)
        try pane.send(["q"])
        _ = try pane.waitFor(seconds: 10) { $0.contains { $0.contains("Leave the call?") } }
        try resize(pane, columns: 120, rows: 36)
        try resize(pane, columns: columns, rows: rows)
        try pane.send(["y"])
        let after = Self.content(try pane.waitFor(seconds: 15) { Self.content($0).last == "$" })
        let expectedScreen = before + ["$ " + command]
        #expect(
            Array(after.prefix(expectedScreen.count)) == expectedScreen, "the pane:\n\(after.joined(separator: "\n"))")
        #expect(after.count == expectedScreen.count + 2, "the pane:\n\(after.joined(separator: "\n"))")
        #expect(
            after.dropLast().last?.hasPrefix("You left demo after ") == true,
            "the pane:\n\(after.joined(separator: "\n"))")
        #expect(try pane.modes().contains("alt=0"))
        let size = try pane.run(["display", "-p", "#{pane_width}x#{pane_height}"])
        #expect(size.trimmingCharacters(in: .whitespacesAndNewlines) == "\(columns)x\(rows)", "left at this size")
    }
}

/// The log file of the terminal commands is capped: past 16 MiB it moves to NAME.1 and a new one starts.
@Suite struct LogFileCapTests {
    @Test("a full log file is rotated to .1 (replacing the old one) and logging goes on in a fresh file")
    func rotation() throws {
        let parley = try #require(parleyBinaryPath(), "the parley binary was not built")
        let folder = NSTemporaryDirectory() + "parley-logcap-\(getpid())"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let log = folder + "/parley.log"
        let full = Data(repeating: UInt8(ascii: "x"), count: 16 << 20)
        try full.write(to: URL(fileURLWithPath: log))
        try Data("an older rotation\n".utf8).write(to: URL(fileURLWithPath: log + ".1"))
        let pane = try TmuxPane(
            command: "sh -c 'HOME=\(folder) \(parley) demo --bots 0 --log \(log); sleep 60'",
            columns: 100, rows: 30)
        let call = try pane.waitFor(seconds: 20) { $0.contains { $0.contains("Leave") } }
        #expect(call.contains { $0.contains("Leave") }, "\(call.joined(separator: "\n"))")
        try pane.send(["q"])
        try pane.send(["y"])
        _ = try pane.waitFor(seconds: 10) { $0.contains { $0.contains("You left") } }
        let rotated = try FileManager.default.attributesOfItem(atPath: log + ".1")[.size] as? Int
        #expect(rotated == 16 << 20, "the full file became parley.log.1")
        let fresh = try String(contentsOfFile: log, encoding: .utf8)
        #expect(!fresh.isEmpty && fresh.utf8.count < 1 << 20, "a fresh log: \(fresh.utf8.count) bytes")
        #expect(fresh.contains("parley."), "it holds the call's lines:\n\(fresh.prefix(500))")
    }
}
