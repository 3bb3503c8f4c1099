import ParleyMedia
import ParleyPictures
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

/// The devices a call uses, as chosen on the settings screen: nil names mean the system's default device (for the
/// camera: every camera found).
public struct DeviceSettings: Hashable, Sendable {
    /// Microphones found, by the names `--mic` accepts.
    public var microphones: [String]
    /// Speakers found.
    public var speakers: [String]
    /// Cameras found.
    public var cameras: [String]
    /// The chosen microphone; nil: the default.
    public var microphone: String?
    /// The chosen speaker; nil: the default.
    public var speaker: String?
    /// The chosen camera; nil: every camera (and the synthetic picture after them).
    public var camera: String?
    /// Echo cancellation and noise suppression.
    public var echoCancellation: Bool

    /// Devices found and chosen.
    public init(
        microphones: [String] = [], speakers: [String] = [], cameras: [String] = [],
        microphone: String? = nil, speaker: String? = nil, camera: String? = nil,
        echoCancellation: Bool = true
    ) {
        self.microphones = microphones
        self.speakers = speakers
        self.cameras = cameras
        self.microphone = microphone
        self.speaker = speaker
        self.camera = camera
        self.echoCancellation = echoCancellation
    }

    /// The rows of the devices panel, top to bottom.
    public enum Row: Int, CaseIterable, Hashable, Sendable {
        case microphone, speaker, camera, echoCancellation
    }

    /// What a row shows: its label and the value chosen.
    public func text(_ row: Row) -> (label: String, value: String) {
        switch row {
        case .microphone: ("Microphone", microphone ?? (microphones.isEmpty ? "none found" : "System default"))
        case .speaker: ("Speaker", speaker ?? (speakers.isEmpty ? "none found" : "System default"))
        case .camera: ("Camera", camera ?? (cameras.isEmpty ? "none found" : "Every camera"))
        case .echoCancellation: ("Echo cancellation", echoCancellation ? "on (and noise suppression)" : "off")
        }
    }

    /// Moves a row's value to the next (`step` 1) or previous (-1) choice: the default, then each device in turn.
    mutating func cycle(_ row: Row, by step: Int) {
        func next(_ current: String?, in names: [String]) -> String? {
            let choices: [String?] = [nil] + names.map { Optional($0) }
            let index = choices.firstIndex(of: current) ?? 0
            return choices[((index + step) % choices.count + choices.count) % choices.count]
        }
        switch row {
        case .microphone: microphone = next(microphone, in: microphones)
        case .speaker: speaker = next(speaker, in: speakers)
        case .camera: camera = next(camera, in: cameras)
        case .echoCancellation: echoCancellation.toggle()
        }
    }
}

/// The settings screen: the video profiles, the one in use marked, one highlighted for choosing; below them the
/// devices (microphone, speaker, camera, echo cancellation), reached with Tab.
public struct SettingsState: Hashable, Sendable {
    /// The profiles offered, smallest first.
    public let profiles: [VideoProfile]
    /// The profile in use when the screen opened.
    public let current: VideoProfile
    /// The highlighted row.
    public private(set) var highlighted: Int
    /// The devices found and chosen.
    public internal(set) var devices: DeviceSettings
    /// The devices as the screen opened.
    public let openedWith: DeviceSettings
    /// True when a device choice was changed (only then do they replace the command line's sources).
    public var devicesChanged: Bool { devices != openedWith }
    /// The highlighted devices row while the devices panel has the focus (Tab); nil while the profiles have it.
    public internal(set) var deviceRow: DeviceSettings.Row?
    /// How this terminal draws video and why (shown under the profiles); nil shows nothing.
    public var picture: PictureChoice?

    /// The screen opened with `current` in use and highlighted (or the first profile when it is not listed).
    public init(
        current: VideoProfile, profiles: [VideoProfile] = VideoProfile.all,
        devices: DeviceSettings = DeviceSettings()
    ) {
        self.profiles = profiles.isEmpty ? [current] : profiles
        self.current = current
        self.devices = devices
        openedWith = devices
        highlighted = self.profiles.firstIndex(of: current) ?? 0
    }

    /// The highlighted profile.
    public var highlightedProfile: VideoProfile { profiles[highlighted] }

    mutating func highlight(_ index: Int) {
        highlighted = min(max(0, index), profiles.count - 1)
    }
}

/// Applies a key to the settings screen: Up/Down (k/j) move, Home/End or PgUp/PgDn jump to the ends, a digit
/// picks that row, Enter or Space confirms, Esc or q cancels, Ctrl-C quits. Tab moves between the profiles and the
/// devices; there Up/Down choose a row, Left/Right (h/l) or Space change its value, Enter confirms.
public func reduce(_ settings: inout SettingsState, _ key: Key) -> SettingsAction? {
    if key == .tab {
        settings.deviceRow = settings.deviceRow == nil ? .microphone : nil
        return nil
    }
    if let row = settings.deviceRow {
        let rows = DeviceSettings.Row.allCases
        switch key {
        case .control(let letter) where letter == "c" || letter == "C": return .quit
        case .up, .char("k"): settings.deviceRow = rows[max(0, row.rawValue - 1)]
        case .down, .char("j"): settings.deviceRow = rows[min(rows.count - 1, row.rawValue + 1)]
        case .left, .char("h"): settings.devices.cycle(row, by: -1)
        case .right, .char("l"), .char(" "): settings.devices.cycle(row, by: 1)
        case .enter: return .confirm(settings.highlightedProfile)
        case .escape, .char("q"): return .cancel
        default: break
        }
        return nil
    }
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
    /// Rows of the devices panel, borders included.
    static let devicesHeight = DeviceSettings.Row.allCases.count + 2

    static func box(profileCount: Int, size: TerminalSize, picture: PictureChoice? = nil) -> CellRect {
        let width = min(60, size.columns - 4)
        let height = profileCount + 7 + pictureLines(picture, width: width).count
        return CellRect(
            x: (size.columns - width) / 2, y: max(0, (size.rows - height - devicesHeight - 1) / 2),
            width: width, height: height)
    }

    /// The picture mode and, wrapped to the box, why `auto` chose it: never cut off (it is the one place that says).
    static func pictureLines(_ picture: PictureChoice?, width: Int) -> [String] {
        guard let picture else { return [] }
        let inner = max(10, width - 4)
        return ["Picture: \(picture.label) (--picture changes it)"]
            + DisplayWidth.wrap(picture.reason, width: inner).prefix(3)
    }

    static func devicesBox(below box: CellRect) -> CellRect {
        CellRect(x: box.x, y: box.maxY, width: box.width, height: devicesHeight)
    }

    /// A mouse click (`double`: a double-click) at a cell: a click on a profile highlights it, a double-click
    /// confirms it. Clicks elsewhere do nothing.
    public static func click(
        _ settings: inout SettingsState, column: Int, row: Int, double: Bool, size: TerminalSize
    ) -> SettingsAction? {
        let minimum = RoomScreenLayout.minimumSize
        guard size.columns >= minimum.columns, size.rows >= minimum.rows else { return nil }
        let box = box(profileCount: settings.profiles.count, size: size, picture: settings.picture)
        let index = row - (box.y + 3)
        guard column > box.x, column < box.maxX - 1, index >= 0, index < settings.profiles.count else {
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
        let box = box(profileCount: settings.profiles.count, size: size, picture: settings.picture)
        screen.drawBox(
            box, style: theme.style(.tileBorder), lines: .rounded, title: "Video profile",
            titleStyle: theme.style(.tileName))
        let left = box.x + 2
        let columns = [left + 2, left + 16, left + 30]
        let heading = theme.style(.tileName)
        for (column, title) in zip(columns, ["Resolution", "Frame rate", "Bitrate"]) {
            screen.write(title, column: column, row: box.y + 2, style: heading)
        }
        for (index, profile) in settings.profiles.enumerated() {
            let row = box.y + 3 + index
            let highlighted = index == settings.highlighted
            let style = theme.style(highlighted ? .selection : .text)
            let line = CellRect(x: left, y: row, width: box.width - 4, height: 1)
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
        let pictureLines = Self.pictureLines(settings.picture, width: box.width)
        let noteRow = box.maxY - 3 - pictureLines.count
        screen.writeCentered(
            "Sent at this size; others see it scaled to their tiles.", row: noteRow, in: box.inset(by: 1),
            style: theme.style(.placeholder))
        for (offset, text) in pictureLines.enumerated() {
            let line = CellRect(x: left, y: noteRow + 2 + offset, width: box.width - 4, height: 1)
            screen.write(
                text, column: left, row: line.y, style: theme.style(offset == 0 ? .text : .placeholder), clip: line)
        }
        let devicesBox = devicesBox(below: box)
        drawDevices(settings, into: &screen, in: devicesBox, theme: theme)
        let hint =
            settings.deviceRow == nil
            ? "Up/Down choose · Tab devices · Enter confirm · Esc cancel"
            : "Up/Down row · Left/Right change · Tab profiles · Enter confirm"
        screen.writeCentered(
            hint, row: min(screen.height - 1, devicesBox.maxY), in: screen.bounds, style: theme.style(.chatSystem))
        return screen
    }

    /// The devices panel: one row each for microphone, speaker, camera and echo cancellation, the focused one
    /// highlighted with its value between arrows.
    static func drawDevices(_ settings: SettingsState, into screen: inout Screen, in box: CellRect, theme: Theme) {
        screen.drawBox(
            box, style: theme.style(.tileBorder), lines: .rounded, title: "Devices",
            titleStyle: theme.style(.tileName))
        let left = box.x + 2
        for (offset, row) in DeviceSettings.Row.allCases.enumerated() {
            let line = CellRect(x: left, y: box.y + 1 + offset, width: box.width - 4, height: 1)
            let focused = settings.deviceRow == row
            let style = theme.style(focused ? .selection : .text)
            if focused {
                screen.fill(line, style: style)
                screen.write(">", column: left, row: line.y, style: style)
            }
            let (label, value) = settings.devices.text(row)
            screen.write(label, column: left + 2, row: line.y, style: style, clip: line)
            screen.write(
                focused ? "< \(value) >" : value, column: left + 21, row: line.y, style: style, clip: line)
        }
    }
}
