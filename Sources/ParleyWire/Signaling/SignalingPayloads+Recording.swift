// Recording a call: a member tells the room it records (everyone's header shows who), and the host may forbid it.

/// A member starts (true) or stops (false) recording the call (client → relay, `recording`).
public struct RecordingChange: Codable, Sendable, Equatable {
    /// Whether the member now records.
    public var recording: Bool

    /// A recording change.
    public init(recording: Bool) { self.recording = recording }
}

/// Who records the call (relay → every member, `recording`; the member itself included).
public struct RecordingNotice: Codable, Sendable, Equatable, ValidatedPayload {
    /// The member.
    public var id: UInt32
    /// Its name as the room shows it.
    public var name: String
    /// Whether it now records.
    public var recording: Bool
    /// True in an end-to-end encrypted room: the file is that member's decrypted view (nil otherwise).
    public var encrypted: Bool?

    /// A recording notice.
    public init(id: UInt32, name: String, recording: Bool, encrypted: Bool? = nil) {
        self.id = id
        self.name = name
        self.recording = recording
        self.encrypted = encrypted
    }

    func validated() throws(SignalingError) -> RecordingNotice {
        guard id != 0 else { throw SignalingError(.badField, "recording field \"id\" must be a member id, not 0") }
        guard !name.isEmpty, name.count <= 160 else {
            throw SignalingError(.badField, "recording field \"name\" must have 1 to 160 characters, not \(name.count)")
        }
        return self
    }
}

/// Whether members may record the room: the host sets it (client → relay), the relay announces it to everyone
/// with who set it (`recording-policy`).
public struct RecordingPolicy: Codable, Sendable, Equatable, ValidatedPayload {
    /// Whether recording is allowed.
    public var allowed: Bool
    /// Who decided (the host's name, or "the relay" for the rooms file); only in the relay's announcement.
    public var by: String?

    /// A recording policy.
    public init(allowed: Bool, by: String? = nil) {
        self.allowed = allowed
        self.by = by
    }

    func validated() throws(SignalingError) -> RecordingPolicy {
        if let by, by.isEmpty || by.count > 160 {
            throw SignalingError(
                .badField, "recording-policy field \"by\" must have 1 to 160 characters, not \(by.count)")
        }
        return self
    }
}
