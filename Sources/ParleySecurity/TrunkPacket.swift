// The trunk between two relays of a cluster: one UDP flow per pair of nodes, carrying the media of the rooms they
// share (one copy of a stream per node, never per member) and the control messages about it. Every datagram starts
// with "PT", a version and a kind; the first byte 0x50 has the top bits 01, so no RTP or RTCP datagram (version 2,
// top bits 10) is ever taken for one.
//
//  0                   1                   2                   3
//  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |   'P' (0x50)  |   'T' (0x54)  |  version = 1  |     kind      |
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// kind 1, hello (a bind: "node FROM speaks from this address"), and kind 2, its answer:
// | time, ms since 1970 (64 bits) | nonce (16 bytes) | len | FROM | len | TO | HMAC-SHA256 (32 bytes) |
//   The answer repeats the hello's nonce. A hello is accepted once (nonce remembered for the time window), within
//   `TrunkGate.timeWindow` of the receiver's clock, addressed to the receiver.
// kind 3, control:
// | boot, ms (64 bits) | sequence (64 bits) | len | FROM | payload length (16 bits) | payload | HMAC (32 bytes) |
//   Accepted only in increasing (boot, sequence) order per node: a replayed or reordered one is refused.
// kind 4, media: the RTP or RTCP datagram of a member, untouched (SFrame ciphertext stays ciphertext), after the
//   4 bytes above. Not authenticated per packet (that would cost an HMAC per packet): a node accepts trunk media
//   only from the address of a node whose hello it accepted, as it accepts a member's media only from its bound
//   address.
//
// The HMAC covers everything before it, preceded by the context "parley trunk v1", under the cluster's secret.

/// One trunk datagram's kind.
public enum TrunkPacketKind: UInt8, Sendable, Equatable, CaseIterable {
    case hello = 1
    case helloAnswer = 2
    case control = 3
    case media = 4
}

/// A hello or its answer: who speaks, to whom, when, with which nonce.
public struct TrunkHello: Sendable, Equatable {
    public var from: String
    public var to: String
    /// Milliseconds since 1970 on the sender's clock.
    public var time: Int64
    public var nonce: [UInt8]

    public init(from: String, to: String, time: Int64, nonce: [UInt8]) {
        self.from = from
        self.to = to
        self.time = time
        self.nonce = nonce
    }
}

/// A control message: its sender, the sender's boot and sequence, and the payload.
public struct TrunkControl: Sendable, Equatable {
    public var from: String
    /// When the sender started (ms since 1970): a restarted node starts its sequence again under a later boot.
    public var boot: Int64
    public var sequence: UInt64
    public var payload: [UInt8]

    public init(from: String, boot: Int64, sequence: UInt64, payload: [UInt8]) {
        self.from = from
        self.boot = boot
        self.sequence = sequence
        self.payload = payload
    }
}

/// Why a trunk datagram was refused; each says what was wrong.
public enum TrunkRefusal: Error, Sendable, Equatable, CustomStringConvertible {
    case notTrunk
    case unsupportedVersion(Int)
    case unknownKind(UInt8)
    case truncated(TrunkPacketKind, needed: Int, available: Int)
    case badNodeID(String)
    case trailingBytes(TrunkPacketKind, count: Int)
    case payloadTooLarge(Int)
    case forged(TrunkPacketKind)
    case wrongRecipient(String)
    case outsideTimeWindow(ageMilliseconds: Int64)
    case replayed(TrunkPacketKind)
    case replayMemoryFull
    case tooManyNodes

    public var description: String {
        switch self {
        case .notTrunk: return "not a trunk datagram (no \"PT\" magic)"
        case .unsupportedVersion(let version): return "trunk version \(version), this relay speaks 1"
        case .unknownKind(let kind): return "unknown trunk datagram kind \(kind)"
        case .truncated(let kind, let needed, let available):
            return "trunk \(kind) truncated: needed \(needed) bytes, \(available) left"
        case .badNodeID(let reason): return "trunk node id refused: \(reason)"
        case .trailingBytes(let kind, let count): return "trunk \(kind) has \(count) bytes after its end"
        case .payloadTooLarge(let count):
            return "trunk control payload of \(count) bytes, more than \(TrunkGate.maximumControlPayload)"
        case .forged(let kind): return "trunk \(kind) does not carry the cluster secret's HMAC (wrong or no secret)"
        case .wrongRecipient(let node): return "trunk hello addressed to node \(node), not to this one"
        case .outsideTimeWindow(let age):
            return "trunk hello \(age) ms away from this node's clock, more than \(TrunkGate.timeWindow) ms"
        case .replayed(let kind): return "trunk \(kind) seen before (replayed)"
        case .replayMemoryFull:
            return "trunk hellos refused: \(TrunkGate.maximumRememberedNonces) nonces remembered in the time window"
        case .tooManyNodes: return "trunk control from more than \(TrunkGate.maximumNodes) nodes"
        }
    }
}

extension TrunkPacketKind: CustomStringConvertible {
    public var description: String {
        switch self {
        case .hello: return "hello"
        case .helloAnswer: return "hello answer"
        case .control: return "control"
        case .media: return "media"
        }
    }
}

/// The trunk's framing: the four leading bytes and what follows them.
public enum TrunkPacket {
    /// "PT", version 1.
    public static let magic: [UInt8] = [0x50, 0x54, 1]
    /// The bytes a media datagram gains on the trunk.
    public static let mediaOverhead = 4
    static let context = Array("parley trunk v1".utf8)
    static let nonceBytes = 16
    static let macBytes = 32

    /// Whether `bytes` starts like a trunk datagram (a cheap check before anything else).
    public static func isTrunk(_ bytes: UnsafeRawBufferPointer) -> Bool {
        bytes.count >= 4 && bytes[0] == 0x50 && bytes[1] == 0x54
    }

    /// Whether `bytes` is a version-1 media datagram with something after its 4-byte header (read in place: the
    /// hot path never copies a media datagram to classify it).
    public static func isMedia(_ bytes: UnsafeRawBufferPointer) -> Bool {
        bytes.count > mediaOverhead && isTrunk(bytes) && bytes[2] == 1 && bytes[3] == TrunkPacketKind.media.rawValue
    }

    /// The kind of a trunk datagram, refusing another magic, version or kind.
    public static func kind(of bytes: [UInt8]) throws(TrunkRefusal) -> TrunkPacketKind {
        guard bytes.withUnsafeBytes(isTrunk) else { throw .notTrunk }
        guard bytes[2] == 1 else { throw .unsupportedVersion(Int(bytes[2])) }
        guard let kind = TrunkPacketKind(rawValue: bytes[3]) else { throw .unknownKind(bytes[3]) }
        return kind
    }

    /// A member's RTP or RTCP datagram framed for the trunk.
    public static func media(_ datagram: some Collection<UInt8>) -> [UInt8] {
        var out = magic + [TrunkPacketKind.media.rawValue]
        out.append(contentsOf: datagram)
        return out
    }

    /// The node ids trunk datagrams carry: 1 to 128 bytes of printable ASCII without spaces (as `--node-id`).
    public static func checkNodeID(_ id: String) throws(TrunkRefusal) {
        let bytes = Array(id.utf8)
        guard !bytes.isEmpty, bytes.count <= 128 else { throw .badNodeID("\(bytes.count) bytes, not 1 to 128") }
        guard bytes.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw .badNodeID("only printable ASCII without spaces")
        }
    }
}

/// Reads fields in order, refusing what runs short.
struct TrunkReader {
    let bytes: [UInt8]
    let kind: TrunkPacketKind
    var offset = 4

    mutating func take(_ count: Int) throws(TrunkRefusal) -> ArraySlice<UInt8> {
        guard bytes.count - offset >= count else {
            throw .truncated(kind, needed: count, available: bytes.count - offset)
        }
        defer { offset += count }
        return bytes[offset..<(offset + count)]
    }

    mutating func u64() throws(TrunkRefusal) -> UInt64 {
        try take(8).reduce(0) { $0 << 8 | UInt64($1) }
    }

    mutating func u16() throws(TrunkRefusal) -> Int {
        try take(2).reduce(0) { $0 << 8 | Int($1) }
    }

    mutating func nodeID() throws(TrunkRefusal) -> String {
        let count = Int(try take(1).first!)
        let id = String(decoding: try take(count), as: UTF8.self)
        try TrunkPacket.checkNodeID(id)
        return id
    }

    func finish() throws(TrunkRefusal) {
        if offset != bytes.count { throw .trailingBytes(kind, count: bytes.count - offset) }
    }
}

extension Array where Element == UInt8 {
    mutating func appendTrunkU64(_ value: UInt64) {
        for shift in stride(from: 56, through: 0, by: -8) { append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
    }

    mutating func appendTrunkNodeID(_ id: String) {
        let bytes = Array(id.utf8.prefix(128))
        append(UInt8(bytes.count))
        append(contentsOf: bytes)
    }
}
