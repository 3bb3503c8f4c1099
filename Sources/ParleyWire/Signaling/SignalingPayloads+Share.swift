// Typing in a shared terminal (issue 52): the sharer gives it to one member (`/control bob`), the terminal says who
// has it, and that member's keys go to the terminal alone. The relay routes these to the terminal's connection with
// the sender's id stamped on; the terminal, not the relay, decides what counts (only its sharer grants, only the
// member granted types).

/// The sharer gives typing in their terminal to one member, or takes it back.
public struct ControlGrant: Codable, Sendable, Equatable {
    /// The shared terminal's member id.
    public var terminal: UInt32
    /// The member who may type from now on; 0 for nobody.
    public var to: UInt32
    /// Who sent it: set by the relay on the way to the terminal.
    public var from: UInt32?

    public init(terminal: UInt32, to: UInt32, from: UInt32? = nil) {
        self.terminal = terminal
        self.to = to
        self.from = from
    }
}

/// Keys a member typed for a shared terminal: the bytes a terminal would send (base64), or in an end-to-end
/// encrypted room that text sealed as a chat line is.
public struct TerminalTyping: Codable, Sendable, Equatable {
    /// The shared terminal's member id.
    public var terminal: UInt32
    /// The bytes, base64; empty when sealed.
    public var keys: String
    /// The base64 text sealed with the room's keys (end-to-end encrypted rooms).
    public var sealed: String?
    /// Who typed: set by the relay on the way to the terminal.
    public var from: UInt32?

    /// The most bytes one message carries (a paste goes in several).
    public static let maxKeyBytes = 256
    /// Room for those bytes in base64, and sealed.
    static let maxKeysCharacters = (maxKeyBytes + 2) / 3 * 4
    static let maxSealedCharacters = 1_024

    public init(terminal: UInt32, keys: String, sealed: String? = nil, from: UInt32? = nil) {
        self.terminal = terminal
        self.keys = keys
        self.sealed = sealed
        self.from = from
    }
}

extension TerminalTyping: ValidatedPayload {
    func validated() throws(SignalingError) -> TerminalTyping {
        guard keys.count <= Self.maxKeysCharacters else {
            throw SignalingError(
                .badField,
                "typing \"keys\" has \(keys.count) characters; the limit is \(Self.maxKeysCharacters) "
                    + "(\(Self.maxKeyBytes) bytes)")
        }
        if let sealed, sealed.count > Self.maxSealedCharacters || !keys.isEmpty {
            throw SignalingError(
                .badField,
                "typing \"sealed\" has \(sealed.count) characters (limit \(Self.maxSealedCharacters)) and no \"keys\"")
        }
        return self
    }
}

/// Who may type in a shared terminal now: said by the terminal, told by the relay to the whole room.
public struct ControllerChange: Codable, Sendable, Equatable {
    /// The member who may type; 0 for nobody.
    public var controller: UInt32
    /// The terminal it is about: set by the relay.
    public var terminal: UInt32?

    public init(controller: UInt32, terminal: UInt32? = nil) {
        self.controller = controller
        self.terminal = terminal
    }
}
