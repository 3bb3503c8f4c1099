/// Why a room or display name was rejected; `description` is the message shown to the user.
public enum NameError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The room name is empty, or only spaces.
    case emptyRoomName
    /// The room name had characters, none of which a room name may hold (`日本`).
    case roomNameHasNoLegalCharacter(typed: String)
    /// The display name is empty.
    case emptyDisplayName
    /// The display name has more characters than ``DisplayName/maximumLength``.
    case displayNameTooLong(length: Int)
    /// The display name contains a space (or other blank); `suggestion` replaces blanks with underscores.
    case displayNameHasSpace(name: String, suggestion: String)
    /// The display name contains a control character, which would garble the terminal.
    case displayNameHasControlCharacter(scalar: UInt32)

    /// The message for the user.
    public var description: String {
        switch self {
        case .emptyRoomName:
            return "Room name is empty: use letters, digits, spaces or \(RoomName.punctuation)"
                + " (at most \(RoomName.maximumBytes) bytes), e.g. standup."
        case .roomNameHasNoLegalCharacter(let typed):
            return "Room name \"\(typed)\" has no character a room name keeps: only ASCII letters and digits, "
                + "spaces and \(RoomName.punctuation) are kept, e.g. standup."
        case .emptyDisplayName:
            return "Name is empty: pick a name such as alice."
        case .displayNameTooLong(let length):
            return "Name is \(length) characters long: the limit is \(DisplayName.maximumLength)."
        case .displayNameHasSpace(let name, let suggestion):
            return "Name \"\(name)\" contains a space: use \(suggestion) instead."
        case .displayNameHasControlCharacter(let scalar):
            return "Name contains the control character \(hexScalar(scalar)): use printable characters only."
        }
    }
}

private func hexScalar(_ value: UInt32) -> String {
    let hex = String(value, radix: 16, uppercase: true)
    return "U+" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
}

/// Room names: cleaned as typed to the legal set (ASCII letters, digits, space and fixed punctuation), 64 bytes.
public enum RoomName {
    /// The punctuation a room name may contain besides letters, digits and space.
    public static let punctuation = "!#$%&()+,-:;<=.>?@[]^_`{|}~"
    /// The longest room name in bytes (every legal character is one byte).
    public static let maximumBytes = 64

    /// True when `character` may appear in a room name.
    public static func isLegal(_ character: Character) -> Bool {
        guard character.isASCII, let scalar = character.unicodeScalars.first else { return false }
        switch scalar.value {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A, 0x20: return true
        default: return punctuation.unicodeScalars.contains(scalar)
        }
    }

    /// Drops illegal characters and cuts the result to ``maximumBytes``; call it on every edit of the field.
    public static func clean(_ text: String) -> String {
        String(text.filter(isLegal).prefix(maximumBytes))
    }

    /// The cleaned name with outer spaces trimmed, or ``NameError/emptyRoomName`` when nothing is left.
    public static func validate(_ text: String) throws(NameError) -> String {
        let cleaned = clean(text)
        let trimmed = cleaned.drop { $0 == " " }.reversed().drop { $0 == " " }.reversed()
        guard !trimmed.isEmpty else {
            // What was typed, said back without anything that would act on a terminal (controls are dropped).
            let printable = String(
                String.UnicodeScalarView(text.unicodeScalars.filter { $0.properties.generalCategory != .control }))
            let typed = printable.drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed()
            if typed.isEmpty { throw .emptyRoomName }
            throw .roomNameHasNoLegalCharacter(typed: String(typed.prefix(maximumBytes)))
        }
        return String(trimmed)
    }
}

/// Account/display names: non-empty, at most 128 characters, no spaces, no control characters.
public enum DisplayName {
    /// The longest display name in characters.
    public static let maximumLength = 128

    /// Returns `name` unchanged when legal; otherwise throws the first rule it breaks.
    public static func validate(_ name: String) throws(NameError) -> String {
        guard !name.isEmpty else { throw .emptyDisplayName }
        guard name.count <= maximumLength else { throw .displayNameTooLong(length: name.count) }
        if name.contains(where: \.isWhitespace) {
            let suggestion = String(name.map { $0.isWhitespace ? "_" : $0 })
            throw .displayNameHasSpace(name: name, suggestion: suggestion)
        }
        if let control = name.unicodeScalars.first(where: { $0.properties.generalCategory == .control }) {
            throw .displayNameHasControlCharacter(scalar: control.value)
        }
        return name
    }
}
