import CCursesShim
import CNcursesw
import ParleyRoom

/// Turns what curses reads (`wget_wch` characters and key codes, `getmouse` events) into `Key`s.
/// Pure functions, so tests run without a terminal; `Terminal.readKey` is the only caller at run time.
public enum KeyDecoder {
    /// The key for a character `wget_wch` returned with status OK (nil for characters that mean nothing).
    public static func key(character value: UInt32) -> Key? {
        switch value {
        case 10, 13: return .enter
        case 9: return .tab
        case 8, 127: return .backspace
        case 27: return .escape
        case 1...26: return .control(Character(Unicode.Scalar(UInt8(value) + 96)))
        // Ctrl-]: gives the keys back to the call while typing in a shared terminal.
        case 29: return .control("]")
        case 0, 28, 30, 31, 0x80..<0xA0: return nil
        default:
            guard let scalar = Unicode.Scalar(value) else { return nil }
            return .char(Character(scalar))
        }
    }

    /// The key for a function key code `wget_wch` returned with status KEY_CODE_YES (nil for unmapped codes and
    /// for KEY_MOUSE, which needs `key(mouseState:column:row:)`).
    public static func key(keyCode code: Int32) -> Key? {
        switch code {
        case KEY_UP: return .up
        case KEY_DOWN: return .down
        case KEY_LEFT: return .left
        case KEY_RIGHT: return .right
        case KEY_HOME: return .home
        case KEY_END: return .end
        case KEY_NPAGE: return .pageDown
        case KEY_PPAGE: return .pageUp
        case KEY_BACKSPACE: return .backspace
        case KEY_DC: return .delete
        case KEY_ENTER: return .enter
        case KEY_RESIZE: return .resize
        case (KEY_F0 + 1)...(KEY_F0 + 12): return .function(Int(code - KEY_F0))
        default: return nil
        }
    }

    /// The key for a mouse event: a left click or double click at a cell; nil for other buttons and motion.
    public static func key(mouseState state: mmask_t, column: Int, row: Int) -> Key? {
        if state & parley_curses_button1_double_clicked() != 0 { return .mouseDoubleClick(column: column, row: row) }
        if state & parley_curses_button1_clicked() != 0 { return .mouseClick(column: column, row: row) }
        return nil
    }

    /// The mouse events Parley asks curses to report.
    public static var mouseEvents: mmask_t {
        parley_curses_button1_clicked() | parley_curses_button1_double_clicked()
    }
}
