// The payload of a trunk control message (authenticated and ordered by `TrunkGate`). Type 1, layer needs: what the
// receivers on the sending node need of some senders of the receiving node, so that a trunk carries only those
// layers and a layer nobody needs anywhere is paused at its sender. Type 2, layers sent: which layers some senders
// of the sending node have their uplinks carry (`video-sending`), so that receivers on the receiving node of a layer
// left out get a smaller one. A sender is named by its SSRC block, the one id a member has on every node.
//
//  0                   1                   2                   3
//  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |  type = 1, 2  |     count     |  count × (SSRC block, 32 bits; layer mask, 8 bits: bit i = layer i)
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// Each entry stands alone (a sender left out keeps what was said of it before), so a node with more senders than
// one message holds sends several, and each is sent again every second in case a datagram was lost.

/// What one node's receivers need of senders on another node.
public struct TrunkLayerNeeds: Sendable, Equatable {
    /// One sender and the layers needed of it, largest first.
    public struct Entry: Sendable, Equatable {
        public var block: UInt32
        public var active: [Bool]

        public init(block: UInt32, active: [Bool]) {
            self.block = block
            self.active = active
        }
    }

    /// What a message says of its senders.
    public enum Kind: UInt8, Sendable, Equatable {
        /// The layers the sending node's receivers need.
        case needs = 1
        /// The layers the senders send (they are on the sending node).
        case sending = 2
    }

    public static let type: UInt8 = Kind.needs.rawValue
    /// Entries in one message (2 + 200 × 5 bytes, within `TrunkGate.maximumControlPayload`).
    public static let maximumEntries = 200
    /// Layers a mask can name.
    public static let maximumLayers = 8

    public var kind: Kind
    public var entries: [Entry]

    public init(_ kind: Kind = .needs, entries: [Entry]) {
        self.kind = kind
        self.entries = entries
    }

    /// Why a payload was refused; each says what was wrong.
    public enum Refusal: Error, Sendable, Equatable, CustomStringConvertible {
        case empty
        case unknownType(UInt8)
        case tooManyEntries(Int)
        case wrongLength(expected: Int, got: Int)
        case notABlock(UInt32)

        public var description: String {
            switch self {
            case .empty: return "trunk control payload is empty"
            case .unknownType(let type):
                return "unknown trunk control message type \(type) (layer needs is 1, layers sent 2)"
            case .tooManyEntries(let count):
                return "layer needs with \(count) entries, more than \(TrunkLayerNeeds.maximumEntries)"
            case .wrongLength(let expected, let got):
                return "layer needs of \(got) bytes where its count says \(expected)"
            case .notABlock(let ssrc): return "layer needs names SSRC \(ssrc), not the start of a block of four"
            }
        }
    }

    /// The payload; at most `maximumEntries` entries (callers split longer lists).
    public func serialized() -> [UInt8] {
        var out: [UInt8] = [kind.rawValue, UInt8(min(entries.count, Self.maximumEntries))]
        for entry in entries.prefix(Self.maximumEntries) {
            for shift in stride(from: 24, through: 0, by: -8) {
                out.append(UInt8(truncatingIfNeeded: entry.block >> shift))
            }
            var mask: UInt8 = 0
            for (layer, needed) in entry.active.prefix(Self.maximumLayers).enumerated() where needed {
                mask |= 1 << layer
            }
            out.append(mask)
        }
        return out
    }

    /// Reads a payload; masks come back with `maximumLayers` flags (a sender's own count cuts them).
    public init(parsing bytes: [UInt8]) throws(Refusal) {
        guard let type = bytes.first else { throw .empty }
        guard let kind = Kind(rawValue: type) else { throw .unknownType(type) }
        guard bytes.count >= 2 else { throw .wrongLength(expected: 2, got: bytes.count) }
        let count = Int(bytes[1])
        guard count <= Self.maximumEntries else { throw .tooManyEntries(count) }
        guard bytes.count == 2 + count * 5 else { throw .wrongLength(expected: 2 + count * 5, got: bytes.count) }
        var entries: [Entry] = []
        for index in 0..<count {
            let start = 2 + index * 5
            let block = bytes[start..<(start + 4)].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            guard block & 3 == 0 else { throw .notABlock(block) }
            let mask = bytes[start + 4]
            entries.append(Entry(block: block, active: (0..<Self.maximumLayers).map { mask & (1 << $0) != 0 }))
        }
        self.kind = kind
        self.entries = entries
    }
}
