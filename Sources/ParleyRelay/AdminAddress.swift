/// Where a relay serves its operators' endpoints, `/metrics` and `/healthz` (`parley serve --admin HOST:PORT`): a
/// socket of its own, never the public signaling port.
public struct AdminAddress: Sendable, Equatable, CustomStringConvertible {
    /// Interface to listen on (`127.0.0.1` keeps the endpoints on this machine).
    public var host: String
    /// TCP port; 0 picks a free one.
    public var port: Int

    /// An address.
    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// Parses `HOST:PORT` or `[IPv6]:PORT`.
    public init(parsing text: String) throws(AdminAddressError) {
        let host: Substring
        let port: Substring
        if text.hasPrefix("["), let close = text.firstIndex(of: "]") {
            host = text[text.index(after: text.startIndex)..<close]
            let rest = text[text.index(after: close)...]
            guard rest.hasPrefix(":") else { throw AdminAddressError(text: text) }
            port = rest.dropFirst()
        } else {
            guard let colon = text.lastIndex(of: ":"), !text[..<colon].contains(":") else {
                throw AdminAddressError(text: text)
            }
            host = text[..<colon]
            port = text[text.index(after: colon)...]
        }
        guard !host.isEmpty, let number = Int(port), (0...65535).contains(number) else {
            throw AdminAddressError(text: text)
        }
        self.init(host: String(host), port: number)
    }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// Whether this address is the relay's public port on the same host: the same port number on the same
    /// interface, or where either side listens on every interface.
    public func isPublicPort(host publicHost: String, port publicPort: Int) -> Bool {
        guard port != 0, port == publicPort else { return false }
        let everywhere: Set<String> = ["0.0.0.0", "::", "*"]
        let loopback: Set<String> = ["localhost", "127.0.0.1", "::1"]
        return host == publicHost || everywhere.contains(host) || everywhere.contains(publicHost)
            || (loopback.contains(host) && loopback.contains(publicHost))
    }
}

/// An `--admin` value that is not `HOST:PORT`.
public struct AdminAddressError: Error, Equatable, CustomStringConvertible {
    /// What was given.
    public var text: String

    public var description: String {
        "--admin takes HOST:PORT (a port 0…65535), e.g. --admin 127.0.0.1:9100; got \"\(text)\""
    }
}
