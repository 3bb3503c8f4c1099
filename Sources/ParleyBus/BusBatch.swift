import Foundation

/// One notification on the bus: the bus protocol's version, who sent it, when, and its events in order.
public struct BusBatch: Codable, Equatable, Sendable {
    /// The version of the bus protocol this node speaks. A node refuses a batch of a newer one by name
    /// (`BusBatchError.newerVersion`) rather than misread it; a batch without one is of version 1.
    public static let currentVersion = 1

    public var version = BusBatch.currentVersion
    public var node: String
    /// Milliseconds since 1970 when it was published (the bus's lag is measured from it).
    public var sent: Int64
    public var events: [ClusterEvent]

    public init(version: Int = BusBatch.currentVersion, node: String, sent: Int64, events: [ClusterEvent]) {
        self.version = version
        self.node = node
        self.sent = sent
        self.events = events
    }

    private enum CodingKeys: String, CodingKey { case version, node, sent, events }

    public init(from decoder: any Decoder) throws {
        let fields = try decoder.container(keyedBy: CodingKeys.self)
        version = try fields.decodeIfPresent(Int.self, forKey: .version) ?? 1
        node = try fields.decode(String.self, forKey: .node)
        sent = try fields.decode(Int64.self, forKey: .sent)
        events = try fields.decode([ClusterEvent].self, forKey: .events)
    }

    /// The batch as a notification's payload (JSON).
    public func encoded() throws -> String {
        String(decoding: try JSONEncoder().encode(self), as: UTF8.self)
    }

    /// Reads a notification's payload: the version first, so a newer node's batch (whose events this node may not
    /// know) is named as such rather than as garbage.
    public static func decode(_ payload: String) throws(BusBatchError) -> BusBatch {
        struct Header: Decodable {
            var version: Int?
            var node: String?
        }
        let data = Data(payload.utf8)
        guard let header = try? JSONDecoder().decode(Header.self, from: data) else { throw .undecodable }
        let version = header.version ?? 1
        guard version <= currentVersion else {
            throw .newerVersion(version, node: String((header.node ?? "?").prefix(64)))
        }
        guard let batch = try? JSONDecoder().decode(BusBatch.self, from: data) else { throw .undecodable }
        return batch
    }

    /// `events` as payloads of at most `limit` bytes each, in order; an event whose list is too long for one payload
    /// is split in halves until each half fits.
    public static func payloads(for events: [ClusterEvent], node: String, sent: Int64, limit: Int) throws -> [String] {
        var pieces: [ClusterEvent] = []
        for event in events { pieces += try split(event, limit: limit) }
        var payloads: [String] = []
        var current: [ClusterEvent] = []
        func flush() throws {
            guard !current.isEmpty else { return }
            payloads.append(try BusBatch(node: node, sent: sent, events: current).encoded())
            current.removeAll()
        }
        for piece in pieces {
            current.append(piece)
            if try BusBatch(node: node, sent: sent, events: current).encoded().utf8.count > limit {
                current.removeLast()
                try flush()
                current = [piece]
            }
        }
        try flush()
        return payloads
    }

    /// An event small enough for one payload, or its list halved until each half is.
    static func split(_ event: ClusterEvent, limit: Int) throws -> [ClusterEvent] {
        let size = try BusBatch(node: "", sent: 0, events: [event]).encoded().utf8.count
        // Room for the node's name and the time of the batch it goes into.
        guard size > limit - 200 else { return [event] }
        switch event {
        case .messages(let references) where references.count > 1:
            let half = references.count / 2
            return try split(.messages(Array(references[..<half])), limit: limit)
                + split(.messages(Array(references[half...])), limit: limit)
        case .receipts(let reader, let read, let marks) where marks.count > 1:
            let half = marks.count / 2
            return try split(.receipts(reader: reader, read: read, marks: Array(marks[..<half])), limit: limit)
                + split(.receipts(reader: reader, read: read, marks: Array(marks[half...])), limit: limit)
        default:
            throw BusBatchError.eventTooLarge(size, limit: limit)
        }
    }
}

/// A bus notification this node cannot take, or an event it cannot send.
public enum BusBatchError: Error, Equatable, CustomStringConvertible {
    case undecodable
    case newerVersion(Int, node: String)
    case eventTooLarge(Int, limit: Int)

    public var description: String {
        switch self {
        case .undecodable:
            "a bus notification that is not a batch of cluster events"
        case .newerVersion(let version, let node):
            """
            node \(node) speaks bus version \(version), newer than this node's \(BusBatch.currentVersion): its events \
            are ignored until this node is upgraded
            """
        case .eventTooLarge(let size, let limit):
            "a cluster event of \(size) bytes does not fit a notification (\(limit) bytes)"
        }
    }
}
