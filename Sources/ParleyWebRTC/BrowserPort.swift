/// Every browser on the relay's one UDP port: which `BrowserTransport` a datagram is for. A STUN check names its
/// browser by the relay's ufrag in its USERNAME; anything else is known by its source address, which a check that
/// passed tied to one browser (a later check from the same address moves it, as a browser behind a new NAT binding
/// would).
///
/// Not Sendable, like the transports it holds: the relay's media loop owns it.
public final class BrowserPort {
    /// The browsers, by the relay's ufrag for each.
    public private(set) var transports: [String: BrowserTransport] = [:]
    /// Which browser each checked address belongs to.
    public private(set) var owners: [TransportAddress: String] = [:]
    /// The most browsers the port holds.
    public let limit: Int

    /// A port holding at most `limit` browsers.
    public init(limit: Int = 1_000) {
        self.limit = limit
    }

    /// Adds the transport of a browser whose checks carry `ufrag` (the relay's ufrag in its answer).
    public func add(_ transport: BrowserTransport) throws(BrowserPortError) {
        let ufrag = transport.ice.localUfrag
        guard transports[ufrag] == nil else { throw .ufragTaken(ufrag) }
        guard transports.count < limit else { throw .full(limit: limit) }
        transports[ufrag] = transport
    }

    /// Forgets a browser and every address it was known by; its transport, if it had one.
    @discardableResult
    public func remove(_ ufrag: String) -> BrowserTransport? {
        guard let transport = transports.removeValue(forKey: ufrag) else { return nil }
        owners = owners.filter { $0.value != ufrag }
        return transport
    }

    /// Gives one datagram from `source` to its browser: that browser's ufrag and what its transport made of it, or
    /// the ufrag nil and one refusal when no browser is known for it.
    public func receive(
        _ datagram: [UInt8], from source: TransportAddress, at now: Duration
    ) -> (ufrag: String?, events: [BrowserTransport.Event]) {
        let ufrag: String
        if DatagramKind(datagram) == .stun {
            guard let received = try? ReceivedSTUN(parsing: datagram), let named = ICELiteAgent.localUfrag(of: received)
            else { return (nil, [.refused(.unknownBrowser(source))]) }
            ufrag = named
        } else {
            guard let owner = owners[source] else { return (nil, [.refused(.unknownBrowser(source))]) }
            ufrag = owner
        }
        guard let transport = transports[ufrag] else { return (nil, [.refused(.unknownBrowser(source))]) }
        let events = transport.receive(datagram, from: source, at: now)
        if transport.ice.checked[source] != nil, owners[source] != ufrag {
            owners[source] = ufrag
            // A browser's agent keeps at most 16 addresses: the port keeps no more for it than its agent does.
            owners = owners.filter { $0.value != ufrag || transport.ice.checked[$0.key] != nil }
        }
        return (ufrag, events)
    }

    /// Runs every browser's timers at `now`: what each one's did, by ufrag, leaving out those with nothing to say.
    public func tick(at now: Duration) -> [(ufrag: String, events: [BrowserTransport.Event])] {
        transports.compactMap { ufrag, transport in
            let events = transport.tick(at: now)
            return events.isEmpty ? nil : (ufrag, events)
        }
    }
}

/// Why a browser could not be added to the port.
public enum BrowserPortError: Error, Equatable, Sendable, CustomStringConvertible {
    case full(limit: Int)
    case ufragTaken(String)

    public var description: String {
        switch self {
        case .full(let limit): "the relay holds \(limit) browsers, its limit"
        case .ufragTaken(let ufrag): "ICE ufrag \(ufrag) is another browser's"
        }
    }
}
