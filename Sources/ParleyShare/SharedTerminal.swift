import CVTermShim
import Foundation
import ParleyWire
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The sharer's side of `parley share`, at the edge: the shared program runs in a pseudo-terminal inside the
/// person's own terminal, as under `script` or `asciinema rec`. What they type goes to the program, what it writes
/// goes to their terminal unchanged and into a terminal emulator, whose screen is published (at most 30 times a
/// second) for the call. A controller's typing, when the sharer allows it, goes to the program too. Runs on a
/// thread of its own until the program ends; only `stop` is called from elsewhere (it is atomic).
public final class SharedTerminal: @unchecked Sendable {
    /// How long between two screens published at most (the share's 30 updates a second).
    static let publishInterval = 1.0 / ShareSession.maxUpdatesPerSecond
    /// The size used when the output is not a terminal (tests, a pipe).
    public static let fallbackSize = (rows: 24, columns: 80)

    private let program: PseudoTerminalProgram
    private let emulator: TerminalEmulator
    private let input: Int32
    private let output: Int32
    private let outputIsTerminal: Bool
    private var savedModes: termios?
    private let stopped = Atomic<Bool>(false)
    private let outputCount = Atomic<Int>(0)

    /// Bytes the program wrote so far: what a share sending the raw output (as tmate does) would send.
    public var outputBytes: Int { outputCount.load(ordering: .relaxed) }

    /// Starts `command` in a pseudo-terminal the size of `output`'s terminal. Input is read raw from `input`
    /// (restored when the share ends).
    public init(command: [String], environment: [String: String], input: Int32 = 0, output: Int32 = 1) throws {
        self.input = input
        self.output = output
        let size = Self.size(of: output)
        outputIsTerminal = size != nil
        let (rows, columns) = size ?? Self.fallbackSize
        emulator = try TerminalEmulator(rows: rows, columns: columns)
        program = try PseudoTerminalProgram(command: command, rows: rows, columns: columns, environment: environment)
        if isatty(input) == 1 {
            var modes = termios()
            if tcgetattr(input, &modes) == 0 {
                savedModes = modes
                var raw = modes
                cfmakeraw(&raw)
                tcsetattr(input, TCSANOW, &raw)
            }
        }
    }

    deinit { restoreInput() }

    /// The size of the terminal on `descriptor`, nil when it is not one.
    static func size(of descriptor: Int32) -> (rows: Int, columns: Int)? {
        var rows: Int32 = 0
        var columns: Int32 = 0
        guard parley_terminal_get_size(descriptor, &rows, &columns) == 0, rows > 0, columns > 0 else { return nil }
        return (min(Int(rows), ShareUpdate.maxRows), min(Int(columns), ShareUpdate.maxColumns))
    }

    /// The shared program's process.
    public var pid: pid_t { program.pid }

    /// Ends the share from another thread (a signal): the program is hung up.
    public func stop() { stopped.store(true, ordering: .releasing) }

    /// Runs until the program ends (or `stop`): returns its exit status. `publish` gets each new screen;
    /// `controllerInput` is asked for typing to pass on.
    public func run(
        publish: (TerminalScreen) -> Void, controllerInput: () -> [UInt8] = { [] }, controller: () -> String? = { nil }
    ) -> Int32 {
        var shownController: String?
        var lastPublished = -Double.infinity
        var dirty = true
        var inputOpen = true
        var lastSizeCheck = 0.0
        let clock = ContinuousClock()
        let start = clock.now
        func seconds() -> Double {
            let elapsed = clock.now - start
            return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        }
        while !stopped.load(ordering: .acquiring) {
            let now = seconds()
            if dirty, now - lastPublished >= Self.publishInterval {
                publish(emulator.screen())
                lastPublished = now
                dirty = false
            }
            if now - lastSizeCheck >= 0.25 {
                lastSizeCheck = now
                if outputIsTerminal, let size = Self.size(of: output),
                    size.rows != emulator.rows || size.columns != emulator.columns
                {
                    try? program.resize(rows: size.rows, columns: size.columns)
                    try? emulator.resize(rows: size.rows, columns: size.columns)
                    dirty = true
                }
            }
            let typed = controllerInput()
            if !typed.isEmpty { program.write(typed) }
            // Who may type shows in the sharer's own terminal's title: never in the shared screen.
            let typing = controller()
            if typing != shownController, outputIsTerminal {
                shownController = typing
                writeOutput(Array(Self.title(typing.map { "parley share: \($0) can type here" } ?? "").utf8))
            }
            var descriptors = [pollfd(fd: program.primary, events: Int16(POLLIN), revents: 0)]
            if inputOpen { descriptors.append(pollfd(fd: input, events: Int16(POLLIN), revents: 0)) }
            // While someone may type, their keys are looked for every 10 ms.
            let idle: Int32 = shownController == nil ? 50 : 10
            let wait = dirty ? min(idle, max(1, Int32(((lastPublished + Self.publishInterval) - now) * 1_000))) : idle
            _ = poll(&descriptors, nfds_t(descriptors.count), wait)
            if inputOpen, descriptors.count > 1, descriptors[1].revents != 0 {
                var buffer = [UInt8](repeating: 0, count: 4_096)
                let count = buffer.withUnsafeMutableBytes { Glibc.read(input, $0.baseAddress, $0.count) }
                if count > 0 {
                    program.write(Array(buffer[..<count]))
                } else if count == 0 || (errno != EAGAIN && errno != EINTR) {
                    inputOpen = false
                }
            }
            guard let out = program.read() else { break }
            if !out.isEmpty {
                outputCount.add(out.count, ordering: .relaxed)
                writeOutput(out)
                emulator.write(out)
                // A real terminal behind the share answers the program's questions itself; without one, the
                // emulator does.
                let replies = emulator.takeReplies()
                if !outputIsTerminal, !replies.isEmpty { program.write(replies) }
                dirty = true
            }
        }
        publish(emulator.screen())
        if shownController != nil { writeOutput(Array(Self.title("").utf8)) }
        restoreInput()
        return waitForExit()
    }

    /// The escape sequence setting a terminal's title (OSC 2), `text` without control characters.
    static func title(_ text: String) -> String {
        "\u{1B}]2;" + String(text.unicodeScalars.filter { $0.value >= 0x20 && $0.value != 0x7F }.map(Character.init))
            + "\u{07}"
    }

    private func writeOutput(_ bytes: [UInt8]) {
        var written = 0
        while written < bytes.count {
            let count = bytes[written...].withUnsafeBytes { Glibc.write(output, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR || errno == EAGAIN { continue }
            if count <= 0 { return }
            written += count
        }
    }

    private func restoreInput() {
        guard var modes = savedModes else { return }
        tcsetattr(input, TCSANOW, &modes)
        savedModes = nil
    }

    /// The program's exit status, waiting up to a second for it (its terminal closed, so it is on its way out);
    /// 129 (hung up) when it is still there.
    private func waitForExit() -> Int32 {
        var pause = timespec(tv_sec: 0, tv_nsec: 10_000_000)
        for _ in 0..<100 {
            if let status = program.exited() { return status }
            if stopped.load(ordering: .acquiring) { break }
            nanosleep(&pause, nil)
        }
        return 128 + SIGHUP
    }
}
