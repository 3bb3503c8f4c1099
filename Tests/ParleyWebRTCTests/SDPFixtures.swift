@testable import ParleyWebRTC

/// Descriptions the SDP tests share, written for these tests in the shape Chromium's offers have (not copied from a
/// browser): one audio section, one video section with simulcast q;h;f and no SSRCs (Chromium signals none for
/// rid-based simulcast), one data channel section; every section on port 9 with the same ICE credentials.
enum SDPFixtures {
    /// Lines joined with CRLF, as browsers send them.
    static func crlf(_ text: String) -> String {
        text.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map { $0 + "\r\n" }.joined()
    }

    static let browserFingerprint =
        "sha-256 9F:3A:51:C2:07:E8:44:B6:1D:90:2F:6C:A5:38:D1:7E:C4:0B:93:5A:E6:21:7F:08:B3:4C:D9:62:15:AE:F0:87"

    /// A Chromium-like offer: audio sendrecv (opus, red, G722, PCMU, PCMA, CN, telephone-event), video sendrecv
    /// (VP8, VP9 twice, H264, AV1, red and ulpfec, each with RTX) sending simulcast q;h;f, and a data channel.
    static let chromeOffer = crlf(
        """
        v=0
        o=- 4611731400430051336 2 IN IP4 127.0.0.1
        s=-
        t=0 0
        a=group:BUNDLE 0 1 2
        a=extmap-allow-mixed
        a=msid-semantic: WMS 5b0e6f1c-7a4d-4c2e-9e1b-3f8d2a6c4b70
        m=audio 9 UDP/TLS/RTP/SAVPF 111 63 9 0 8 13 110 126
        c=IN IP4 0.0.0.0
        a=rtcp:9 IN IP4 0.0.0.0
        a=ice-ufrag:Qx7n
        a=ice-pwd:v3Bq9ZkLr2TfYw8Hs1NpUe4c
        a=ice-options:trickle
        a=fingerprint:\(browserFingerprint)
        a=setup:actpass
        a=mid:0
        a=extmap:1 urn:ietf:params:rtp-hdrext:ssrc-audio-level
        a=extmap:2 http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time
        a=extmap:3 http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01
        a=extmap:4 urn:ietf:params:rtp-hdrext:sdes:mid
        a=sendrecv
        a=msid:5b0e6f1c-7a4d-4c2e-9e1b-3f8d2a6c4b70 0c2d9a4e-1f3b-4e6a-8d7c-2b5e9f1a3c60
        a=rtcp-mux
        a=rtcp-rsize
        a=rtpmap:111 opus/48000/2
        a=rtcp-fb:111 transport-cc
        a=fmtp:111 minptime=10;useinbandfec=1
        a=rtpmap:63 red/48000/2
        a=fmtp:63 111/111
        a=rtpmap:9 G722/8000
        a=rtpmap:0 PCMU/8000
        a=rtpmap:8 PCMA/8000
        a=rtpmap:13 CN/8000
        a=rtpmap:110 telephone-event/48000
        a=rtpmap:126 telephone-event/8000
        a=ssrc:2718281828 cname:Hq3vX9mTzL0aPe4w
        a=ssrc:2718281828 msid:5b0e6f1c-7a4d-4c2e-9e1b-3f8d2a6c4b70 0c2d9a4e-1f3b-4e6a-8d7c-2b5e9f1a3c60
        m=video 9 UDP/TLS/RTP/SAVPF 96 97 98 99 100 101 103 104 45 46 116 117 39
        c=IN IP4 0.0.0.0
        a=rtcp:9 IN IP4 0.0.0.0
        a=ice-ufrag:Qx7n
        a=ice-pwd:v3Bq9ZkLr2TfYw8Hs1NpUe4c
        a=ice-options:trickle
        a=fingerprint:\(browserFingerprint)
        a=setup:actpass
        a=mid:1
        a=extmap:14 urn:ietf:params:rtp-hdrext:toffset
        a=extmap:2 http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time
        a=extmap:13 urn:3gpp:video-orientation
        a=extmap:3 http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01
        a=extmap:5 http://www.webrtc.org/experiments/rtp-hdrext/playout-delay
        a=extmap:6 http://www.webrtc.org/experiments/rtp-hdrext/video-content-type
        a=extmap:7 http://www.webrtc.org/experiments/rtp-hdrext/video-timing
        a=extmap:8 http://www.webrtc.org/experiments/rtp-hdrext/color-space
        a=extmap:4 urn:ietf:params:rtp-hdrext:sdes:mid
        a=extmap:10 urn:ietf:params:rtp-hdrext:sdes:rtp-stream-id
        a=extmap:11 urn:ietf:params:rtp-hdrext:sdes:repaired-rtp-stream-id
        a=extmap:9 https://aomediacodec.github.io/av1-rtp-spec/#dependency-descriptor-rtp-header-extension
        a=sendrecv
        a=msid:5b0e6f1c-7a4d-4c2e-9e1b-3f8d2a6c4b70 e7a1c3b5-9d2f-4a6e-8c0b-1d3f5a7c9e20
        a=rtcp-mux
        a=rtcp-rsize
        a=rtpmap:96 VP8/90000
        a=rtcp-fb:96 goog-remb
        a=rtcp-fb:96 transport-cc
        a=rtcp-fb:96 ccm fir
        a=rtcp-fb:96 nack
        a=rtcp-fb:96 nack pli
        a=rtpmap:97 rtx/90000
        a=fmtp:97 apt=96
        a=rtpmap:98 VP9/90000
        a=rtcp-fb:98 goog-remb
        a=rtcp-fb:98 transport-cc
        a=rtcp-fb:98 ccm fir
        a=rtcp-fb:98 nack
        a=rtcp-fb:98 nack pli
        a=fmtp:98 profile-id=0
        a=rtpmap:99 rtx/90000
        a=fmtp:99 apt=98
        a=rtpmap:100 VP9/90000
        a=rtcp-fb:100 goog-remb
        a=rtcp-fb:100 transport-cc
        a=rtcp-fb:100 ccm fir
        a=rtcp-fb:100 nack
        a=rtcp-fb:100 nack pli
        a=fmtp:100 profile-id=2
        a=rtpmap:101 rtx/90000
        a=fmtp:101 apt=100
        a=rtpmap:103 H264/90000
        a=rtcp-fb:103 goog-remb
        a=rtcp-fb:103 transport-cc
        a=rtcp-fb:103 ccm fir
        a=rtcp-fb:103 nack
        a=rtcp-fb:103 nack pli
        a=fmtp:103 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f
        a=rtpmap:104 rtx/90000
        a=fmtp:104 apt=103
        a=rtpmap:45 AV1/90000
        a=rtcp-fb:45 goog-remb
        a=rtcp-fb:45 transport-cc
        a=rtcp-fb:45 ccm fir
        a=rtcp-fb:45 nack
        a=rtcp-fb:45 nack pli
        a=fmtp:45 level-idx=5;profile=0;tier=0
        a=rtpmap:46 rtx/90000
        a=fmtp:46 apt=45
        a=rtpmap:116 red/90000
        a=rtpmap:117 rtx/90000
        a=fmtp:117 apt=116
        a=rtpmap:39 ulpfec/90000
        a=rid:q send
        a=rid:h send
        a=rid:f send
        a=simulcast:send q;h;f
        m=application 9 UDP/DTLS/SCTP webrtc-datachannel
        c=IN IP4 0.0.0.0
        a=ice-ufrag:Qx7n
        a=ice-pwd:v3Bq9ZkLr2TfYw8Hs1NpUe4c
        a=ice-options:trickle
        a=fingerprint:\(browserFingerprint)
        a=setup:actpass
        a=mid:2
        a=sctp-port:5000
        a=max-message-size:262144

        """)

    /// The relay's parameters for the answer tests: audio sent back on mid 0 as Bob's microphone, video only received.
    static let relay = AnswerParameters(
        iceUfrag: "Rl4yK9", icePwd: "c2Vjb25kLXJlbGF5LXBhc3N3",
        fingerprint: Fingerprint(
            hashFunction: "sha-256", bytes: (0..<32).map { UInt8($0 * 7 & 0xFF) }),
        address: "203.0.113.7", port: 40_000, sessionID: 7, sessionVersion: 1,
        choices: [
            "0": MediaChoice(
                receive: true,
                send: RelaySource(
                    ssrc: 5001, cname: "relay-bob", msid: MediaStreamID(stream: "bob", track: "bob-audio"))),
            "1": MediaChoice(receive: true),
        ])

    static let relayFingerprintText =
        "sha-256 00:07:0E:15:1C:23:2A:31:38:3F:46:4D:54:5B:62:69:70:77:7E:85:8C:93:9A:A1:A8:AF:B6:BD:C4:CB:D2:D9"

    static let transportLines = """
        a=ice-ufrag:Rl4yK9
        a=ice-pwd:c2Vjb25kLXJlbGF5LXBhc3N3
        a=fingerprint:\(relayFingerprintText)
        a=setup:passive
        a=candidate:1 1 udp 2130706431 203.0.113.7 40000 typ host
        a=end-of-candidates
        a=rtcp-mux
        """

    /// The exact answer to `chromeOffer` with `relay`.
    static let chromeAnswer = crlf(
        """
        v=0
        o=- 7 1 IN IP4 203.0.113.7
        s=-
        t=0 0
        a=ice-lite
        a=group:BUNDLE 0 1
        a=extmap-allow-mixed
        m=audio 40000 UDP/TLS/RTP/SAVPF 111
        c=IN IP4 203.0.113.7
        a=mid:0
        \(transportLines)
        a=rtcp-rsize
        a=extmap:1 urn:ietf:params:rtp-hdrext:ssrc-audio-level
        a=extmap:2 http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time
        a=extmap:3 http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01
        a=extmap:4 urn:ietf:params:rtp-hdrext:sdes:mid
        a=sendrecv
        a=msid:bob bob-audio
        a=rtpmap:111 opus/48000/2
        a=rtcp-fb:111 transport-cc
        a=fmtp:111 minptime=10;useinbandfec=1
        a=ssrc:5001 cname:relay-bob
        a=ssrc:5001 msid:bob bob-audio
        m=video 40000 UDP/TLS/RTP/SAVPF 96 97
        c=IN IP4 203.0.113.7
        a=mid:1
        \(transportLines)
        a=rtcp-rsize
        a=extmap:2 http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time
        a=extmap:3 http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01
        a=extmap:4 urn:ietf:params:rtp-hdrext:sdes:mid
        a=extmap:10 urn:ietf:params:rtp-hdrext:sdes:rtp-stream-id
        a=extmap:11 urn:ietf:params:rtp-hdrext:sdes:repaired-rtp-stream-id
        a=recvonly
        a=rtpmap:96 VP8/90000
        a=rtcp-fb:96 goog-remb
        a=rtcp-fb:96 transport-cc
        a=rtcp-fb:96 ccm fir
        a=rtcp-fb:96 nack
        a=rtcp-fb:96 nack pli
        a=rtpmap:97 rtx/90000
        a=fmtp:97 apt=96
        a=rid:q recv
        a=rid:h recv
        a=rid:f recv
        a=simulcast:recv q;h;f
        m=application 0 UDP/DTLS/SCTP webrtc-datachannel
        c=IN IP4 0.0.0.0
        a=mid:2

        """)

    /// Unusual but accepted: LF endings, every optional line type, lines out of RFC 8866's order, tabs and double
    /// spaces between fields, a port count, session-level ICE, attribute values with spaces kept as written.
    static let unusual = """
        v=0
        o=alice  2890844526 2890842807 IN IP4 198.51.100.1
        s=A session with spaces
        i=What it is about
        u=https://example.org/call
        e=alice@example.org
        p=+1 555 0100
        t=0 0
        r=604800 3600 0 90000
        c=IN IP4 198.51.100.1
        b=CT:128
        z=2882844526 -1h
        k=prompt
        a=ice-ufrag:Wq3e
        a=ice-pwd:z8Kp2Lm4Nq6Rs8Tu0Vw2Xy4Z
        a=tool: hand written \u{20}
        a=recvonly
        m=audio 49170/2 RTP/AVP 0\t8
        b=AS:64
        i=Voice
        c=IN IP4 198.51.100.2
        c=IN IP4 198.51.100.3
        k=clear:secret
        a=rtpmap:0 PCMU/8000
        a=fmtp:8 a=1; b ;c
        a=x-custom
        a=x-empty:
        m=text 0 TCP t140

        """
}
