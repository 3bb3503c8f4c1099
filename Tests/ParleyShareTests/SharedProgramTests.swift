import Foundation
import ParleyWire
import Testing

@testable import ParleyShare

/// A real program in a pseudo-terminal of its own, read through the emulator; and the sharer's updates with a
/// manual clock.
@Suite("Shared program")
struct SharedProgramTests {
    static let environment = ["PATH": "/usr/bin:/bin", "TERM": "xterm-256color", "LANG": "C.UTF-8"]

    /// Feeds everything `program` writes to `emulator` until its terminal closes (at most 10 s, awaited in steps).
    func readToEnd(_ program: PseudoTerminalProgram, into emulator: TerminalEmulator) async throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            guard let output = program.read() else { return }
            if output.isEmpty {
                try await Task.sleep(for: .milliseconds(10))
            } else {
                emulator.write(output)
            }
        }
        Issue.record("the program's terminal was still open after 10 s")
    }

    @Test func aProgramSeesATerminalOfTheSharedSizeAndItsOutputIsRead() async throws {
        let program = try PseudoTerminalProgram(
            command: ["/bin/sh", "-c", #"printf '\033[1;31mred\033[0m '; tty; stty size"#], rows: 24, columns: 80,
            environment: Self.environment)
        let emulator = try TerminalEmulator(rows: 24, columns: 80)
        try await readToEnd(program, into: emulator)
        let screen = emulator.screen()
        #expect(screen.text(ofRow: 0).hasPrefix("red /dev/pts/"), "\(screen.text(ofRow: 0))")
        #expect(screen[0, 0] == ShareCell("r", style: ShareStyle(foreground: .indexed(1), attributes: [.bold])))
        #expect(screen.text(ofRow: 1).hasPrefix("24 80 "), "\(screen.text(ofRow: 1))")
        #expect(program.exited() == 0)
    }

    @Test func whatIsTypedReachesTheProgram() async throws {
        let program = try PseudoTerminalProgram(
            command: ["/bin/sh", "-c", #"read line; echo "got $line""#], rows: 5, columns: 20,
            environment: Self.environment)
        #expect(program.write(Array("hello\r".utf8)) == 6)
        let emulator = try TerminalEmulator(rows: 5, columns: 20)
        try await readToEnd(program, into: emulator)
        let rows = (0..<5).map { emulator.screen().text(ofRow: $0) }
        #expect(rows.contains { $0.hasPrefix("got hello") }, "\(rows)")
    }

    @Test func aResizeReachesTheProgram() async throws {
        let program = try PseudoTerminalProgram(
            command: ["/bin/sh", "-c", "sleep 0.3; stty size"], rows: 24, columns: 80, environment: Self.environment)
        try program.resize(rows: 30, columns: 100)
        let emulator = try TerminalEmulator(rows: 30, columns: 100)
        try await readToEnd(program, into: emulator)
        #expect(emulator.screen().text(ofRow: 0).hasPrefix("30 100 "))
    }

    @Test func theExitStatusAndAProgramThatCannotStart() async throws {
        let program = try PseudoTerminalProgram(
            command: ["/bin/sh", "-c", "exit 3"], rows: 5, columns: 20, environment: Self.environment)
        try await readToEnd(program, into: try TerminalEmulator(rows: 5, columns: 20))
        var status = program.exited()
        for _ in 0..<100 where status == nil {
            try await Task.sleep(for: .milliseconds(10))
            status = program.exited()
        }
        #expect(status == 3)
        let error = #expect(throws: PseudoTerminalError.self) {
            try PseudoTerminalProgram(command: ["/nonexistent/shell"], rows: 5, columns: 20, environment: [:])
        }
        #expect(error?.description == "cannot start /nonexistent/shell: No such file or directory")
    }

    @Test func aProgramThatIgnoresTheHangupIsStillEndedWithItsTerminal() throws {
        var program: PseudoTerminalProgram? = try PseudoTerminalProgram(
            command: ["/bin/sh", "-c", "trap '' HUP; exec sleep 30"], rows: 5, columns: 20,
            environment: Self.environment)
        let pid = try #require(program?.pid)
        let started = ContinuousClock.now
        program = nil
        // Not waited for (it would sleep 30 s), and reaped: no such process any more.
        #expect(ContinuousClock.now - started < .seconds(10))
        #expect(kill(pid, 0) == -1 && errno == ESRCH)
    }

    @Test func updatesAreNumberedAtMostThirtyASecondAndFullWhenAsked() throws {
        var session = ShareSession()
        var screen = TerminalScreen(rows: 2, columns: 4)
        let first = session.update(for: screen, at: 0)
        #expect(first?.kind == .fullScreen && first?.sequence == 1)
        let unchanged = session.update(for: screen, at: 100)
        #expect(unchanged == nil, "nothing changed")
        screen[0, 0] = ShareCell("a")
        let changed = session.update(for: screen, at: 110)
        #expect(changed != nil)
        screen[0, 1] = ShareCell("b")
        let tooSoon = session.update(for: screen, at: 120)
        #expect(tooSoon == nil, "10 ms after the last: waits")
        let later = session.update(for: screen, at: 144)
        #expect(later?.kind == .changes && later?.sequence == 3 && later?.base == 2)
        session.requestFullScreen()
        let asked = session.update(for: screen, at: 200)
        let full = try #require(asked)
        #expect(full.kind == .fullScreen && full.sequence == 4)
        #expect(try full.apply(to: nil, heldSequence: nil) == screen)
    }
}
