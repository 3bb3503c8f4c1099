import ParleySecurity

/// Why a trunk datagram was refused, as `/metrics` counts it (`parley_trunk_refused_total{reason}`): a fixed set.
public enum TrunkRefusedReason: String, Sendable, Equatable, CaseIterable {
    /// Not a trunk datagram, an unknown version or kind, cut short or too long.
    case malformed
    /// Without the cluster secret's HMAC: a stranger, or a node with another secret.
    case forged
    /// A hello or control message seen before.
    case replayed
    /// A hello too far from this node's clock.
    case outOfTime = "out_of_time"
    /// A hello for another node.
    case wrongRecipient = "wrong_recipient"
    /// Media or control from an address no accepted hello came from.
    case unboundSource = "unbound_source"
    /// A limit was reached (remembered hellos, nodes).
    case limit

    init(_ refusal: TrunkRefusal) {
        switch refusal {
        case .notTrunk, .unsupportedVersion, .unknownKind, .truncated, .badNodeID, .trailingBytes, .payloadTooLarge:
            self = .malformed
        case .forged: self = .forged
        case .replayed: self = .replayed
        case .outsideTimeWindow: self = .outOfTime
        case .wrongRecipient: self = .wrongRecipient
        case .replayMemoryFull, .tooManyNodes: self = .limit
        }
    }
}

/// This node's trunks to the other nodes of its cluster: which nodes it should reach (from the registry), which
/// proved the cluster secret and from where, and the hellos due. A trunk is up while a hello or answer from its node
/// was accepted within `silentAfter`; media and control are taken only from the address that hello came from.
/// Pure and generic over the address type: the time is passed in, the sockets are the relay's.
public struct TrunkLinks<Address: Hashable & Sendable>: Sendable {
    /// One other node.
    public struct Link: Sendable, Equatable {
        /// Where the registry says it takes trunk datagrams (nil: it reached us first, the registry not yet read).
        public var registered: Address?
        /// Where its accepted hellos came from: its media and control are taken from here only.
        public var proven: Address?
        /// When a hello or answer from it was last accepted.
        public var lastAccepted: Duration?
        /// When this node last sent it a hello.
        public var lastHello: Duration?
    }

    /// Hellos to a node that is not up are sent this often; to one that is up, as a keepalive, `keepalive`.
    public static var retry: Duration { .seconds(1) }
    public static var keepalive: Duration { .seconds(3) }
    /// A node not heard from for this long is down.
    public static var silentAfter: Duration { .seconds(10) }
    /// At most this many other nodes.
    public static var maximumLinks: Int { 1_024 }

    public private(set) var gate: TrunkGate
    public private(set) var links: [String: Link] = [:]
    private var nodeByAddress: [Address: String] = [:]
    /// Datagrams refused, by reason.
    public private(set) var refused: [TrunkRefusedReason: Int] = [:]

    public init(gate: TrunkGate) {
        self.gate = gate
    }

    /// What a received datagram was.
    public enum Received: Sendable, Equatable {
        /// A hello, accepted: send `answer` back to where it came from. `cameUp`: the trunk was down before it.
        case hello(node: String, answer: [UInt8], cameUp: Bool)
        /// An answer to this node's hello, accepted.
        case answered(node: String, cameUp: Bool)
        /// A control message from a proven node.
        case control(TrunkControl)
        /// Media from a proven node: the member's datagram starts `TrunkPacket.mediaOverhead` bytes in.
        case media(node: String)
        /// Refused (counted).
        case refused(TrunkRefusedReason)
    }

    /// Whether `node`'s trunk is up at `now`.
    public func isUp(_ node: String, at now: Duration) -> Bool {
        guard let accepted = links[node]?.lastAccepted else { return false }
        return now - accepted < Self.silentAfter
    }

    /// Nodes whose trunk is up at `now`.
    public func upNodes(at now: Duration) -> [String] { links.keys.filter { isUp($0, at: now) }.sorted() }

    /// The registry's list of the other live nodes that take trunks: new ones get hellos, ones gone from it are
    /// forgotten (a node that left or was found dead).
    public mutating func setPeers(_ peers: [(node: String, address: Address)]) {
        let named = Dictionary(peers.prefix(Self.maximumLinks).map { ($0.node, $0.address) }) { first, _ in first }
        for node in links.keys where named[node] == nil {
            if let proven = links[node]?.proven { nodeByAddress[proven] = nil }
            links[node] = nil
        }
        for (node, address) in named where node != gate.nodeID {
            links[node, default: Link()].registered = address
        }
    }

    /// The hellos due at `now`: `wallClock` is milliseconds since 1970, `nonce` makes 16 random bytes.
    public mutating func dueHellos(now: Duration, wallClock: Int64, nonce: () -> [UInt8]) -> [(Address, [UInt8])] {
        var out: [(Address, [UInt8])] = []
        for (node, link) in links.sorted(by: { $0.key < $1.key }) {
            guard let address = link.registered ?? link.proven else { continue }
            let interval = isUp(node, at: now) ? Self.keepalive : Self.retry
            if let last = link.lastHello, now - last < interval { continue }
            links[node]?.lastHello = now
            out.append((address, gate.hello(to: node, now: wallClock, nonce: nonce())))
        }
        return out
    }

    /// One datagram from the trunk socket.
    public mutating func receive(_ bytes: [UInt8], from source: Address, now: Duration, wallClock: Int64) -> Received {
        let kind: TrunkPacketKind
        do {
            kind = try TrunkPacket.kind(of: bytes)
        } catch {
            return refuse(TrunkRefusedReason(error))
        }
        switch kind {
        case .hello, .helloAnswer:
            let hello: TrunkHello
            do {
                hello = try gate.accept(hello: bytes, now: wallClock).1
            } catch {
                return refuse(TrunkRefusedReason(error))
            }
            guard hello.from != gate.nodeID, links[hello.from] != nil || links.count < Self.maximumLinks else {
                return refuse(.limit)
            }
            let cameUp = !isUp(hello.from, at: now)
            if let old = links[hello.from]?.proven, old != source { nodeByAddress[old] = nil }
            links[hello.from, default: Link()].proven = source
            links[hello.from]?.lastAccepted = now
            nodeByAddress[source] = hello.from
            return kind == .hello
                ? .hello(node: hello.from, answer: gate.answer(hello, now: wallClock), cameUp: cameUp)
                : .answered(node: hello.from, cameUp: cameUp)
        case .control:
            guard let node = nodeByAddress[source] else { return refuse(.unboundSource) }
            do {
                let control = try gate.accept(control: bytes)
                guard control.from == node else { return refuse(.unboundSource) }
                return .control(control)
            } catch {
                return refuse(TrunkRefusedReason(error))
            }
        case .media:
            guard let node = nodeByAddress[source] else { return refuse(.unboundSource) }
            return .media(node: node)
        }
    }

    /// The node whose proven address sent a media datagram (`TrunkPacket.isMedia`); nil, counted as unbound, for
    /// any other source.
    public mutating func mediaNode(from source: Address) -> String? {
        guard let node = nodeByAddress[source] else {
            _ = refuse(.unboundSource)
            return nil
        }
        return node
    }

    /// A control message with `payload`, signed and numbered by this node's gate.
    public mutating func control(_ payload: [UInt8]) throws(TrunkRefusal) -> [UInt8] {
        try gate.control(payload)
    }

    /// The proven address of `node`, where its media and control go.
    public func address(of node: String) -> Address? { links[node]?.proven }

    private mutating func refuse(_ reason: TrunkRefusedReason) -> Received {
        refused[reason, default: 0] += 1
        return .refused(reason)
    }
}
