/// The small readers every typed attribute shares: fields split on spaces, numbers in range, bounded tokens. Each
/// failure is an `SDPError.malformedAttribute` naming the attribute and what was wrong; the parser adds the line.
enum SDPScan {
    static func failure(_ name: String, _ reason: String) -> SDPError {
        .malformedAttribute(line: nil, name: name, reason: reason)
    }

    /// The text's fields between runs of spaces (tabs count as spaces, RFC 8866 allows neither but browsers vary).
    static func fields(_ text: some StringProtocol) -> [Substring] {
        Substring(text).split(whereSeparator: { $0 == " " || $0 == "\t" })
    }

    /// `text` split once at the first space: the first field and the rest with its leading spaces dropped.
    static func head(_ text: Substring) -> (Substring, Substring?) {
        guard let space = text.firstIndex(where: { $0 == " " || $0 == "\t" }) else { return (text, nil) }
        let rest = text[space...].drop(while: { $0 == " " || $0 == "\t" })
        return (text[..<space], rest.isEmpty ? nil : rest)
    }

    /// A bounded identifier: non-empty, at most `SDPLimits.maxTokenBytes` bytes, no spaces.
    static func token(_ text: some StringProtocol, _ name: String, _ what: String) throws(SDPError) -> String {
        guard !text.isEmpty else { throw failure(name, "empty \(what)") }
        guard text.utf8.count <= SDPLimits.maxTokenBytes else {
            throw failure(name, "\(what) longer than \(SDPLimits.maxTokenBytes) bytes")
        }
        guard !text.contains(where: { $0 == " " || $0 == "\t" }) else { throw failure(name, "\(what) holds a space") }
        return String(text)
    }

    /// A decimal number within `range`, digits only (no sign, no spaces).
    static func number<Value: FixedWidthInteger>(
        _ text: some StringProtocol, _ type: Value.Type, in range: ClosedRange<Value> = Value.min...Value.max,
        _ name: String, _ what: String
    ) throws(SDPError) -> Value {
        guard !text.isEmpty, text.allSatisfy({ $0.isASCII && $0.isNumber }), text.utf8.count <= 20,
            let value = Value(text, radix: 10), range.contains(value)
        else { throw failure(name, "\(what) \"\(text)\" is not a number in \(range)") }
        return value
    }

    /// An RTP payload type 0...127.
    static func payloadType(_ text: some StringProtocol, _ name: String) throws(SDPError) -> UInt8 {
        try number(text, UInt8.self, in: 0...127, name, "payload type")
    }

    /// A list bounded by `SDPLimits.maxListItems`.
    static func bounded<Item>(_ items: [Item], _ name: String, _ what: String) throws(SDPError) -> [Item] {
        guard items.count <= SDPLimits.maxListItems else {
            throw failure(name, "more than \(SDPLimits.maxListItems) \(what)")
        }
        return items
    }
}

/// One "name=value" (or bare "name") of an fmtp or rid line's ";"-separated list.
public struct SDPParameter: Sendable, Equatable {
    /// The text before "=".
    public var name: String
    /// The text after the first "=", or nil when there is none ("111/111" in a RED fmtp).
    public var value: String?

    /// A parameter from its name and value.
    public init(_ name: String, _ value: String? = nil) {
        self.name = name
        self.value = value
    }

    /// "name=value" or "name".
    public var text: String { value.map { "\(name)=\($0)" } ?? name }

    /// Parameters from "a=1;b=2" (spaces around each dropped, empty items skipped), bounded.
    static func list(_ text: Substring, _ attribute: String) throws(SDPError) -> [SDPParameter] {
        var parameters: [SDPParameter] = []
        for item in text.split(separator: ";") {
            let trimmed = item.drop(while: { $0 == " " }).reversed().drop(while: { $0 == " " }).reversed()
            let piece = String(trimmed)
            guard !piece.isEmpty else { continue }
            guard !piece.contains(" ") else { throw SDPScan.failure(attribute, "parameter \"\(piece)\" holds a space") }
            if let equals = piece.firstIndex(of: "=") {
                let name = String(piece[..<equals])
                guard !name.isEmpty else { throw SDPScan.failure(attribute, "parameter \"\(piece)\" has no name") }
                parameters.append(SDPParameter(name, String(piece[piece.index(after: equals)...])))
            } else {
                parameters.append(SDPParameter(piece))
            }
        }
        return try SDPScan.bounded(parameters, attribute, "parameters")
    }

    /// The list as "a=1;b=2".
    static func text(_ list: [SDPParameter]) -> String { list.map(\.text).joined(separator: ";") }
}
