import Foundation
import ParleyMedia
import ParleyProcesses
import ParleyTestLanes
import ParleyTestSupport
import Testing

@testable import ParleyPictures
@testable import ParleyTUI

/// The terminals tried for real: xterm in sixel mode (`xterm -ti vt340`) and kitty (its graphics protocol, drawn
/// with Mesa's software OpenGL), each on a virtual X screen.
enum RealTerminal: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case xterm
    case kitty

    var testDescription: String { self == .xterm ? "xterm -ti vt340 (sixel)" : "kitty (graphics protocol)" }
    /// What `auto` should choose there.
    var protocolName: String { self == .xterm ? "sixel" : "kitty" }
    var path: String { "/usr/bin/\(rawValue)" }

    /// The command line that opens an 80x24 window at the screen's top left with no border or padding and runs
    /// `command` (TMUX, COLORTERM and NO_COLOR unset, `environment` set).
    func arguments(_ command: [String], environment: [String: String]) -> [String] {
        let run =
            ["/usr/bin/env", "-u", "TMUX", "-u", "COLORTERM", "-u", "NO_COLOR"]
            + environment.sorted(by: { $0.key < $1.key }).map { "\($0.key)=\($0.value)" } + command
        switch self {
        case .xterm:
            return [
                "-ti", "vt340", "-tn", "xterm-256color", "-b", "0", "-bw", "0", "-geometry", "80x24+0+0",
                "-xrm", "XTerm*numColorRegisters: 256", "-e",
            ] + run
        case .kitty:
            return [
                "--config=NONE", "-o", "remember_window_size=no", "-o", "initial_window_width=80c",
                "-o", "initial_window_height=24c", "-o", "placement_strategy=top-left",
                "-o", "window_padding_width=0", "-o", "enable_audio_bell=no",
            ] + run
        }
    }
}

/// A virtual X screen (Xvfb) with one real terminal on it running the probe: the screen is read back with xwd
/// and compared with the picture the probe sends.
final class XtermScreen {
    let display: String
    private var server: Process?
    private var terminal: Process?
    private var kind = RealTerminal.xterm
    let directory: URL

    /// The tools this needs, all from Debian packages `make test` installs.
    static let tools = [
        "Xvfb": "/usr/bin/Xvfb", "xwd": "/usr/bin/xwd",
        "xwdtopnm": "/usr/bin/xwdtopnm", "xdotool": "/usr/bin/xdotool",
    ]

    init() async throws {
        for (name, path) in Self.tools where !FileManager.default.isExecutableFile(atPath: path) {
            throw Missing(tool: name)
        }
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("parley-xterm-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        // A display number nothing else uses: the first free one from 70 + pid.
        var number = 70 + Int(getpid() % 100)
        while FileManager.default.fileExists(atPath: "/tmp/.X11-unix/X\(number)") { number += 1 }
        display = ":\(number)"
        let server = Process()
        server.executableURL = URL(fileURLWithPath: Self.tools["Xvfb"]!)
        server.arguments = [display, "-screen", "0", "800x600x24", "-nolisten", "tcp"]
        server.standardOutput = FileHandle.nullDevice
        server.standardError = FileHandle.nullDevice
        try server.run()
        self.server = server
        try await Self.wait("Xvfb on \(display)") {
            FileManager.default.fileExists(atPath: "/tmp/.X11-unix/X\(number)")
        }
    }

    struct Missing: Error, CustomStringConvertible {
        var tool: String
        var description: String {
            "\(tool) is missing: make test installs xterm, kitty, xvfb, x11-apps, netpbm, xdotool"
        }
    }

    /// Looks at `condition` every 50 ms (suspended in between) until it holds; `WaitTimeout` after `seconds`.
    static func wait(_ what: String, seconds: Double = 10, _ condition: () throws -> Bool) async throws {
        try await waitUntil(what, timeout: .seconds(seconds), every: .milliseconds(50), condition)
    }

    /// Starts `kind` (80x24 at the screen's top left) running `command` with `environment`.
    func start(_ kind: RealTerminal, _ command: [String], environment: [String: String]) throws {
        guard FileManager.default.isExecutableFile(atPath: kind.path) else { throw Missing(tool: kind.rawValue) }
        self.kind = kind
        let process = Process()
        process.executableURL = URL(fileURLWithPath: kind.path)
        process.arguments = kind.arguments(command, environment: environment)
        var processEnvironment = ProcessInfo.processInfo.environment
        processEnvironment["DISPLAY"] = display
        // No GPU here: Mesa draws kitty's OpenGL in software.
        processEnvironment["LIBGL_ALWAYS_SOFTWARE"] = "1"
        process.environment = processEnvironment
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        terminal = process
    }

    /// Types `key` into the terminal's window.
    func press(_ key: String) throws {
        try run(Self.tools["xdotool"]!, ["search", "--class", kind.rawValue, "windowfocus", "--sync", "key", key])
    }

    /// The whole screen as RGB.
    func screenshot() throws -> PixelRaster {
        let xwd = try run(Self.tools["xwd"]!, ["-root", "-silent"])
        let file = directory.appendingPathComponent("screen.xwd")
        try xwd.write(to: file)
        return try PPM.read(try run(Self.tools["xwdtopnm"]!, [file.path]))
    }

    @discardableResult
    func run(_ tool: String, _ arguments: [String]) throws -> Data {
        try runTool(tool, arguments, display: display)
    }

    /// Where pictures of a failed comparison are kept.
    static let kept = FileManager.default.temporaryDirectory.appendingPathComponent("parley-xterm-failures").path

    /// Keeps what the screen showed and what was expected, as PPM files in `kept`, for a failure message.
    func keep(_ shown: PixelRaster, _ expected: PixelRaster, as name: String) {
        try? FileManager.default.createDirectory(atPath: Self.kept, withIntermediateDirectories: true)
        for (raster, suffix) in [(shown, "shown"), (expected, "expected")] {
            let header = Array("P6\n\(raster.width) \(raster.height)\n255\n".utf8)
            try? Data(header + raster.rgb).write(to: URL(fileURLWithPath: "\(Self.kept)/\(name)-\(suffix).ppm"))
        }
    }

    /// True once xterm has exited.
    var terminalExited: Bool { !(terminal?.isRunning ?? false) }

    deinit {
        for process in [terminal, server].compactMap({ $0 }) where process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            // Reaps it: a killed process ends at once (deinit cannot suspend).
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: directory)
    }
}

/// Why a tool run by a test failed.
struct ToolFailed: Error, CustomStringConvertible {
    var command: String
    var status: Int32
    var description: String { "\(command) exited with \(status)" }
}

/// Runs `tool` (on X display `display` when given) and returns its standard output as bytes; a non-zero exit is
/// an error naming the command.
@discardableResult
func runTool(_ tool: String, _ arguments: [String], display: String? = nil) throws -> Data {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: tool)
    process.arguments = arguments
    var environment = ProcessInfo.processInfo.environment
    if let display { environment["DISPLAY"] = display }
    process.environment = environment
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = FileHandle.nullDevice
    try process.run()
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else {
        throw ToolFailed(command: ([tool] + arguments).joined(separator: " "), status: process.terminationStatus)
    }
    return data
}

extension PixelRaster {
    /// The `width`×`height` pixels from (`x`, `y`).
    func crop(x: Int, y: Int, width: Int, height: Int) -> PixelRaster {
        var rgb: [UInt8] = []
        rgb.reserveCapacity(width * height * 3)
        for row in y..<(y + height) {
            let start = (row * self.width + x) * 3
            rgb += self.rgb[start..<(start + width * 3)]
        }
        return PixelRaster(width: width, height: height, rgb: rgb)
    }
}

@Suite("Real terminals on a virtual X screen", .serialized, .lane(.processes))
struct RealTerminalTests {
    /// The picture the probe's tile (20x5 cells from row 1) should show, at the terminal's cell size.
    static func expected(cell: CellPixelSize) -> PixelRaster {
        let canvas = PixelCanvas(kind: .sixel, cell: cell)
        let frame = ProbePicture.gradient(width: 96, height: 64)
        let area = canvas.pictureArea(frameWidth: frame.width, frameHeight: frame.height, columns: 20, rows: 5)
        var scaler = PixelScaler()
        return scaler.raster(
            of: frame, width: 20 * cell.width, height: 5 * cell.height, area: area,
            background: PixelTile.RGB(r: 0, g: 0, b: 0))
    }

    @Test(
        "auto picks the terminal's pixel protocol; the picture on screen is the frame; a box over it takes it away and it comes back",
        arguments: RealTerminal.allCases)
    func picturesOnScreen(_ kind: RealTerminal) async throws {
        let xterm = try await XtermScreen()
        let probe = try #require(probePath(), "parley-tui-probe was not built next to the tests")
        let status = xterm.directory.appendingPathComponent("status").path
        try xterm.start(kind, [probe], environment: ["PARLEY_PROBE_PICTURE": "auto", "PARLEY_PROBE_STATUS": status])
        try await XtermScreen.wait("the probe's status", seconds: 30) { FileManager.default.fileExists(atPath: status) }
        let parts = try String(contentsOfFile: status, encoding: .utf8).split(separator: "|")
        #expect(parts.first?.hasPrefix("\(kind.protocolName) ") == true, "auto chose \(parts)")
        if kind == .kitty {
            // kitty runs on this machine: pictures go through shared memory, not the terminal's byte stream.
            #expect(parts.last?.contains("shared memory") == true, "\(parts)")
        }
        let size = try #require(parts.dropFirst().first?.split(separator: "x").compactMap { Int($0) })
        // No cell size (a terminal taken for one without pixel graphics): the expectations above said why.
        try #require(size.count == 2, "no cell size in \(parts)")
        let cell = CellPixelSize(width: size[0], height: size[1])
        #expect(cell.width >= 4 && cell.height >= 8)
        let expected = Self.expected(cell: cell)
        func tile() throws -> PixelRaster {
            try xterm.screenshot().crop(x: 0, y: cell.height, width: expected.width, height: expected.height)
        }
        // The picture arrives after the first draw: wait until the tile matches, or report how close it came.
        var best = 0.0
        try? await XtermScreen.wait("the picture", seconds: 5) {
            best = max(best, (try? psnr(tile(), expected)) ?? 0)
            return best > 28
        }
        print("\(kind.rawValue): the picture on screen is \(String(format: "%.1f", best)) dB from the frame sent")
        if best <= 28 { xterm.keep(try tile(), expected, as: "\(kind.rawValue)-picture") }
        #expect(best > 28, "the tile on screen is \(best) dB from the frame sent (pictures in \(XtermScreen.kept))")

        try xterm.press("o")
        var covered = 99.0
        try? await XtermScreen.wait("the picture to go", seconds: 5) {
            covered = (try? psnr(tile(), expected)) ?? 99
            return covered < 12
        }
        #expect(covered < 12, "with a box over the tile the picture is still there (\(covered) dB)")

        try xterm.press("o")
        var back = 0.0
        try? await XtermScreen.wait("the picture to come back", seconds: 5) {
            back = (try? psnr(tile(), expected)) ?? 0
            return back > 28
        }
        #expect(back > 28, "after the box closed the tile is \(back) dB from the frame")

        // xdotool may report an error when the window it typed into has already closed.
        try? xterm.press("q")
        try await XtermScreen.wait("\(kind.rawValue) to close after q") { xterm.terminalExited }
    }
}
