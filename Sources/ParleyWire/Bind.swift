// `make fuzz` compiles the parsers and ParleyBytes as one module, where there is nothing to import.
#if canImport(ParleyBytes)
import ParleyBytes
#endif

// The Parley bind exchange: an RTCP APP packet (PT 204, name "PRLY") so that captures still dissect as RTCP.
// A client sends a BindRequest to the relay's media port from the UDP socket it will use for media; the relay
// checks the member id and token handed out in the signaling `joined` message, binds that address to the
// member and answers with a BindAcknowledgement. Clients resend the request every few seconds as a keepalive.
//
// Request, subtype 1, 32 bytes:
//  0                   1                   2                   3
//  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |V=2|P| subtype=1 |   PT=204      |          length=7             |
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |                 SSRC: the member's audio SSRC                   |
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |                   name: "PRLY" (0x50524C59)                     |
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |                          member id                              |
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |                                                                 |
// |                 credential token (16 bytes)                     |
// |                                                                 |
// |                                                                 |
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// A probe, subtype 3, is a request in every other byte: "does UDP reach you from here?". The relay checks it the
// same way and answers with the same acknowledgement, but binds nothing: a client whose media goes over its TCP
// connection (UDP was blocked) probes UDP now and then, and moves back only once an answer came back over UDP, so a
// path that works one way only never takes its media.
//
// Acknowledgement, subtype 2, 20 bytes: same SSRC and name, then the member id and a status byte
// (0 bound, 1 unknown member, 2 wrong token) followed by 3 zero bytes.

/// A 16-byte per-join credential, handed out over signaling as 32 lowercase hex digits.
public struct BindToken: Sendable, Hashable, CustomStringConvertible {
    /// The 16 bytes.
    public let bytes: [UInt8]

    /// Token length in bytes.
    public static let length = 16

    /// A token from exactly 16 bytes; nil otherwise.
    public init?(bytes: [UInt8]) {
        guard bytes.count == Self.length else { return nil }
        self.bytes = bytes
    }

    init(checked bytes: [UInt8]) { self.bytes = bytes }

    /// A token from 32 hex digits (either case); nil for anything else.
    public init?(hex: String) {
        guard hex.utf8.count == 2 * Self.length, let bytes = Hex.decode(hex) else { return nil }
        self.bytes = bytes
    }

    /// The token as 32 lowercase hex digits, as signaling carries it.
    public var hex: String { Hex.encode(bytes) }

    /// Only the first 4 hex digits, so logs never carry a usable credential.
    public var description: String { "BindToken(\(hex.prefix(4))…)" }

    /// Compares in time independent of where the tokens differ, so a relay leaks nothing through timing.
    public func matches(_ other: BindToken) -> Bool {
        var difference: UInt8 = 0
        for index in 0..<Self.length { difference |= bytes[index] ^ other.bytes[index] }
        return difference == 0
    }
}

/// Constants of the bind exchange.
public enum Bind {
    /// The RTCP APP name of every bind packet.
    public static let name: RTCPAppName = "PRLY"
    /// APP subtype of a request.
    public static let requestSubtype: UInt8 = 1
    /// APP subtype of an acknowledgement.
    public static let acknowledgementSubtype: UInt8 = 2
    /// APP subtype of a probe (a request that binds nothing).
    public static let probeSubtype: UInt8 = 3
}

/// Client → relay: "this UDP address is member `memberID`, here is my token".
public struct BindRequest: Sendable, Equatable {
    /// The member's audio SSRC, as assigned in `joined`.
    public var ssrc: UInt32
    /// The member id from `joined`.
    public var memberID: UInt32
    /// The credential from `joined`.
    public var token: BindToken
    /// A probe: answered like a request, but the relay binds nothing.
    public var isProbe: Bool

    /// A request (or, with `isProbe`, a probe).
    public init(ssrc: UInt32, memberID: UInt32, token: BindToken, isProbe: Bool = false) {
        self.ssrc = ssrc
        self.memberID = memberID
        self.token = token
        self.isProbe = isProbe
    }

    /// The request as an RTCP APP packet.
    public var rtcpPacket: ApplicationPacket {
        var data: [UInt8] = []
        data.reserveCapacity(20)
        data.appendU32(memberID)
        data += token.bytes
        return ApplicationPacket(
            subtype: isProbe ? Bind.probeSubtype : Bind.requestSubtype, ssrc: ssrc, name: Bind.name, data: data)
    }

    /// The 32 bytes to send.
    public func serialized() -> [UInt8] { RTCPPacket.application(rtcpPacket).serialized() }

    /// Reads a request from an APP packet; throws when it is another APP packet or has the wrong size.
    public init(_ packet: ApplicationPacket) throws(WireError) {
        guard packet.name == Bind.name, packet.subtype == Bind.requestSubtype || packet.subtype == Bind.probeSubtype
        else {
            throw .notBindPacket(name: packet.name.rawValue, subtype: packet.subtype)
        }
        guard packet.data.count == 20 else { throw .bindLength(expected: 20, found: packet.data.count) }
        isProbe = packet.subtype == Bind.probeSubtype
        ssrc = packet.ssrc
        memberID = packet.data[0..<4].reduce(0) { $0 << 8 | UInt32($1) }
        token = BindToken(checked: Array(packet.data[4..<20]))
    }

    /// Reads a request from a datagram whose first RTCP packet is the APP packet.
    public init(parsing bytes: [UInt8]) throws(WireError) {
        try self.init(try Bind.onlyApplicationPacket(bytes))
    }
}

/// The relay's verdict on a bind request.
public enum BindStatus: UInt8, Sendable, Equatable, CaseIterable {
    /// The address is now bound to the member; media from it is forwarded.
    case bound = 0
    /// No member with this id is in a room (left, never joined, or the relay restarted).
    case unknownMember = 1
    /// The token does not match the member's.
    case wrongToken = 2
}

/// Relay → client: the answer to a bind request.
public struct BindAcknowledgement: Sendable, Equatable {
    /// The SSRC from the request.
    public var ssrc: UInt32
    /// The member id from the request.
    public var memberID: UInt32
    /// The verdict.
    public var status: BindStatus

    /// An acknowledgement.
    public init(ssrc: UInt32, memberID: UInt32, status: BindStatus) {
        self.ssrc = ssrc
        self.memberID = memberID
        self.status = status
    }

    /// The acknowledgement as an RTCP APP packet.
    public var rtcpPacket: ApplicationPacket {
        var data: [UInt8] = []
        data.appendU32(memberID)
        data += [status.rawValue, 0, 0, 0]
        return ApplicationPacket(subtype: Bind.acknowledgementSubtype, ssrc: ssrc, name: Bind.name, data: data)
    }

    /// The 20 bytes to send.
    public func serialized() -> [UInt8] { RTCPPacket.application(rtcpPacket).serialized() }

    /// Reads an acknowledgement from an APP packet.
    public init(_ packet: ApplicationPacket) throws(WireError) {
        guard packet.name == Bind.name, packet.subtype == Bind.acknowledgementSubtype else {
            throw .notBindPacket(name: packet.name.rawValue, subtype: packet.subtype)
        }
        guard packet.data.count == 8 else { throw .bindLength(expected: 8, found: packet.data.count) }
        guard let status = BindStatus(rawValue: packet.data[4]) else { throw .unknownBindStatus(packet.data[4]) }
        ssrc = packet.ssrc
        memberID = packet.data[0..<4].reduce(0) { $0 << 8 | UInt32($1) }
        self.status = status
    }

    /// Reads an acknowledgement from a datagram whose first RTCP packet is the APP packet.
    public init(parsing bytes: [UInt8]) throws(WireError) {
        try self.init(try Bind.onlyApplicationPacket(bytes))
    }
}

extension Bind {
    /// True when a datagram looks like a bind packet (APP with name "PRLY"): a cheap check before parsing.
    public static func isBindPacket(_ bytes: UnsafeRawBufferPointer) -> Bool {
        bytes.count >= 12 && bytes[0] >> 6 == 2 && bytes[1] == RTCPPacketType.application
            && bytes.u32(at: 8) == name.rawValue
    }

    /// True when a datagram looks like a bind packet (APP with name "PRLY").
    public static func isBindPacket(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { isBindPacket($0) }
    }

    static func onlyApplicationPacket(_ bytes: [UInt8]) throws(WireError) -> ApplicationPacket {
        let packets = try RTCPPacket.parseCompound(bytes)
        guard case .application(let app) = packets[0] else {
            let type: UInt8 = bytes[1]
            throw .unexpectedRTCPType(found: type, expected: RTCPPacketType.application)
        }
        return app
    }
}
