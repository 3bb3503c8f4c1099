import Foundation

/// What `parley bot --stats` prints when it leaves, as one line of JSON: a few totals, and per peer what arrived with
/// the stamp read from the latest decoded synthetic-camera picture (so a test can tell whose picture it was).
public struct CallStatisticsSummary: Codable, Sendable, Equatable {
    /// What arrived from one remote member.
    public struct Peer: Codable, Sendable, Equatable {
        /// The member id.
        public var id: UInt32
        /// The member's display name, exactly as the relay announced it.
        public var name: String
        /// Video frames decoded.
        public var framesDecoded: Int
        /// Video packets received.
        public var videoPackets: Int
        /// Audio packets received.
        public var audioPackets: Int
        /// 20 ms audio frames played.
        public var audioPlayed: Int
        /// The participant id stamped in the latest decoded picture (0 before any).
        public var stampParticipant: UInt32
        /// The frame counter stamped in the latest decoded picture (0 before any).
        public var stampFrame: UInt32

        /// The counters of `peer`, member `id`.
        public init(id: UInt32, _ peer: CallStatistics.Peer) {
            self.id = id
            name = peer.name
            framesDecoded = peer.framesDecoded
            videoPackets = peer.videoPacketsReceived
            audioPackets = peer.audioPacketsReceived
            audioPlayed = peer.audioFramesPlayed
            stampParticipant = peer.lastStamp?.participant ?? 0
            stampFrame = peer.lastStamp?.frame ?? 0
        }
    }

    /// This member's id (0 before joining).
    public var localID: UInt32
    /// Video frames sent (all layers).
    public var videoFramesSent: Int
    /// Audio packets sent.
    public var audioPacketsSent: Int
    /// The remote members, by id.
    public var peers: [Peer]

    /// The summary of `stats`.
    public init(_ stats: CallStatistics) {
        localID = stats.localID
        videoFramesSent = stats.videoFramesSent
        audioPacketsSent = stats.audioPacketsSent
        peers = stats.peers.sorted { $0.key < $1.key }.map { Peer(id: $0.key, $0.value) }
    }

    /// The summary as one line of JSON, keys sorted.
    public func encoded() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(self)
    }
}
