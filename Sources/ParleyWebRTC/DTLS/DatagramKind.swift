/// What a datagram on a bundled port carries, told by its first byte (RFC 7983 §7) and, for RTP and RTCP, by its
/// second (RFC 5761 §4: RTCP packet types 192-223 cannot be RTP payload types when the payload types stay clear).
public enum DatagramKind: Equatable, Sendable {
    /// STUN (first byte 0-3): ICE connectivity checks.
    case stun
    /// ZRTP (16-19), which Parley does not speak.
    case zrtp
    /// DTLS (20-63): the handshake and its alerts.
    case dtls
    /// TURN channel data (64-79).
    case turnChannel
    /// SRTP (128-191, second byte outside 192-223).
    case rtp
    /// SRTCP (128-191, second byte 192-223).
    case rtcp
    /// Anything else, including an empty datagram.
    case unknown

    /// The kind of `datagram`.
    public init(_ datagram: some Collection<UInt8>) {
        guard let first = datagram.first else {
            self = .unknown
            return
        }
        switch first {
        case 0...3: self = .stun
        case 16...19: self = .zrtp
        case 20...63: self = .dtls
        case 64...79: self = .turnChannel
        case 128...191:
            let second = datagram.dropFirst().first
            guard let second else {
                self = .unknown
                return
            }
            self = (192...223).contains(second) ? .rtcp : .rtp
        default: self = .unknown
        }
    }
}
