import ParleyMedia
import ParleyWire
import Testing

@testable import ParleyEngine

/// A keyframe declaring a picture beyond the largest profile never reaches the client's decoder.
@Suite struct OversizedKeyframeTests {
    func keyframe(width: Int, height: Int) -> VP8Frame {
        // Frame tag (keyframe, shown), start code, 14-bit width and height, then bytes no decoder should see.
        let data: [UInt8] =
            [
                0x50, 0x42, 0x00, 0x9D, 0x01, 0x2A, UInt8(width & 0xFF), UInt8(width >> 8),
                UInt8(height & 0xFF), UInt8(height >> 8),
            ] + Array(repeating: 0x55, count: 600)
        return VP8Frame(timestamp: 0, data: data, isKeyframe: true, firstSequenceNumber: 0, packetCount: 1)
    }

    func peer() throws -> PeerReceiver {
        try PeerReceiver(
            info: MemberInfo(
                id: 9, name: "vandal", role: .broadcaster, audioMuted: false, videoMuted: false,
                ssrcs: MemberSSRCs(block: 400)))
    }

    @Test(arguments: [(16383, 16383), (1281, 720), (1280, 721), (3840, 2160)])
    func isCountedAndNotDecoded(width: Int, height: Int) throws {
        let receiver = try peer()
        #expect(receiver.decodeVideo(keyframe(width: width, height: height)) == nil)
        #expect(receiver.oversizedKeyframes == 1 && receiver.decodeErrors == 0 && receiver.framesDecoded == 0)
    }

    @Test func theLargestProfileFitsTheLimit() throws {
        for profile in VideoProfile.all {
            #expect(VP8Limits.allows((profile.width, profile.height)), "\(profile.name)")
        }
        // A real 1280x720 keyframe from libvpx passes the check and decodes.
        let encoder = try VP8Encoder(VP8EncoderConfig(width: 1280, height: 720, targetBitrateKbps: 1500))
        let picture = SyntheticCamera(name: "big", participant: 1, width: 1280, height: 720).render(frameNumber: 0)
        let encoded = try #require(try encoder.encode(picture, forceKeyframe: true).first)
        let receiver = try peer()
        let decoded = receiver.decodeVideo(
            VP8Frame(
                timestamp: 0, data: encoded.bytes, isKeyframe: true,
                firstSequenceNumber: 0, packetCount: 1))
        #expect(decoded?.width == 1280 && receiver.oversizedKeyframes == 0 && receiver.framesDecoded == 1)
    }
}
