import ParleyWire

/// Tunable limits of the relay's media forwarding.
public struct MediaLimits: Sendable, Equatable {
    /// At most one keyframe request per sender per this interval reaches the sender.
    public var keyframeRequestInterval: Duration
    /// How long sent video packets stay available to answer NACKs.
    public var retransmissionWindow: Duration
    /// RTP a member may send, kbit/s, with a second's worth as burst; beyond it packets are dropped and counted
    /// (`--max-member-kbps`, 0 for none). The default is twice the largest profile's video and audio (1500 + 100
    /// kbit/s). A member that declares its profile's video rate at join is held to less: `memberKbps(video:)`.
    public var memberKbps: Int = 3200
    /// Refused binds are logged once per source address in this window, with a count of those held back.
    public var refusedBindLogWindow: Duration = .seconds(60)

    /// The audio's share of a member's rate, kbit/s: Opus with in-band FEC, RTCP and retransmissions.
    public static let audioShareKbps = 100

    /// What a member that declared `video` kbit/s may send: twice its profile's video and audio, never more than
    /// `memberKbps` (0 for no limit at all).
    public func memberKbps(video: Int?) -> Int {
        guard memberKbps > 0, let video else { return memberKbps }
        return min(memberKbps, 2 * (video + Self.audioShareKbps))
    }

    /// Defaults: 500 ms throttle, 500 ms retransmission window.
    public init(
        keyframeRequestInterval: Duration = .milliseconds(500),
        retransmissionWindow: Duration = .milliseconds(500)
    ) {
        self.keyframeRequestInterval = keyframeRequestInterval
        self.retransmissionWindow = retransmissionWindow
    }
}

/// Why a datagram was dropped (counted, never answered).
public enum DropReason: String, Sendable, Equatable {
    case notMedia = "not RTP/RTCP"
    case malformed = "malformed"
    case unknownSource = "SSRC of no member"
    case unprovenAddress = "address not bound to the SSRC's member"
    case audienceSending = "audience member sending media"
    case badBind = "bind refused"
    case forgedFeedback = "RTCP naming another member's SSRC as its sender"
    case otherRoom = "feedback about a stream of another room"
    case unallottedSSRC = "video layer SSRC its member did not declare"
    case oversizedKeyframe = "VP8 keyframe declaring a picture beyond the largest profile"
    case overRate = "media beyond the member's rate limit"
    case oversizedStreamDatagram = "media frame on a TCP connection over 2,048 bytes"
    case probeRefused = "downlink probe asked for within a second of the last, or during one"
}

/// What to do with one RTCP packet of a compound, decided by the router.
public enum FeedbackAction: Equatable, Sendable {
    /// Forward the whole datagram to every other bound member of the room (SR, SDES, BYE).
    case forwardToRoom
    /// Send these bytes to one member (a PLI or RR for the stream's sender).
    case sendToMember(UInt32, [UInt8])
    /// Resend stored packets of `ssrc` with these sequence numbers back to the requester.
    case retransmit(ssrc: UInt32, sequenceNumbers: [UInt16])
}

/// The relay's UDP routing table: which member owns which SSRC block, which address each member proved, who is in
/// which room. Pure and generic over the address type, so the forwarding rules are tested without sockets.
public struct MediaRouter<Address: Hashable & Sendable>: Sendable {
    /// One member's media identity.
    public struct Route: Sendable {
        public var member: UInt32
        public var room: String
        public var ssrcs: MemberSSRCs
        public var role: MemberRole
        public var address: Address?
        /// How many video layers it declared (the SSRCs past them are refused).
        public var videoLayers = 1
    }

    /// Limits in force.
    public let limits: MediaLimits
    private var routes: [UInt32: Route] = [:]
    private var memberByBlock: [UInt32: UInt32] = [:]
    /// Bound members of each room with their addresses, in join order: the fan-out lists.
    private var fanOut: [String: [(member: UInt32, address: Address)]] = [:]
    private var throttle: KeyframeRequestThrottle
    /// When each member's media last started (a bind from a new address), for `mediaStarted`.
    private var mediaStarts: [UInt32: Duration] = [:]
    /// Each member's media allowance in bytes (token bucket), and when it was last topped up.
    private var allowance: [UInt32: (bytes: Double, at: Duration)] = [:]
    /// Each member's rate (bytes a second): twice its declared profile, or the relay-wide cap.
    private var rates: [UInt32: Double] = [:]
    private let bytesPerSecond: Double
    /// Datagrams dropped, by reason.
    public private(set) var dropped: [DropReason: Int] = [:]
    /// Keyframe requests swallowed by the throttle.
    public var throttledKeyframeRequests: Int { throttle.suppressedCount }

    /// An empty routing table.
    public init(limits: MediaLimits = MediaLimits()) {
        self.limits = limits
        throttle = KeyframeRequestThrottle(minimumInterval: limits.keyframeRequestInterval)
        bytesPerSecond = Double(limits.memberKbps) * 1000 / 8
    }

    /// A member joined: its SSRC block now belongs to it (not yet bound to an address).
    public mutating func add(
        member: UInt32, room: String, ssrcs: MemberSSRCs, role: MemberRole,
        videoKbps: Int? = nil, videoLayers: Int = 1
    ) {
        routes[member] = Route(
            member: member, room: room, ssrcs: ssrcs, role: role, address: nil,
            videoLayers: max(1, min(videoLayers, maxVideoLayers)))
        allowance[member] = nil
        rates[member] = Double(limits.memberKbps(video: videoKbps)) * 1000 / 8
        memberByBlock[ssrcs.block] = member
    }

    /// A member's role changed (audience members may not send media).
    public mutating func setRole(_ role: MemberRole, of member: UInt32) {
        routes[member]?.role = role
    }

    /// A member left: forget its block, its address and its throttle state.
    public mutating func forget(member: UInt32) {
        guard let route = routes.removeValue(forKey: member) else { return }
        memberByBlock[route.ssrcs.block] = nil
        allowance[member] = nil
        rates[member] = nil
        mediaStarts[member] = nil
        for offset in UInt32(0)...3 { throttle.removeStream(ssrc: route.ssrcs.block + offset) }
        rebuildFanOut(route.room)
    }

    /// A bind was verified: `address` now speaks for `member` (a new address replaces the old one). A member
    /// bound to the same address before is the same client's earlier self (its signaling dropped and it rejoined):
    /// it loses the address, so the client does not get every packet twice and its own packets echoed back.
    public mutating func bind(member: UInt32, to address: Address) {
        guard let room = routes[member]?.room else { return }
        for (other, route) in routes where other != member && route.address == address {
            routes[other]?.address = nil
            if route.room != room { rebuildFanOut(route.room) }
        }
        routes[member]?.address = address
        rebuildFanOut(room)
    }

    /// The member whose block holds `ssrc`, if it is bound to `address`; otherwise counts the drop.
    public mutating func sender(ssrc: UInt32, from address: Address) -> Route? {
        guard let member = memberByBlock[ssrc & ~3], let route = routes[member] else {
            count(.unknownSource)
            return nil
        }
        guard route.address == address else {
            count(.unprovenAddress)
            return nil
        }
        // Video SSRCs past the layers the member declared: nobody was told to send with them, so nothing is kept.
        if let layer = route.ssrcs.layerIndex(of: ssrc), layer >= route.videoLayers {
            count(.unallottedSSRC)
            return nil
        }
        return route
    }

    /// The route of a member.
    public func route(of member: UInt32) -> Route? { routes[member] }

    /// The members with a route in any of `rooms`, in id order.
    public func members(inRooms rooms: Set<String>) -> [UInt32] {
        routes.values.filter { rooms.contains($0.room) }.map(\.member).sorted()
    }

    /// The member whose SSRC block holds `ssrc`, if any.
    public func owner(of ssrc: UInt32) -> UInt32? { memberByBlock[ssrc & ~3] }

    /// Every bound member of the room except `member`, to forward to.
    public func destinations(from member: UInt32, in room: String, into out: inout [Address]) {
        out.removeAll(keepingCapacity: true)
        guard let list = fanOut[room] else { return }
        for entry in list where entry.member != member { out.append(entry.address) }
    }

    /// Every bound member of the room except `member`, with its address: the fan-out of a simulcast layer, which
    /// each receiver gets or not.
    public func destinations(
        from member: UInt32, in room: String,
        into out: inout [(member: UInt32, address: Address)]
    ) {
        out.removeAll(keepingCapacity: true)
        guard let list = fanOut[room] else { return }
        for entry in list where entry.member != member { out.append(entry) }
    }

    /// Whether `member` may send `bytes` more at `now` under its rate limit; a refusal is counted.
    public mutating func admitMedia(from member: UInt32, bytes: Int, at now: Duration) -> Bool {
        let bytesPerSecond = rates[member] ?? self.bytesPerSecond
        guard bytesPerSecond > 0 else { return true }  // 0: no limit
        let elapsed = allowance[member].map { now - $0.at } ?? .seconds(1)
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let available = min(bytesPerSecond, (allowance[member]?.bytes ?? 0) + max(0, seconds) * bytesPerSecond)
        guard available >= Double(bytes) else {
            allowance[member] = (available, now)
            count(.overRate)
            return false
        }
        allowance[member] = (available - Double(bytes), now)
        return true
    }

    /// Counts a drop.
    public mutating func count(_ reason: DropReason) {
        dropped[reason, default: 0] += 1
    }

    /// Decides what to do with each packet of an RTCP compound from `sender`. Every SSRC the compound claims as
    /// its sender must be one of `sender`'s own, or the whole compound is dropped (counted as forged): nobody speaks
    /// for another member. Feedback about a stream (NACK, PLI, report blocks) is acted on only when that stream's
    /// owner is in the sender's room; the rest is dropped and counted, so no room can reach into another.
    public mutating func feedback(_ packets: [RTCPPacket], from sender: Route, at now: Duration) -> [FeedbackAction] {
        for packet in packets where !packet.claimedSenderSSRCs.allSatisfy(sender.ssrcs.contains) {
            count(.forgedFeedback)
            return []
        }
        var actions: [FeedbackAction] = []
        var forwardWhole = false
        for packet in packets {
            switch packet {
            case .senderReport, .sourceDescription, .goodbye:
                forwardWhole = true
            case .nack(let nack):
                guard peer(owning: nack.mediaSSRC, inRoomOf: sender) != nil else { continue }
                actions.append(.retransmit(ssrc: nack.mediaSSRC, sequenceNumbers: nack.lostSequenceNumbers))
            case .pictureLossIndication(let pli):
                guard let owner = peer(owning: pli.mediaSSRC, inRoomOf: sender) else { continue }
                if throttle.shouldForward(mediaSSRC: pli.mediaSSRC, at: now) {
                    actions.append(.sendToMember(owner, RTCPPacket.pictureLossIndication(pli).serialized()))
                }
            case .receiverReport(let report):
                // Each stream's sender hears how its stream arrives here (loss, jitter) for its own rate decisions.
                var byOwner: [UInt32: [ReportBlock]] = [:]
                for block in report.reports {
                    guard let owner = peer(owning: block.ssrc, inRoomOf: sender) else { continue }
                    byOwner[owner, default: []].append(block)
                }
                for (owner, blocks) in byOwner.sorted(by: { $0.key < $1.key }) {
                    let rr = ReceiverReport(ssrc: report.ssrc, reports: blocks)
                    actions.append(.sendToMember(owner, RTCPPacket.receiverReport(rr).serialized()))
                }
            case .application, .other:
                break
            }
        }
        if forwardWhole { actions.insert(.forwardToRoom, at: 0) }
        return actions
    }

    /// The member owning `ssrc` when it is someone else in `sender`'s room; nil (counting feedback about another
    /// room's stream) otherwise. Feedback about one's own streams or unknown SSRCs is ignored without counting.
    private mutating func peer(owning ssrc: UInt32, inRoomOf sender: Route) -> UInt32? {
        guard let owner = memberByBlock[ssrc & ~3], owner != sender.member, let route = routes[owner] else {
            return nil
        }
        guard route.room == sender.room else {
            count(.otherRoom)
            return nil
        }
        return owner
    }

    /// Keyframe requests held back by the throttle whose interval has now passed: (owner, PLI bytes).
    public mutating func dueKeyframeRequests(at now: Duration) -> [(member: UInt32, bytes: [UInt8])] {
        throttle.dueRequests(at: now).compactMap { ssrc in memberByBlock[ssrc & ~3].map { ($0, Self.pli(ssrc)) } }
    }

    /// A PLI for `ssrc` to its owner, unless the throttle holds it back (it then goes out when due). `first`: for a
    /// receiver whose media just started, held back only by a keyframe already on its way
    /// (`KeyframeRequestThrottle.shouldForwardFirst`).
    public mutating func keyframeRequest(for ssrc: UInt32, first: Bool = false, at now: Duration) -> (
        member: UInt32, bytes: [UInt8]
    )? {
        guard let owner = memberByBlock[ssrc & ~3],
            first
                ? throttle.shouldForwardFirst(mediaSSRC: ssrc, at: now)
                : throttle.shouldForward(mediaSSRC: ssrc, at: now)
        else { return nil }
        return (owner, Self.pli(ssrc))
    }

    /// `member`'s media started at `now` (its bind from a new address): true when its first keyframes may be asked
    /// for at once (`keyframeRequest(first: true)`). A member whose media started less than the throttle's interval
    /// before (rebinding from one address after another) is asked for like any receiver, so rebinding cannot make
    /// the room's cameras send keyframe after keyframe.
    public mutating func mediaStarted(member: UInt32, at now: Duration) -> Bool {
        defer { mediaStarts[member] = now }
        guard let last = mediaStarts[member] else { return true }
        return now - last >= limits.keyframeRequestInterval
    }

    /// The relay's own keyframe request for `ssrc` (sender SSRC 0).
    private static func pli(_ ssrc: UInt32) -> [UInt8] {
        RTCPPacket.pictureLossIndication(PictureLossIndication(senderSSRC: 0, mediaSSRC: ssrc)).serialized()
    }

    /// A keyframe from `ssrc` went out: pending requests for it are satisfied.
    public mutating func keyframeForwarded(ssrc: UInt32) {
        throttle.keyframeSent(mediaSSRC: ssrc)
    }

    private mutating func rebuildFanOut(_ room: String) {
        let list = routes.values
            .filter { $0.room == room }
            .sorted { $0.member < $1.member }
            .compactMap { route in route.address.map { (member: route.member, address: $0) } }
        fanOut[room] = list.isEmpty ? nil : list
    }
}
