extension SessionDescription {
    /// Parses a description's text (RFC 8866), lines ending in CRLF or LF. Every bound in `SDPLimits` is checked, and
    /// the attributes WebRTC reads (rtpmap, fmtp, rtcp-fb, extmap, ssrc, rid, simulcast, fingerprint, candidate, ...)
    /// must have values of their shape; others are kept verbatim.
    public init(parsing text: String) throws(SDPError) {
        let bytes = text.utf8.count
        guard bytes <= SDPLimits.maxBytes else { throw .tooLarge(bytes: bytes, limit: SDPLimits.maxBytes) }
        try self.init(parsing: Array(text.utf8))
    }

    /// Parses a description from UTF-8 bytes, as received from the network (see `init(parsing:)` for text).
    public init(parsing bytes: [UInt8]) throws(SDPError) {
        guard bytes.count <= SDPLimits.maxBytes else { throw .tooLarge(bytes: bytes.count, limit: SDPLimits.maxBytes) }
        var parser = SDPParser()
        var lines = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)[...]
        while let last = lines.last, last.isEmpty || last == [UInt8(ascii: "\r")] { lines.removeLast() }
        guard lines.count <= SDPLimits.maxLines else { throw .tooManyLines(limit: SDPLimits.maxLines) }
        for (index, raw) in lines.enumerated() {
            let number = index + 1
            let line = raw.last == UInt8(ascii: "\r") ? raw.dropLast() : raw
            guard line.count <= SDPLimits.maxLineBytes else {
                throw .lineTooLong(number: number, bytes: line.count, limit: SDPLimits.maxLineBytes)
            }
            guard !line.contains(where: { ($0 < 0x20 && $0 != UInt8(ascii: "\t")) || $0 == 0x7F }) else {
                throw .controlCharacter(line: number)
            }
            let text = String(decoding: line, as: UTF8.self)
            guard text.utf8.elementsEqual(line) else { throw .notUTF8 }
            try parser.read(text, number: number)
        }
        self = try parser.finish()
    }
}

/// The parser's state between lines: the session part being filled, then the current m= section.
private struct SDPParser {
    var sawVersion = false
    var origin: Origin?
    var sessionName: String?
    var session = SessionDescription(origin: Origin(sessionID: "0", sessionVersion: 0), timings: [])
    var current: MediaDescription?
    var currentLine = 0

    mutating func read(_ line: String, number: Int) throws(SDPError) {
        let bytes = Array(line.utf8)
        guard bytes.count >= 2, bytes[1] == UInt8(ascii: "="), bytes[0] != UInt8(ascii: " ") else {
            throw .malformedLine(number: number, "expected <type>=<value>")
        }
        let type = String(line.prefix(1))
        let value = String(line.dropFirst(2))
        guard sawVersion else {
            guard type == "v" else { throw .missingField("v=") }
            guard value == "0" else { throw .unsupportedVersion(line: number, value) }
            sawVersion = true
            return
        }
        if current != nil || type == "m" {
            try readMedia(type, value, number)
        } else {
            try readSession(type, value, number)
        }
    }

    private mutating func readSession(_ type: String, _ value: String, _ number: Int) throws(SDPError) {
        switch type {
        case "o":
            guard origin == nil else { throw .unexpectedLine(number: number, "second o= line") }
            origin = try Self.origin(value, number)
        case "s":
            guard sessionName == nil else { throw .unexpectedLine(number: number, "second s= line") }
            sessionName = value
        case "i": session.information = try Self.once(session.information, value, "i=", number)
        case "u": session.uri = try Self.once(session.uri, value, "u=", number)
        case "e": session.emails = try Self.append(value, to: session.emails, "e=", number)
        case "p": session.phones = try Self.append(value, to: session.phones, "p=", number)
        case "c":
            session.connection = try Self.once(session.connection, try Self.connection(value, number), "c=", number)
        case "b":
            session.bandwidths = try Self.append(
                try Self.bandwidth(value, number), to: session.bandwidths, "b=", number)
        case "t": session.timings = try Self.append(try Self.timing(value, number), to: session.timings, "t=", number)
        case "r":
            guard !session.timings.isEmpty else { throw .unexpectedLine(number: number, "r= line before any t= line") }
            let last = session.timings.count - 1
            session.timings[last].repeats = try Self.append(value, to: session.timings[last].repeats, "r=", number)
        case "z": session.timeZones = try Self.once(session.timeZones, value, "z=", number)
        case "k": session.encryptionKey = try Self.once(session.encryptionKey, value, "k=", number)
        case "a":
            guard session.attributes.count < SDPLimits.maxAttributes else {
                throw .tooManyAttributes(section: nil, limit: SDPLimits.maxAttributes)
            }
            session.attributes.append(try SDPAttributeRules.attribute(value, number))
        case "v": throw .unexpectedLine(number: number, "second v= line")
        default: throw .unknownLineType(line: number, type)
        }
    }

    private mutating func readMedia(_ type: String, _ value: String, _ number: Int) throws(SDPError) {
        switch type {
        case "m":
            guard origin != nil else { throw .missingField("o=") }
            guard sessionName != nil else { throw .missingField("s=") }
            guard !session.timings.isEmpty else { throw .missingField("t=") }
            if let current { session.media.append(current) }
            guard session.media.count < SDPLimits.maxMediaSections else {
                throw .tooManyMediaSections(limit: SDPLimits.maxMediaSections)
            }
            current = try Self.media(value, number)
        case "i": current!.information = try Self.once(current!.information, value, "i=", number)
        case "c":
            current!.connections = try Self.append(
                try Self.connection(value, number), to: current!.connections, "c=", number)
        case "b":
            current!.bandwidths = try Self.append(
                try Self.bandwidth(value, number), to: current!.bandwidths, "b=", number)
        case "k": current!.encryptionKey = try Self.once(current!.encryptionKey, value, "k=", number)
        case "a":
            guard current!.attributes.count < SDPLimits.maxAttributes else {
                throw .tooManyAttributes(section: session.media.count, limit: SDPLimits.maxAttributes)
            }
            current!.attributes.append(try SDPAttributeRules.attribute(value, number))
        case "v", "o", "s", "u", "e", "p", "t", "r", "z":
            throw .unexpectedLine(number: number, "\(type)= line inside an m= section")
        default: throw .unknownLineType(line: number, type)
        }
    }

    mutating func finish() throws(SDPError) -> SessionDescription {
        guard sawVersion else { throw .missingField("v=") }
        guard let origin else { throw .missingField("o=") }
        guard let sessionName else { throw .missingField("s=") }
        guard !session.timings.isEmpty else { throw .missingField("t=") }
        if let current { session.media.append(current) }
        session.origin = origin
        session.sessionName = sessionName
        return session
    }

    private static func once<Value>(_ existing: Value?, _ value: Value, _ type: String, _ number: Int) throws(SDPError)
        -> Value
    {
        guard existing == nil else { throw .unexpectedLine(number: number, "second \(type) line in one part") }
        return value
    }

    private static func append<Value>(_ value: Value, to list: [Value], _ type: String, _ number: Int) throws(SDPError)
        -> [Value]
    {
        guard list.count < SDPLimits.maxRepeatedLines else {
            throw .tooManyRepeatedLines(line: number, type: type, limit: SDPLimits.maxRepeatedLines)
        }
        return list + [value]
    }

    private static func fields(_ value: String, _ count: Int, _ number: Int, _ shape: String) throws(SDPError)
        -> [String]
    {
        let fields = SDPScan.fields(value).map(String.init)
        guard fields.count == count else { throw .malformedLine(number: number, "expected \(shape)") }
        for field in fields where field.utf8.count > SDPLimits.maxTokenBytes {
            throw .malformedLine(number: number, "field longer than \(SDPLimits.maxTokenBytes) bytes")
        }
        return fields
    }

    private static func origin(_ value: String, _ number: Int) throws(SDPError) -> Origin {
        let shape = "o=<username> <session id> <version> <net type> <addr type> <address>"
        let fields = try fields(value, 6, number, shape)
        guard let version = UInt64(fields[2]) else {
            throw .malformedLine(number: number, "session version \"\(fields[2])\" is not a number")
        }
        return Origin(
            username: fields[0], sessionID: fields[1], sessionVersion: version, networkType: fields[3],
            addressType: fields[4], address: fields[5])
    }

    private static func connection(_ value: String, _ number: Int) throws(SDPError) -> ConnectionData {
        let fields = try fields(value, 3, number, "c=<net type> <addr type> <address>")
        return ConnectionData(networkType: fields[0], addressType: fields[1], address: fields[2])
    }

    private static func bandwidth(_ value: String, _ number: Int) throws(SDPError) -> Bandwidth {
        let field = try fields(value, 1, number, "b=<type>:<bandwidth>")[0]
        let parts = field.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, let bandwidth = UInt64(parts[1]) else {
            throw .malformedLine(number: number, "expected b=<type>:<bandwidth>")
        }
        return Bandwidth(type: String(parts[0]), value: bandwidth)
    }

    private static func timing(_ value: String, _ number: Int) throws(SDPError) -> Timing {
        let fields = try fields(value, 2, number, "t=<start> <stop>")
        guard let start = UInt64(fields[0]), let stop = UInt64(fields[1]) else {
            throw .malformedLine(number: number, "t= times are not numbers")
        }
        return Timing(start: start, stop: stop)
    }

    private static func media(_ value: String, _ number: Int) throws(SDPError) -> MediaDescription {
        let fields = SDPScan.fields(value).map(String.init)
        guard fields.count >= 4 else {
            throw .malformedLine(number: number, "expected m=<media> <port> <proto> <fmt> ...")
        }
        let formats = Array(fields[3...])
        guard formats.count <= SDPLimits.maxFormats else {
            throw .tooManyFormats(line: number, count: formats.count, limit: SDPLimits.maxFormats)
        }
        for field in fields where field.utf8.count > SDPLimits.maxTokenBytes {
            throw .malformedLine(number: number, "field longer than \(SDPLimits.maxTokenBytes) bytes")
        }
        let portParts = fields[1].split(separator: "/", omittingEmptySubsequences: false)
        guard portParts.count <= 2, let port = UInt16(portParts[0]),
            portParts.count == 1 || UInt16(portParts[1]) != nil
        else { throw .malformedLine(number: number, "port \"\(fields[1])\" is not <port>[/<count>]") }
        let media = MediaDescription(
            kind: MediaKind(fields[0]), port: port, portCount: portParts.count == 2 ? UInt16(portParts[1]) : nil,
            proto: fields[2], formats: formats)
        if media.isRTP {
            for format in formats {
                guard format.allSatisfy(\.isASCII), let type = UInt8(format), type <= 127, String(type) == format else {
                    throw .badPayloadType(line: number)
                }
            }
        }
        return media
    }
}
