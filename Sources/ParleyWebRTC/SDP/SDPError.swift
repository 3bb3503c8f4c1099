/// The bounds a session description must stay within. A browser's offer is a few kilobytes; everything past these is
/// hostile or broken, and is refused before it costs memory.
public enum SDPLimits {
    /// The largest description, in bytes (a Chrome offer with audio, simulcast video and data is about 6 KiB).
    public static let maxBytes = 64 * 1024
    /// The most lines in one description.
    public static let maxLines = 2000
    /// The longest line, in bytes, without its line ending.
    public static let maxLineBytes = 4096
    /// The most m= sections.
    public static let maxMediaSections = 32
    /// The most a= lines in the session part or in one m= section.
    public static let maxAttributes = 256
    /// The most formats (payload types) on one m= line.
    public static let maxFormats = 128
    /// The most lines of one other kind (b=, e=, p=, t=, r=, c=) in one part.
    public static let maxRepeatedLines = 16
    /// The longest identifier: a mid, a rid, a group's semantics, a candidate's foundation, an msid part.
    public static let maxTokenBytes = 64
    /// The most ids in one list (a group's mids, an ssrc-group's SSRCs, a simulcast direction's streams).
    public static let maxListItems = 32
    /// The most bytes in a fingerprint (SHA-512's 64).
    public static let maxFingerprintBytes = 64
}

/// Everything the SDP parser, the typed attributes and the relay's answer can reject; each case carries the line number
/// or the part of the description a user needs to find what was wrong.
public enum SDPError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The description is larger than the limit, in bytes.
    case tooLarge(bytes: Int, limit: Int)
    /// The description has more lines than the limit.
    case tooManyLines(limit: Int)
    /// A line is longer than the limit, in bytes.
    case lineTooLong(number: Int, bytes: Int, limit: Int)
    /// There are more m= sections than the limit.
    case tooManyMediaSections(limit: Int)
    /// The session part (`section` nil) or the m= section at `section` (0-based) has more a= lines than the limit.
    case tooManyAttributes(section: Int?, limit: Int)
    /// An m= line lists more formats than the limit.
    case tooManyFormats(line: Int, count: Int, limit: Int)
    /// A part holds more lines of one kind (b=, t=, ...) than the limit.
    case tooManyRepeatedLines(line: Int, type: String, limit: Int)
    /// The description is not UTF-8 text.
    case notUTF8
    /// A line holds a control character (other than the CRLF or LF that ends it, or a tab).
    case controlCharacter(line: Int)
    /// A line does not have the shape its type requires; the text says what was expected.
    case malformedLine(number: Int, String)
    /// A line's type letter is not one RFC 8866 defines (a parser must refuse the description).
    case unknownLineType(line: Int, String)
    /// A line that may appear only once in its part appeared again, or appeared where it may not.
    case unexpectedLine(number: Int, String)
    /// A required line is missing: "v=", "o=", "s=" or "t=".
    case missingField(String)
    /// The v= line is not 0.
    case unsupportedVersion(line: Int, String)
    /// An RTP m= line lists a format that is not a payload type 0...127.
    case badPayloadType(line: Int)
    /// An attribute WebRTC reads (rtpmap, fmtp, candidate, ...) has a value of the wrong shape; `line` is nil when the
    /// attribute was not parsed from text.
    case malformedAttribute(line: Int?, name: String, reason: String)
    /// An offer's m= section that the relay would accept has no a=mid (BUNDLE needs one on every section).
    case missingMid(section: Int)
    /// Two of an offer's m= sections have the same mid.
    case duplicateMid(String)
    /// An offer has no ice-ufrag and ice-pwd for the section with this mid, neither there nor at session level.
    case missingICECredentials(mid: String)
    /// An offer has no sha-256 fingerprint for the section with this mid (the relay checks the browser's certificate
    /// with one).
    case missingSHA256Fingerprint(mid: String)
    /// An offer's section with this mid does not offer rtcp-mux (the relay has one port for RTP and RTCP).
    case missingRTCPMux(mid: String)
    /// An offer has no a=group:BUNDLE (the relay has one port for every section).
    case missingBundle
    /// An offer's DTLS role leaves the relay no server role: the browser offered a=setup with this value.
    case unsupportedSetup(mid: String, String)
    /// The relay's own answer parameters are unusable; the text says which.
    case badAnswerParameters(String)

    /// A sentence naming what was wrong, with the line number or part involved.
    public var description: String {
        switch self {
        case .tooLarge(let bytes, let limit):
            return "session description of \(bytes) bytes exceeds the limit of \(limit)"
        case .tooManyLines(let limit):
            return "session description has more than \(limit) lines"
        case .lineTooLong(let number, let bytes, let limit):
            return "line \(number) is \(bytes) bytes, more than the limit of \(limit)"
        case .tooManyMediaSections(let limit):
            return "session description has more than \(limit) m= sections"
        case .tooManyAttributes(let section, let limit):
            let part = section.map { "m= section \($0)" } ?? "session part"
            return "\(part) has more than \(limit) a= lines"
        case .tooManyFormats(let line, let count, let limit):
            return "line \(line): m= line lists \(count) formats, more than the limit of \(limit)"
        case .tooManyRepeatedLines(let line, let type, let limit):
            return "line \(line): more than \(limit) \(type) lines in one part"
        case .notUTF8:
            return "session description is not UTF-8 text"
        case .controlCharacter(let line):
            return "line \(line) holds a control character"
        case .malformedLine(let number, let text):
            return "line \(number): \(text)"
        case .unknownLineType(let line, let type):
            return "line \(line): unknown line type \"\(type)=\""
        case .unexpectedLine(let number, let text):
            return "line \(number): unexpected \(text)"
        case .missingField(let field):
            return "session description has no \(field) line"
        case .unsupportedVersion(let line, let version):
            return "line \(line): version \"\(version)\" is not 0"
        case .badPayloadType(let line):
            return "line \(line): an RTP format is not a payload type 0...127"
        case .malformedAttribute(let line, let name, let reason):
            let place = line.map { "line \($0): " } ?? ""
            return "\(place)a=\(name): \(reason)"
        case .missingMid(let section):
            return "offer's m= section \(section) has no a=mid"
        case .duplicateMid(let mid):
            return "offer has two m= sections with mid \(mid)"
        case .missingICECredentials(let mid):
            return "offer has no a=ice-ufrag and a=ice-pwd for mid \(mid)"
        case .missingSHA256Fingerprint(let mid):
            return "offer has no a=fingerprint:sha-256 for mid \(mid)"
        case .missingRTCPMux(let mid):
            return "offer's mid \(mid) has no a=rtcp-mux (the relay multiplexes RTP and RTCP on one port)"
        case .missingBundle:
            return "offer has no a=group:BUNDLE (the relay bundles every section on one port)"
        case .unsupportedSetup(let mid, let value):
            return "offer's mid \(mid) has a=setup:\(value); the relay needs the browser to be the DTLS client"
        case .badAnswerParameters(let text):
            return "answer parameters: \(text)"
        }
    }
}
