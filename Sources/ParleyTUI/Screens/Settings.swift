import ParleyEngine
import ParleyRoom

/// What a key press on the settings screen asks the shell to do.
public enum SettingsAction: Hashable, Sendable {
    /// Use this profile and go back to the lobby.
    case confirm(VideoProfile)
    /// Go back to the lobby without changing anything.
    case cancel
    /// Quit Parley (Ctrl-C).
    case quit
}

/// The settings screen: the video profiles, the one in use marked, one highlighted for choosing.
public struct SettingsState: Hashable, Sendable {
    /// The profiles offered, smallest first.
    public let profiles: [VideoProfile]
    /// The profile in use when the screen opened.
    public let current: VideoProfile
    /// The highlighted row.
    public private(set) var highlighted: Int

    /// The screen opened with `current` in use and highlighted (or the first profile when it is not listed).
    public init(current: VideoProfile, profiles: [VideoProfile] = VideoProfile.all) {
        self.profiles = profiles.isEmpty ? [current] : profiles
        self.current = current
        highlighted = self.profiles.firstIndex(of: current) ?? 0
    }

    /// The highlighted profile.
    public var highlightedProfile: VideoProfile { profiles[highlighted] }

    mutating func highlight(_ index: Int) {
        highlighted = min(max(0, index), profiles.count - 1)
    }
}

/// Applies a key to the settings screen: Up/Down (k/j) move, Home/End or PgUp/PgDn jump to the ends, a digit
/// picks that row, Enter or Space confirms, Esc or q cancels, Ctrl-C quits.
public func reduce(_ settings: inout SettingsState, _ key: Key) -> SettingsAction? {
    switch key {
    case .control(let letter) where letter == "c" || letter == "C": return .quit
    case .up, .char("k"): settings.highlight(settings.highlighted - 1)
    case .down, .char("j"): settings.highlight(settings.highlighted + 1)
    case .home, .pageUp: settings.highlight(0)
    case .end, .pageDown: settings.highlight(settings.profiles.count - 1)
    case .char(let digit) where digit.isASCII && digit.isWholeNumber:
        let row = digit.wholeNumberValue! - 1
        if row >= 0, row < settings.profiles.count { settings.highlight(row) }
    case .enter, .char(" "): return .confirm(settings.highlightedProfile)
    case .escape, .char("q"): return .cancel
    default: break
    }
    return nil
}

/// Draws the settings screen: a table of profiles (resolution, frame rate, bitrate) in a centred box.
public enum SettingsScreen {
    static func box(profileCount: Int, size: TerminalSize) -> ScreenRect {
        let width = min(60, size.columns - 4)
        let height = profileCount + 7
        return ScreenRect(
            column: (size.columns - width) / 2, row: max(0, (size.rows - height - 1) / 2), width: width,
            height: height)
    }

    /// A mouse click (`double`: a double-click) at a cell: a click on a profile highlights it, a double-click
    /// confirms it. Clicks elsewhere do nothing.
    public static func click(
        _ settings: inout SettingsState, column: Int, row: Int, double: Bool, size: TerminalSize
    ) -> SettingsAction? {
        let minimum = RoomScreenLayout.minimumSize
        guard size.columns >= minimum.columns, size.rows >= minimum.rows else { return nil }
        let box = box(profileCount: settings.profiles.count, size: size)
        let index = row - (box.row + 3)
        guard column > box.column, column < box.endColumn - 1, index >= 0, index < settings.profiles.count else {
            return nil
        }
        settings.highlight(index)
        return double ? .confirm(settings.highlightedProfile) : nil
    }

    /// Renders the settings for a terminal size (below 80x24, a message asking for a larger terminal).
    public static func render(_ settings: SettingsState, size: TerminalSize, theme: Theme) -> Screen {
        let minimum = RoomScreenLayout.minimumSize
        guard size.columns >= minimum.columns, size.rows >= minimum.rows else {
            return TooSmallMessage.render(size: size, minimum: minimum, theme: theme)
        }
        var screen = Screen(width: size.columns, height: size.rows)
        let box = box(profileCount: settings.profiles.count, size: size)
        screen.drawBox(
            box, style: theme.style(.tileBorder), lines: .rounded, title: "Video profile",
            titleStyle: theme.style(.tileName))
        let left = box.column + 2
        let columns = [left + 2, left + 16, left + 30]
        let heading = theme.style(.tileName)
        for (column, title) in zip(columns, ["Resolution", "Frame rate", "Bitrate"]) {
            screen.write(title, column: column, row: box.row + 2, style: heading)
        }
        for (index, profile) in settings.profiles.enumerated() {
            let row = box.row + 3 + index
            let highlighted = index == settings.highlighted
            let style = theme.style(highlighted ? .selection : .text)
            let line = ScreenRect(column: left, row: row, width: box.width - 4, height: 1)
            if highlighted {
                screen.fill(line, style: style)
                screen.write(">", column: left, row: row, style: style)
            }
            let cells = [profile.name, "\(profile.fps) fps", "\(profile.bitrateKbps) kbit/s"]
            for (column, text) in zip(columns, cells) {
                screen.write(text, column: column, row: row, style: style, clip: line)
            }
            if profile == settings.current {
                screen.write(
                    "(in use)", column: left + 44, row: row,
                    style: style.overlaid(
                        with: highlighted
                            ? CellStyle() : theme.style(.placeholder)), clip: line)
            }
        }
        screen.writeCentered(
            "Sent at this size; others see it scaled to their tiles.", row: box.endRow - 3, in: box.inset(by: 1),
            style: theme.style(.placeholder))
        screen.writeCentered(
            "Up/Down choose · Enter confirm · Esc cancel", row: min(screen.height - 1, box.endRow), in: screen.bounds,
            style: theme.style(.chatSystem))
        return screen
    }
}
