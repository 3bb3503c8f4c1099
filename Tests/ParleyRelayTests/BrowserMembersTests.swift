import Logging
import NIOCore
import NIOPosix
import ParleyTestLanes
import ParleyWire
import Testing

@testable import ParleyRelay
@testable import ParleyWebRTC

/// The relay's browser members without a browser: the answer to an offer, slot pairs as peers come and go, the
/// estimate sent to Chromium, which datagrams the browsers claim, and what cannot be sent before DTLS is up.
struct BrowserMembersTests {
    /// An offer in the shape the browser-member page makes (written for this test): microphone and camera (simulcast
    /// q;h;f) sent, then two receive pairs.
    static let offer: String = {
        var lines = [
            "v=0", "o=- 77 2 IN IP4 127.0.0.1", "s=-", "t=0 0", "a=group:BUNDLE 0 1 2 3 4 5", "a=extmap-allow-mixed",
        ]
        func section(_ mid: Int, _ kind: String, _ direction: String) -> [String] {
            let common = [
                "c=IN IP4 0.0.0.0", "a=ice-ufrag:Pg4w", "a=ice-pwd:r8Xk2LmQa7Vz0Nc5Tb1Hy6Ds",
                "a=fingerprint:sha-256 4E:91:0A:D3:6B:27:C8:15:F0:3C:9E:62:A7:1D:B4:58:"
                    + "0F:E3:79:2A:C6:14:8B:D5:30:6E:A1:47:FC:92:0B:5D",
                "a=setup:actpass", "a=mid:\(mid)", "a=\(direction)", "a=rtcp-mux", "a=rtcp-rsize",
            ]
            if kind == "audio" {
                return ["m=audio 9 UDP/TLS/RTP/SAVPF 111"] + common + [
                    "a=extmap:1 urn:ietf:params:rtp-hdrext:ssrc-audio-level",
                    "a=extmap:3 http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01",
                    "a=rtpmap:111 opus/48000/2", "a=rtcp-fb:111 transport-cc", "a=fmtp:111 minptime=10;useinbandfec=1",
                ] + (direction == "sendonly" ? ["a=ssrc:4001 cname:page"] : [])
            }
            var video =
                ["m=video 9 UDP/TLS/RTP/SAVPF 96 97"] + common + [
                    "a=extmap:3 http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01",
                    "a=extmap:10 urn:ietf:params:rtp-hdrext:sdes:rtp-stream-id",
                    "a=rtpmap:96 VP8/90000", "a=rtcp-fb:96 nack", "a=rtcp-fb:96 nack pli", "a=rtcp-fb:96 goog-remb",
                    "a=rtcp-fb:96 transport-cc", "a=rtpmap:97 rtx/90000", "a=fmtp:97 apt=96",
                ]
            if direction == "sendonly" {
                video += ["a=rid:q send", "a=rid:h send", "a=rid:f send", "a=simulcast:send q;h;f"]
            }
            return video
        }
        lines += section(0, "audio", "sendonly") + section(1, "video", "sendonly")
        lines += section(2, "audio", "recvonly") + section(3, "video", "recvonly")
        lines += section(4, "audio", "recvonly") + section(5, "video", "recvonly")
        return lines.map { $0 + "\r\n" }.joined()
    }()

    static let member = MemberSSRCs(block: 0x100)

    func browsers(with member: UInt32 = 7) throws -> (BrowserMembers, String) {
        let browsers = BrowserMembers(epoch: .now)
        let offer = try BrowserOffer(SessionDescription(parsing: Self.offer))
        let answer = try browsers.add(
            member: member, offer: offer, ssrcs: Self.member, host: "127.0.0.1", udpPort: 7878, now: .zero)
        return (browsers, answer)
    }

    @Test func theAnswerReceivesTheSendersAndSendsOnEachReceivePair() throws {
        let (browsers, text) = try browsers()
        let answer = try SessionDescription(parsing: text)
        #expect(answer.media.map(\.mid) == ["0", "1", "2", "3", "4", "5"])
        #expect(answer.media.map(\.direction) == [.recvonly, .recvonly, .sendonly, .sendonly, .sendonly, .sendonly])
        // Each receive pair has its own SSRCs and one CNAME (the page syncs a peer's sound and picture).
        let slotSSRCs = answer.media.dropFirst(2).map { Set($0.ssrcs.map(\.ssrc)) }
        #expect(slotSSRCs.map(\.count) == [1, 2, 1, 2], "audio; video and its RTX")
        #expect(Set(slotSSRCs.flatMap { $0 }).count == 6, "no SSRC in two sections")
        let cnames = answer.media.dropFirst(2).map { $0.ssrcs.first { $0.attribute == "cname" }?.value }
        #expect(cnames == ["parley-slot-0", "parley-slot-0", "parley-slot-1", "parley-slot-1"])
        // Transport-wide feedback both sections offered: the relay reports what arrived, and sends no REMB.
        #expect(text.contains("a=extmap:3 http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01"))
        #expect(browsers.browsers[7]?.needsEstimate == false)
        #expect(text.contains("a=simulcast:recv q;h;f"))
        #expect(browsers.slots(of: 7) == BrowserSlots(slots: []))
        #expect(browsers.browsers[7]?.answer == text)
    }

    @Test func peersTakeFreePairsAndWaitForOneWhenNoneIsFree() throws {
        let (browsers, _) = try browsers()
        // (peer, show or hide, changed, slots after as member:audio/video, waiting after)
        let steps: [(UInt32, Bool, Bool, [String], [UInt32])] = [
            (10, true, true, ["10:2/3"], []),
            (11, true, true, ["10:2/3", "11:4/5"], []),
            (12, true, true, ["10:2/3", "11:4/5"], [12]),
            (11, true, false, ["10:2/3", "11:4/5"], [12]),
            (7, true, false, ["10:2/3", "11:4/5"], [12]),  // the browser itself
            (10, false, true, ["11:4/5"], [12]),
            (99, false, false, ["11:4/5"], [12]),
        ]
        for (peer, showing, changed, slots, waiting) in steps {
            let result =
                showing
                ? browsers.show(peer, block: peer * 4, to: 7) : browsers.hide(peer, from: 7)
            #expect(result == changed, "peer \(peer)")
            let shown = browsers.slots(of: 7)?.slots.map { "\($0.member):\($0.audio ?? "-")/\($0.video ?? "-")" }
            #expect(shown == slots, "peer \(peer)")
            #expect(browsers.slots(of: 7)?.unseen == waiting, "peer \(peer)")
        }
        // The pair 10 left is free: the waiting peer takes it, as the relay core does.
        #expect(browsers.waiting(for: 7) == [12])
        browsers.unqueue(12, of: 7)
        browsers.show(12, block: 48, to: 7)
        #expect(browsers.slots(of: 7)?.slots.map(\.member) == [12, 11])
        #expect(browsers.waiting(for: 7).isEmpty)
        // A waiting peer that leaves is simply forgotten.
        browsers.show(13, block: 52, to: 7)
        #expect(browsers.hide(13, from: 7))
        #expect(browsers.slots(of: 7)?.unseen == [])
    }

    @Test func theEstimateIsARembOfTwoAndAHalfMegabits() throws {
        let bytes = BrowserMembers.estimate([0x0102_0304, 0x0A0B_0C0D])
        // V=2, FMT 15, PT 206 (PSFB), 7 words after the header; sender 1, media 0; "REMB"; 2 SSRCs, exponent 4,
        // mantissa 156,250 (2,500,000 = 156,250 x 2^4); the SSRCs.
        #expect(
            bytes == [
                0x8F, 206, 0, 6, 0, 0, 0, 1, 0, 0, 0, 0, 0x52, 0x45, 0x4D, 0x42, 2, 0x12, 0x62, 0x5A,
                1, 2, 3, 4, 0x0A, 0x0B, 0x0C, 0x0D,
            ])
        let parsed = try RTCPPacket.parseCompound(bytes)
        #expect(parsed.count == 1)
        if case .other(let raw)? = parsed.first {
            #expect(raw.packetType == 206 && raw.count == 15)
        } else {
            Issue.record("not a PSFB packet: \(parsed)")
        }
    }

    @Test func browsersClaimStunAndDtlsAndOnlyTheirOwnMedia() throws {
        let empty = BrowserMembers(epoch: .now)
        let somewhere = try SocketAddress(ipAddress: "127.0.0.1", port: 5000)
        #expect(!empty.claims(firstByte: 0, from: somewhere), "no browsers: nothing is theirs")
        let (browsers, _) = try browsers()
        // (first byte, claimed): STUN 0-3, DTLS 20-63 always; RTP and RTCP only from a checked address.
        let rows: [(UInt8, Bool)] = [(0, true), (1, true), (22, true), (63, true), (0x80, false), (0x90, false)]
        for (first, claimed) in rows {
            #expect(browsers.claims(firstByte: first, from: somewhere) == claimed, "first byte \(first)")
        }
        let unix = try SocketAddress(unixDomainSocketPath: "/parley/browser/7")
        #expect(browsers.isStandIn(unix))
        #expect(!browsers.isStandIn(somewhere))
        #expect(!browsers.claims(firstByte: 0x80, from: unix), "a stand-in is not a browser's UDP address")
    }

    @Test func nothingGoesOutBeforeTheHandshakeAndNothingForAPeerWithoutAPair() throws {
        let (browsers, _) = try browsers()
        browsers.show(10, block: 40, to: 7)
        let standIn = try SocketAddress(unixDomainSocketPath: "/parley/browser/7")
        var audio = RTPPacket(
            header: RTPHeader(payloadType: MediaPayloadType.opus, sequenceNumber: 1, timestamp: 960, ssrc: 40),
            payload: [1, 2, 3])
        #expect(browsers.egress(ByteBuffer(bytes: audio.serialized()), to: standIn, at: .zero) == nil, "not connected")
        audio.header.ssrc = 80  // a peer with no pair
        #expect(browsers.egress(ByteBuffer(bytes: audio.serialized()), to: standIn, at: .zero) == nil)
        let pli = RTCPPacket.pictureLossIndication(PictureLossIndication(senderSSRC: 40, mediaSSRC: Self.member.video))
        #expect(browsers.egress(ByteBuffer(bytes: pli.serialized()), to: standIn, at: .zero) == nil)
        #expect(
            browsers.receive([0, 1, 0, 0], from: try SocketAddress(ipAddress: "127.0.0.1", port: 5000), at: .zero)
                .isEmpty)
        #expect(browsers.refused.values.reduce(0, +) == 1, "the runt STUN counted: \(browsers.refused)")
        // Leaving closes the transport: nothing to send before a handshake (no address), and it is forgotten.
        #expect(browsers.remove(7).isEmpty)
        #expect(browsers.isEmpty && !browsers.isStandIn(standIn))
    }
}

/// A browser member whose DTLS handshake never finishes, against a real relay: it is told why, and the room sees it
/// leave.
@Suite(.lane(.timing))
struct BrowserMemberFailureTests {
    @Test func aBrowserWhoseHandshakeNeverFinishesIsToldWhyAndLeavesTheRoom() async throws {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        var configuration = RelayConfiguration(host: "127.0.0.1", port: 0, logger: logger)
        configuration.browserHandshake = .milliseconds(300)
        let relay = try await Relay.start(configuration)
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let alice = try await TestMember.connect(port: relay.signalingPort, group: group)
        let aliceID = try await alice.join("alice").you.id
        let bea = try await TestMember.connect(port: relay.signalingPort, group: group)
        bea.send(.join(JoinRequest(room: "standup", name: "bea", webrtc: BrowserMembersTests.offer)))
        let joined = try await bea.wait(for: "joined") { if case .joined(let joined) = $0 { joined } else { nil } }
        #expect(joined.media.webrtc?.contains("a=ice-lite") == true, "the relay's answer")
        let slots = try await bea.wait(for: "slots") { if case .slots(let slots) = $0 { slots } else { nil } }
        #expect(slots == BrowserSlots(slots: [BrowserSlots.Slot(member: aliceID, audio: "2", video: "3")]))
        // No STUN check, no DTLS: the handshake's deadline passes.
        let error = try await bea.wait(for: "media-failed") {
            if case .error(let error) = $0, error.code == .mediaFailed { error } else { nil }
        }
        #expect(
            error.message == "your browser's media connection failed: DTLS handshake did not finish within 0.3 seconds")
        let left = try await alice.wait(for: "bea left") {
            if case .memberLeft(let left) = $0, left.id == joined.you.id { left } else { nil }
        }
        #expect(left.reason == .dropped)
        #expect(await eventually { bea.isClosed }, "the relay closed bea's connection")
        await relay.shutdown()
        try await group.shutdownGracefully()
    }
}
