/// The relay's side of ICE for one browser (RFC 8445 §2.5, lite): it never sends checks, it answers the browser's
/// binding requests and takes the address of a nominated one as where the browser's media comes from and goes to.
///
/// A state machine of STUN in, STUN out: `receive` is given a datagram, its source and the time, and says what to
/// send back. Consent (RFC 7675) is the browser's checks going on: one every few seconds, lost after 30 s without.
public struct ICELiteAgent: Sendable {
    /// What the relay does with one datagram.
    public enum Outcome: Equatable, Sendable {
        /// A valid check: send `response` to the source; `nominated` when it chose this address.
        case answer(response: [UInt8], nominated: Bool)
        /// Refused for `reason`; send `response` (an error response) when there is one.
        case refused(STUNError, response: [UInt8]?)
    }

    /// The relay's ufrag for this browser (the first half of the USERNAME its checks carry).
    public let localUfrag: String
    /// The relay's password for this browser: the MESSAGE-INTEGRITY key both ways.
    public let localPassword: String
    /// The browser's ufrag from its offer.
    public let remoteUfrag: String
    /// The address the browser nominated: its media's source and destination.
    public private(set) var selected: TransportAddress?
    /// Addresses that passed a check, and when they last did (at most `maximumAddresses`).
    public private(set) var checked: [TransportAddress: Duration] = [:]

    /// Consent lapses after this long without a valid check on the selected address (RFC 7675 §5.1).
    public static let consentTimeout: Duration = .seconds(30)
    /// The most addresses remembered: a browser checks from each of its candidates, a handful.
    public static let maximumAddresses = 16

    /// An agent for one browser's session.
    public init(localUfrag: String, localPassword: String, remoteUfrag: String) {
        self.localUfrag = localUfrag
        self.localPassword = localPassword
        self.remoteUfrag = remoteUfrag
    }

    /// The relay's ufrag a binding request is for (the USERNAME before the colon): which browser's agent to give it
    /// to when many share the relay's port. Nil when the datagram is not a STUN binding request with a USERNAME.
    public static func localUfrag(of received: ReceivedSTUN) -> String? {
        guard received.message.kind == .request, let name = received.message.attribute(.username)?.username else {
            return nil
        }
        return name.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init)
    }

    /// Answers one STUN message from `source` at `now` (on the caller's clock).
    public mutating func receive(_ received: ReceivedSTUN, from source: TransportAddress, at now: Duration) -> Outcome {
        let message = received.message
        guard message.kind == .request, message.method == STUNMessage.binding else {
            return .refused(.notABindingRequest, response: nil)
        }
        // A datagram without a good FINGERPRINT may be anything that happens to look like STUN: never answered.
        guard received.fingerprintOffset != nil else { return .refused(.missingFingerprint, response: nil) }
        guard received.fingerprintIsValid else { return .refused(.badFingerprint, response: nil) }
        guard let username = message.attribute(.username)?.username else {
            return .refused(.missingAttribute("USERNAME"), response: error(400, "Bad Request", to: message))
        }
        guard received.integrityOffset != nil else {
            return .refused(.missingAttribute("MESSAGE-INTEGRITY"), response: error(400, "Bad Request", to: message))
        }
        guard username == "\(localUfrag):\(remoteUfrag)" else {
            return .refused(.unknownUsername(username), response: error(401, "Unauthorized", to: message))
        }
        guard received.integrityIsValid(key: Array(localPassword.utf8)) else {
            return .refused(.badIntegrity, response: error(401, "Unauthorized", to: message))
        }
        guard message.attribute(.iceControlled) == nil else {
            return .refused(.roleConflict, response: error(487, "Role Conflict", to: message, signed: true))
        }
        remember(source, at: now)
        let nominated = message.attribute(.useCandidate) != nil
        if nominated { selected = source }
        let response = STUNMessage(
            kind: .success, transactionID: message.transactionID,
            attributes: [.xorMappedAddress(source, transactionID: message.transactionID)])
        return .answer(response: response.encoded(integrityKey: Array(localPassword.utf8)), nominated: nominated)
    }

    /// Whether the browser still consents at `now`: a check within `consentTimeout` on the selected address, or,
    /// before it nominated one (DTLS may finish first), on any address. False before any check.
    public func hasConsent(at now: Duration) -> Bool {
        let last = selected.map { checked[$0] } ?? checked.values.max()
        guard let last else { return false }
        return now - last < Self.consentTimeout
    }

    private mutating func remember(_ source: TransportAddress, at now: Duration) {
        if checked[source] == nil, checked.count >= Self.maximumAddresses,
            let oldest = checked.filter({ $0.key != selected }).min(by: { $0.value < $1.value })?.key
        {
            checked[oldest] = nil
        }
        checked[source] = now
    }

    private func error(_ code: Int, _ reason: String, to request: STUNMessage, signed: Bool = false) -> [UInt8] {
        STUNMessage(
            kind: .error, transactionID: request.transactionID, attributes: [.errorCode(code, reason: reason)]
        ).encoded(integrityKey: signed ? Array(localPassword.utf8) : nil)
    }
}
