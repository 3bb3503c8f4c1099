// Simulcast and the dominant speaker on the signaling channel.
//
// A sender declares its video layers at join (largest first, up to three: block + 1, + 2 and + 3 of its SSRCs).
// Each receiver tells the relay the pixel size it draws every peer at (`tiles`); the relay forwards to it, per
// peer, the smallest layer that covers that size, switching only at a keyframe of the new layer. The relay tells
// each sender which of its layers anybody needs (`video-layers`), so nobody encodes a layer nobody watches, and
// tells the room who is the dominant speaker (`dominant-speaker`).

/// The most layers a sender may declare.
public let maxVideoLayers = 3
/// The most tiles one `tiles` report may list.
public let maxReportedTiles = 64

/// A picture size in pixels: a layer's, or the area a receiver draws a peer in.
public struct VideoLayerSize: Codable, Sendable, Hashable, CustomStringConvertible {
    /// Width in pixels.
    public var width: Int
    /// Height in pixels.
    public var height: Int

    /// A size.
    public init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }

    /// True when a picture this size shows a `tile` without upscaling in either direction.
    public func covers(_ tile: VideoLayerSize) -> Bool { width >= tile.width && height >= tile.height }

    public var description: String { "\(width)x\(height)" }

    /// Checks a sender's declared layers: 1 to 3 sizes, each within the largest profile, strictly shrinking.
    public static func validate(layers: [VideoLayerSize]) throws(SignalingError) {
        guard (1...maxVideoLayers).contains(layers.count) else {
            throw SignalingError(
                .badField, "join \"videoLayers\" has \(layers.count) layers; a sender has 1 to \(maxVideoLayers)")
        }
        for (index, layer) in layers.enumerated() {
            guard layer.width >= 2, layer.height >= 2, VP8Limits.allows((layer.width, layer.height)) else {
                throw SignalingError(
                    .badField,
                    "join \"videoLayers\"[\(index)] is \(layer); a layer is 2x2 to "
                        + "\(VP8Limits.largestPicture.width)x\(VP8Limits.largestPicture.height)")
            }
            if index > 0, layer.width >= layers[index - 1].width || layer.height >= layers[index - 1].height {
                throw SignalingError(
                    .badField,
                    "join \"videoLayers\"[\(index)] is \(layer), not smaller than the layer before it "
                        + "(\(layers[index - 1])); list the largest layer first")
            }
        }
    }
}

/// One peer as a receiver draws it.
public struct TileSize: Codable, Sendable, Equatable {
    /// The peer (member id).
    public var id: UInt32
    /// The pixel width of the picture as drawn; 0 with `height` 0 when the peer is not on screen.
    public var width: Int
    /// The pixel height of the picture as drawn.
    public var height: Int

    /// A tile report entry.
    public init(id: UInt32, width: Int, height: Int) {
        self.id = id
        self.width = width
        self.height = height
    }

    /// The size, nil when the peer is not drawn.
    public var size: VideoLayerSize? { width == 0 || height == 0 ? nil : VideoLayerSize(width: width, height: height) }
}

/// A receiver's tiles: every peer it draws and at what size (`tiles`), and what its downlink carries when losses
/// showed a limit (`downlinkKbps`, absent for none).
public struct TileReport: Codable, Sendable, Equatable {
    /// The peers with their drawn sizes.
    public var tiles: [TileSize]
    /// The receiver's estimate of its downlink (kbit/s), nil while it found no limit.
    public var downlinkKbps: Int?

    /// The largest size a tile may report (a picture wider than any terminal shows).
    public static let largest = 8192
    /// The largest downlink a report may give (kbit/s): 10 Gbit/s.
    public static let largestDownlinkKbps = 10_000_000

    /// A report.
    public init(tiles: [TileSize], downlinkKbps: Int? = nil) {
        self.tiles = tiles
        self.downlinkKbps = downlinkKbps
    }

    /// Checks the report's bounds, with a message naming what is wrong.
    func validated() throws(SignalingError) -> TileReport {
        guard tiles.count <= maxReportedTiles else {
            throw SignalingError(.badField, "tiles lists \(tiles.count) peers; the limit is \(maxReportedTiles)")
        }
        for (index, tile) in tiles.enumerated() {
            guard (0...Self.largest).contains(tile.width), (0...Self.largest).contains(tile.height) else {
                throw SignalingError(
                    .badField,
                    "tiles[\(index)] is \(tile.width)x\(tile.height); sizes are 0 to \(Self.largest) pixels")
            }
        }
        guard Set(tiles.map(\.id)).count == tiles.count else {
            throw SignalingError(.badField, "tiles names a peer twice")
        }
        try Self.check(downlinkKbps, named: "downlinkKbps")
        return self
    }

    /// A downlink figure is 1 to `largestDownlinkKbps` kbit/s, or absent.
    static func check(_ downlinkKbps: Int?, named field: String) throws(SignalingError) {
        guard let downlinkKbps, !(1...largestDownlinkKbps).contains(downlinkKbps) else { return }
        throw SignalingError(.badField, "\(field) is \(downlinkKbps); it is 1 to \(largestDownlinkKbps) kbit/s")
    }
}

/// To a sender: which of its layers (largest first) somebody receives; the others are paused (`video-layers`).
public struct VideoLayerDemand: Codable, Sendable, Equatable {
    /// One flag per declared layer.
    public var active: [Bool]

    /// A demand.
    public init(active: [Bool]) { self.active = active }
}

/// From a sender: which of its layers (largest first) its uplink carries now (`video-sending`). A layer left out is
/// paused whatever receivers ask; the relay gives each receiver of it the next smaller layer that is sent. The
/// smallest layer is always sent.
public struct VideoSending: Codable, Sendable, Equatable {
    /// One flag per declared layer.
    public var active: [Bool]

    /// A report.
    public init(active: [Bool]) { self.active = active }

    /// Checks the flags' count and that the smallest layer is on, with a message naming what is wrong.
    func validated() throws(SignalingError) -> VideoSending {
        guard (1...maxVideoLayers).contains(active.count) else {
            throw SignalingError(
                .badField, "video-sending lists \(active.count) layers; a sender has 1 to \(maxVideoLayers)")
        }
        guard active.last == true else {
            throw SignalingError(.badField, "video-sending leaves out the smallest layer; it is always sent")
        }
        return self
    }
}

extension VideoSending: ValidatedPayload {}

/// To the room: who the relay picked as the dominant speaker (`dominant-speaker`); 0 for nobody yet.
public struct DominantSpeakerNotice: Codable, Sendable, Equatable {
    /// The member, 0 for none.
    public var id: UInt32

    /// A notice.
    public init(id: UInt32) { self.id = id }
}

extension TileReport: ValidatedPayload {}

/// To a receiver that reported a limited downlink: the senders it gets below what its tiles ask for, because the
/// downlink has no room for more (`video-held`); an empty list when nobody is held any more.
public struct VideoHeld: Codable, Sendable, Equatable {
    /// One sender held back.
    public struct Entry: Codable, Sendable, Equatable {
        /// The sender.
        public var id: UInt32
        /// The size of the layer it gets; absent when it is paused.
        public var width: Int?
        public var height: Int?

        /// An entry: `size` nil for paused.
        public init(id: UInt32, size: VideoLayerSize?) {
            self.id = id
            width = size?.width
            height = size?.height
        }

        /// The layer's size, nil when paused.
        public var size: VideoLayerSize? {
            guard let width, let height else { return nil }
            return VideoLayerSize(width: width, height: height)
        }
    }

    /// The downlink the relay shares (kbit/s, as the receiver reported it); nil when it reported none.
    public var downlinkKbps: Int?
    /// The senders held back, at most `maxReportedTiles`.
    public var held: [Entry]

    /// A notice.
    public init(downlinkKbps: Int?, held: [Entry]) {
        self.downlinkKbps = downlinkKbps
        self.held = held
    }
}

extension VideoHeld: ValidatedPayload {
    /// Bounded like a tile report: at most `maxReportedTiles` senders, sizes within a picture's, no sender twice.
    func validated() throws(SignalingError) -> VideoHeld {
        guard held.count <= maxReportedTiles else {
            throw SignalingError(.badField, "video-held lists \(held.count) senders; the limit is \(maxReportedTiles)")
        }
        for (index, entry) in held.enumerated() {
            guard (entry.width == nil) == (entry.height == nil) else {
                throw SignalingError(.badField, "video-held[\(index)] gives one of width and height without the other")
            }
            if let width = entry.width, let height = entry.height,
                !(1...TileReport.largest).contains(width) || !(1...TileReport.largest).contains(height)
            {
                throw SignalingError(
                    .badField, "video-held[\(index)] is \(width)x\(height); sizes are 1 to \(TileReport.largest) pixels"
                )
            }
        }
        guard Set(held.map(\.id)).count == held.count else {
            throw SignalingError(.badField, "video-held names a sender twice")
        }
        try TileReport.check(downlinkKbps, named: "video-held downlinkKbps")
        return self
    }
}

extension VideoLayerDemand: ValidatedPayload {
    /// One flag for each of the 1 to `maxVideoLayers` layers a sender declares.
    func validated() throws(SignalingError) -> VideoLayerDemand {
        guard (1...maxVideoLayers).contains(active.count) else {
            throw SignalingError(
                .badField, "video-layers has \(active.count) flags; a sender has 1 to \(maxVideoLayers) layers")
        }
        return self
    }
}
