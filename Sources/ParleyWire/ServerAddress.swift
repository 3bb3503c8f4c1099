import Foundation

/// A relay's address as typed on the command line: `HOST:PORT`, `[IPv6]:PORT`, or `HOST` (port 7878).
public struct ServerAddress: Sendable, Hashable, CustomStringConvertible {
    /// The default relay port.
    public static let defaultPort = 7878

    /// Host name or IP address (IPv6 without brackets).
    public var host: String
    /// TCP port of the relay's signaling (UDP media uses the port the relay hands out).
    public var port: Int

    /// An address from parts.
    public init(host: String, port: Int = ServerAddress.defaultPort) {
        self.host = host
        self.port = port
    }

    /// Parses `HOST:PORT`, with a message saying what to type instead when the text is not an address.
    public init(parsing text: String) throws(AddressError) {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard !trimmed.isEmpty else {
            throw AddressError("server address is empty; type HOST:PORT, e.g. 127.0.0.1:7878")
        }
        if trimmed.contains("://") {
            throw AddressError(
                "\"\(text)\" is a link, not a relay address: join it with parley join \(trimmed) "
                    + "(--server takes HOST:PORT, e.g. 127.0.0.1:7878)")
        }
        if let slash = trimmed.firstIndex(of: "/") {
            throw AddressError(
                "server address \"\(text)\" has a path (\"\(trimmed[slash...])\"); --server takes "
                    + "HOST:PORT, e.g. \(trimmed[..<slash]), and the room goes separately or in a link "
                    + "parley://\(trimmed)")
        }
        var host: Substring
        var portText: Substring?
        if trimmed.hasPrefix("[") {
            guard let close = trimmed.firstIndex(of: "]") else {
                throw AddressError(
                    "server address \"\(text)\" opens \"[\" without \"]\"; type [IPv6]:PORT, e.g. [::1]:7878")
            }
            host = trimmed[trimmed.index(after: trimmed.startIndex)..<close]
            let rest = trimmed[trimmed.index(after: close)...]
            if !rest.isEmpty {
                guard rest.hasPrefix(":") else {
                    throw AddressError("server address \"\(text)\" has \"\(rest)\" after \"]\"; type [IPv6]:PORT")
                }
                portText = rest.dropFirst()
            }
        } else if trimmed.filter({ $0 == ":" }).count > 1 {
            throw AddressError("server address \"\(text)\" looks like a bare IPv6 address; write it as [\(text)]:7878")
        } else if let colon = trimmed.firstIndex(of: ":") {
            host = trimmed[..<colon]
            portText = trimmed[trimmed.index(after: colon)...]
        } else {
            host = Substring(trimmed)
        }
        guard !host.isEmpty else {
            throw AddressError("server address \"\(text)\" has no host; type HOST:PORT, e.g. 127.0.0.1:7878")
        }
        guard host.allSatisfy({ $0.isLetter || $0.isNumber || "-._:%".contains($0) }) else {
            throw AddressError("server host \"\(host)\" has characters a host name cannot have")
        }
        var port = Self.defaultPort
        if let portText {
            guard let number = Int(portText), (1...65535).contains(number) else {
                throw AddressError("server port \"\(portText)\" is not a number from 1 to 65535")
            }
            port = number
        }
        self.host = String(host)
        self.port = port
    }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}

/// A server address that could not be parsed; the message says what to type instead.
public struct AddressError: Error, Equatable, Sendable, CustomStringConvertible {
    /// What was wrong.
    public var message: String

    /// An error with its message.
    public init(_ message: String) { self.message = message }

    public var description: String { message }
}

extension ServerAddress {
    /// Relays of one cluster, `HOST:PORT,HOST:PORT,…` (at most 16), tried in order when one cannot be reached.
    public static func list(parsing text: String) throws(AddressError) -> [ServerAddress] {
        let parts = text.split(separator: ",", omittingEmptySubsequences: false)
        guard parts.count <= 16 else {
            throw AddressError("--server lists \(parts.count) relays; at most 16, separated by commas")
        }
        var addresses: [ServerAddress] = []
        for part in parts {
            guard !part.trimmingCharacters(in: .whitespaces).isEmpty else {
                throw AddressError("--server \"\(text.prefix(120))\" has an empty entry; type HOST:PORT,HOST:PORT")
            }
            addresses.append(try ServerAddress(parsing: String(part)))
        }
        return addresses
    }
}
