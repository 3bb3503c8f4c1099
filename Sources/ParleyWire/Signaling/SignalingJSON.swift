import Foundation

// Signaling: JSON text messages over one WebSocket per member. Every message is a JSON object with the protocol
// version `"v"` and a `"type"`; the remaining fields depend on the type. docs/protocol.md lists them all. This file
// is the envelope both directions share (and the messaging connection too): writing it, checking a received one
// before its payload is read, and the error report with the words that say what was wrong.

/// The signaling protocol version this build speaks.
public let signalingProtocolVersion = 1

/// The header (name and value) of the relay's answer to plain HTTP on its TLS port (a client started with
/// `--insecure`), so the client can say which flag to leave out rather than "not a relay".
public let tlsRequiredHeader = (name: "Parley-Requires", value: "tls")

/// Largest signaling message either side accepts, in bytes. Larger frames are refused before parsing.
public let maxSignalingMessageBytes = 16 * 1024

/// Error codes the relay sends. The message next to each says what to do.
public enum SignalingErrorCode: String, Codable, Sendable, CaseIterable {
    /// The text was not valid JSON, or not an object.
    case badJSON = "bad-json"
    /// `type` was missing or unknown.
    case unknownType = "unknown-type"
    /// `v` was missing or not a version this relay speaks.
    case unsupportedVersion = "unsupported-version"
    /// A field was missing, of the wrong type, or out of range.
    case badField = "bad-field"
    /// The message exceeded `maxSignalingMessageBytes`.
    case tooLarge = "too-large"
    /// The message needs a joined member (e.g. chat before join).
    case notJoined = "not-joined"
    /// A second join on the same connection.
    case alreadyJoined = "already-joined"
    /// The room name is empty or not allowed.
    case badRoomName = "bad-room-name"
    /// The display name is empty, too long or has a space.
    case badName = "bad-name"
    /// Too many messages too quickly; some were dropped.
    case rateLimited = "rate-limited"
    /// Audience members cannot do this (e.g. unmute media), or only the host can.
    case notAllowed = "not-allowed"
    /// The room has a password: answer the challenge (ask with `challenge`) in `proof`.
    case passwordRequired = "password-required"
    /// The proof did not match the room's password.
    case wrongPassword = "wrong-password"
    /// The room does not exist yet and the join carries a proof: send the password's `verifier` to create it.
    case passwordSetup = "password-setup"
    /// Someone in the room already has this display name.
    case nameTaken = "name-taken"
    /// The room uses another end-to-end encryption mode (or none).
    case encryptionMismatch = "encryption-mismatch"
    /// A room, connection or member limit was reached.
    case limitReached = "limit-reached"
    /// The room's host removed this member; only the host can let them in again (`readmit`).
    case removedByHost = "removed-by-host"
    /// Messaging: the request needs a logged-in account.
    case notLoggedIn = "not-logged-in"
    /// Messaging: the account name is bound to other keys, or the proof did not verify.
    case accountRefused = "account-refused"
    /// Messaging: no such account.
    case unknownAccount = "unknown-account"
    /// Messaging: the store could not commit (full disk, read-only database); nothing was acknowledged.
    case storeFailed = "store-failed"
    /// Messaging: the store cannot be reached now (its database is down); nothing was acknowledged, send again later.
    case storeUnavailable = "store-unavailable"
    /// A browser member's media transport (ICE, DTLS, SRTP) failed or could not be set up.
    case mediaFailed = "media-failed"
    /// The relay failed; not the client's fault.
    case `internal` = "internal"

    public init(from decoder: any Decoder) throws {
        self = try decodeWord(Self.self, from: decoder)
    }
}

/// An error report: a machine-readable code and a sentence for people.
public struct SignalingError: Codable, Sendable, Equatable, Error, CustomStringConvertible {
    /// What went wrong, for programs.
    public var code: SignalingErrorCode
    /// What went wrong, for people.
    public var message: String

    /// An error report.
    public init(_ code: SignalingErrorCode, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code.rawValue): \(message)" }
}

/// Decodes a string enum with an error that lists the words allowed.
func decodeWord<T: RawRepresentable & CaseIterable>(_: T.Type, from decoder: any Decoder) throws -> T
where T.RawValue == String {
    let container = try decoder.singleValueContainer()
    let word = try container.decode(String.self)
    guard let value = T(rawValue: word) else {
        let allowed = T.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", ")
        throw DecodingError.dataCorruptedError(
            in: container, debugDescription: "\"\(word)\" is not one of \(allowed)")
    }
    return value
}

/// `v` and `type` followed by the payload's own fields, all in one flat JSON object.
private struct Envelope: Encodable {
    let type: String
    let payload: (any Encodable)?

    enum CodingKeys: String, CodingKey { case v, type }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(signalingProtocolVersion, forKey: .v)
        try container.encode(type, forKey: .type)
        try payload?.encode(to: encoder)
    }
}

func encodeSignaling(type: String, payload: (any Encodable)?) -> String {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    // Every payload is plain strings, integers, booleans and finite doubles, so encoding cannot fail.
    let data = (try? encoder.encode(Envelope(type: type, payload: payload))) ?? Data()
    return String(decoding: data, as: UTF8.self)
}

/// The header every message has; decoding it checks the shape before any payload is read.
private struct Header: Decodable {
    let version: Int
    let type: String

    enum CodingKeys: String, CodingKey { case v, type }

    init(from decoder: any Decoder) throws {
        let container: KeyedDecodingContainer<CodingKeys>
        do {
            container = try decoder.container(keyedBy: CodingKeys.self)
        } catch {
            throw SignalingError(.badJSON, "message must be a JSON object")
        }
        guard container.contains(.v) else {
            throw SignalingError(
                .unsupportedVersion, "missing \"v\"; this relay speaks version \(signalingProtocolVersion)")
        }
        guard let version = try? container.decode(Int.self, forKey: .v) else {
            throw SignalingError(
                .unsupportedVersion,
                "\"v\" must be a whole number; this relay speaks version \(signalingProtocolVersion)")
        }
        guard container.contains(.type) else { throw SignalingError(.unknownType, "missing \"type\"") }
        guard let type = try? container.decode(String.self, forKey: .type) else {
            throw SignalingError(.unknownType, "\"type\" must be a string")
        }
        self.version = version
        self.type = type
    }
}

/// One received message: checked for size, JSON syntax, object shape, version and type; payload decoded on demand.
struct SignalingMessage {
    let type: String
    private let data: Data

    init(_ text: String) throws(SignalingError) {
        let data = Data(text.utf8)
        guard data.count <= maxSignalingMessageBytes else {
            throw SignalingError(.tooLarge, "message is \(data.count) bytes; the limit is \(maxSignalingMessageBytes)")
        }
        guard data.contains(where: { !(" \t\r\n".utf8.contains($0)) }) else {
            throw SignalingError(.badJSON, "message is empty; expected a JSON object")
        }
        let header: Header
        do {
            header = try JSONDecoder().decode(Header.self, from: data)
        } catch let error as SignalingError {
            throw error
        } catch DecodingError.dataCorrupted {
            throw SignalingError(.badJSON, "message is not valid JSON")
        } catch {
            throw SignalingError(.badJSON, "message must be a JSON object")
        }
        guard header.version == signalingProtocolVersion else {
            throw SignalingError(
                .unsupportedVersion,
                "version \(header.version) is not supported; this relay speaks version \(signalingProtocolVersion)")
        }
        self.type = header.type
        self.data = data
    }

    /// Decodes the payload struct from the message's top-level fields.
    func payload<T: Decodable>(_: T.Type) throws(SignalingError) -> T {
        do {
            return try JSONDecoder().decode(T.self, from: data)
        } catch let error as SignalingError {
            throw error
        } catch let error as DecodingError {
            throw explain(error)
        } catch {
            throw SignalingError(.badField, "\(type): \(error)")
        }
    }

    private func explain(_ error: DecodingError) -> SignalingError {
        func path(_ context: DecodingError.Context, _ last: (any CodingKey)? = nil) -> String {
            var text = ""
            for key in context.codingPath + (last.map { [$0] } ?? []) {
                if let index = key.intValue {
                    text += "[\(index)]"
                } else {
                    text += (text.isEmpty ? "" : ".") + key.stringValue
                }
            }
            return text
        }
        switch error {
        case .keyNotFound(let key, let context):
            return SignalingError(.badField, "\(type) needs field \"\(path(context, key))\"")
        case .typeMismatch(let expected, let context):
            return SignalingError(.badField, "\(type) field \"\(path(context))\" must be \(describe(expected))")
        case .valueNotFound(let expected, let context):
            return SignalingError(
                .badField, "\(type) field \"\(path(context))\" must be \(describe(expected)), not null")
        case .dataCorrupted(let context) where context.codingPath.isEmpty:
            // The header already parsed, so the JSON is well formed: Foundation reports an out-of-range number
            // (a negative id, a fraction where a whole number belongs) this way, without naming the field.
            return SignalingError(
                .badField, "\(type) has a number out of range: ids, tokens and sizes are whole numbers, 0 or more")
        case .dataCorrupted(let context):
            return SignalingError(
                .badField, "\(type) field \"\(path(context))\" is invalid: \(context.debugDescription)")
        @unknown default:
            return SignalingError(.badField, "\(type): \(error)")
        }
    }

    private func describe(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: "a string"
        case is Bool.Type: "true or false"
        case is Double.Type: "a number"
        case is UInt32.Type, is UInt64.Type, is Int.Type, is Int64.Type: "a whole number"
        default: "of type \(type)"
        }
    }
}
