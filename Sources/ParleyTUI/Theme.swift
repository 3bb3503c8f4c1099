import ParleyPictures

/// What a piece of the screen is, so that colours are chosen in one place (`Theme`) and nowhere else.
public enum ColorRole: CaseIterable, Hashable, Sendable {
    /// Ordinary text.
    case text
    /// The top bar: room name, participant count, call time.
    case header
    /// A video tile's border.
    case tileBorder
    /// The border of the tile of whoever is speaking.
    case tileBorderSpeaking
    /// The border of the focused (selected) tile.
    case tileBorderFocused
    /// The border of the dominant speaker's tile (whoever holds the floor, not just anyone making a sound).
    case tileBorderDominant
    /// Behind an empty tile (camera off, waiting for video).
    case tileBackground
    /// A participant's name on their tile.
    case tileName
    /// Status marks on a tile (muted, camera off, poor connection).
    case tileStatus
    /// Placeholder text: "camera off", "waiting for video", empty lists.
    case placeholder
    /// A chat message from someone else.
    case chatText
    /// A chat message the user sent.
    case chatOwn
    /// Join/leave notices and other messages from Parley itself.
    case chatSystem
    /// A message that needs attention: the user's name mentioned, an error.
    case chatAlert
    /// Message times.
    case chatTimestamp
    /// The line the user types into.
    case chatInput
    /// The control bar's background.
    case controlBar
    /// The key of a control bar command ("m", "v", "q").
    case controlBarKey
    /// A control that is on (microphone live, camera on).
    case controlBarActive
    /// A control that is off or unavailable.
    case controlBarInactive
    /// The highlighted row in a list (lobby rooms, settings).
    case selection
    /// Warnings (reconnecting, packet loss).
    case statusWarning
    /// Errors (connection lost, device failed).
    case statusError
    /// Overlays over the call: help, settings, dialogs.
    case overlay
}

/// Maps roles to terminal colours for one colour depth. The only place in Parley that picks colours.
///
/// Every role has a 256-colour look, a look made of the 8 ANSI colours (used for 8 and 16 colours) and attributes
/// for monochrome/NO_COLOR, where roles that must stand out (speaking, alerts, keys) use bold or reverse.
public struct Theme: Hashable, Sendable {
    /// The depth colours are chosen for.
    public let depth: ColorDepth

    /// Styles from a theme file, used instead of the built-in ones on 256-colour and direct-colour terminals.
    public let overrides: [ColorRole: CellStyle]

    /// A theme for a terminal's colour depth, with a theme file's styles (`parseOverrides`) where given.
    public init(depth: ColorDepth, overrides: [ColorRole: CellStyle] = [:]) {
        self.depth = depth
        self.overrides = overrides
    }

    /// The style of a role.
    public func style(_ role: ColorRole) -> CellStyle {
        let look = Theme.look(role)
        switch depth {
        case .palette256, .direct: return overrides[role] ?? look.rich
        case .ansi8, .ansi16: return look.basic
        case .monochrome: return CellStyle(attributes: look.mono)
        }
    }

    /// The colour of participant number `index` (their order of joining): distinct neighbours, repeating after
    /// the palette runs out. `.default` in monochrome.
    public func participantColor(_ index: Int) -> TerminalColor {
        let palette: [UInt8]
        switch depth {
        case .palette256, .direct: palette = Theme.participants256
        case .ansi16: palette = Theme.participants16
        case .ansi8: palette = Theme.participants8
        case .monochrome: return .default
        }
        let position = ((index % palette.count) + palette.count) % palette.count
        return .palette(palette[position])
    }

    /// A participant's name style: their colour, bold.
    public func participantStyle(_ index: Int) -> CellStyle {
        CellStyle(foreground: participantColor(index), attributes: .bold)
    }

    /// Participant name colours on the 256 palette: hues far apart that read on dark and light backgrounds.
    static let participants256: [UInt8] = [39, 208, 114, 170, 220, 81, 203, 141, 150, 216, 75, 179]
    /// Participant colours with bright system colours.
    static let participants16: [UInt8] = [9, 10, 11, 12, 13, 14, 1, 2, 3, 5, 6]
    /// Participant colours with the 8 ANSI colours (no black or white: they vanish on one background or the other).
    static let participants8: [UInt8] = [1, 2, 3, 4, 5, 6]

    struct Look {
        var rich: CellStyle
        var basic: CellStyle
        var mono: CellAttributes
    }

    static func look(_ role: ColorRole) -> Look {
        func s(_ fg: UInt8?, _ bg: UInt8? = nil, _ attributes: CellAttributes = []) -> CellStyle {
            CellStyle(
                foreground: fg.map { .palette($0) } ?? .default,
                background: bg.map { .palette($0) } ?? .default, attributes: attributes)
        }
        switch role {
        case .text: return Look(rich: .plain, basic: .plain, mono: [])
        case .header: return Look(rich: s(231, 24, .bold), basic: s(7, 4, .bold), mono: [.reverse, .bold])
        case .tileBorder: return Look(rich: s(240), basic: s(nil, nil, .dim), mono: [])
        case .tileBorderSpeaking: return Look(rich: s(46, nil, .bold), basic: s(2, nil, .bold), mono: .bold)
        case .tileBorderFocused: return Look(rich: s(214, nil, .bold), basic: s(3, nil, .bold), mono: .reverse)
        case .tileBorderDominant:
            return Look(rich: s(51, nil, .bold), basic: s(6, nil, .bold), mono: [.bold, .underline])
        case .tileBackground: return Look(rich: s(nil, 234), basic: .plain, mono: [])
        case .tileName: return Look(rich: s(255, nil, .bold), basic: s(7, nil, .bold), mono: .bold)
        case .tileStatus: return Look(rich: s(203), basic: s(1), mono: .bold)
        case .placeholder: return Look(rich: s(245), basic: s(nil, nil, .dim), mono: .dim)
        case .chatText: return Look(rich: .plain, basic: .plain, mono: [])
        case .chatOwn: return Look(rich: s(117), basic: s(6), mono: [])
        case .chatSystem: return Look(rich: s(244), basic: s(nil, nil, .dim), mono: .dim)
        case .chatAlert: return Look(rich: s(231, 124, .bold), basic: s(7, 1, .bold), mono: [.reverse, .bold])
        case .chatTimestamp: return Look(rich: s(242), basic: s(nil, nil, .dim), mono: .dim)
        case .chatInput: return Look(rich: s(nil, 236), basic: s(nil, nil, .underline), mono: .underline)
        case .controlBar: return Look(rich: s(252, 236), basic: s(7, 4), mono: .reverse)
        case .controlBarKey: return Look(rich: s(16, 250, .bold), basic: s(0, 7, .bold), mono: [.bold])
        case .controlBarActive: return Look(rich: s(46, 236, .bold), basic: s(2, 4, .bold), mono: [.reverse, .bold])
        case .controlBarInactive: return Look(rich: s(244, 236), basic: s(0, 4), mono: [.reverse, .dim])
        case .selection: return Look(rich: s(16, 117), basic: s(0, 6), mono: .reverse)
        case .statusWarning: return Look(rich: s(220, nil, .bold), basic: s(3, nil, .bold), mono: .bold)
        case .statusError: return Look(rich: s(196, nil, .bold), basic: s(1, nil, .bold), mono: [.bold, .underline])
        case .overlay: return Look(rich: s(252, 237), basic: s(7, 4), mono: [])
        }
    }
}
