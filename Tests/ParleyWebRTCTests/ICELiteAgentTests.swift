import Testing

@testable import ParleyWebRTC

/// The relay's ICE-lite agent: checks in, responses out, nomination and consent on a manual clock.
@Suite struct ICELiteAgentTests {
    static let browser = TransportAddress(host: [127, 0, 0, 1], port: 40_001)!
    static let otherCandidate = TransportAddress(host: [198, 18, 0, 9], port: 40_002)!
    static let transaction: [UInt8] = Array(1...12)

    static func agent() -> ICELiteAgent {
        ICELiteAgent(localUfrag: "relayU", localPassword: "relay-password-22chars", remoteUfrag: "brwsr")
    }

    /// A check as Chrome sends one: USERNAME, PRIORITY, ICE-CONTROLLING, maybe USE-CANDIDATE, integrity, fingerprint.
    static func check(
        username: String = "relayU:brwsr", password: String = "relay-password-22chars", nominate: Bool = false,
        controlled: Bool = false, integrity: Bool = true, fingerprint: Bool = true, kind: STUNMessage.Kind = .request
    ) -> ReceivedSTUN {
        var attributes: [STUNAttribute] = [
            .username(username), STUNAttribute(type: STUNAttribute.Kind.priority.rawValue, value: [0x6e, 0, 1, 0xff]),
            STUNAttribute(
                type: (controlled ? STUNAttribute.Kind.iceControlled : .iceControlling).rawValue,
                value: [1, 2, 3, 4, 5, 6, 7, 8]),
        ]
        if nominate { attributes.append(STUNAttribute(type: STUNAttribute.Kind.useCandidate.rawValue, value: [])) }
        let message = STUNMessage(kind: kind, transactionID: transaction, attributes: attributes)
        let bytes = message.encoded(integrityKey: integrity ? Array(password.utf8) : nil, fingerprint: fingerprint)
        return try! ReceivedSTUN(parsing: bytes)
    }

    @Test func aValidCheckIsAnsweredWithItsSourceSignedAndFingerprinted() throws {
        var agent = Self.agent()
        guard case .answer(let bytes, let nominated) = agent.receive(Self.check(), from: Self.browser, at: .zero) else {
            Issue.record("a valid check was refused")
            return
        }
        #expect(!nominated)
        #expect(agent.selected == nil)
        let response = try ReceivedSTUN(parsing: bytes)
        #expect(response.message.kind == .success)
        #expect(response.message.transactionID == Self.transaction)
        #expect(response.fingerprintIsValid)
        #expect(response.integrityIsValid(key: Array("relay-password-22chars".utf8)))
        let mapped = response.message.attribute(.xorMappedAddress)?.xorMappedAddress(transactionID: Self.transaction)
        #expect(mapped == Self.browser)
    }

    @Test func useCandidateSelectsTheAddressAndALaterNominationMovesIt() {
        var agent = Self.agent()
        #expect(agent.receive(Self.check(nominate: true), from: Self.browser, at: .seconds(1)).isNominated)
        #expect(agent.selected == Self.browser)
        #expect(agent.receive(Self.check(nominate: true), from: Self.otherCandidate, at: .seconds(2)).isNominated)
        #expect(agent.selected == Self.otherCandidate)
    }

    struct Row: Sendable, CustomTestStringConvertible {
        let name: String
        let check: ReceivedSTUN
        let error: STUNError
        let responseCode: Int?
        var testDescription: String { name }
    }

    static let refusals: [Row] = [
        Row(name: "a response", check: check(kind: .success), error: .notABindingRequest, responseCode: nil),
        Row(name: "an indication", check: check(kind: .indication), error: .notABindingRequest, responseCode: nil),
        Row(name: "no fingerprint", check: check(fingerprint: false), error: .missingFingerprint, responseCode: nil),
        Row(
            name: "no integrity", check: check(integrity: false), error: .missingAttribute("MESSAGE-INTEGRITY"),
            responseCode: 400),
        Row(
            name: "another session's ufrag", check: check(username: "otherU:brwsr"),
            error: .unknownUsername("otherU:brwsr"), responseCode: 401),
        Row(
            name: "another browser's ufrag", check: check(username: "relayU:other"),
            error: .unknownUsername("relayU:other"), responseCode: 401),
        Row(name: "wrong password", check: check(password: "guess"), error: .badIntegrity, responseCode: 401),
        Row(name: "both controlled", check: check(controlled: true), error: .roleConflict, responseCode: 487),
    ]

    @Test(arguments: refusals)
    func refusedChecksSelectNothing(row: Row) throws {
        var agent = Self.agent()
        guard case .refused(let error, let response) = agent.receive(row.check, from: Self.browser, at: .zero) else {
            Issue.record("\(row.name) was answered")
            return
        }
        #expect(error == row.error)
        #expect(agent.selected == nil && agent.checked.isEmpty)
        let code = try response.map { try ReceivedSTUN(parsing: $0) }?.message.attribute(.errorCode)?.errorCode
        #expect(code == row.responseCode)
    }

    @Test func aForgedFingerprintIsNeverAnswered() throws {
        var bytes = Self.check().bytes
        bytes[bytes.count - 1] ^= 1
        var agent = Self.agent()
        #expect(
            agent.receive(try ReceivedSTUN(parsing: bytes), from: Self.browser, at: .zero)
                == .refused(.badFingerprint, response: nil))
    }

    @Test func theRelaysUfragPicksTheAgent() {
        #expect(ICELiteAgent.localUfrag(of: Self.check()) == "relayU")
        #expect(ICELiteAgent.localUfrag(of: Self.check(kind: .success)) == nil)
    }

    @Test func consentLastsThirtySecondsAfterTheLastCheck() {
        var agent = Self.agent()
        #expect(!agent.hasConsent(at: .zero))
        // Before a nomination, a check on any address counts.
        _ = agent.receive(Self.check(), from: Self.otherCandidate, at: .seconds(1))
        #expect(agent.hasConsent(at: .seconds(30)) && !agent.hasConsent(at: .seconds(31)))
        _ = agent.receive(Self.check(nominate: true), from: Self.browser, at: .seconds(10))
        #expect(agent.hasConsent(at: .milliseconds(39900)))
        _ = agent.receive(Self.check(), from: Self.browser, at: .seconds(35))
        #expect(agent.hasConsent(at: .milliseconds(64900)))
        #expect(!agent.hasConsent(at: .seconds(65)))
        // Checks on another address keep nothing alive for the selected one.
        _ = agent.receive(Self.check(), from: Self.otherCandidate, at: .seconds(64))
        #expect(!agent.hasConsent(at: .seconds(66)))
    }

    @Test func addressesAreBoundedAndTheSelectedOneIsKept() {
        var agent = Self.agent()
        _ = agent.receive(Self.check(nominate: true), from: Self.browser, at: .zero)
        for port in 1...40 {
            _ = agent.receive(
                Self.check(), from: TransportAddress(host: [198, 18, 0, 1], port: UInt16(port))!, at: .seconds(port))
        }
        #expect(agent.checked.count == ICELiteAgent.maximumAddresses)
        #expect(agent.checked[Self.browser] != nil)
    }
}

extension ICELiteAgent.Outcome {
    var isNominated: Bool {
        if case .answer(_, let nominated) = self { return nominated }
        return false
    }
}
