import Testing

@testable import ParleyWebRTC

/// A description with the four required lines, then `lines` from line 5 on, LF-separated.
private func session(_ lines: [String]) -> String {
    (["v=0", "o=- 1 2 IN IP4 127.0.0.1", "s=-", "t=0 0"] + lines).map { $0 + "\n" }.joined()
}

private func session(_ lines: String...) -> String { session(lines) }

private let minimal = SessionDescription(origin: Origin(sessionID: "1", sessionVersion: 2))

struct GoodDescriptionRow: Sendable, CustomTestStringConvertible {
    let name: String
    let text: String
    let expected: SessionDescription
    var testDescription: String { name }
}

struct BadDescriptionRow: Sendable, CustomTestStringConvertible {
    let name: String
    let bytes: [UInt8]
    let expected: SDPError
    var testDescription: String { name }

    init(_ name: String, _ text: String, _ expected: SDPError) {
        self.init(name, Array(text.utf8), expected)
    }

    init(_ name: String, _ bytes: [UInt8], _ expected: SDPError) {
        self.name = name
        self.bytes = bytes
        self.expected = expected
    }
}

private let unusualExpected: SessionDescription = {
    var description = SessionDescription(
        origin: Origin(
            username: "alice", sessionID: "2890844526", sessionVersion: 2_890_842_807, address: "198.51.100.1"),
        sessionName: "A session with spaces",
        timings: [Timing(start: 0, stop: 0, repeats: ["604800 3600 0 90000"])],
        attributes: [
            SDPAttribute(name: "ice-ufrag", value: "Wq3e"),
            SDPAttribute(name: "ice-pwd", value: "z8Kp2Lm4Nq6Rs8Tu0Vw2Xy4Z"),
            SDPAttribute(name: "tool", value: " hand written  "),
            SDPAttribute(name: "recvonly"),
        ])
    description.information = "What it is about"
    description.uri = "https://example.org/call"
    description.emails = ["alice@example.org"]
    description.phones = ["+1 555 0100"]
    description.connection = ConnectionData(address: "198.51.100.1")
    description.bandwidths = [Bandwidth(type: "CT", value: 128)]
    description.timeZones = "2882844526 -1h"
    description.encryptionKey = "prompt"
    var audio = MediaDescription(
        kind: .audio, port: 49170, portCount: 2, proto: "RTP/AVP", formats: ["0", "8"],
        connections: [ConnectionData(address: "198.51.100.2"), ConnectionData(address: "198.51.100.3")],
        attributes: [
            SDPAttribute(name: "rtpmap", value: "0 PCMU/8000"), SDPAttribute(name: "fmtp", value: "8 a=1; b ;c"),
            SDPAttribute(name: "x-custom"), SDPAttribute(name: "x-empty", value: ""),
        ])
    audio.information = "Voice"
    audio.bandwidths = [Bandwidth(type: "AS", value: 64)]
    audio.encryptionKey = "clear:secret"
    description.media = [audio, MediaDescription(kind: .other("text"), port: 0, proto: "TCP", formats: ["t140"])]
    return description
}()

private let goodRows: [GoodDescriptionRow] = [
    GoodDescriptionRow(
        name: "minimal, CRLF", text: "v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n", expected: minimal),
    GoodDescriptionRow(
        name: "minimal, LF without a final newline", text: "v=0\no=- 1 2 IN IP4 127.0.0.1\ns=-\nt=0 0",
        expected: minimal),
    GoodDescriptionRow(name: "trailing blank lines", text: session("", "\r"), expected: minimal),
    GoodDescriptionRow(
        name: "rejected data section",
        text: session("m=application 0 UDP/DTLS/SCTP webrtc-datachannel", "a=mid:2"),
        expected: {
            var description = minimal
            description.media = [
                MediaDescription(
                    kind: .application, port: 0, proto: "UDP/DTLS/SCTP", formats: ["webrtc-datachannel"],
                    attributes: [SDPAttribute(name: "mid", value: "2")])
            ]
            return description
        }()),
    GoodDescriptionRow(
        name: "unusual: every line type, out of order, LF", text: SDPFixtures.unusual, expected: unusualExpected),
]

private func repeated(_ line: String, _ count: Int) -> [String] { Array(repeating: line, count: count) }

private let badRows: [BadDescriptionRow] = [
    BadDescriptionRow("empty", "", .missingField("v=")),
    BadDescriptionRow("o= first", "o=- 1 2 IN IP4 127.0.0.1\n", .missingField("v=")),
    BadDescriptionRow("version 1", "v=1\n", .unsupportedVersion(line: 1, "1")),
    BadDescriptionRow("no o=", "v=0\ns=-\nt=0 0\n", .missingField("o=")),
    BadDescriptionRow("no s=", "v=0\no=- 1 2 IN IP4 127.0.0.1\nt=0 0\n", .missingField("s=")),
    BadDescriptionRow("no t=", "v=0\no=- 1 2 IN IP4 127.0.0.1\ns=-\n", .missingField("t=")),
    BadDescriptionRow(
        "m= before t=", "v=0\no=- 1 2 IN IP4 127.0.0.1\ns=-\nm=audio 9 RTP/AVP 0\n", .missingField("t=")),
    BadDescriptionRow("unknown line type", session("x=1"), .unknownLineType(line: 5, "x")),
    BadDescriptionRow("no equals sign", session("garbage"), .malformedLine(number: 5, "expected <type>=<value>")),
    BadDescriptionRow("blank line inside", session("", "a=x"), .malformedLine(number: 5, "expected <type>=<value>")),
    BadDescriptionRow(
        "o= version not a number", "v=0\no=- 1 x IN IP4 127.0.0.1\n",
        .malformedLine(number: 2, "session version \"x\" is not a number")),
    BadDescriptionRow(
        "o= with five fields", "v=0\no=- 1 2 IN IP4\n",
        .malformedLine(
            number: 2, "expected o=<username> <session id> <version> <net type> <addr type> <address>")),
    BadDescriptionRow("second o=", session("o=- 1 2 IN IP4 127.0.0.1"), .unexpectedLine(number: 5, "second o= line")),
    BadDescriptionRow("second v=", session("v=0"), .unexpectedLine(number: 5, "second v= line")),
    BadDescriptionRow(
        "second session i=", session("i=a", "i=b"), .unexpectedLine(number: 6, "second i= line in one part")),
    BadDescriptionRow(
        "r= before t=", "v=0\no=- 1 2 IN IP4 127.0.0.1\ns=-\nr=1 2 3\n",
        .unexpectedLine(number: 4, "r= line before any t= line")),
    BadDescriptionRow(
        "t= inside a section", session("m=audio 9 RTP/AVP 0", "t=0 0"),
        .unexpectedLine(number: 6, "t= line inside an m= section")),
    BadDescriptionRow(
        "m= without formats", session("m=audio 9 RTP/AVP"),
        .malformedLine(number: 5, "expected m=<media> <port> <proto> <fmt> ...")),
    BadDescriptionRow(
        "m= port out of range", session("m=audio 70000 RTP/AVP 0"),
        .malformedLine(number: 5, "port \"70000\" is not <port>[/<count>]")),
    BadDescriptionRow(
        "RTP format not a number", session("m=audio 9 UDP/TLS/RTP/SAVPF 111 opus"), .badPayloadType(line: 5)),
    BadDescriptionRow("RTP format 128", session("m=video 9 RTP/AVP 96 128"), .badPayloadType(line: 5)),
    BadDescriptionRow("RTP format with a sign", session("m=video 9 RTP/AVP +96"), .badPayloadType(line: 5)),
    BadDescriptionRow(
        "b= without a value", session("b=AS"), .malformedLine(number: 5, "expected b=<type>:<bandwidth>")),
    BadDescriptionRow(
        "c= with two fields", session("c=IN IP4"),
        .malformedLine(number: 5, "expected c=<net type> <addr type> <address>")),
    BadDescriptionRow(
        "attribute without a name", session("a=:x"),
        .malformedLine(number: 5, "attribute name \"\" is empty, too long or holds a space")),
    BadDescriptionRow("NUL byte", session("a=x\u{0}y"), .controlCharacter(line: 5)),
    BadDescriptionRow("carriage return inside a line", session("s=a\rb"), .controlCharacter(line: 5)),
    BadDescriptionRow(
        "not UTF-8", Array(session().utf8) + [UInt8(ascii: "a"), UInt8(ascii: "="), 0xC3, 0x28], .notUTF8),
    // Bounds, one row each.
    BadDescriptionRow(
        "description over 64 KiB", String(repeating: "a", count: 65_537), .tooLarge(bytes: 65_537, limit: 65_536)),
    BadDescriptionRow("2001 lines", session(repeated("a=x", 1997)), .tooManyLines(limit: 2000)),
    BadDescriptionRow(
        "line of 4097 bytes", session("a=" + String(repeating: "x", count: 4095)),
        .lineTooLong(number: 5, bytes: 4097, limit: 4096)),
    BadDescriptionRow(
        "33 m= sections", session(repeated("m=audio 9 RTP/AVP 0", 33)), .tooManyMediaSections(limit: 32)),
    BadDescriptionRow(
        "257 session attributes", session(repeated("a=x", 257)), .tooManyAttributes(section: nil, limit: 256)),
    BadDescriptionRow(
        "257 attributes in m= section 0", session(["m=audio 9 RTP/AVP 0"] + repeated("a=x", 257)),
        .tooManyAttributes(section: 0, limit: 256)),
    BadDescriptionRow(
        "129 formats", session("m=video 9 RTP/AVP" + String(repeating: " 96", count: 129)),
        .tooManyFormats(line: 5, count: 129, limit: 128)),
    BadDescriptionRow(
        "17 b= lines", session(repeated("b=AS:1", 17)), .tooManyRepeatedLines(line: 21, type: "b=", limit: 16)),
    BadDescriptionRow(
        "o= field of 65 bytes", "v=0\no=\(String(repeating: "u", count: 65)) 1 2 IN IP4 127.0.0.1\n",
        .malformedLine(number: 2, "field longer than 64 bytes")),
]

@Suite struct SDPParseTests {
    @Test(arguments: goodRows) func parses(row: GoodDescriptionRow) throws {
        #expect(try SessionDescription(parsing: row.text) == row.expected)
    }

    @Test(arguments: badRows) func rejects(row: BadDescriptionRow) {
        #expect(throws: row.expected) { try SessionDescription(parsing: row.bytes) }
    }

    @Test(arguments: goodRows.map(\.text) + [SDPFixtures.chromeOffer, SDPFixtures.chromeAnswer, SDPFixtures.unusual])
    func roundTrips(text: String) throws {
        let parsed = try SessionDescription(parsing: text)
        #expect(try SessionDescription(parsing: parsed.description) == parsed)
    }

    @Test(arguments: [SDPFixtures.chromeOffer, SDPFixtures.chromeAnswer])
    func printsCanonicalTextBackExactly(text: String) throws {
        #expect(try SessionDescription(parsing: text).description == text)
    }

    @Test func printsUnusualInputInCanonicalOrder() throws {
        let expected = SDPFixtures.crlf(
            """
            v=0
            o=alice 2890844526 2890842807 IN IP4 198.51.100.1
            s=A session with spaces
            i=What it is about
            u=https://example.org/call
            e=alice@example.org
            p=+1 555 0100
            c=IN IP4 198.51.100.1
            b=CT:128
            t=0 0
            r=604800 3600 0 90000
            z=2882844526 -1h
            k=prompt
            a=ice-ufrag:Wq3e
            a=ice-pwd:z8Kp2Lm4Nq6Rs8Tu0Vw2Xy4Z
            a=tool: hand written \u{20}
            a=recvonly
            m=audio 49170/2 RTP/AVP 0 8
            i=Voice
            c=IN IP4 198.51.100.2
            c=IN IP4 198.51.100.3
            b=AS:64
            k=clear:secret
            a=rtpmap:0 PCMU/8000
            a=fmtp:8 a=1; b ;c
            a=x-custom
            a=x-empty:
            m=text 0 TCP t140

            """)
        #expect(try SessionDescription(parsing: SDPFixtures.unusual).description == expected)
    }

    @Test func readsChromeOfferThroughTypedAccessors() throws {
        let offer = try SessionDescription(parsing: SDPFixtures.chromeOffer)
        #expect(offer.groups == [MediaGroup(semantics: "BUNDLE", mids: ["0", "1", "2"])])
        #expect(offer.has(.extmapAllowMixed))
        #expect(offer.media.map(\.kind) == [.audio, .video, .application])
        #expect(offer.media.map(\.mid) == ["0", "1", "2"])
        let audio = offer.media[0]
        #expect(audio.payloadTypes == [111, 63, 9, 0, 8, 13, 110, 126])
        #expect(audio.rtpMaps.first == RTPMap(payloadType: 111, encoding: "opus", clockRate: 48_000, channels: 2))
        #expect(audio.formatParameters.first?["useinbandfec"] == "1")
        #expect(audio.direction == .sendrecv)
        #expect(audio.iceUfrag == "Qx7n")
        #expect(audio.icePwd == "v3Bq9ZkLr2TfYw8Hs1NpUe4c")
        #expect(audio.iceOptions == ["trickle"])
        #expect(audio.setup == .actpass)
        #expect(audio.fingerprints.map(\.isSHA256) == [true])
        #expect(audio.fingerprints.first?.bytes.prefix(3) == [0x9F, 0x3A, 0x51])
        #expect(audio.ssrcs.map(\.ssrc) == [2_718_281_828, 2_718_281_828])
        #expect(audio.has(.rtcpMux) && audio.has(.rtcpRsize))
        let video = offer.media[1]
        #expect(video.rids.map(\.id) == ["q", "h", "f"])
        #expect(
            video.simulcast
                == Simulcast(send: [
                    [SimulcastStream(rid: "q")], [SimulcastStream(rid: "h")], [SimulcastStream(rid: "f")],
                ]))
        #expect(video.extensions.count == 12)
        #expect(video.feedback.filter { $0.payloadType == 96 }.count == 5)
        #expect(video.msid?.track == "e7a1c3b5-9d2f-4a6e-8c0b-1d3f5a7c9e20")
        #expect(offer.media[2].attributeValue(named: "sctp-port") == "5000")
        #expect(offer.media[2].payloadTypes == [])
    }
}
