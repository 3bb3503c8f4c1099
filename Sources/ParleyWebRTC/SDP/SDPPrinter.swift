extension SessionDescription: CustomStringConvertible {
    /// The description's text: CRLF line endings, the lines in RFC 8866's order (v, o, s, i, u, e, p, c, b, t with its
    /// r lines, z, k, the session's a= lines, then each m= section with i, c, b, k and its a= lines).
    public var description: String {
        var lines: [String] = [
            "v=\(version)",
            "o=\(origin.username) \(origin.sessionID) \(origin.sessionVersion) \(origin.networkType) "
                + "\(origin.addressType) \(origin.address)",
            "s=\(sessionName)",
        ]
        lines += information.map { ["i=\($0)"] } ?? []
        lines += uri.map { ["u=\($0)"] } ?? []
        lines += emails.map { "e=\($0)" }
        lines += phones.map { "p=\($0)" }
        lines += connection.map { [$0.line] } ?? []
        lines += bandwidths.map(\.line)
        for timing in timings {
            lines.append("t=\(timing.start) \(timing.stop)")
            lines += timing.repeats.map { "r=\($0)" }
        }
        lines += timeZones.map { ["z=\($0)"] } ?? []
        lines += encryptionKey.map { ["k=\($0)"] } ?? []
        lines += attributes.map(\.line)
        for section in media { lines += section.lines }
        return lines.map { $0 + "\r\n" }.joined()
    }
}

extension MediaDescription {
    /// The section's lines without line endings: m=, i=, c=, b=, k=, then a= lines.
    var lines: [String] {
        let port = portCount.map { "\(self.port)/\($0)" } ?? "\(self.port)"
        var lines = ["m=\(kind) \(port) \(proto) " + formats.joined(separator: " ")]
        lines += information.map { ["i=\($0)"] } ?? []
        lines += connections.map(\.line)
        lines += bandwidths.map(\.line)
        lines += encryptionKey.map { ["k=\($0)"] } ?? []
        lines += attributes.map(\.line)
        return lines
    }
}

extension SDPAttribute: CustomStringConvertible {
    /// The a= line without its line ending: "a=name" or "a=name:value".
    public var line: String { value.map { "a=\(name):\($0)" } ?? "a=\(name)" }

    /// The a= line, as `line`.
    public var description: String { line }
}

extension ConnectionData {
    /// The c= line without its line ending.
    var line: String { "c=\(networkType) \(addressType) \(address)" }
}

extension Bandwidth {
    /// The b= line without its line ending.
    var line: String { "b=\(type):\(value)" }
}
