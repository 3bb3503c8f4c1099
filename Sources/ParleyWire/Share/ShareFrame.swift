// A share update as an RTP frame (payload type 98, docs/protocol.md "Terminal share updates"):
//
//   frame = flags u8 | ShareUpdate bytes        flags: bit 0 = 0 a full screen, 1 changes; other bits 0
//
// split into packets with VP8's payload descriptor (RFC 7741) as a VP8 frame is. The flags byte sits where VP8 keeps
// its keyframe bit (the first byte after the descriptor, bit 0 clear for a keyframe), so the jitter buffer, the
// relay's keyframe handling and SFrame's clear byte treat a full screen as a keyframe without knowing the format.

/// The frame a share update travels as.
public enum ShareFrame {
    /// The frame for `update`.
    public static func encode(_ update: ShareUpdate) -> [UInt8] {
        [update.kind == .fullScreen ? 0 : 1] + update.encoded()
    }

    /// The update a frame carries; throws naming what is wrong (its flags disagreeing with the update's kind
    /// included).
    public static func decode(_ frame: [UInt8]) throws(ShareUpdateError) -> ShareUpdate {
        guard let flags = frame.first else { throw .truncated(what: "the frame's flags", needed: 1, available: 0) }
        guard flags <= 1 else { throw .badFrameFlags(Int(flags)) }
        let update = try ShareUpdate(decoding: Array(frame.dropFirst()))
        guard (flags == 0) == (update.kind == .fullScreen) else { throw .badFrameFlags(Int(flags)) }
        return update
    }
}

/// A viewer's copy of one shared terminal: frames in, the screen out; a frame that does not apply (an update lost
/// on the way, garbage) leaves the screen as it was and says a full screen is needed.
public struct ShareViewer: Sendable {
    /// The screen as the last update applied left it; nil before the first full screen.
    public private(set) var screen: TerminalScreen?
    /// The number of the update `screen` is at.
    public private(set) var sequence: UInt32?
    /// Frames that did not apply, and why the last one did not.
    public private(set) var rejected = 0
    public private(set) var lastError: ShareUpdateError?

    public init() {}

    /// Applies one frame; returns the new screen, or nil when it did not apply (then a full screen is needed).
    public mutating func receive(_ frame: [UInt8]) -> TerminalScreen? {
        do {
            let update = try ShareFrame.decode(frame)
            let next = try update.apply(to: screen, heldSequence: sequence)
            screen = next
            sequence = update.sequence
            return next
        } catch {
            rejected += 1
            lastError = error
            return nil
        }
    }
}
