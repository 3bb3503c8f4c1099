import Foundation
import ParleyStore

// What the relays of a cluster tell each other. Every node holds its own connections; what one node must know of
// another's (an account online there, a message stored for an account connected there) travels as a `ClusterEvent`
// on the cluster's bus. Nothing durable travels only on the bus: messages, receipts and channel lines are rows first,
// and an event names them by their sequence, so a node that missed events catches up from the tables.

/// Where one account is on one node: connected for messaging, and in which calls.
public struct NodePresence: Sendable, Equatable, Codable {
    /// A messaging connection is open there.
    public var messaging: Bool
    /// One entry per call joined there: its room, or nil when the member hides the room.
    public var calls: [String?]

    public init(messaging: Bool, calls: [String?]) {
        self.messaging = messaging
        self.calls = calls
    }
}

/// A direct message stored on one node, named by its row; a small one carries itself too (its id, the sealed bytes
/// in base64 and when it was received), so the recipient's node forwards it without reading it back.
public struct MessageReference: Sendable, Equatable, Codable {
    public var sender: String
    public var recipient: String
    public var sequence: Int64
    public var id: String?
    public var sealed: String?
    public var receivedAt: Int64?

    public init(
        sender: String, recipient: String, sequence: Int64, id: String? = nil, sealed: String? = nil,
        receivedAt: Int64? = nil
    ) {
        self.sender = sender
        self.recipient = recipient
        self.sequence = sequence
        self.id = id
        self.sealed = sealed
        self.receivedAt = receivedAt
    }

    /// Sealed messages up to this many bytes (base64) travel in the event; larger ones by reference only.
    public static let inlineLimit = 1_500

    /// The reference for `stored`, carrying the message when it is small.
    public init(_ stored: StoredDirectMessage) {
        let sealed = Data(stored.message.sealed).base64EncodedString()
        let inline = sealed.utf8.count <= Self.inlineLimit
        self.init(
            sender: stored.message.sender, recipient: stored.message.recipient, sequence: stored.sequence,
            id: inline ? stored.message.id : nil, sealed: inline ? sealed : nil,
            receivedAt: inline ? stored.message.receivedAt : nil)
    }

    /// The message it carries, nil when it is a reference only (or what it carries does not decode).
    public var carried: StoredDirectMessage? {
        guard let id, let sealed, let receivedAt, let bytes = Data(base64Encoded: sealed) else { return nil }
        return StoredDirectMessage(
            sequence: sequence,
            message: NewDirectMessage(
                id: id, sender: sender, recipient: recipient, sealed: Array(bytes), receivedAt: receivedAt))
    }
}

/// One event between nodes.
public enum ClusterEvent: Sendable, Equatable, Codable {
    /// New direct messages, for their recipients' connections elsewhere.
    case messages([MessageReference])
    /// `reader` received (or read) these messages: for their senders' connections elsewhere.
    case receipts(reader: String, read: Bool, marks: [MessageMark])
    /// Where `account` is now on the publishing node; nil when it is gone from there.
    case presence(account: String, presence: NodePresence?)
    /// A new line in `channel`, for its members connected elsewhere.
    case channelPost(channel: String, sequence: Int64)
    /// `node` was found dead (silent past the cluster's limit): its presence is gone.
    case nodeGone(String)
    /// The rooms' settings in the database changed (`parley cluster rooms load`): read them again.
    case roomSettingsChanged
    /// A member of `room` on the publishing node joined, or its entry changed (muted, role): for the nodes where
    /// the room has members too (a room spans nodes with `--placement spread`).
    case roomMember(room: String, member: RoomMemberEntry)
    /// The member with this id on the publishing node left `room` (`reason` as its node told its own members).
    case roomMemberLeft(room: String, member: UInt32, reason: String)
    /// `room` got its first member on the publishing node: the nodes with members in it announce them again.
    case roomOpened(room: String)
    /// `parley cluster drain NODE`: that node moves its members to the others and stops.
    case drainNode(String)
    /// A chat line said in `room` by the publishing node's member `member` (its id there): plain `text`, or
    /// `sealed` (end-to-end encrypted, base64) with `text` empty; `time` in ms since 1970.
    case roomChat(room: String, member: UInt32, text: String, sealed: String?, time: Int64)
    /// What the publishing node's member `member` (its id there) asks of the room's members on other nodes: a host's
    /// command, or an audience member's raised hand. Each node checks it against the host it sees.
    case roomControl(room: String, member: UInt32, control: RoomControl)
}

/// A host's command about a member of another node, or a request to the host there.
public enum RoomControl: Sendable, Equatable, Codable {
    /// The host lets `node`'s member `member` (its id there) broadcast.
    case allow(node: String, member: UInt32)
    /// The host removed `node`'s member `member`, known by `name` and `account` (both lowercased): every node
    /// refuses them from now on, and their node closes their connection.
    case remove(node: String, member: UInt32, name: String, account: String?)
    /// The host lets whoever was removed under `name` (or that account) come back.
    case readmit(name: String)
    /// An audience member asks the host to let them broadcast.
    case hand
}

/// One call member as its node announces it to the other nodes of its room.
public struct RoomMemberEntry: Sendable, Equatable, Codable {
    /// Its member id on its own node (each node gives the member an id of its own).
    public var id: UInt32
    public var name: String
    public var broadcaster: Bool
    public var audioMuted: Bool
    public var videoMuted: Bool
    /// The first SSRC of its block (audio; video layers follow).
    public var ssrcBlock: UInt32
    /// Its verified account, nil for a guest.
    public var account: String?
    /// The video layers it declared at join, largest first, as [width, height]; nil when not said.
    public var videoLayers: [[Int]]?
    /// Milliseconds it has been in the call when announced.
    public var inCallMilliseconds: Int64
    /// SHA-256 (hex) of its media credential: a member coming back through another node after its node died
    /// resumes with that credential, and is known by it.
    public var credentialDigest: String?
    /// The credential digest of the member it is, when it came back through this node from another (its node died
    /// or it lost it): every node drops that earlier self.
    public var replaces: String?
    /// When it claimed the room's host role (ms since 1970), nil when it never did. The oldest claim in the room
    /// hosts it on every node (ties: the lower node id, then the lower member id).
    public var hostSince: Int64?
    /// Whether it is recording the call.
    public var recording: Bool?
    /// When it hosts the room and has forbidden recording (`/norecord`): whose rule that is.
    public var recordingForbiddenBy: String?
    /// When it joined (ms since 1970): of two members given one name by two nodes at once, the earlier keeps it.
    public var joinedAt: Int64?
    /// True for a shared terminal (named after its sharer); nil for a person.
    public var terminal: Bool?

    public init(
        id: UInt32, name: String, broadcaster: Bool, audioMuted: Bool, videoMuted: Bool, ssrcBlock: UInt32,
        account: String? = nil, videoLayers: [[Int]]? = nil, inCallMilliseconds: Int64 = 0,
        credentialDigest: String? = nil, replaces: String? = nil, hostSince: Int64? = nil, recording: Bool? = nil,
        recordingForbiddenBy: String? = nil, joinedAt: Int64? = nil, terminal: Bool? = nil
    ) {
        self.terminal = terminal
        self.joinedAt = joinedAt
        self.hostSince = hostSince
        self.recording = recording
        self.recordingForbiddenBy = recordingForbiddenBy
        self.credentialDigest = credentialDigest
        self.replaces = replaces
        self.id = id
        self.name = name
        self.broadcaster = broadcaster
        self.audioMuted = audioMuted
        self.videoMuted = videoMuted
        self.ssrcBlock = ssrcBlock
        self.account = account
        self.videoLayers = videoLayers
        self.inCallMilliseconds = inCallMilliseconds
    }
}

/// The cluster's bus as the relay sees it: publish what others must know; events from other nodes arrive through the
/// handler given when it started.
public protocol ClusterBus: AnyObject, Sendable {
    /// This node's id.
    var nodeID: String { get }
    /// Sends `event` to every other node, in order after earlier ones; never blocks (a full queue drops and counts).
    func publish(_ event: ClusterEvent)
}

/// What a node tells the registry each second.
public struct NodeLoad: Sendable, Equatable {
    public var members: Int
    public var rooms: Int
    public var packetsPerSecond: Double
    /// Share of one core this process used over the last second (1.0 = one core busy).
    public var cpu: Double
    /// Trunks to other nodes that are up (their hello answered).
    public var trunksUp: Int

    public init(members: Int = 0, rooms: Int = 0, packetsPerSecond: Double = 0, cpu: Double = 0, trunksUp: Int = 0) {
        self.members = members
        self.rooms = rooms
        self.packetsPerSecond = packetsPerSecond
        self.cpu = cpu
        self.trunksUp = trunksUp
    }
}

/// What a node's membership in the cluster counted since it started, for `/metrics`.
public struct ClusterCounters: Sendable, Equatable {
    /// Heartbeats that did not reach the database.
    public var heartbeatsFailed = 0
    /// Other nodes this node found dead and cleared.
    public var nodesReaped = 0
    /// Times this node found itself declared dead (it was silent) and announced itself again.
    public var revivals = 0
    /// Events published on the bus, received from other nodes, and dropped because the outbox was full.
    public var eventsPublished = 0
    public var eventsReceived = 0
    public var eventsDropped = 0
    /// Times the bus connected (the first, then each reconnection).
    public var busConnections = 0

    public init() {}
}

/// Another live node's trunk address, as the registry has it.
public struct TrunkPeer: Sendable, Equatable {
    public var node: String
    /// HOST:PORT where it takes trunk datagrams.
    public var address: String
    /// HOST:PORT where clients reach it (`--advertise`): where a draining node moves its members.
    public var advertise: String
    /// Members in calls there at its last heartbeat.
    public var members: Int

    public init(node: String, address: String, advertise: String = "", members: Int = 0) {
        self.node = node
        self.address = address
        self.advertise = advertise
        self.members = members
    }
}

/// Where the cluster says a room lives.
public enum RoomPlacement: Equatable, Sendable {
    /// On this node: the join goes ahead.
    case here
    /// On another node: the joiner is sent there.
    case elsewhere(server: String, node: String)
}

/// Places rooms on the nodes of a cluster: a room lives on one node at a time.
public protocol RoomPlacer: AnyObject, Sendable {
    /// Where `room` lives, placing it on the least-loaded live node when it lives nowhere. `answer` is called once,
    /// on any thread; when the cluster cannot be asked, with `.here` (a join is never refused for the database).
    func place(_ room: String, answer: @escaping @Sendable (RoomPlacement) -> Void)
    /// The room's last member here left: it no longer lives on this node.
    func release(_ room: String)
}
