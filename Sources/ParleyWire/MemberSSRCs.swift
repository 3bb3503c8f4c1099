// SSRC assignment. The relay hands every member a block of four consecutive SSRCs in the signaling `joined`
// message, so SSRCs never collide within a room and the relay can tell a stream's member from its SSRC alone:
//   block + 0  audio (Opus)                    block + 2  video, simulcast layer 1 (half the size)
//   block + 1  video, layer 0 (VP8, full size)  block + 3  video, simulcast layer 2 (a quarter)
// A layer's SSRC is used only by a member that declared that many layers at join; otherwise it is refused.
// A member's own RTCP (receiver reports, NACK, PLI, bind) uses its audio SSRC as the sender SSRC.

/// The SSRCs one member sends with, as announced in `joined`.
public struct MemberSSRCs: Sendable, Hashable, Codable {
    /// Opus audio; also the member's SSRC in its own RTCP packets and bind requests.
    public var audio: UInt32
    /// VP8 video, the full-size layer (the only one of a sender without simulcast).
    public var video: UInt32
    /// The second simulcast layer (half the size); the third is the block's last SSRC.
    public var videoLow: UInt32

    /// Explicit SSRCs.
    public init(audio: UInt32, video: UInt32, videoLow: UInt32) {
        self.audio = audio
        self.video = video
        self.videoLow = videoLow
    }

    /// The SSRCs of a block: `block` with its low two bits cleared, then +0 audio, +1 video, +2 low video.
    public init(block: UInt32) {
        let base = block & ~3
        self.init(audio: base, video: base + 1, videoLow: base + 2)
    }

    /// The block these SSRCs come from (audio with the low two bits cleared).
    public var block: UInt32 { audio & ~3 }

    /// True when `ssrc` belongs to this member's block (all four, including layers it did not declare).
    public func contains(_ ssrc: UInt32) -> Bool { ssrc & ~3 == block }

    /// The SSRC of video layer `index` (0 is the full size), 0...2.
    public func videoLayer(_ index: Int) -> UInt32 { block + 1 + UInt32(min(max(index, 0), maxVideoLayers - 1)) }

    /// The video layer an SSRC of this block carries, nil for audio or another block.
    public func layerIndex(of ssrc: UInt32) -> Int? {
        guard contains(ssrc), ssrc != audio else { return nil }
        return Int(ssrc - block) - 1
    }
}

/// Hands out SSRC blocks that are unique in a room; the randomness is injected.
public struct SSRCAllocator: Sendable, Equatable {
    /// Blocks in use.
    public private(set) var blocks: Set<UInt32> = []

    /// An allocator with nothing handed out.
    public init() {}

    /// A fresh block of SSRCs, never 0 and never one in use, drawn from `random`.
    public mutating func allocate(using random: inout some RandomNumberGenerator) -> MemberSSRCs {
        while true {
            let block = UInt32.random(in: 4...UInt32.max, using: &random) & ~3
            if blocks.insert(block).inserted { return MemberSSRCs(block: block) }
        }
    }

    /// Takes `ssrcs`' block, handed out elsewhere (another node of the cluster); false when it is in use here.
    public mutating func claim(_ ssrcs: MemberSSRCs) -> Bool {
        ssrcs.block != 0 && blocks.insert(ssrcs.block).inserted
    }

    /// The member left: its block can be handed out again.
    public mutating func release(_ ssrcs: MemberSSRCs) {
        blocks.remove(ssrcs.block)
    }

    /// The block that `ssrc` belongs to, if it is in use.
    public func owner(of ssrc: UInt32) -> MemberSSRCs? {
        blocks.contains(ssrc & ~3) ? MemberSSRCs(block: ssrc) : nil
    }
}
