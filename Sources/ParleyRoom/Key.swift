/// A key press or mouse action as the room sees it, independent of the terminal library that read it.
public enum Key: Sendable, Hashable {
    /// A printable character (letters, digits, punctuation, space, any Unicode scalar typed).
    case char(Character)
    /// Enter / Return.
    case enter
    /// Esc.
    case escape
    /// Backspace (deletes before the cursor).
    case backspace
    /// Delete (deletes under the cursor).
    case delete
    /// Tab.
    case tab
    /// Arrow keys.
    case up, down, left, right
    /// Home and End.
    case home, end
    /// Page Up and Page Down.
    case pageUp, pageDown
    /// F1…F12.
    case function(Int)
    /// Control plus a letter, e.g. `.control("c")`.
    case control(Character)
    /// A mouse click at a cell (column, row), 0-based from the top-left of the screen.
    case mouseClick(column: Int, row: Int)
    /// A mouse double-click at a cell (column, row).
    case mouseDoubleClick(column: Int, row: Int)
    /// The terminal changed size.
    case resize
}
