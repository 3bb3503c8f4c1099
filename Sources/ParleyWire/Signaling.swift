import Foundation

// Signaling: JSON text messages over one WebSocket per member. Every message is a JSON object with the protocol
// version `"v"` and a `"type"`; the remaining fields depend on the type. docs/protocol.md lists them all.

/// The signaling protocol version this build speaks.
public let signalingProtocolVersion = 1

/// Largest signaling message either side accepts, in bytes. Larger frames are refused before parsing.
public let maxSignalingMessageBytes = 16 * 1024

/// Longest chat line, in Unicode characters.
public let maxChatCharacters = 2000

/// A participant's role: broadcasters send media, audience members only receive (seed 002's live rooms).
public enum MemberRole: String, Codable, Sendable, CaseIterable {
    case broadcaster
    case audience

    public init(from decoder: any Decoder) throws {
        self = try decodeWord(Self.self, from: decoder)
    }
}

/// Decodes a string enum with an error that lists the words allowed.
private func decodeWord<T: RawRepresentable & CaseIterable>(_: T.Type, from decoder: any Decoder) throws -> T
where T.RawValue == String {
    let container = try decoder.singleValueContainer()
    let word = try container.decode(String.self)
    guard let value = T(rawValue: word) else {
        let allowed = T.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", ")
        throw DecodingError.dataCorruptedError(
            in: container, debugDescription: "\"\(word)\" is not one of \(allowed)")
    }
    return value
}

/// Why a member left the room.
public enum LeaveReason: String, Codable, Sendable, CaseIterable {
    /// The member said goodbye.
    case quit
    /// The member went silent on signaling for longer than the liveness timeout.
    case timeout
    /// The connection closed without a goodbye, or the relay removed the member.
    case dropped
    /// The room's host removed the member.
    case removed

    public init(from decoder: any Decoder) throws {
        self = try decodeWord(Self.self, from: decoder)
    }
}

/// One member of a room as other members see it.
public struct MemberInfo: Codable, Sendable, Equatable {
    /// Relay-assigned id, unique within the relay's lifetime.
    public var id: UInt32
    /// Display name.
    public var name: String
    /// Broadcaster or audience.
    public var role: MemberRole
    /// Whether the member's microphone is muted.
    public var audioMuted: Bool
    /// Whether the member's camera is off.
    public var videoMuted: Bool
    /// The member's RTP streams.
    public var ssrcs: MemberSSRCs
    /// The account the member proved to be (the relay checked its signature), nil for a guest.
    public var account: String?

    /// A member description.
    public init(id: UInt32, name: String, role: MemberRole, audioMuted: Bool, videoMuted: Bool, ssrcs: MemberSSRCs,
                account: String? = nil) {
        self.id = id
        self.name = name
        self.role = role
        self.audioMuted = audioMuted
        self.videoMuted = videoMuted
        self.ssrcs = ssrcs
        self.account = account
    }

    /// The name as a call shows it: with a ✓ when the relay verified the account ("bob ✓", or "Bob ✓bob" when
    /// the display name is not the account's). Display names have no spaces, so nobody can type a look-alike.
    public var label: String { Self.label(name: name, account: account) }

    /// `label` for a name and a verified account.
    public static func label(name: String, account: String?) -> String {
        guard let account else { return name }
        return account.lowercased() == name.lowercased() ? "\(name) ✓" : "\(name) ✓\(account)"
    }
}

/// An account a joining member claims to be, with its signature over
/// `AccountIdentity.joinMessage(account:room:name:challenge:)` (the connection's challenge, base64).
public struct AccountClaim: Codable, Sendable, Equatable {
    /// The account's name.
    public var name: String
    /// Ed25519 signature, base64.
    public var signature: String

    /// A claim.
    public init(name: String, signature: String) {
        self.name = name
        self.signature = signature
    }
}

/// Proof that a client is the member it was before its connection dropped: the old member id and its credential.
public struct ResumeToken: Codable, Sendable, Equatable {
    /// The member id from the earlier `joined`.
    public var member: UInt32
    /// The credential from the earlier `joined` (32 hex digits).
    public var credential: String

    /// A resume token.
    public init(member: UInt32, credential: String) {
        self.member = member
        self.credential = credential
    }
}

/// What a client asks for when it joins.
public struct JoinRequest: Codable, Sendable, Equatable {
    /// Room name; the room is created on first join.
    public var room: String
    /// Display name shown to others.
    public var name: String
    /// Broadcaster (sends media) or audience.
    public var role: MemberRole
    /// Initial microphone state.
    public var audioMuted: Bool
    /// Initial camera state.
    public var videoMuted: Bool
    /// After a dropped connection: take the old membership back (same id, SSRCs and credential) instead of
    /// appearing twice until the old one times out.
    public var resume: ResumeToken?
    /// Proof of the room password: HMAC of the connection's challenge, the room and the name (64 hex digits).
    public var proof: String?
    /// The password verifier for a room this join creates (64 hex digits); sent only when the relay asked for it.
    public var verifier: String?
    /// The end-to-end encryption the client uses ("AES-128-GCM", "AES-256-GCM"), nil for none. The relay never
    /// sees a key; it keeps a room to one mode so nobody plays what they cannot decrypt.
    public var encryption: String?
    /// The video bitrate of the sender's profile in kbit/s: the relay drops (and counts) what the member sends
    /// beyond twice that plus the audio's share. Nil: only the relay-wide cap (`--max-member-kbps`) applies.
    public var videoKbps: Int?
    /// The account the member joins as, proven by signature; nil joins as a guest.
    public var account: AccountClaim?
    /// Keep the room out of the account's presence ("in a call" without saying which).
    public var hideRoom: Bool
    /// The video layers the member sends, largest first (simulcast); nil for one layer of unknown size.
    public var videoLayers: [VideoLayerSize]?

    /// The range `videoKbps` must be in.
    public static let videoKbpsRange = 1...20_000

    /// A join request.
    public init(room: String, name: String, role: MemberRole = .broadcaster, audioMuted: Bool = false,
                videoMuted: Bool = false, resume: ResumeToken? = nil, proof: String? = nil, verifier: String? = nil,
                encryption: String? = nil, videoKbps: Int? = nil, account: AccountClaim? = nil, hideRoom: Bool = false,
                videoLayers: [VideoLayerSize]? = nil) {
        self.videoLayers = videoLayers
        self.account = account
        self.hideRoom = hideRoom
        self.room = room
        self.name = name
        self.role = role
        self.audioMuted = audioMuted
        self.videoMuted = videoMuted
        self.resume = resume
        self.proof = proof
        self.verifier = verifier
        self.encryption = encryption
        self.videoKbps = videoKbps
    }

    enum CodingKeys: String, CodingKey {
        case room, name, role, audioMuted, videoMuted, resume, proof, verifier, encryption, videoKbps, account, hideRoom
        case videoLayers
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(room, forKey: .room)
        try c.encode(name, forKey: .name)
        try c.encode(role, forKey: .role)
        try c.encode(audioMuted, forKey: .audioMuted)
        try c.encode(videoMuted, forKey: .videoMuted)
        try c.encodeIfPresent(resume, forKey: .resume)
        try c.encodeIfPresent(proof, forKey: .proof)
        try c.encodeIfPresent(verifier, forKey: .verifier)
        try c.encodeIfPresent(encryption, forKey: .encryption)
        try c.encodeIfPresent(videoKbps, forKey: .videoKbps)
        try c.encodeIfPresent(account, forKey: .account)
        if hideRoom { try c.encode(hideRoom, forKey: .hideRoom) }
        try c.encodeIfPresent(videoLayers, forKey: .videoLayers)
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        room = try c.decode(String.self, forKey: .room)
        name = try c.decode(String.self, forKey: .name)
        role = try c.decodeIfPresent(MemberRole.self, forKey: .role) ?? .broadcaster
        audioMuted = try c.decodeIfPresent(Bool.self, forKey: .audioMuted) ?? false
        videoMuted = try c.decodeIfPresent(Bool.self, forKey: .videoMuted) ?? false
        resume = try c.decodeIfPresent(ResumeToken.self, forKey: .resume)
        proof = try c.decodeIfPresent(String.self, forKey: .proof)
        verifier = try c.decodeIfPresent(String.self, forKey: .verifier)
        encryption = try c.decodeIfPresent(String.self, forKey: .encryption)
        videoKbps = try c.decodeIfPresent(Int.self, forKey: .videoKbps)
        account = try c.decodeIfPresent(AccountClaim.self, forKey: .account)
        hideRoom = try c.decodeIfPresent(Bool.self, forKey: .hideRoom) ?? false
        videoLayers = try c.decodeIfPresent([VideoLayerSize].self, forKey: .videoLayers)
        if let videoLayers { try VideoLayerSize.validate(layers: videoLayers) }
        if let videoKbps, !Self.videoKbpsRange.contains(videoKbps) {
            throw DecodingError.dataCorruptedError(
                forKey: .videoKbps, in: c,
                debugDescription: "videoKbps \(videoKbps) is outside \(Self.videoKbpsRange.lowerBound)…\(Self.videoKbpsRange.upperBound)")
        }
    }
}

/// Where and how to send media once joined.
public struct MediaGrant: Codable, Sendable, Equatable {
    /// The relay's UDP port for RTP and RTCP (same host as the WebSocket).
    public var udpPort: Int
    /// Per-join secret (hex, 32 digits) the client proves in its UDP bind packet.
    public var credential: String
    /// The streams this member sends.
    public var ssrcs: MemberSSRCs

    /// A media grant.
    public init(udpPort: Int, credential: String, ssrcs: MemberSSRCs) {
        self.udpPort = udpPort
        self.credential = credential
        self.ssrcs = ssrcs
    }
}

/// The relay's answer to a successful join.
public struct JoinedRoom: Codable, Sendable, Equatable {
    /// The room joined (as cleaned by the relay).
    public var room: String
    /// This member, as others see it.
    public var you: MemberInfo
    /// Everyone else already in the room, in join order.
    public var members: [MemberInfo]
    /// Media transport details.
    public var media: MediaGrant
    /// Seconds of signaling silence after which the relay drops a member.
    public var livenessTimeout: Double
    /// The room's host (its first member, or the next in join order once the host left).
    public var host: UInt32
    /// Whether joining the room needs its password.
    public var passwordProtected: Bool
    /// Whether audience members may start broadcasting without the host's leave.
    public var openStage: Bool
    /// The room's end-to-end encryption mode, nil for none.
    public var encryption: String?
    /// Why the account the join claimed is not shown as verified (the relay does not know it, keeps no accounts),
    /// nil when it is or none was claimed.
    public var accountProblem: String?
    /// Whether the room's chat is kept as the room's channel (history before joining arrives as `chat-history`).
    public var chatKept: Bool?

    /// A joined answer.
    public init(room: String, you: MemberInfo, members: [MemberInfo], media: MediaGrant, livenessTimeout: Double,
                host: UInt32 = 0, passwordProtected: Bool = false, openStage: Bool = false,
                encryption: String? = nil, accountProblem: String? = nil, chatKept: Bool? = nil) {
        self.accountProblem = accountProblem
        self.chatKept = chatKept
        self.room = room
        self.you = you
        self.members = members
        self.media = media
        self.livenessTimeout = livenessTimeout
        self.host = host
        self.passwordProtected = passwordProtected
        self.openStage = openStage
        self.encryption = encryption
    }
}

/// A chat line as delivered by the relay: stamped with a room-wide sequence number so everyone sees one order.
public struct ChatDelivery: Codable, Sendable, Equatable {
    /// Room-wide sequence number, starting at 1.
    public var seq: UInt64
    /// Sender's member id.
    public var from: UInt32
    /// Sender's display name at the time.
    public var name: String
    /// The text ("" when the line is sealed).
    public var text: String
    /// Relay time, milliseconds since the Unix epoch.
    public var time: Int64
    /// The sender's own reference for the line, echoed back to the sender only.
    public var ref: String?
    /// The line end-to-end encrypted (base64 SFrame), which only members with the room secret can read.
    public var sealed: String?

    /// A chat delivery.
    public init(seq: UInt64, from: UInt32, name: String, text: String, time: Int64, ref: String? = nil,
                sealed: String? = nil) {
        self.seq = seq
        self.from = from
        self.name = name
        self.text = text
        self.time = time
        self.ref = ref
        self.sealed = sealed
    }
}

/// The newest lines of a room's kept chat before this member joined, oldest first (sent after `joined`).
public struct ChatHistory: Codable, Sendable, Equatable {
    /// The room.
    public var room: String
    /// At most `ChatHistory.maximumLines`.
    public var lines: [ChatHistoryLine]

    /// Lines sent to a joining member.
    public static let maximumLines = 100

    /// A history answer.
    public init(room: String, lines: [ChatHistoryLine]) {
        self.room = room
        self.lines = lines
    }

    /// The newest of `lines` (oldest first) that fit one signaling message: a hundred lines of 2,000 characters
    /// would be far past `maxSignalingMessageBytes`, which every client refuses.
    public static func fitting(room: String, lines: [ChatHistoryLine]) -> ChatHistory {
        var history = ChatHistory(room: room, lines: Array(lines.suffix(maximumLines)))
        while !history.lines.isEmpty, ServerMessage.chatHistory(history).encoded().utf8.count > maxSignalingMessageBytes {
            history.lines.removeFirst(max(1, history.lines.count / 4))
        }
        return history
    }
}

/// One kept line of a room's chat: a message, or someone joining or leaving the call.
public struct ChatHistoryLine: Codable, Sendable, Equatable {
    /// "message", "call-joined" or "call-left" (a channel's own "joined"/"left" too).
    public var kind: String
    /// Who: an account name, or a guest's display name followed by " (guest)".
    public var from: String
    public var text: String
    /// Milliseconds since 1970.
    public var time: Int64
    /// Members in the call after a joined or left line.
    public var members: Int?

    /// A history line.
    public init(kind: String, from: String, text: String, time: Int64, members: Int? = nil) {
        self.kind = kind
        self.from = from
        self.text = text
        self.time = time
        self.members = members
    }

    /// The line in words, as the chat pane shows it.
    public var words: String {
        switch kind {
        case "call-joined": "\(from) joined the call" + (members.map { " (\($0) in the call)" } ?? "")
        case "call-left": "\(from) left the call" + (members.map { " (\($0) in the call)" } ?? "")
        case "joined": "\(from) joined the channel"
        case "left": "\(from) left the channel"
        default: "\(from): \(text)"
        }
    }
}

/// What a sender reports about the media it sends, forwarded to everyone (shown in per-tile stats).
public struct SenderStats: Codable, Sendable, Equatable {
    /// Video width in pixels (0 when the camera is off).
    public var width: Int
    /// Video height in pixels.
    public var height: Int
    /// Frames per second actually sent.
    public var fps: Double
    /// Video bitrate actually sent, kbit/s.
    public var videoKbps: Double
    /// Audio bitrate actually sent, kbit/s.
    public var audioKbps: Double

    /// A stats report.
    public init(width: Int, height: Int, fps: Double, videoKbps: Double, audioKbps: Double) {
        self.width = width
        self.height = height
        self.fps = fps
        self.videoKbps = videoKbps
        self.audioKbps = audioKbps
    }

    enum CodingKeys: String, CodingKey { case width, height, fps, videoKbps, audioKbps }

    /// Non-finite figures (a rate over an empty window) go out as 0: JSON has no NaN.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(width, forKey: .width)
        try c.encode(height, forKey: .height)
        try c.encode(fps.isFinite ? fps : 0, forKey: .fps)
        try c.encode(videoKbps.isFinite ? videoKbps : 0, forKey: .videoKbps)
        try c.encode(audioKbps.isFinite ? audioKbps : 0, forKey: .audioKbps)
    }
}

/// Error codes the relay sends. The message next to each says what to do.
public enum SignalingErrorCode: String, Codable, Sendable, CaseIterable {
    /// The text was not valid JSON, or not an object.
    case badJSON = "bad-json"
    /// `type` was missing or unknown.
    case unknownType = "unknown-type"
    /// `v` was missing or not a version this relay speaks.
    case unsupportedVersion = "unsupported-version"
    /// A field was missing, of the wrong type, or out of range.
    case badField = "bad-field"
    /// The message exceeded `maxSignalingMessageBytes`.
    case tooLarge = "too-large"
    /// The message needs a joined member (e.g. chat before join).
    case notJoined = "not-joined"
    /// A second join on the same connection.
    case alreadyJoined = "already-joined"
    /// The room name is empty or not allowed.
    case badRoomName = "bad-room-name"
    /// The display name is empty, too long or has a space.
    case badName = "bad-name"
    /// Too many messages too quickly; some were dropped.
    case rateLimited = "rate-limited"
    /// Audience members cannot do this (e.g. unmute media), or only the host can.
    case notAllowed = "not-allowed"
    /// The room has a password: answer the challenge (ask with `challenge`) in `proof`.
    case passwordRequired = "password-required"
    /// The proof did not match the room's password.
    case wrongPassword = "wrong-password"
    /// The room does not exist yet and the join carries a proof: send the password's `verifier` to create it.
    case passwordSetup = "password-setup"
    /// Someone in the room already has this display name.
    case nameTaken = "name-taken"
    /// The room uses another end-to-end encryption mode (or none).
    case encryptionMismatch = "encryption-mismatch"
    /// A room, connection or member limit was reached.
    case limitReached = "limit-reached"
    /// Messaging: the request needs a logged-in account.
    case notLoggedIn = "not-logged-in"
    /// Messaging: the account name is bound to other keys, or the proof did not verify.
    case accountRefused = "account-refused"
    /// Messaging: no such account.
    case unknownAccount = "unknown-account"
    /// Messaging: the store could not commit (full disk, read-only database); nothing was acknowledged.
    case storeFailed = "store-failed"
    /// The relay failed; not the client's fault.
    case `internal` = "internal"

    public init(from decoder: any Decoder) throws {
        self = try decodeWord(Self.self, from: decoder)
    }
}

/// An error report: a machine-readable code and a sentence for people.
public struct SignalingError: Codable, Sendable, Equatable, Error, CustomStringConvertible {
    /// What went wrong, for programs.
    public var code: SignalingErrorCode
    /// What went wrong, for people.
    public var message: String

    /// An error report.
    public init(_ code: SignalingErrorCode, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code.rawValue): \(message)" }
}

/// A change of the sender's microphone and/or camera state; absent fields are unchanged.
public struct MuteChange: Codable, Sendable, Equatable {
    /// New microphone state, if it changed.
    public var audio: Bool?
    /// New camera state, if it changed.
    public var video: Bool?

    /// A mute change.
    public init(audio: Bool? = nil, video: Bool? = nil) {
        self.audio = audio
        self.video = video
    }
}

extension MuteChange: ValidatedPayload {
    /// A change names the microphone, the camera or both.
    func validated() throws(SignalingError) -> MuteChange {
        guard audio != nil || video != nil else {
            throw SignalingError(.badField, "mute needs \"audio\" or \"video\" (true or false)")
        }
        return self
    }
}

/// A chat line a client sends: plain `text`, or `sealed` (end-to-end encrypted) with `text` empty.
public struct ChatSend: Codable, Sendable, Equatable {
    /// The text, 1…`maxChatCharacters` characters, not only whitespace; "" when sealed.
    public var text: String
    /// The sender's own reference, echoed back to it in the delivery.
    public var ref: String?
    /// The encrypted line (base64 SFrame), at most `maxSealedChatCharacters`.
    public var sealed: String?

    /// A chat line.
    public init(text: String, ref: String? = nil, sealed: String? = nil) {
        self.text = text
        self.ref = ref
        self.sealed = sealed
    }

    enum CodingKeys: String, CodingKey { case text, ref, sealed }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        sealed = try c.decodeIfPresent(String.self, forKey: .sealed)
        if let text = try c.decodeIfPresent(String.self, forKey: .text) {
            self.text = text
        } else if sealed != nil {
            text = ""
        } else {
            text = try c.decode(String.self, forKey: .text)  // missing: the usual "needs field" error
        }
        ref = try c.decodeIfPresent(String.self, forKey: .ref)
    }
}

extension ChatSend: ValidatedPayload {
    /// Plain text of 1…`maxChatCharacters` characters, not only whitespace; or sealed, with no text.
    func validated() throws(SignalingError) -> ChatSend {
        if let sealed {
            guard text.isEmpty else {
                throw SignalingError(.badField, "chat has both \"text\" and \"sealed\"; a sealed line has no text")
            }
            guard !sealed.isEmpty, sealed.count <= maxSealedChatCharacters else {
                throw SignalingError(
                    .badField,
                    "chat \"sealed\" has \(sealed.count) characters; it must have 1 to \(maxSealedChatCharacters)")
            }
            return self
        }
        guard text.contains(where: { !$0.isWhitespace }) else {
            throw SignalingError(.badField, "chat \"text\" is empty")
        }
        guard text.count <= maxChatCharacters else {
            throw SignalingError(
                .badField, "chat \"text\" has \(text.count) characters; the limit is \(maxChatCharacters)")
        }
        return self
    }
}

/// Longest sealed chat line, in base64 characters: a full-length line of 4-byte characters plus SFrame overhead.
public let maxSealedChatCharacters = 11_000

/// The challenge a client answers with `JoinRequest.proof` to join a password-protected room.
public struct AccessChallenge: Codable, Sendable, Equatable {
    /// 32 random bytes, hex; good for one join attempt on this connection.
    public var nonce: String

    /// A challenge.
    public init(nonce: String) { self.nonce = nonce }
}

/// A member named by id (the host's `allow` and `remove`, the relay's `hand` and `host`).
public struct MemberRef: Codable, Sendable, Equatable {
    /// The member.
    public var id: UInt32

    /// A member reference.
    public init(id: UInt32) { self.id = id }
}

/// Why this member was removed from the room.
public struct Removal: Codable, Sendable, Equatable {
    /// Who removed it (the host's display name).
    public var by: String
    /// A sentence for the user.
    public var message: String

    /// A removal notice.
    public init(by: String, message: String) {
        self.by = by
        self.message = message
    }
}

/// A keep-alive token (`ping` and `pong`).
public struct KeepAlive: Codable, Sendable, Equatable {
    /// Opaque number echoed back.
    public var token: UInt64

    /// A keep-alive.
    public init(token: UInt64) { self.token = token }
}

/// A request to switch role.
public struct RoleRequest: Codable, Sendable, Equatable {
    /// The wanted role.
    public var role: MemberRole

    /// A role request.
    public init(role: MemberRole) { self.role = role }
}

/// Someone entered the room.
public struct MemberJoined: Codable, Sendable, Equatable {
    /// The newcomer.
    public var member: MemberInfo

    /// A member-joined notice.
    public init(member: MemberInfo) { self.member = member }
}

/// Someone left the room.
public struct MemberLeft: Codable, Sendable, Equatable {
    /// Who left.
    public var id: UInt32
    /// Why.
    public var reason: LeaveReason

    /// A member-left notice.
    public init(id: UInt32, reason: LeaveReason) {
        self.id = id
        self.reason = reason
    }
}

/// A member's full microphone and camera state.
public struct MemberMute: Codable, Sendable, Equatable {
    /// Whose state.
    public var id: UInt32
    /// Microphone muted.
    public var audio: Bool
    /// Camera off.
    public var video: Bool

    /// A mute notice.
    public init(id: UInt32, audio: Bool, video: Bool) {
        self.id = id
        self.audio = audio
        self.video = video
    }
}

/// What a member reports sending, as forwarded by the relay.
public struct MemberStats: Codable, Sendable, Equatable {
    /// Whose report.
    public var id: UInt32
    /// The report.
    public var stats: SenderStats

    /// A forwarded stats report.
    public init(id: UInt32, stats: SenderStats) {
        self.id = id
        self.stats = stats
    }
}

/// A member's role changed.
public struct MemberRoleChange: Codable, Sendable, Equatable {
    /// Whose role.
    public var id: UInt32
    /// The new role.
    public var role: MemberRole

    /// A role notice.
    public init(id: UInt32, role: MemberRole) {
        self.id = id
        self.role = role
    }
}

/// Messages a client sends to the relay.
public enum ClientMessage: Sendable, Equatable {
    /// Enter a room. Must be the first message.
    case join(JoinRequest)
    /// Say goodbye; the relay tells the others the member quit.
    case leave
    /// Microphone and/or camera state changed.
    case mute(MuteChange)
    /// Send a chat line.
    case chat(ChatSend)
    /// Report what this client sends.
    case stats(SenderStats)
    /// Keep-alive; the relay answers `pong` with the same token.
    case ping(KeepAlive)
    /// Switch between broadcaster and audience (to broadcaster: only the host, or anyone in an open-stage room;
    /// otherwise the host is asked).
    case role(RoleRequest)
    /// Ask for a challenge to prove the room password with.
    case challenge
    /// Host only: let an audience member broadcast.
    case allow(MemberRef)
    /// Host only: remove a member from the room.
    case remove(MemberRef)
    /// The pixel size this client draws each peer at, for the relay's choice of simulcast layers.
    case tiles(TileReport)

    /// Every case once, with its wire `type`: a case added above needs its entry here (encoding a case without one
    /// stops the program). Payloads that are `ValidatedPayload` (mute, chat, tiles) are checked after decoding.
    static let wire = WireTable<ClientMessage>(
        [
            .payload("join", Self.join),
            .bare("leave", .leave),
            .payload("mute", Self.mute),
            .payload("chat", Self.chat),
            .payload("stats", Self.stats),
            .payload("ping", Self.ping),
            .payload("role", Self.role),
            .bare("challenge", .challenge),
            .payload("allow", Self.allow),
            .payload("remove", Self.remove),
            .payload("tiles", Self.tiles),
        ],
        unknownType: { type, known in
            "unknown message type \"\(type)\"; expected \(known.dropLast().joined(separator: ", ")) or "
                + (known.last ?? "")
        })

    /// The wire `type` of this message.
    public var type: String { Self.wire.type(of: self) }

    /// The message as compact JSON text.
    public func encoded() -> String { Self.wire.encode(self) }

    /// Parses one message from JSON text, with an error that says exactly what was wrong.
    public static func decode(_ text: String) throws(SignalingError) -> ClientMessage { try wire.decode(text) }
}

/// Messages the relay sends to a client.
public enum ServerMessage: Sendable, Equatable {
    /// The join succeeded.
    case joined(JoinedRoom)
    /// Someone entered the room.
    case memberJoined(MemberJoined)
    /// Someone left, and why.
    case memberLeft(MemberLeft)
    /// A member's microphone/camera state.
    case mute(MemberMute)
    /// A chat line, in room order.
    case chat(ChatDelivery)
    /// What a member reports sending.
    case stats(MemberStats)
    /// A member's role changed.
    case role(MemberRoleChange)
    /// Answer to `ping`.
    case pong(KeepAlive)
    /// Something the client sent was refused; the connection stays open.
    case error(SignalingError)
    /// Answer to `challenge`.
    case challenge(AccessChallenge)
    /// The room has a new host.
    case host(MemberRef)
    /// To the host: an audience member asks to broadcast.
    case hand(MemberRef)
    /// To a member the host removed, just before the relay closes its connection.
    case removed(Removal)
    /// The room's kept chat from before this member joined.
    case chatHistory(ChatHistory)
    /// To a sender: which of its video layers somebody receives.
    case videoLayers(VideoLayerDemand)
    /// The room's dominant speaker changed.
    case dominantSpeaker(DominantSpeakerNotice)

    /// Every case once, with its wire `type`: a case added above needs its entry here (encoding a case without one
    /// stops the program). Payloads that are `ValidatedPayload` (video-layers) are checked after decoding.
    static let wire = WireTable<ServerMessage>(
        [
            .payload("joined", Self.joined),
            .payload("member-joined", Self.memberJoined),
            .payload("member-left", Self.memberLeft),
            .payload("mute", Self.mute),
            .payload("chat", Self.chat),
            .payload("stats", Self.stats),
            .payload("role", Self.role),
            .payload("pong", Self.pong),
            .payload("error", Self.error),
            .payload("challenge", Self.challenge),
            .payload("host", Self.host),
            .payload("hand", Self.hand),
            .payload("removed", Self.removed),
            .payload("chat-history", Self.chatHistory),
            .payload("video-layers", Self.videoLayers),
            .payload("dominant-speaker", Self.dominantSpeaker),
        ],
        unknownType: { type, _ in "unknown message type \"\(type)\"" })

    /// The wire `type` of this message.
    public var type: String { Self.wire.type(of: self) }

    /// The message as compact JSON text.
    public func encoded() -> String { Self.wire.encode(self) }

    /// Parses one message from JSON text, with an error that says exactly what was wrong.
    public static func decode(_ text: String) throws(SignalingError) -> ServerMessage { try wire.decode(text) }
}

// MARK: - JSON plumbing

/// `v` and `type` followed by the payload's own fields, all in one flat JSON object.
private struct Envelope: Encodable {
    let type: String
    let payload: (any Encodable)?

    enum CodingKeys: String, CodingKey { case v, type }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(signalingProtocolVersion, forKey: .v)
        try container.encode(type, forKey: .type)
        try payload?.encode(to: encoder)
    }
}

func encodeSignaling(type: String, payload: (any Encodable)?) -> String {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    // Every payload is plain strings, integers, booleans and finite doubles, so encoding cannot fail.
    let data = (try? encoder.encode(Envelope(type: type, payload: payload))) ?? Data()
    return String(decoding: data, as: UTF8.self)
}

/// The header every message has; decoding it checks the shape before any payload is read.
private struct Header: Decodable {
    let version: Int
    let type: String

    enum CodingKeys: String, CodingKey { case v, type }

    init(from decoder: any Decoder) throws {
        let container: KeyedDecodingContainer<CodingKeys>
        do {
            container = try decoder.container(keyedBy: CodingKeys.self)
        } catch {
            throw SignalingError(.badJSON, "message must be a JSON object")
        }
        guard container.contains(.v) else {
            throw SignalingError(
                .unsupportedVersion, "missing \"v\"; this relay speaks version \(signalingProtocolVersion)")
        }
        guard let version = try? container.decode(Int.self, forKey: .v) else {
            throw SignalingError(
                .unsupportedVersion, "\"v\" must be a whole number; this relay speaks version \(signalingProtocolVersion)")
        }
        guard container.contains(.type) else { throw SignalingError(.unknownType, "missing \"type\"") }
        guard let type = try? container.decode(String.self, forKey: .type) else {
            throw SignalingError(.unknownType, "\"type\" must be a string")
        }
        self.version = version
        self.type = type
    }
}

/// One received message: checked for size, JSON syntax, object shape, version and type; payload decoded on demand.
struct SignalingMessage {
    let type: String
    private let data: Data

    init(_ text: String) throws(SignalingError) {
        let data = Data(text.utf8)
        guard data.count <= maxSignalingMessageBytes else {
            throw SignalingError(.tooLarge, "message is \(data.count) bytes; the limit is \(maxSignalingMessageBytes)")
        }
        guard data.contains(where: { !(" \t\r\n".utf8.contains($0)) }) else {
            throw SignalingError(.badJSON, "message is empty; expected a JSON object")
        }
        let header: Header
        do {
            header = try JSONDecoder().decode(Header.self, from: data)
        } catch let error as SignalingError {
            throw error
        } catch DecodingError.dataCorrupted {
            throw SignalingError(.badJSON, "message is not valid JSON")
        } catch {
            throw SignalingError(.badJSON, "message must be a JSON object")
        }
        guard header.version == signalingProtocolVersion else {
            throw SignalingError(
                .unsupportedVersion,
                "version \(header.version) is not supported; this relay speaks version \(signalingProtocolVersion)")
        }
        self.type = header.type
        self.data = data
    }

    /// Decodes the payload struct from the message's top-level fields.
    func payload<T: Decodable>(_: T.Type) throws(SignalingError) -> T {
        do {
            return try JSONDecoder().decode(T.self, from: data)
        } catch let error as SignalingError {
            throw error
        } catch let error as DecodingError {
            throw explain(error)
        } catch {
            throw SignalingError(.badField, "\(type): \(error)")
        }
    }

    private func explain(_ error: DecodingError) -> SignalingError {
        func path(_ context: DecodingError.Context, _ last: (any CodingKey)? = nil) -> String {
            var text = ""
            for key in context.codingPath + (last.map { [$0] } ?? []) {
                if let index = key.intValue {
                    text += "[\(index)]"
                } else {
                    text += (text.isEmpty ? "" : ".") + key.stringValue
                }
            }
            return text
        }
        switch error {
        case .keyNotFound(let key, let context):
            return SignalingError(.badField, "\(type) needs field \"\(path(context, key))\"")
        case .typeMismatch(let expected, let context):
            return SignalingError(.badField, "\(type) field \"\(path(context))\" must be \(describe(expected))")
        case .valueNotFound(let expected, let context):
            return SignalingError(
                .badField, "\(type) field \"\(path(context))\" must be \(describe(expected)), not null")
        case .dataCorrupted(let context) where context.codingPath.isEmpty:
            // The header already parsed, so the JSON is well formed: Foundation reports an out-of-range number
            // (a negative id, a fraction where a whole number belongs) this way, without naming the field.
            return SignalingError(
                .badField, "\(type) has a number out of range: ids, tokens and sizes are whole numbers, 0 or more")
        case .dataCorrupted(let context):
            return SignalingError(.badField, "\(type) field \"\(path(context))\" is invalid: \(context.debugDescription)")
        @unknown default:
            return SignalingError(.badField, "\(type): \(error)")
        }
    }

    private func describe(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: "a string"
        case is Bool.Type: "true or false"
        case is Double.Type: "a number"
        case is UInt32.Type, is UInt64.Type, is Int.Type, is Int64.Type: "a whole number"
        default: "of type \(type)"
        }
    }
}
