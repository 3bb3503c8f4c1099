import Testing

@testable import ParleyWebRTC

/// A small offer in Chromium's shape: one section per entry of `sections`, each given its kind line, its mid and its
/// extra lines; the session part carries BUNDLE of every mid unless `sessionLines` replaces it.
private func offer(sessionLines: [String]? = nil, _ sections: [(mline: String, mid: String, lines: [String])]) -> String
{
    var lines = ["v=0", "o=- 42 2 IN IP4 127.0.0.1", "s=-", "t=0 0"]
    lines += sessionLines ?? ["a=group:BUNDLE " + sections.map(\.mid).joined(separator: " ")]
    for section in sections {
        lines += [section.mline, "c=IN IP4 0.0.0.0", "a=mid:\(section.mid)"] + section.lines
    }
    return lines.map { $0 + "\r\n" }.joined()
}

private let transport = [
    "a=ice-ufrag:Qx7n", "a=ice-pwd:v3Bq9ZkLr2TfYw8Hs1NpUe4c", "a=fingerprint:\(SDPFixtures.browserFingerprint)",
    "a=setup:actpass", "a=rtcp-mux",
]
private let opus = ["a=rtpmap:111 opus/48000/2", "a=rtcp-fb:111 transport-cc"]
private let vp8 = ["a=rtpmap:96 VP8/90000", "a=rtcp-fb:96 nack", "a=rtpmap:97 rtx/90000", "a=fmtp:97 apt=96"]

private func audio(_ mid: String = "0", _ lines: [String] = []) -> (mline: String, mid: String, lines: [String]) {
    ("m=audio 9 UDP/TLS/RTP/SAVPF 111", mid, transport + opus + lines)
}

private func video(_ mid: String = "1", _ lines: [String] = []) -> (mline: String, mid: String, lines: [String]) {
    ("m=video 9 UDP/TLS/RTP/SAVPF 96 97", mid, transport + vp8 + lines)
}

private let bob = RelaySource(
    ssrc: 5001, rtxSSRC: 5002, cname: "relay-bob", msid: MediaStreamID(stream: "bob", track: "bob-video"))

private func parameters(_ choices: [String: MediaChoice]) -> AnswerParameters {
    var parameters = SDPFixtures.relay
    parameters.choices = choices
    return parameters
}

struct AnswerErrorRow: Sendable, CustomTestStringConvertible {
    let name: String
    let offer: String
    let expected: SDPError
    var testDescription: String { name }
}

private let errorRows: [AnswerErrorRow] = [
    AnswerErrorRow(
        name: "no BUNDLE", offer: offer(sessionLines: [], [audio()]), expected: .missingBundle),
    AnswerErrorRow(
        name: "no fingerprint",
        offer: offer([
            ("m=audio 9 UDP/TLS/RTP/SAVPF 111", "0", transport.filter { !$0.hasPrefix("a=fingerprint") } + opus)
        ]),
        expected: .missingSHA256Fingerprint(mid: "0")),
    AnswerErrorRow(
        name: "only a sha-1 fingerprint",
        offer: offer([
            (
                "m=audio 9 UDP/TLS/RTP/SAVPF 111", "0",
                transport.filter { !$0.hasPrefix("a=fingerprint") } + ["a=fingerprint:sha-1 0A:FF"] + opus
            )
        ]),
        expected: .missingSHA256Fingerprint(mid: "0")),
    AnswerErrorRow(
        name: "no ice-pwd",
        offer: offer([("m=audio 9 UDP/TLS/RTP/SAVPF 111", "0", transport.filter { !$0.hasPrefix("a=ice-pwd") } + opus)]
        ),
        expected: .missingICECredentials(mid: "0")),
    AnswerErrorRow(
        name: "no rtcp-mux on video",
        offer: offer([audio(), ("m=video 9 UDP/TLS/RTP/SAVPF 96", "1", transport.dropLast() + vp8)]),
        expected: .missingRTCPMux(mid: "1")),
    AnswerErrorRow(
        name: "browser wants to be the DTLS server",
        offer: offer([
            (
                "m=audio 9 UDP/TLS/RTP/SAVPF 111", "0",
                ["a=setup:passive"] + transport.filter { !$0.hasPrefix("a=setup") } + opus
            )
        ]),
        expected: .unsupportedSetup(mid: "0", "passive")),
    AnswerErrorRow(
        name: "section without mid",
        offer: "v=0\r\no=- 42 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\na=group:BUNDLE 0\r\n"
            + "m=audio 9 UDP/TLS/RTP/SAVPF 111\r\n",
        expected: .missingMid(section: 0)),
    AnswerErrorRow(
        name: "two sections with mid 0", offer: offer([audio("0"), video("0")]), expected: .duplicateMid("0")),
]

struct DirectionRow: Sendable, CustomTestStringConvertible {
    let offered: String
    let choice: MediaChoice
    let answered: String
    var testDescription: String { "\(offered), receive \(choice.receive), send \(choice.send != nil) → \(answered)" }
}

private let directionRows: [DirectionRow] = [
    DirectionRow(offered: "sendrecv", choice: MediaChoice(), answered: "recvonly"),
    DirectionRow(offered: "sendrecv", choice: MediaChoice(send: bob), answered: "sendrecv"),
    DirectionRow(offered: "sendrecv", choice: MediaChoice(receive: false, send: bob), answered: "sendonly"),
    DirectionRow(offered: "sendrecv", choice: MediaChoice(receive: false), answered: "inactive"),
    DirectionRow(offered: "sendonly", choice: MediaChoice(send: bob), answered: "recvonly"),
    DirectionRow(offered: "sendonly", choice: MediaChoice(receive: false, send: bob), answered: "inactive"),
    DirectionRow(offered: "recvonly", choice: MediaChoice(send: bob), answered: "sendonly"),
    DirectionRow(offered: "recvonly", choice: MediaChoice(), answered: "inactive"),
    DirectionRow(offered: "inactive", choice: MediaChoice(send: bob), answered: "inactive"),
]

@Suite struct SDPAnswerTests {
    @Test func answersChromeOfferExactly() throws {
        let offer = try SessionDescription(parsing: SDPFixtures.chromeOffer)
        let answer = try SessionDescription.answer(to: offer, with: SDPFixtures.relay)
        #expect(answer.description == SDPFixtures.chromeAnswer)
        #expect(try SessionDescription(parsing: answer.description) == answer)
    }

    @Test func readsWhatTheRelayNeedsFromChromeOffer() throws {
        let offer = try BrowserOffer(SessionDescription(parsing: SDPFixtures.chromeOffer))
        #expect(offer.iceUfrag == "Qx7n")
        #expect(offer.icePwd == "v3Bq9ZkLr2TfYw8Hs1NpUe4c")
        #expect(offer.fingerprint.attributeValue == SDPFixtures.browserFingerprint)
        #expect(offer.extmapAllowMixed)
        #expect(offer.media.map(\.mid) == ["0", "1", "2"])
        #expect(offer.media.map(\.kind) == [.audio, .video, .application])
        #expect(offer.media.map(\.isAccepted) == [true, true, false])
        #expect(offer.media.map(\.acceptedPayloadTypes) == [[111], [96, 97], []])
        #expect(offer.media.map(\.rids) == [[], ["q", "h", "f"], []])
        #expect(offer.media[0].ssrcs == [2_718_281_828])
        #expect(offer.media[1].ssrcs == [])
        #expect(offer.media[0].extensionIDs["urn:ietf:params:rtp-hdrext:sdes:mid"] == 4)
        #expect(offer.media[1].extensionIDs["urn:ietf:params:rtp-hdrext:sdes:rtp-stream-id"] == 10)
        #expect(offer.media[1].extensionIDs.count == 12)
        #expect(
            offer.media[1].codec?.feedback.map(\.attributeValue) == [
                "96 goog-remb", "96 transport-cc", "96 ccm fir", "96 nack", "96 nack pli",
            ])
    }

    @Test func readsSSRCGroupsAndRIDOrder() throws {
        let text = offer([
            video(
                "1",
                [
                    "a=ssrc-group:FID 11 12", "a=ssrc-group:SIM 11 21", "a=ssrc:11 cname:c", "a=ssrc:12 cname:c",
                    "a=ssrc:21 cname:c", "a=rid:hi send", "a=rid:lo send", "a=rid:mid send pt=98",
                    "a=rid:in recv", "a=simulcast:send lo;hi,x;~mid recv in",
                ])
        ])
        let media = try BrowserOffer(SessionDescription(parsing: text)).media[0]
        #expect(media.ssrcs == [11, 12, 21])
        #expect(
            media.ssrcGroups == [
                SSRCGroup(semantics: "FID", ssrcs: [11, 12]), SSRCGroup(semantics: "SIM", ssrcs: [11, 21]),
            ])
        // "x" has no rid line and "mid" may only use payload type 98, which the relay does not accept.
        #expect(media.rids == ["lo", "hi"])
        let answer = try BrowserOffer(SessionDescription(parsing: text)).answer(with: parameters(["1": MediaChoice()]))
        #expect(
            answer.media[0].attributes.filter { $0.name == "rid" || $0.name == "simulcast" }.map(\.line) == [
                "a=rid:lo recv", "a=rid:hi recv", "a=simulcast:recv lo;hi",
            ])
    }

    @Test(arguments: errorRows) func refuses(row: AnswerErrorRow) throws {
        let parsed = try SessionDescription(parsing: row.offer)
        #expect(throws: row.expected) { try SessionDescription.answer(to: parsed, with: SDPFixtures.relay) }
    }

    @Test(arguments: directionRows) func answersDirection(row: DirectionRow) throws {
        let text = offer([video("1", ["a=\(row.offered)"])])
        let answer = try SessionDescription.answer(
            to: SessionDescription(parsing: text), with: parameters(["1": row.choice]))
        #expect(answer.media[0].direction?.rawValue == row.answered)
        let sends = row.answered == "sendrecv" || row.answered == "sendonly"
        #expect(answer.media[0].msid == (sends ? bob.msid : nil))
        #expect(answer.media[0].ssrcs.count == (sends ? 4 : 0))
    }

    @Test func rejectsVideoWithoutVP8() throws {
        let text = offer([
            audio(),
            (
                "m=video 9 UDP/TLS/RTP/SAVPF 98 99", "1",
                transport + ["a=rtpmap:98 VP9/90000", "a=rtpmap:99 rtx/90000", "a=fmtp:99 apt=98"]
            ),
        ])
        let answer = try SessionDescription.answer(to: SessionDescription(parsing: text), with: SDPFixtures.relay)
        #expect(answer.groups == [MediaGroup(semantics: "BUNDLE", mids: ["0"])])
        #expect(answer.media[1].lines == ["m=video 0 UDP/TLS/RTP/SAVPF 98", "c=IN IP4 0.0.0.0", "a=mid:1"])
    }

    @Test func rejectsSectionsOutsideBundleAndAlreadyRejected() throws {
        let text = offer(
            sessionLines: ["a=group:BUNDLE 0"],
            [
                audio("0"), audio("a2"), ("m=video 0 UDP/TLS/RTP/SAVPF 96 97", "v", transport + vp8),
                ("m=text 9 RTP/AVP 0", "t", []),
            ])
        let answer = try SessionDescription.answer(to: SessionDescription(parsing: text), with: SDPFixtures.relay)
        #expect(answer.media.map(\.port) == [40_000, 0, 0, 0])
        #expect(answer.media.map(\.mid) == ["0", "a2", "v", "t"])
        #expect(answer.groups.first?.mids == ["0"])
    }

    @Test func keepsOnlyRelayExtensionsAtOfferedIDs() throws {
        let text = offer([
            audio(
                "0",
                [
                    "a=extmap:7 urn:ietf:params:rtp-hdrext:toffset",
                    "a=extmap:9/sendonly urn:ietf:params:rtp-hdrext:ssrc-audio-level",
                    "a=extmap:12 urn:ietf:params:rtp-hdrext:sdes:mid",
                    "a=extmap:13 http://www.webrtc.org/experiments/rtp-hdrext/playout-delay",
                ])
        ])
        let answer = try SessionDescription.answer(to: SessionDescription(parsing: text), with: SDPFixtures.relay)
        #expect(
            answer.media[0].attributes.filter { $0.name == "extmap" }.map(\.line) == [
                "a=extmap:9/recvonly urn:ietf:params:rtp-hdrext:ssrc-audio-level",
                "a=extmap:12 urn:ietf:params:rtp-hdrext:sdes:mid",
            ])
    }

    @Test func answersVP8WithoutRTXAndWildcardFeedback() throws {
        let text = offer([
            (
                "m=video 9 UDP/TLS/RTP/SAVPF 100 96", "1",
                transport + [
                    "a=rtpmap:100 H264/90000", "a=rtpmap:96 vp8/90000", "a=rtcp-fb:* nack", "a=rtcp-fb:96 nack pli",
                    "a=rtcp-fb:96 x-unknown",
                ]
            )
        ])
        let answer = try SessionDescription.answer(
            to: SessionDescription(parsing: text), with: parameters(["1": MediaChoice(send: bob)]))
        let section = answer.media[0]
        #expect(section.formats == ["96"])
        #expect(
            section.attributes.filter { ["rtpmap", "rtcp-fb", "fmtp", "ssrc-group"].contains($0.name) }.map(\.line) == [
                "a=rtpmap:96 vp8/90000", "a=rtcp-fb:96 nack", "a=rtcp-fb:96 nack pli",
            ])
        // Without RTX, the relay's RTX SSRC is left out.
        #expect(section.ssrcs.map(\.attributeValue) == ["5001 cname:relay-bob", "5001 msid:bob bob-video"])
    }

    @Test func sendsRTXGroupWhenOffered() throws {
        let text = offer([video("1")])
        let answer = try SessionDescription.answer(
            to: SessionDescription(parsing: text), with: parameters(["1": MediaChoice(send: bob)]))
        #expect(answer.media[0].ssrcGroups == [SSRCGroup(semantics: "FID", ssrcs: [5001, 5002])])
        #expect(answer.media[0].direction == .sendrecv)
        #expect(!answer.has(.extmapAllowMixed))
    }

    @Test func acceptsSessionLevelTransport() throws {
        let text = offer(
            sessionLines: [
                "a=group:BUNDLE 0", "a=ice-ufrag:Sess", "a=ice-pwd:SessionLevelPassword1234",
                "a=fingerprint:\(SDPFixtures.browserFingerprint)",
            ],
            [("m=audio 9 UDP/TLS/RTP/SAVPF 111", "0", ["a=rtcp-mux"] + opus)])
        let offer = try BrowserOffer(SessionDescription(parsing: text))
        #expect(offer.iceUfrag == "Sess")
        #expect(offer.icePwd == "SessionLevelPassword1234")
    }

    @Test(arguments: [
        ("short ufrag", "iceUfrag", "ice-ufrag must be 4 to 256 of A-Z, a-z, 0-9, + and /"),
        ("short pwd", "icePwd", "ice-pwd must be 22 to 256 of A-Z, a-z, 0-9, + and /"),
        ("sha-1 fingerprint", "fingerprint", "fingerprint must be sha-256 with 32 bytes"),
        ("address with a space", "address", "address \"a b\" is empty, too long or holds a space"),
        ("port 0", "port", "port 0 rejects every section"),
    ])
    func refusesBadParameters(name: String, field: String, message: String) throws {
        var parameters = SDPFixtures.relay
        switch field {
        case "iceUfrag": parameters.iceUfrag = "abc"
        case "icePwd": parameters.icePwd = "short"
        case "fingerprint":
            parameters.fingerprint = Fingerprint(hashFunction: "sha-1", bytes: Array(repeating: 1, count: 20))
        case "address": parameters.address = "a b"
        default: parameters.port = 0
        }
        let offer = try SessionDescription(parsing: SDPFixtures.chromeOffer)
        #expect(throws: SDPError.badAnswerParameters(message)) {
            try SessionDescription.answer(to: offer, with: parameters)
        }
    }

    @Test func answersIPv6Address() throws {
        var parameters = SDPFixtures.relay
        parameters.address = "2001:db8::7"
        let answer = try SessionDescription.answer(
            to: SessionDescription(parsing: SDPFixtures.chromeOffer), with: parameters)
        #expect(answer.origin.addressType == "IP6")
        #expect(answer.media[0].connections == [ConnectionData(addressType: "IP6", address: "2001:db8::7")])
        #expect(answer.media[2].connections == [ConnectionData(addressType: "IP6", address: "::")])
        #expect(answer.media[0].candidates.first?.address == "2001:db8::7")
        #expect(try SessionDescription(parsing: answer.description) == answer)
    }
}
