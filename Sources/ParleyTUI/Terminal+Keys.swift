import CCursesShim
import CNcursesw
import Foundation
import ParleyRoom

#if canImport(Glibc)
import Glibc
#endif

/// Key input: keys, mouse clicks and resizes, read through curses.
extension Terminal {
    /// Waits up to `milliseconds` (nil: forever, 0: just look) for a key or mouse click.
    ///
    /// Returns nil when nothing arrived in time or the input means nothing to Parley (other mouse buttons,
    /// unmapped keys). A resize returns `.resize`; the next `draw` repaints everything. With a `wake`, the wait
    /// also ends (returning nil unless a key came too) as soon as the wake is signalled.
    public func readKey(timeout milliseconds: Int? = nil, wake: LoopWake? = nil) -> Key? {
        guard isOpen, let milliseconds = waitForInput(timeout: milliseconds, wake: wake) else { return nil }
        wtimeout(window, Int32(clamping: milliseconds ?? -1))
        var value: wint_t = 0
        let status = wget_wch(window, &value)
        switch status {
        case KEY_CODE_YES:
            let code = Int32(bitPattern: value)
            if code == KEY_MOUSE {
                var event = MEVENT()
                guard getmouse(&event) == OK else { return nil }
                return KeyDecoder.key(mouseState: event.bstate, column: Int(event.x), row: Int(event.y))
            }
            if code == KEY_RESIZE { resized() }
            return KeyDecoder.key(keyCode: code)
        case OK:
            return KeyDecoder.key(character: UInt32(value))
        default:
            return nil
        }
    }

    /// Waits for input without curses when it must not be the one waiting; returns how long curses may still wait
    /// (nil: forever), or nil when the wait ended with no input.
    ///
    /// With a `wake`: poll stdin and the wake, then let curses look without waiting (it still reads the key, and
    /// notices a resize signalled meanwhile). While a picture burst is being written: curses repaints before it
    /// reads when the window changed (after a resize), and its bytes must not land inside the burst, so wait for
    /// input first, then for the burst.
    private func waitForInput(timeout milliseconds: Int?, wake: LoopWake?) -> Int?? {
        if let wake, milliseconds != 0 {
            var waits = [
                pollfd(fd: STDIN_FILENO, events: Int16(POLLIN), revents: 0),
                pollfd(fd: wake.descriptor, events: Int16(POLLIN), revents: 0),
            ]
            _ = poll(&waits, 2, Int32(clamping: milliseconds ?? -1))
            if waits[1].revents != 0 { wake.drain() }
            writer.wait()
            return .some(0)
        }
        guard writer.isBusy else { return .some(milliseconds) }
        let start = DispatchTime.now().uptimeNanoseconds
        var input = pollfd(fd: STDIN_FILENO, events: Int16(POLLIN), revents: 0)
        let ready = poll(&input, 1, Int32(clamping: milliseconds ?? -1))
        writer.wait()
        if ready == 0 { return nil }
        guard let limit = milliseconds else { return .some(nil) }
        let waited = Int((DispatchTime.now().uptimeNanoseconds - start) / 1_000_000)
        return .some(max(0, limit - waited))
    }

    /// After a resize: the next draw repaints everything, tmux is asked about its client again, and the pixel
    /// modes measure the cell again (a font change or a re-attach from another terminal changes its pixels).
    private func resized() {
        previous = nil
        tmuxWatch?.askNow()
        guard pixelWriter != nil else { return }
        pixelWriter!.forget()
        if let cell = TerminalGraphics.kernelCellSize(), cell != pixelWriter!.canvas.cell {
            pixelWriter!.canvas.cell = cell
            pictureChoice.pixels?.cell = cell
        }
    }
}
