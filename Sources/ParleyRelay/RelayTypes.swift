import ParleyBus
import ParleySecurity
import ParleyStore
import ParleyWire

/// Identifies one signaling connection (one WebSocket) for the lifetime of the relay.
public struct ConnectionID: Hashable, Sendable, CustomStringConvertible {
    /// The raw number, counting up from 1.
    public let rawValue: UInt64

    /// A connection id.
    public init(_ rawValue: UInt64) { self.rawValue = rawValue }

    public var description: String { "c\(rawValue)" }
}

/// What the relay shell must do after the state changed. The state never touches a socket itself.
public enum RelayAction: Equatable, Sendable {
    /// Send one message to each of these connections (encoded once).
    case send(ServerMessage, to: [ConnectionID])
    /// Close this connection (after anything sent before it).
    case close(ConnectionID)
    /// A member left the room: forget its media routes.
    case memberRemoved(id: UInt32, room: String)
    /// A member joined a room: it may now bind its UDP address.
    case memberAdded(id: UInt32, room: String)
    /// A member switched role (audience members may not send media).
    case roleChanged(id: UInt32, role: MemberRole)
    /// Check an account a join claims: does `signature` verify `message` with the account's keys? The answer goes
    /// back through `accountChecked`.
    case checkAccount(ConnectionID, account: String, message: [UInt8], signature: [UInt8])
    /// A plain chat line said in a room whose chat is kept: store it in the room's channel. `sender` is the account,
    /// or a guest's display name followed by " (guest)".
    case roomChat(room: String, id: String, sender: String, text: String, time: Int64)
    /// Someone joined (or left) a call: the account's presence, and the room's kept history when `kept`. `connection`
    /// (on a join) is where the history before the join goes.
    case callActivity(CallActivity)
    /// A member reported the size it draws each peer at: its simulcast layers may change.
    case tiles(id: UInt32, TileReport)
    /// A member said which of its layers its uplink carries: receivers of a layer left out move to a smaller one.
    case videoSending(id: UInt32, VideoSending)
    /// A join for a room not open here, in a cluster: ask where the room lives (or place it); the answer goes back
    /// through `roomPlaced`.
    case placeRoom(ConnectionID, room: String)
    /// The last member of a room placed here left: the room no longer lives on this node.
    case roomClosed(String)
    /// Tell the cluster's other nodes (rooms spanning nodes).
    case publish(ClusterEvent)
}

/// A member of another node: the node and its id there.
struct RemoteMemberKey: Hashable, Sendable {
    var node: String
    var id: UInt32
}

/// Checks a room or display name; returns the cleaned name or a sentence saying what is wrong.
public typealias NameRule = @Sendable (String) -> Result<String, NameRejection>

/// Someone joining or leaving a call, as the shell tells presence and the room's channel.
public struct CallActivity: Sendable, Equatable {
    public var room: String
    public var member: MemberInfo
    /// Joined (true) or left.
    public var joined: Bool
    /// Members in the call after it.
    public var members: Int
    /// The account hides which room it is in.
    public var hidesRoom: Bool
    /// The room's chat is kept (an open room on a relay with a store).
    public var kept: Bool
    /// The joiner's connection, for the history before it joined.
    public var connection: ConnectionID?
    /// The name the room's channel keeps for the member: its account, or its display name marked as a guest's.
    public var sender: String { Self.sender(name: member.name, account: member.account) }

    /// The kept name for a display name and verified account.
    public static func sender(name: String, account: String?) -> String { account ?? "\(name) (guest)" }
}

/// What the relay found when it checked the account a join claimed.
public enum AccountCheck: Sendable, Equatable {
    /// The signature verified with the account's keys: the member is shown as that account.
    case verified(String)
    /// The relay could not check (no such account here, no accounts at all): the member joins as a guest, told why.
    case unverified(String)
    /// The signature does not verify: whoever sent it is not the account, and the join is refused.
    case refused(String)
}

/// A rejected name and why.
public struct NameRejection: Error, Equatable, Sendable {
    /// What to tell the user.
    public var message: String

    /// A rejection with its message.
    public init(_ message: String) { self.message = message }
}

/// Tunable limits of the relay's signaling.
public struct SignalingLimits: Sendable, Equatable {
    /// Seconds of signaling silence after which a member is removed with reason `timeout`.
    public var livenessTimeout: Duration = .seconds(10)
    /// Messages a connection may send in a burst.
    public var burst: Double = 40
    /// Messages per second a connection may sustain.
    public var messagesPerSecond: Double = 20
    /// A WebSocket that has not joined a room this long after it opened is closed (`--join-timeout`).
    public var joinTimeout: Duration = .seconds(10)
    /// Open signaling connections one source address may hold (`--max-connections-per-address`).
    public var connectionsPerAddress = 16
    /// TCP connections the relay holds in all, joined or not (`--max-connections`; `parley serve` lowers it to
    /// what its file descriptors allow, see ``DescriptorBudget``). Past it a new connection is closed at once.
    public var connections = 100_000
    /// Rooms the relay holds at once (`--max-rooms`).
    public var rooms = 1000
    /// Members one room may hold (`--max-members`).
    public var membersPerRoom = 50
    /// Bytes one signaling message may have (`--max-message-bytes`; at most the protocol's 16 KiB).
    public var messageBytes = maxSignalingMessageBytes
    /// Characters one chat line may have (`--max-chat-characters`; at most the protocol's 2000; a sealed line may
    /// carry the same text with its encryption overhead).
    public var chatCharacters = maxChatCharacters

    /// Default limits.
    public init(livenessTimeout: Duration = .seconds(10), burst: Double = 40, messagesPerSecond: Double = 20) {
        self.livenessTimeout = livenessTimeout
        self.burst = burst
        self.messagesPerSecond = messagesPerSecond
    }
}

/// Counts of what the relay refused, for logs, tests and `parley serve`'s exit summary.
public struct RelayCounters: Sendable, Equatable {
    /// Signaling messages that failed to parse or were not allowed.
    public var signalingErrors = 0
    /// Joins sent to another node of the cluster, where their room lives.
    public var redirects = 0
    /// Signaling messages dropped by the rate limit.
    public var rateLimited = 0
    /// Typing for a shared terminal dropped beyond a member's rate (`RelayState.typingPerSecond`).
    public var typingDropped = 0
    /// Signaling frames refused for size or kind (binary, oversized).
    public var refusedFrames = 0
    /// RTP/RTCP packets forwarded (one per destination).
    public var packetsForwarded = 0
    /// RTP/RTCP packets dropped: unknown or unproven source, garbage, audience sending media.
    public var packetsDropped = 0
    /// UDP bind attempts with a wrong credential or unknown member.
    public var bindFailures = 0
    /// Keyframe requests swallowed by the 500 ms throttle.
    public var keyframeRequestsThrottled = 0
    /// NACKed packets answered from the relay's retransmission buffer.
    public var retransmissionsServed = 0
    /// NACKs passed on to a stream's sender for packets the relay never got (lost on the sender's uplink).
    public var nacksForwardedToSenders = 0
    /// RTCP compounds dropped because a packet in them named another member's SSRC as its sender.
    public var forgedFeedback = 0
    /// NACKs, PLIs and report blocks dropped because they were about a stream of another room.
    public var crossRoomFeedback = 0
    /// VP8 keyframes dropped because they declared a picture beyond the largest profile (`VP8Limits`).
    public var oversizedKeyframes = 0
    /// Packets dropped because they used the reserved fourth SSRC of their member's block.
    public var unallottedSSRC = 0
    /// Signaling connections carrying media now (their members' UDP did not get through).
    public var membersWithMediaOverTCP = 0
    /// Media datagrams taken from members' TCP connections and written to them.
    public var mediaOverTCPReceived = 0
    public var mediaOverTCPSent = 0
    /// Media datagrams not written to a member's TCP connection because it was backed up.
    public var mediaOverTCPBackedUp = 0
    /// Streams held in the retransmission buffer now (none outlives its member).
    public var retainedStreams = 0
    /// Packets held for retransmission now (at most about the window plus a second of each stream).
    public var retainedPackets = 0
    /// Packets released from the retransmission buffer for being past its window, since the relay started.
    public var releasedPackets = 0
    /// Connections closed for not joining within the join timeout.
    public var joinTimeouts = 0
    /// Connections, joins and media refused because a limit (connections per address, rooms, members per room,
    /// a member's media rate) was reached.
    public var limitsReached = 0
    /// Connections refused because the relay held its most connections (`--max-connections`).
    public var refusedFull = 0
    /// TCP connections the relay holds now, joined or not (what `--max-connections` counts).
    public var openConnections = 0
    /// Trunks to other nodes of the cluster that are up now.
    public var trunksUp = 0
    /// Trunk datagrams refused, by reason.
    public var trunkRefused: [TrunkRefusedReason: Int] = [:]
    /// Media datagrams sent to other nodes over trunks (one per node per packet, however many members there), and
    /// received from them.
    public var trunkPacketsSent = 0
    public var trunkPacketsReceived = 0
    /// Media datagrams for another node not sent because its trunk was not up or the trunk socket's queue was full.
    public var trunkPacketsUnsent = 0
    /// Video packets not sent to a node because none of its members needs their layer.
    public var trunkPacketsWithheld = 0
    /// Video packets of a layer sent to a node whose members need it (one per such node).
    public var trunkVideoPacketsSent = 0
    /// Media from another node's members dropped here for going beyond the rate each is held to (the trunk's bound:
    /// the sum of its members' rates).
    public var trunkPacketsOverRate = 0
    /// Control messages (what a node's receivers need of another's senders) sent, received, and refused malformed.
    public var trunkControlSent = 0
    public var trunkControlReceived = 0
    public var trunkControlRefused = 0
    /// Other nodes' members not taken into a room here (a bad entry, an SSRC block in use here, a full room).
    public var remoteMembersRefused = 0
    /// Other nodes' chat lines over this node's limits, not said here.
    public var remoteChatRefused = 0
    /// Other nodes' host commands refused here: said by a member this node does not see as the room's host.
    public var remoteControlsRefused = 0

    /// All zero.
    public init() {}
}

/// A room set up in the relay's rooms file.
public struct ConfiguredRoom: Sendable, Equatable {
    /// The password verifier, nil for a room without a password.
    public var verifier: [UInt8]?
    /// Whether audience members may start broadcasting without the host.
    public var openStage: Bool
    /// Whether members may record calls in the room (`record=no` forbids it, and the host cannot lift that).
    public var recording: Bool

    /// A configured room.
    public init(verifier: [UInt8]? = nil, openStage: Bool = false, recording: Bool = true) {
        self.verifier = verifier
        self.openStage = openStage
        self.recording = recording
    }
}
