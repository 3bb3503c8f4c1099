import Foundation
import ParleyPictures

#if canImport(Glibc)
import Glibc
#endif

/// What the terminal said about its graphics when asked at start-up.
public struct TerminalGraphics: Hashable, Sendable {
    /// Device attributes (DA1) list 4: sixel graphics.
    public var sixel = false
    /// kitty's graphics query was answered OK.
    public var kitty = false
    /// kitty read a picture from POSIX shared memory (it runs on this machine).
    public var kittySharedMemory = false
    /// The size of a cell in pixels (`TIOCGWINSZ`, or the answer to CSI 16 t, or CSI 14 t over the cell count).
    public var cell: CellPixelSize?
    /// Sixel colour registers (XTSMGRAPHICS), when the terminal told.
    public var colorRegisters: Int?
    /// True when the terminal answered at all (DA1 came back).
    public var answered = false

    /// Nothing known.
    public init(
        sixel: Bool = false, kitty: Bool = false, kittySharedMemory: Bool = false,
        cell: CellPixelSize? = nil, colorRegisters: Int? = nil, answered: Bool = false
    ) {
        self.sixel = sixel
        self.kitty = kitty
        self.kittySharedMemory = kittySharedMemory
        self.cell = cell
        self.colorRegisters = colorRegisters
        self.answered = answered
    }

    /// The queries, DA1 last: every terminal answers DA1, so its answer ends the wait.
    ///
    /// kitty graphics query, XTSMGRAPHICS (colour registers), cell size (CSI 16 t), text area size in pixels
    /// (CSI 14 t), primary device attributes (CSI c).
    public static let queries: [UInt8] = KittyGraphics.query + Array("\u{1B}[?1;1;0S\u{1B}[16t\u{1B}[14t\u{1B}[c".utf8)

    /// Reads the answers in `bytes` (anything else is skipped). `columns`/`rows` turn a text-area size in pixels
    /// into a cell size when the terminal gave no cell size.
    public static func parse(_ bytes: [UInt8], columns: Int, rows: Int) -> TerminalGraphics {
        var result = TerminalGraphics()
        var areaPixels: (width: Int, height: Int)?
        var index = 0
        while index < bytes.count {
            guard bytes[index] == 0x1B, index + 1 < bytes.count else {
                index += 1
                continue
            }
            if bytes[index + 1] == 0x5F {  // APC: kitty's answer, ESC _ G i=31;OK ESC \
                var end = index + 2
                while end + 1 < bytes.count, !(bytes[end] == 0x1B && bytes[end + 1] == 0x5C) { end += 1 }
                let body = String(decoding: bytes[(index + 2)..<min(end, bytes.count)], as: UTF8.self)
                if body.hasPrefix("G"), body.hasSuffix(";OK") {
                    let keys = body.dropFirst().prefix { $0 != ";" }.split(separator: ",")
                    if keys.contains("i=\(KittyGraphics.queryID)") { result.kitty = true }
                    if keys.contains("i=\(KittyGraphics.sharedQueryID)") { result.kittySharedMemory = true }
                }
                index = end + 2
                continue
            }
            guard bytes[index + 1] == 0x5B else {  // CSI
                index += 1
                continue
            }
            var end = index + 2
            while end < bytes.count, !(0x40...0x7E).contains(bytes[end]) { end += 1 }
            guard end < bytes.count else { break }
            let final = bytes[end]
            let body = String(decoding: bytes[(index + 2)..<end], as: UTF8.self)
            let isPrivate = body.hasPrefix("?")
            let numbers = body.drop(while: { $0 == "?" }).split(separator: ";", omittingEmptySubsequences: false)
                .map { Int($0) ?? -1 }
            switch (final, isPrivate) {
            case (0x63, true):  // c: DA1
                result.answered = true
                result.sixel = numbers.dropFirst().contains(4)
            case (0x53, true):  // S: XTSMGRAPHICS, ? 1 ; 0 ; registers
                if numbers.count >= 3, numbers[0] == 1, numbers[1] == 0, numbers[2] > 0 {
                    result.colorRegisters = numbers[2]
                }
            case (0x74, false):  // t: 6;h;w cell, 4;h;w text area
                if numbers.count >= 3, numbers[1] > 0, numbers[2] > 0 {
                    if numbers[0] == 6 {
                        result.cell = CellPixelSize(width: numbers[2], height: numbers[1])
                    } else if numbers[0] == 4 {
                        areaPixels = (numbers[2], numbers[1])
                    }
                }
            default:
                break
            }
            index = end + 1
        }
        if result.cell == nil, let area = areaPixels, columns > 0, rows > 0, area.width >= columns,
            area.height >= rows
        {
            result.cell = CellPixelSize(width: area.width / columns, height: area.height / rows)
        }
        return result
    }

    /// Asks the terminal on `input`/`output` (a terminal, before curses starts) and waits up to `timeout` seconds
    /// for the answers: raw mode for the wait, the terminal's modes back after. Keys typed meanwhile are lost.
    /// The DA1 answer ends the wait, so the timeout is paid only by a terminal that answers nothing: 2 s, because a
    /// kitty that has just started on a busy machine answered after 0.5 s, and was taken for one without pictures.
    public static func ask(
        input: Int32 = STDIN_FILENO, output: Int32 = STDOUT_FILENO,
        timeout: Double = 2
    ) -> TerminalGraphics {
        var saved = termios()
        guard isatty(input) != 0, isatty(output) != 0, tcgetattr(input, &saved) == 0 else { return TerminalGraphics() }
        var raw = saved
        raw.c_lflag &= ~tcflag_t(ICANON | ECHO)
        withUnsafeMutableBytes(of: &raw.c_cc) { cc in
            cc[Int(VMIN)] = 0
            cc[Int(VTIME)] = 0
        }
        tcsetattr(input, TCSANOW, &raw)
        defer { tcsetattr(input, TCSANOW, &saved) }
        // A 1x1 picture in shared memory: a kitty on this machine reads (and unlinks) it and says OK.
        let shared = "/parley-\(getpid())-query"
        var sharedQuery: [UInt8] = []
        if (try? SharedPictures.write([0, 0, 0], to: shared)) != nil {
            sharedQuery = KittyGraphics.sharedQuery(name: shared)
        }
        defer { shm_unlink(shared) }
        let asked = sharedQuery + queries
        asked.withUnsafeBytes { _ = write(output, $0.baseAddress, $0.count) }
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1024)
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline, answer.count < 16384 {
            var poller = pollfd(fd: input, events: Int16(POLLIN), revents: 0)
            let wait = Int32(max(1, deadline.timeIntervalSinceNow * 1000))
            guard poll(&poller, 1, wait) > 0 else { continue }
            let count = read(input, &buffer, buffer.count)
            guard count > 0 else { break }
            answer += buffer[0..<count]
            if parse(answer, columns: 0, rows: 0).answered { break }
        }
        var size = winsize()
        let known = ioctl(output, UInt(TIOCGWINSZ), &size) == 0
        var result = parse(answer, columns: known ? Int(size.ws_col) : 0, rows: known ? Int(size.ws_row) : 0)
        if known, size.ws_xpixel > 0, size.ws_ypixel > 0, size.ws_col > 0, size.ws_row > 0 {
            // The kernel's figure wins: it follows font changes without asking again.
            result.cell = CellPixelSize(
                width: Int(size.ws_xpixel) / Int(size.ws_col),
                height: Int(size.ws_ypixel) / Int(size.ws_row))
        }
        return result
    }

    /// The cell size in pixels the kernel reports for `output` now (after a resize or a font change), if any.
    public static func kernelCellSize(output: Int32 = STDOUT_FILENO) -> CellPixelSize? {
        var size = winsize()
        guard ioctl(output, UInt(TIOCGWINSZ), &size) == 0, size.ws_xpixel > 0, size.ws_ypixel > 0, size.ws_col > 0,
            size.ws_row > 0
        else { return nil }
        return CellPixelSize(
            width: Int(size.ws_xpixel) / Int(size.ws_col),
            height: Int(size.ws_ypixel) / Int(size.ws_row))
    }
}
