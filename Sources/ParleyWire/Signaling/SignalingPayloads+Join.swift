// Joining a room, and who is in it: the join request and the relay's answer, the password challenge, members
// arriving and leaving.

/// A participant's role: broadcasters send media, audience members only receive (seed 002's live rooms).
public enum MemberRole: String, Codable, Sendable, CaseIterable {
    case broadcaster
    case audience

    public init(from decoder: any Decoder) throws {
        self = try decodeWord(Self.self, from: decoder)
    }
}

/// What a member is: a person in the call, or a terminal one shares (`parley share`, issue 52), which sends a
/// screen of text cells instead of a camera and no sound.
public enum MemberKind: String, Codable, Sendable, CaseIterable {
    case person
    case terminal

    public init(from decoder: any Decoder) throws {
        self = try decodeWord(Self.self, from: decoder)
    }
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
    /// Seconds the member had been in the room when the relay sent this (in the member list of `joined`), so a late
    /// joiner's roster shows how long each has really been there; nil when just joined or not said.
    public var inCallFor: Double?
    /// `terminal` for a shared terminal, named after its sharer ("alice's terminal"); nil for a person.
    public var kind: MemberKind?

    /// A member description.
    public init(
        id: UInt32, name: String, role: MemberRole, audioMuted: Bool, videoMuted: Bool, ssrcs: MemberSSRCs,
        account: String? = nil, inCallFor: Double? = nil, kind: MemberKind? = nil
    ) {
        self.kind = kind == .person ? nil : kind
        self.id = id
        self.name = name
        self.role = role
        self.audioMuted = audioMuted
        self.videoMuted = videoMuted
        self.ssrcs = ssrcs
        self.account = account
        self.inCallFor = inCallFor
    }

    /// `inCallFor` as a duration when it is a plausible one (finite, 0 to 10 years): the relay is trusted for the
    /// figure, not for the arithmetic.
    public var timeInCall: Duration? {
        guard let seconds = inCallFor, seconds.isFinite, seconds >= 0, seconds <= 315_360_000 else { return nil }
        return .milliseconds(Int64(seconds * 1000))
    }

    /// The name as a call shows it: with a ✓ when the relay verified the account ("bob ✓", or "Bob ✓bob" when
    /// the display name is not the account's). Display names have no spaces, so nobody can type a look-alike.
    public var label: String {
        Self.label(name: name, account: account, terminal: isTerminal)
    }

    /// Whether the member is a shared terminal rather than a person.
    public var isTerminal: Bool { kind == .terminal }

    /// `label` for a name and a verified account.
    public static func label(name: String, account: String?, terminal: Bool = false) -> String {
        let shown = terminal ? name + "'s terminal" : name
        guard let account else { return shown }
        return account.lowercased() == name.lowercased() ? "\(shown) ✓" : "\(shown) ✓\(account)"
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
    /// Send me, once a second on the media path, the count of what was sent to me (`ForwardedCount`), for my
    /// downlink estimate.
    public var downlinkCounts: Bool
    /// A person, or a terminal shared under the person's name (which may then join once more as a terminal).
    public var kind: MemberKind
    /// A browser's SDP offer (WebRTC): its media goes over ICE-lite, DTLS-SRTP on the relay's UDP port instead of a
    /// bind, and the relay's answer comes back in `MediaGrant.webrtc`. Nil for a Parley client.
    public var webrtc: String?

    /// The range `videoKbps` must be in.
    public static let videoKbpsRange = 1...20_000

    /// A join request.
    public init(
        room: String, name: String, role: MemberRole = .broadcaster, audioMuted: Bool = false,
        videoMuted: Bool = false, resume: ResumeToken? = nil, proof: String? = nil, verifier: String? = nil,
        encryption: String? = nil, videoKbps: Int? = nil, account: AccountClaim? = nil, hideRoom: Bool = false,
        videoLayers: [VideoLayerSize]? = nil, downlinkCounts: Bool = false, kind: MemberKind = .person,
        webrtc: String? = nil
    ) {
        self.webrtc = webrtc
        self.kind = kind
        self.videoLayers = videoLayers
        self.downlinkCounts = downlinkCounts
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
        case videoLayers, downlinkCounts, kind, webrtc
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
        if downlinkCounts { try c.encode(downlinkCounts, forKey: .downlinkCounts) }
        if kind != .person { try c.encode(kind, forKey: .kind) }
        try c.encodeIfPresent(webrtc, forKey: .webrtc)
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
        downlinkCounts = try c.decodeIfPresent(Bool.self, forKey: .downlinkCounts) ?? false
        kind = try c.decodeIfPresent(MemberKind.self, forKey: .kind) ?? .person
        webrtc = try c.decodeIfPresent(String.self, forKey: .webrtc)
        if let videoLayers { try VideoLayerSize.validate(layers: videoLayers) }
        if let videoKbps, !Self.videoKbpsRange.contains(videoKbps) {
            throw DecodingError.dataCorruptedError(
                forKey: .videoKbps, in: c,
                debugDescription:
                    "videoKbps \(videoKbps) is outside \(Self.videoKbpsRange.lowerBound)…\(Self.videoKbpsRange.upperBound)"
            )
        }
    }
}

/// The challenge a client answers with `JoinRequest.proof` to join a password-protected room.
public struct AccessChallenge: Codable, Sendable, Equatable {
    /// 32 random bytes, hex; good for one join attempt on this connection.
    public var nonce: String

    /// A challenge.
    public init(nonce: String) { self.nonce = nonce }
}

/// Where and how to send media once joined.
public struct MediaGrant: Codable, Sendable, Equatable {
    /// The relay's UDP port for RTP and RTCP (same host as the WebSocket).
    public var udpPort: Int
    /// Per-join secret (hex, 32 digits) the client proves in its UDP bind packet.
    public var credential: String
    /// The streams this member sends.
    public var ssrcs: MemberSSRCs
    /// The relay's SDP answer to a browser's offer (`JoinRequest.webrtc`); nil for a Parley client.
    public var webrtc: String?

    /// A media grant.
    public init(udpPort: Int, credential: String, ssrcs: MemberSSRCs, webrtc: String? = nil) {
        self.webrtc = webrtc
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
    /// Why recording is forbidden in the room ("alice forbade it": the host's `/norecord`, or the rooms file);
    /// nil while members may record.
    public var recordingForbidden: String?
    /// Members recording the call right now; nil for none.
    public var recorders: [UInt32]?

    /// A joined answer.
    public init(
        room: String, you: MemberInfo, members: [MemberInfo], media: MediaGrant, livenessTimeout: Double,
        host: UInt32 = 0, passwordProtected: Bool = false, openStage: Bool = false,
        encryption: String? = nil, accountProblem: String? = nil, chatKept: Bool? = nil,
        recordingForbidden: String? = nil, recorders: [UInt32]? = nil
    ) {
        self.recordingForbidden = recordingForbidden
        self.recorders = recorders
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
