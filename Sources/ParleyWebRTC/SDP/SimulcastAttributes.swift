/// Which way a rid's stream flows, from the maker's side (RFC 8851).
public enum RIDDirection: String, Sendable, Equatable {
    /// The maker sends this stream.
    case send
    /// The maker receives this stream.
    case recv

    /// The other side's view of the same stream.
    public var reversed: RIDDirection { self == .send ? .recv : .send }
}

/// a=rid: one RTP stream of a simulcast section, "q send" or "h send max-width=640" (RFC 8851 §4).
public struct RIDDescription: SDPAttributeValue {
    public static let attributeName = "rid"
    /// The stream's id, as carried in the rtp-stream-id header extension.
    public var id: String
    /// Which way the stream flows.
    public var direction: RIDDirection
    /// Restrictions ("pt=96,97", "max-width=1280") in order.
    public var restrictions: [SDPParameter]

    /// A rid line from its fields.
    public init(id: String, direction: RIDDirection, restrictions: [SDPParameter] = []) {
        self.id = id
        self.direction = direction
        self.restrictions = restrictions
    }

    public init(attributeValue text: String) throws(SDPError) {
        let name = Self.attributeName
        let fields = SDPScan.fields(text)
        guard fields.count == 2 || fields.count == 3 else {
            throw SDPScan.failure(name, "expected \"<id> send|recv [<restrictions>]\"")
        }
        id = try Self.ridID(fields[0])
        guard let direction = RIDDirection(rawValue: String(fields[1])) else {
            throw SDPScan.failure(name, "direction \"\(fields[1])\" is neither send nor recv")
        }
        self.direction = direction
        restrictions = fields.count == 3 ? try SDPParameter.list(fields[2], name) : []
    }

    public var attributeValue: String {
        restrictions.isEmpty
            ? "\(id) \(direction.rawValue)" : "\(id) \(direction.rawValue) \(SDPParameter.text(restrictions))"
    }

    /// A rid id: letters, digits, "-" and "_" (RFC 8851 §10), at most `SDPLimits.maxTokenBytes` bytes.
    static func ridID(_ text: some StringProtocol, _ name: String = attributeName) throws(SDPError) -> String {
        let id = try SDPScan.token(text, name, "rid")
        guard id.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }) else {
            throw SDPScan.failure(name, "rid \"\(id)\" holds a character other than A-Z, a-z, 0-9, - and _")
        }
        return id
    }
}

/// One stream in a simulcast list: a rid, possibly paused ("~h").
public struct SimulcastStream: Sendable, Equatable {
    /// The rid.
    public var rid: String
    /// Whether the stream starts paused ("~").
    public var paused: Bool

    /// A simulcast stream from its rid.
    public init(rid: String, paused: Bool = false) {
        self.rid = rid
        self.paused = paused
    }
}

/// a=simulcast: the streams sent and received, "send q;h;f" (RFC 8853 §5.1). Each direction is a list of streams,
/// each a list of alternative rids ("send 1,2;3": stream one is rid 1 or 2, stream two is rid 3).
public struct Simulcast: SDPAttributeValue {
    public static let attributeName = "simulcast"
    /// The streams the maker sends, in the order written, each as its alternatives.
    public var send: [[SimulcastStream]]
    /// The streams the maker receives, in the order written, each as its alternatives.
    public var recv: [[SimulcastStream]]

    /// A simulcast line from its two lists; at least one must not be empty.
    public init(send: [[SimulcastStream]] = [], recv: [[SimulcastStream]] = []) {
        self.send = send
        self.recv = recv
    }

    public init(attributeValue text: String) throws(SDPError) {
        let name = Self.attributeName
        let fields = SDPScan.fields(text)
        guard fields.count == 2 || fields.count == 4 else {
            throw SDPScan.failure(name, "expected \"send|recv <streams>\" once or twice")
        }
        var send: [[SimulcastStream]]?
        var recv: [[SimulcastStream]]?
        for pair in stride(from: 0, to: fields.count, by: 2) {
            let streams = try Self.streams(fields[pair + 1])
            switch fields[pair] {
            case "send" where send == nil: send = streams
            case "recv" where recv == nil: recv = streams
            default: throw SDPScan.failure(name, "\"\(fields[pair])\" is not a first send or recv")
            }
        }
        self.send = send ?? []
        self.recv = recv ?? []
    }

    public var attributeValue: String {
        var parts: [String] = []
        if !send.isEmpty { parts += ["send", Self.text(send)] }
        if !recv.isEmpty { parts += ["recv", Self.text(recv)] }
        return parts.joined(separator: " ")
    }

    /// The first alternative of each stream in `list`, in order: the rids a sender uses when it uses one each.
    public static func firstRIDs(_ list: [[SimulcastStream]]) -> [String] { list.compactMap { $0.first?.rid } }

    private static func streams(_ text: Substring) throws(SDPError) -> [[SimulcastStream]] {
        var streams: [[SimulcastStream]] = []
        for alternatives in text.split(separator: ";", omittingEmptySubsequences: false) {
            var stream: [SimulcastStream] = []
            for item in alternatives.split(separator: ",", omittingEmptySubsequences: false) {
                let paused = item.hasPrefix("~")
                stream.append(
                    SimulcastStream(
                        rid: try RIDDescription.ridID(paused ? item.dropFirst() : item, attributeName), paused: paused))
            }
            streams.append(try SDPScan.bounded(stream, attributeName, "alternatives"))
        }
        return try SDPScan.bounded(streams, attributeName, "streams")
    }

    private static func text(_ streams: [[SimulcastStream]]) -> String {
        streams.map { $0.map { ($0.paused ? "~" : "") + $0.rid }.joined(separator: ",") }.joined(separator: ";")
    }
}
