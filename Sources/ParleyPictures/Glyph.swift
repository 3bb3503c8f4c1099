import Synchronization

/// What a cell shows, kept as a number so a `Cell` is plain bytes.
///
/// A frame diff compares, copies and drops a whole screen of cells for every video frame (12,000 of them at 200x60,
/// 30 times a second). With a `Character` in each cell, every one of those steps paid a reference count and a
/// Unicode decode. One Unicode scalar (text, borders, half blocks, sextants: nearly every cell) is stored as itself;
/// a longer grapheme cluster (a combining accent, a flag, a family emoji) as its place in a `GraphemeTable`.
public struct Glyph: Hashable, Sendable {
    /// The scalar's value, or `clusterBit` plus the cluster's index in the table.
    package let raw: UInt32

    static let clusterBit: UInt32 = 1 << 31

    /// The glyph of one scalar.
    @inline(__always)
    public init(_ scalar: Unicode.Scalar) { raw = scalar.value }

    /// The glyph of a character; clusters of more than one scalar go through `table`.
    public init(_ character: Character, table: GraphemeTable = .shared) {
        let scalars = character.unicodeScalars
        var iterator = scalars.makeIterator()
        if let first = iterator.next(), iterator.next() == nil {
            raw = first.value
        } else {
            raw = table.glyphRaw(of: character)
        }
    }

    /// A space.
    public static let space = Glyph(" ")

    /// The character shown.
    public var character: Character { character(in: .shared) }

    /// The character of a glyph made through `table`.
    public func character(in table: GraphemeTable) -> Character {
        if let scalar { return Character(scalar) }
        return table.character(at: Int(raw & ~Self.clusterBit))
    }

    /// The scalar when the glyph is one scalar; nil for a longer cluster.
    @inline(__always)
    public var scalar: Unicode.Scalar? {
        raw & Self.clusterBit == 0 ? Unicode.Scalar(raw) : nil
    }
}

/// The grapheme clusters of more than one scalar that cells have shown, each stored once and found by its exact
/// UTF-8 (two spellings of "é" stay two spellings on screen, as the text had them).
///
/// Bounded: after `limit` different clusters, new ones show as U+FFFD and `overflows` counts them. The text
/// behind them (a chat line, a name) is kept as it was; only its picture on screen is replaced.
public final class GraphemeTable: Sendable {
    /// The table cells use.
    public static let shared = GraphemeTable(limit: 65_536)

    /// At most this many different clusters.
    public let limit: Int

    private struct Contents {
        var clusters: [Character] = []
        var indices: [[UInt8]: UInt32] = [:]
        var overflows = 0
    }
    private let contents = Mutex(Contents())

    /// An empty table holding at most `limit` clusters.
    public init(limit: Int) {
        precondition(limit > 0 && limit < Int(Glyph.clusterBit), "grapheme table limit must be 1..<2^31")
        self.limit = limit
    }

    /// How many clusters it holds.
    public var count: Int { contents.withLock { $0.clusters.count } }

    /// How many clusters were shown as U+FFFD because the table was full.
    public var overflows: Int { contents.withLock { $0.overflows } }

    func glyphRaw(of character: Character) -> UInt32 {
        let key = Array(character.utf8)
        return contents.withLock { contents in
            if let index = contents.indices[key] { return Glyph.clusterBit | index }
            guard contents.clusters.count < limit else {
                contents.overflows += 1
                return 0xFFFD
            }
            let index = UInt32(contents.clusters.count)
            contents.clusters.append(character)
            contents.indices[key] = index
            return Glyph.clusterBit | index
        }
    }

    func character(at index: Int) -> Character {
        contents.withLock { $0.clusters[index] }
    }
}
