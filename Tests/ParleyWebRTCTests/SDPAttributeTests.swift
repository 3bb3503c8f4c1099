import Testing

@testable import ParleyWebRTC

struct TypedAttributeRow: Sendable, CustomTestStringConvertible {
    let name: String
    /// The a= line as written.
    let line: String
    let expected: any SDPAttributeValue
    var testDescription: String { name }

    init(_ name: String, _ line: String, _ expected: any SDPAttributeValue) {
        self.name = name
        self.line = line
        self.expected = expected
    }
}

struct BadAttributeRow: Sendable, CustomTestStringConvertible {
    let name: String
    let line: String
    let attribute: String
    let reason: String
    var testDescription: String { name }

    init(_ name: String, _ line: String, _ attribute: String, _ reason: String) {
        self.name = name
        self.line = line
        self.attribute = attribute
        self.reason = reason
    }
}

private let rtx = SDPParameter("apt", "96")

private let typedRows: [TypedAttributeRow] = [
    TypedAttributeRow(
        "rtpmap opus", "a=rtpmap:111 opus/48000/2",
        RTPMap(payloadType: 111, encoding: "opus", clockRate: 48_000, channels: 2)),
    TypedAttributeRow(
        "rtpmap VP8", "a=rtpmap:96 VP8/90000", RTPMap(payloadType: 96, encoding: "VP8", clockRate: 90_000)),
    TypedAttributeRow(
        "fmtp opus in order", "a=fmtp:111 minptime=10;useinbandfec=1",
        FormatParameters(
            payloadType: 111, parameters: [SDPParameter("minptime", "10"), SDPParameter("useinbandfec", "1")])),
    TypedAttributeRow("fmtp rtx", "a=fmtp:97 apt=96", FormatParameters(payloadType: 97, parameters: [rtx])),
    TypedAttributeRow(
        "fmtp red without =", "a=fmtp:63 111/111",
        FormatParameters(payloadType: 63, parameters: [SDPParameter("111/111")])),
    TypedAttributeRow(
        "fmtp spaces and empty items", "a=fmtp:8 a=1; b ;;c=",
        FormatParameters(
            payloadType: 8, parameters: [SDPParameter("a", "1"), SDPParameter("b"), SDPParameter("c", "")])),
    TypedAttributeRow(
        "rtcp-fb nack pli", "a=rtcp-fb:96 nack pli", RTCPFeedback(payloadType: 96, type: "nack", parameter: "pli")),
    TypedAttributeRow(
        "rtcp-fb wildcard", "a=rtcp-fb:* transport-cc", RTCPFeedback(payloadType: nil, type: "transport-cc")),
    TypedAttributeRow(
        "extmap", "a=extmap:3 http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01",
        ExtensionMap(id: 3, uri: "http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01")),
    TypedAttributeRow(
        "extmap with direction and attributes", "a=extmap:12/recvonly urn:example:ext 1 2",
        ExtensionMap(id: 12, direction: .recvonly, uri: "urn:example:ext", extensionAttributes: "1 2")),
    TypedAttributeRow(
        "ssrc cname", "a=ssrc:2718281828 cname:Hq3vX9mTzL0aPe4w",
        SSRCAttribute(ssrc: 2_718_281_828, attribute: "cname", value: "Hq3vX9mTzL0aPe4w")),
    TypedAttributeRow(
        "ssrc msid keeps its space", "a=ssrc:1 msid:stream track",
        SSRCAttribute(ssrc: 1, attribute: "msid", value: "stream track")),
    TypedAttributeRow("ssrc without value", "a=ssrc:7 x-flag", SSRCAttribute(ssrc: 7, attribute: "x-flag")),
    TypedAttributeRow("ssrc-group FID", "a=ssrc-group:FID 1 2", SSRCGroup(semantics: "FID", ssrcs: [1, 2])),
    TypedAttributeRow("ssrc-group SIM", "a=ssrc-group:SIM 10 20 30", SSRCGroup(semantics: "SIM", ssrcs: [10, 20, 30])),
    TypedAttributeRow("rid send", "a=rid:q send", RIDDescription(id: "q", direction: .send)),
    TypedAttributeRow(
        "rid recv with restrictions", "a=rid:hi_1 recv pt=96,97;max-width=1280",
        RIDDescription(
            id: "hi_1", direction: .recv,
            restrictions: [SDPParameter("pt", "96,97"), SDPParameter("max-width", "1280")])),
    TypedAttributeRow(
        "simulcast send q;h;f", "a=simulcast:send q;h;f",
        Simulcast(send: [[SimulcastStream(rid: "q")], [SimulcastStream(rid: "h")], [SimulcastStream(rid: "f")]])),
    TypedAttributeRow(
        "simulcast paused, alternatives, both directions", "a=simulcast:recv x send ~q;h,f",
        Simulcast(
            send: [[SimulcastStream(rid: "q", paused: true)], [SimulcastStream(rid: "h"), SimulcastStream(rid: "f")]],
            recv: [[SimulcastStream(rid: "x")]])),
    TypedAttributeRow(
        "fingerprint in uppercase", "a=fingerprint:SHA-256 " + (0..<32).map { _ in "AB" }.joined(separator: ":"),
        Fingerprint(hashFunction: "sha-256", bytes: Array(repeating: 0xAB, count: 32))),
    TypedAttributeRow(
        "fingerprint sha-1 lowercase hex", "a=fingerprint:sha-1 0a:ff",
        Fingerprint(hashFunction: "sha-1", bytes: [0x0A, 0xFF])),
    TypedAttributeRow("setup actpass", "a=setup:actpass", SetupRole.actpass),
    TypedAttributeRow("setup passive", "a=setup:passive", SetupRole.passive),
    TypedAttributeRow("group BUNDLE", "a=group:BUNDLE 0 1 2", MediaGroup(semantics: "BUNDLE", mids: ["0", "1", "2"])),
    TypedAttributeRow("group without mids", "a=group:BUNDLE", MediaGroup(semantics: "BUNDLE", mids: [])),
    TypedAttributeRow(
        "candidate host with extensions",
        "a=candidate:1160438246 1 udp 2122260223 192.0.2.10 52133 typ host generation 0 network-id 1",
        Candidate(
            foundation: "1160438246", component: 1, transport: "udp", priority: 2_122_260_223, address: "192.0.2.10",
            port: 52133, type: .host, extensions: [SDPParameter("generation", "0"), SDPParameter("network-id", "1")])),
    TypedAttributeRow(
        "candidate srflx mDNS raddr",
        "a=candidate:842163049 1 udp 1677729535 203.0.113.9 62793 typ srflx raddr 0.0.0.0 rport 0",
        Candidate(
            foundation: "842163049", priority: 1_677_729_535, address: "203.0.113.9", port: 62793, type: .srflx,
            extensions: [SDPParameter("raddr", "0.0.0.0"), SDPParameter("rport", "0")])),
    TypedAttributeRow(
        "candidate tcp other type", "a=candidate:3 1 tcp 1518280447 7f3c.local 9 typ x-new tcptype active",
        Candidate(
            foundation: "3", transport: "tcp", priority: 1_518_280_447, address: "7f3c.local", port: 9,
            type: .other("x-new"), extensions: [SDPParameter("tcptype", "active")])),
    TypedAttributeRow("msid stream and track", "a=msid:s1 t1", MediaStreamID(stream: "s1", track: "t1")),
    TypedAttributeRow("msid no stream", "a=msid:- t1", MediaStreamID(stream: "-", track: "t1")),
]

private func sixtyFive() -> String { String(repeating: "m", count: 65) }

private let badAttributeRows: [BadAttributeRow] = [
    BadAttributeRow(
        "rtpmap without rate", "a=rtpmap:96 VP8", "rtpmap", "expected <codec>/<rate>[/<channels>], found \"VP8\""),
    BadAttributeRow("rtpmap without codec", "a=rtpmap:96", "rtpmap", "expected \"<pt> <codec>/<rate>\""),
    BadAttributeRow(
        "rtpmap payload type 128", "a=rtpmap:128 VP8/90000", "rtpmap", "payload type \"128\" is not a number in 0...127"
    ),
    BadAttributeRow(
        "rtpmap clock rate 0", "a=rtpmap:96 VP8/0", "rtpmap", "clock rate \"0\" is not a number in 1...4294967295"),
    BadAttributeRow("rtpmap without value", "a=rtpmap", "rtpmap", "no value"),
    BadAttributeRow("fmtp payload type x", "a=fmtp:x a=1", "fmtp", "payload type \"x\" is not a number in 0...127"),
    BadAttributeRow("fmtp parameter without name", "a=fmtp:96 =1", "fmtp", "parameter \"=1\" has no name"),
    BadAttributeRow(
        "fmtp with 33 parameters", "a=fmtp:96 " + (0..<33).map { "p\($0)=1" }.joined(separator: ";"), "fmtp",
        "more than 32 parameters"),
    BadAttributeRow("rtcp-fb without type", "a=rtcp-fb:96", "rtcp-fb", "expected \"<pt> <type>\""),
    BadAttributeRow("extmap id 0", "a=extmap:0 urn:x", "extmap", "id \"0\" is not a number in 1...255"),
    BadAttributeRow(
        "extmap unknown direction", "a=extmap:1/sideways urn:x", "extmap", "unknown direction \"sideways\""),
    BadAttributeRow("ssrc not a number", "a=ssrc:x cname:a", "ssrc", "ssrc \"x\" is not a number in 0...4294967295"),
    BadAttributeRow("ssrc without attribute", "a=ssrc:1", "ssrc", "expected \"<ssrc> <attribute>[:<value>]\""),
    BadAttributeRow("ssrc-group without ssrcs", "a=ssrc-group:FID", "ssrc-group", "expected \"<semantics> <ssrc>...\""),
    BadAttributeRow(
        "ssrc-group of 33", "a=ssrc-group:SIM " + (1...33).map(String.init).joined(separator: " "), "ssrc-group",
        "more than 32 sources"),
    BadAttributeRow("rid direction", "a=rid:q sideways", "rid", "direction \"sideways\" is neither send nor recv"),
    BadAttributeRow(
        "rid with a dot", "a=rid:q.1 send", "rid", "rid \"q.1\" holds a character other than A-Z, a-z, 0-9, - and _"),
    BadAttributeRow("rid of 65 bytes", "a=rid:\(sixtyFive()) send", "rid", "rid longer than 64 bytes"),
    BadAttributeRow(
        "simulcast without list", "a=simulcast:send", "simulcast", "expected \"send|recv <streams>\" once or twice"),
    BadAttributeRow(
        "simulcast send twice", "a=simulcast:send a send b", "simulcast", "\"send\" is not a first send or recv"),
    BadAttributeRow("simulcast empty stream", "a=simulcast:send a;;b", "simulcast", "empty rid"),
    BadAttributeRow(
        "simulcast of 33 streams", "a=simulcast:send " + (0..<33).map { "r\($0)" }.joined(separator: ";"), "simulcast",
        "more than 32 streams"),
    BadAttributeRow(
        "fingerprint odd digit", "a=fingerprint:sha-256 AB:C", "fingerprint", "\"C\" is not two hex digits"),
    BadAttributeRow(
        "fingerprint without hash", "a=fingerprint:AB:CD", "fingerprint", "expected \"<hash> <XX:XX:...>\""),
    BadAttributeRow(
        "fingerprint of 65 bytes", "a=fingerprint:sha-512 " + (0..<65).map { _ in "00" }.joined(separator: ":"),
        "fingerprint", "more than 64 bytes"),
    BadAttributeRow("setup both", "a=setup:both", "setup", "\"both\" is not actpass, active, passive or holdconn"),
    BadAttributeRow(
        "group of 33 mids", "a=group:BUNDLE " + (0..<33).map(String.init).joined(separator: " "), "group",
        "more than 32 mids"),
    BadAttributeRow(
        "candidate without typ", "a=candidate:1 1 udp 1 192.0.2.1 9 host", "candidate",
        "expected \"<foundation> <component> <transport> <priority> <address> <port> typ <type>\" and pairs"),
    BadAttributeRow(
        "candidate port 70000", "a=candidate:1 1 udp 1 192.0.2.1 70000 typ host", "candidate",
        "port \"70000\" is not a number in 0...65535"),
    BadAttributeRow(
        "candidate component 0", "a=candidate:1 0 udp 1 192.0.2.1 9 typ host", "candidate",
        "component \"0\" is not a number in 1...256"),
    BadAttributeRow("msid of three fields", "a=msid:a b c", "msid", "expected \"<stream> [<track>]\""),
    BadAttributeRow("mid empty", "a=mid:", "mid", "empty mid"),
    BadAttributeRow("mid of 65 bytes", "a=mid:\(sixtyFive())", "mid", "mid longer than 64 bytes"),
    BadAttributeRow(
        "ice-ufrag with a space", "a=ice-ufrag:ab cd", "ice-ufrag", "expected 1 to 256 of A-Z, a-z, 0-9, + and /"),
    BadAttributeRow(
        "ice-pwd of 257", "a=ice-pwd:" + String(repeating: "p", count: 257), "ice-pwd",
        "expected 1 to 256 of A-Z, a-z, 0-9, + and /"),
]

/// Whether `attribute` parses as `expected`'s type to exactly `expected`.
private func parses<Value: SDPAttributeValue>(_ attribute: SDPAttribute, as expected: Value) -> Bool {
    attribute.typed(as: Value.self) == expected
}

/// Whether `value` prints to text that parses back to `value`.
private func roundTrips<Value: SDPAttributeValue>(_ value: Value) -> Bool {
    (try? Value(attributeValue: value.attributeValue)) == value
}

@Suite struct SDPAttributeTests {
    @Test(arguments: typedRows) func parsesTypedValue(row: TypedAttributeRow) throws {
        let text = "v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n\(row.line)\r\n"
        let attribute = try #require(try SessionDescription(parsing: text).attributes.first)
        #expect(attribute.line == row.line)
        // Opened outside #expect, whose expansion cannot open an existential.
        let parsedExactly = parses(attribute, as: row.expected)
        let printedBack = roundTrips(row.expected)
        #expect(parsedExactly)
        #expect(printedBack)
    }

    @Test(arguments: badAttributeRows) func rejectsMalformedValue(row: BadAttributeRow) {
        let text =
            "v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\nm=video 9 UDP/TLS/RTP/SAVPF 96\r\n\(row.line)\r\n"
        #expect(throws: SDPError.malformedAttribute(line: 6, name: row.attribute, reason: row.reason)) {
            try SessionDescription(parsing: text)
        }
    }

    @Test func printsTypedValues() {
        let lines = [
            SDPAttribute(RTPMap(payloadType: 111, encoding: "opus", clockRate: 48_000, channels: 2)),
            SDPAttribute(RTCPFeedback(payloadType: nil, type: "transport-cc")),
            SDPAttribute(ExtensionMap(id: 2, direction: .sendonly, uri: "urn:x")),
            SDPAttribute(Fingerprint(hashFunction: "SHA-256", bytes: [0x0A, 0xFF])),
            SDPAttribute(
                Simulcast(send: [[SimulcastStream(rid: "a")]], recv: [[SimulcastStream(rid: "b", paused: true)]])),
            MediaDirection.recvonly.attribute, .rtcpMux,
        ].map(\.line)
        #expect(
            lines == [
                "a=rtpmap:111 opus/48000/2", "a=rtcp-fb:* transport-cc", "a=extmap:2/sendonly urn:x",
                "a=fingerprint:sha-256 0A:FF", "a=simulcast:send a recv ~b", "a=recvonly", "a=rtcp-mux",
            ])
    }

    @Test(arguments: [
        (MediaDirection.sendrecv, MediaDirection.sendrecv), (.sendonly, .recvonly), (.recvonly, .sendonly),
        (.inactive, .inactive),
    ])
    func reversesDirection(direction: MediaDirection, reversed: MediaDirection) {
        #expect(direction.reversed == reversed)
    }
}
