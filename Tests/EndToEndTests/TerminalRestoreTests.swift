import Foundation
import ParleyProcesses
import ParleyTestLanes
import Testing

/// The shell's screen after a call is the one before it, however the window was resized during the call and whatever
/// size it has when the call is left; and keys that arrive in a burst all count.
@Suite(.serialized, .lane(.processes))
struct TerminalRestoreTests {
    /// The sizes a pane that started at 100x30 is left at: larger and smaller. Leaving the alternate screen at another
    /// size, tmux first rewraps what is left on it to the size the shell's screen was saved at; lines wider than that
    /// spill over and come back on the shell's screen, above its own lines.
    static let leaveSizes = [(columns: 140, rows: 45), (columns: 80, rows: 24)]

    /// A shell in a pane, with a few lines of its own on the screen.
    /// `variables` are set in the shell (short names keep command lines on one row).
    func shell(_ variables: String = "") async throws -> (pane: TmuxPane, before: [String]) {
        let pane = try TmuxPane(
            command: "env -u NO_COLOR \(variables) PS1='$ ' bash --norc --noprofile", columns: 100, rows: 30)
        try pane.sendLiteral("printf 'before %s\\n' one two three")
        try pane.send(["Enter"])
        // Until the next prompt is there too: a look between the last line and the prompt would take the last line
        // for the prompt.
        let lines = try await pane.text("the shell's lines and its next prompt", within: .seconds(10)) {
            $0.contains("before three") && Self.content($0).last == "$"
        }
        // The last row is the prompt, which the next command line is typed on.
        return (pane, Array(Self.content(lines).dropLast()))
    }

    /// The pane's rows up to the last non-empty one.
    static func content(_ lines: [String]) -> [String] {
        Array(lines.prefix((lines.lastIndex { !$0.trimmingCharacters(in: .whitespaces).isEmpty } ?? -1) + 1))
    }

    /// What a program in the pane shows once it has repainted at a size: told the pane's rows at that size and the
    /// number of columns.
    typealias Repainted = @Sendable (_ rows: [String], _ columns: Int) -> Bool

    /// Resizes the window through a few sizes and back to 100x30, waiting at each for the program to repaint.
    func resizeAround(_ pane: TmuxPane, repainted: Repainted) async throws {
        for (columns, rows) in [(130, 40), (70, 20), (90, 35), (100, 30)] {
            try await resize(pane, columns: columns, rows: rows, repainted: repainted)
        }
    }

    /// Resizes the window and waits until the program in it has repainted at the new size.
    func resize(_ pane: TmuxPane, columns: Int, rows: Int, repainted: Repainted) async throws {
        try pane.run(["resize-window", "-x", "\(columns)", "-y", "\(rows)"])
        try await pane.text("a repaint at \(columns)x\(rows)", within: .seconds(10)) { lines in
            lines.count >= rows && repainted(Array(lines.prefix(rows)), columns)
        }
    }

    /// less has repainted: its first line is the file's first line (tmux, shrinking the pane, drops rows from the
    /// top while the cursor is on the last), and its prompt is on the last row (growing, tmux adds empty rows).
    static func lessRepainted(showing firstLine: String) -> Repainted {
        { rows, _ in
            let last = rows.last?.trimmingCharacters(in: .whitespaces) ?? ""
            return !rows[0].isEmpty && firstLine.hasPrefix(rows[0]) && !last.isEmpty && last != "~"
        }
    }

    /// A call has repainted: its header ends with the help hint one cell from the right edge (a header cut by a
    /// narrower pane, or left short in a wider one, does not; as in DemoCallTests.followsResizes), or, below 80x24,
    /// it says the terminal's new size is too small.
    static let callRepainted: Repainted = { rows, columns in
        (rows[0].hasSuffix("? help") && rows[0].count == columns - 1)
            || rows.contains { $0.contains("this terminal is \(columns)x\(rows.count)") }
    }

    @Test(
        "less, as a control: resized while open and left at another size, it leaves the shell's screen as it was",
        arguments: leaveSizes)
    func lessRestores(columns: Int, rows: Int) async throws {
        let (pane, before) = try await shell()
        try pane.sendLiteral("less /etc/os-release")
        try pane.send(["Enter"])
        // The typed command line shows at once; less is open when the pane is on the alternate screen.
        try await poll("less on the alternate screen", timeout: .seconds(5), every: .milliseconds(50)) {
            try pane.modes()
        } until: {
            $0.contains("alt=1")
        }
        // Its first page drawn, so it is past its start-up and follows resizes (a resize during its start-up goes
        // unseen: it never repaints).
        try await pane.text("less showing the file", within: .seconds(5)) { $0.contains { $0.contains("(END)") } }
        let firstLine = try #require(
            try String(contentsOfFile: "/etc/os-release", encoding: .utf8).split(separator: "\n").first.map(String.init)
        )
        let repainted = Self.lessRepainted(showing: firstLine)
        try await resizeAround(pane, repainted: repainted)
        try await resize(pane, columns: columns, rows: rows, repainted: repainted)
        try pane.send(["q"])
        let after = Self.content(
            try await pane.text("the shell's prompt after less", within: .seconds(10)) { Self.content($0).last == "$" })
        #expect(after == before + ["$ less /etc/os-release", "$"], "the pane:\n\(after.joined(separator: "\n"))")
    }

    @Test(
        "a call resized and left with q y at another size leaves exactly the shell's screen; pasted, held keys count",
        arguments: leaveSizes)
    func callRestores(columns: Int, rows: Int) async throws {
        let parley = try #require(parleyBinaryPath(), "the parley binary was not built")
        let log = NSTemporaryDirectory() + "parley-restore-\(getpid()).log"
        defer { try? FileManager.default.removeItem(atPath: log) }
        let (pane, before) = try await shell("P=\(parley) L=\(log)")
        let command = "$P demo --bots 3 --chat-every 900 --toggle-video-every 900 --log $L"
        try pane.sendLiteral(command)
        try pane.send(["Enter"])
        try await pane.text("the call with four people, every video shown", within: .seconds(20)) {
            $0.contains { $0.contains("4 people · connected") } && !$0.contains { $0.contains("waiting for video") }
        }

        // A pasted line arrives as one burst of bytes; a held arrow key as a run of escape sequences.
        let pasted = "pasted: the quick brown fox jumps over the lazy dog 0123456789 ✓ end"
        try pane.send(["t"])
        try pane.sendLiteral(pasted)
        try pane.send(Array(repeating: "Left", count: 20) + ["X", "Enter"])
        var expected = pasted
        expected.insert("X", at: expected.index(expected.endIndex, offsetBy: -20))
        try await pane.text("every key counted in the chat line", within: .seconds(10)) {
            $0.contains { $0.contains("you: " + expected) }
        }
        try pane.send(["Escape"])

        try await resizeAround(pane, repainted: Self.callRepainted)
        try pane.send(["q"])
        try await pane.text("the leave question", within: .seconds(10)) {
            $0.contains { $0.contains("Leave the call?") }
        }
        let asking: Repainted = { rows, columns in
            Self.callRepainted(rows, columns) && rows.contains { $0.contains("Leave the call?") }
        }
        try await resize(pane, columns: 120, rows: 36, repainted: asking)
        try await resize(pane, columns: columns, rows: rows, repainted: asking)
        try pane.send(["y"])
        let after = Self.content(
            try await pane.text("the shell's prompt after the call", within: .seconds(15)) {
                Self.content($0).last == "$"
            })
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
    func rotation() async throws {
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
        try await pane.text("the call's Leave key", within: .seconds(20)) { $0.contains { $0.contains("Leave") } }
        try pane.send(["q"])
        try pane.send(["y"])
        try await pane.text("the call left", within: .seconds(10)) { $0.contains { $0.contains("You left") } }
        let rotated = try FileManager.default.attributesOfItem(atPath: log + ".1")[.size] as? Int
        #expect(rotated == 16 << 20, "the full file became parley.log.1")
        let fresh = try String(contentsOfFile: log, encoding: .utf8)
        #expect(!fresh.isEmpty && fresh.utf8.count < 1 << 20, "a fresh log: \(fresh.utf8.count) bytes")
        #expect(fresh.contains("parley."), "it holds the call's lines:\n\(fresh.prefix(500))")
    }
}
