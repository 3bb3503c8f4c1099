/// One node's side of its trunks' authentication: makes its hellos and control messages with the cluster secret and
/// checks the ones it receives (the secret's HMAC, the addressee, the time, replays). Pure: the time is passed in.
public struct TrunkGate: Sendable {
    /// A hello more than this many milliseconds away from the receiver's clock is refused.
    public static let timeWindow: Int64 = 30_000
    /// Hello nonces remembered within the time window; past it new hellos are refused until old ones expire.
    public static let maximumRememberedNonces = 4_096
    /// Nodes whose control sequence is remembered.
    public static let maximumNodes = 1_024
    /// The largest control payload.
    public static let maximumControlPayload = 1_200

    public let nodeID: String
    /// When this node started (ms since 1970): its control messages' boot.
    public let boot: Int64
    private let secret: ClusterSecret
    private var nextSequence: UInt64 = 1
    /// Hello nonces seen, with when they may be forgotten.
    private var nonces: [[UInt8]: Int64] = [:]
    /// The last (boot, sequence) accepted from each node.
    private var controls: [String: (boot: Int64, sequence: UInt64)] = [:]

    public init(nodeID: String, boot: Int64, secret: ClusterSecret) throws(TrunkRefusal) {
        try TrunkPacket.checkNodeID(nodeID)
        self.nodeID = nodeID
        self.boot = boot
        self.secret = secret
    }

    // MARK: Hellos

    /// A hello to `node` at `now` (ms since 1970) with a fresh random `nonce` of 16 bytes.
    public func hello(to node: String, now: Int64, nonce: [UInt8]) -> [UInt8] {
        signedHello(.hello, TrunkHello(from: nodeID, to: node, time: now, nonce: nonce))
    }

    /// Checks a hello or an answer to this node: the secret's HMAC, addressed here, within the time window, and
    /// (for a hello) not seen before. A hello accepted is remembered until it leaves the window.
    public mutating func accept(hello bytes: [UInt8], now: Int64) throws(TrunkRefusal) -> (TrunkPacketKind, TrunkHello)
    {
        let kind = try TrunkPacket.kind(of: bytes)
        guard kind == .hello || kind == .helloAnswer else { throw .unknownKind(kind.rawValue) }
        var reader = TrunkReader(bytes: bytes, kind: kind)
        let time = Int64(bitPattern: try reader.u64())
        let nonce = Array(try reader.take(TrunkPacket.nonceBytes))
        let from = try reader.nodeID()
        let to = try reader.nodeID()
        let signedCount = reader.offset
        let mac = try reader.take(TrunkPacket.macBytes)
        try reader.finish()
        guard secret.verify(mac, of: TrunkPacket.context + bytes[0..<signedCount]) else { throw .forged(kind) }
        guard to == nodeID else { throw .wrongRecipient(to) }
        let age = now - time
        guard abs(age) <= Self.timeWindow else { throw .outsideTimeWindow(ageMilliseconds: age) }
        if kind == .hello {
            forgetExpiredNonces(now: now)
            guard nonces[nonce] == nil else { throw .replayed(kind) }
            guard nonces.count < Self.maximumRememberedNonces else { throw .replayMemoryFull }
            nonces[nonce] = time + Self.timeWindow
        }
        return (kind, TrunkHello(from: from, to: to, time: time, nonce: nonce))
    }

    /// The answer to an accepted hello: the same nonce, back to its sender.
    public func answer(_ hello: TrunkHello, now: Int64) -> [UInt8] {
        signedHello(.helloAnswer, TrunkHello(from: nodeID, to: hello.from, time: now, nonce: hello.nonce))
    }

    private func signedHello(_ kind: TrunkPacketKind, _ hello: TrunkHello) -> [UInt8] {
        var out = TrunkPacket.magic + [kind.rawValue]
        out.appendTrunkU64(UInt64(bitPattern: hello.time))
        out += hello.nonce.prefix(TrunkPacket.nonceBytes)
        out += [UInt8](repeating: 0, count: max(0, TrunkPacket.nonceBytes - hello.nonce.count))
        out.appendTrunkNodeID(hello.from)
        out.appendTrunkNodeID(hello.to)
        out += secret.authenticationCode(TrunkPacket.context + out)
        return out
    }

    private mutating func forgetExpiredNonces(now: Int64) {
        guard nonces.count >= Self.maximumRememberedNonces / 2 else { return }
        nonces = nonces.filter { $0.value >= now }
    }

    // MARK: Control

    /// A control message carrying `payload` (at most `maximumControlPayload` bytes), numbered after the last.
    public mutating func control(_ payload: [UInt8]) throws(TrunkRefusal) -> [UInt8] {
        guard payload.count <= Self.maximumControlPayload else { throw .payloadTooLarge(payload.count) }
        var out = TrunkPacket.magic + [TrunkPacketKind.control.rawValue]
        out.appendTrunkU64(UInt64(bitPattern: boot))
        out.appendTrunkU64(nextSequence)
        nextSequence += 1
        out.appendTrunkNodeID(nodeID)
        out += [UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        out += payload
        out += secret.authenticationCode(TrunkPacket.context + out)
        return out
    }

    /// Checks a control message: the secret's HMAC, and later than the last one accepted from its node (a node's
    /// later boot starts again).
    public mutating func accept(control bytes: [UInt8]) throws(TrunkRefusal) -> TrunkControl {
        let kind = try TrunkPacket.kind(of: bytes)
        guard kind == .control else { throw .unknownKind(kind.rawValue) }
        var reader = TrunkReader(bytes: bytes, kind: kind)
        let boot = Int64(bitPattern: try reader.u64())
        let sequence = try reader.u64()
        let from = try reader.nodeID()
        let length = try reader.u16()
        guard length <= Self.maximumControlPayload else { throw .payloadTooLarge(length) }
        let payload = Array(try reader.take(length))
        let signedCount = reader.offset
        let mac = try reader.take(TrunkPacket.macBytes)
        try reader.finish()
        guard secret.verify(mac, of: TrunkPacket.context + bytes[0..<signedCount]) else { throw .forged(kind) }
        if let last = controls[from] {
            guard boot > last.boot || (boot == last.boot && sequence > last.sequence) else { throw .replayed(kind) }
        } else {
            guard controls.count < Self.maximumNodes else { throw .tooManyNodes }
        }
        controls[from] = (boot, sequence)
        return TrunkControl(from: from, boot: boot, sequence: sequence, payload: payload)
    }
}
