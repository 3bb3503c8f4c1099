import Foundation
import X509

/// The relays a user has met and the certificate each showed, like ssh's known_hosts: one `HOST:PORT SHA256:…`
/// per line, `#` comments. A relay whose certificate no authority vouches for is pinned on first use; a later
/// different certificate refuses the connection.
public struct KnownRelays: Equatable, Sendable {
    /// Pinned fingerprints by `host:port` (host lowercased).
    public private(set) var pins: [String: CertificateFingerprint] = [:]

    /// No relays known.
    public init() {}

    /// Parses the file's text; a bad line is an error naming its number.
    public init(parsing text: String, source: String = "known_relays") throws(KnownRelaysError) {
        for (index, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = rawLine.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") { continue }
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard fields.count == 2 else {
                throw .badLine(
                    source: source, line: index + 1,
                    why: "expected \"HOST:PORT SHA256:…\", found \(fields.count) fields")
            }
            let relay = String(fields[0])
            guard relay.contains(":"), let port = Int(relay.split(separator: ":").last ?? ""),
                (1...65535).contains(port)
            else {
                throw .badLine(source: source, line: index + 1, why: "\"\(relay)\" is not HOST:PORT")
            }
            do {
                pins[Self.key(relay)] = try CertificateFingerprint(parsing: String(fields[1]))
            } catch {
                throw .badLine(source: source, line: index + 1, why: "\(error)")
            }
        }
    }

    /// The file's text, sorted by relay.
    public var text: String {
        "# Relays this user has connected to, and the TLS certificate fingerprint each showed (parley).\n"
            + pins.keys.sorted().map { "\($0) \(pins[$0]!)\n" }.joined()
    }

    /// The pin for a relay (`host:port`), nil if unknown.
    public func pin(for relay: String) -> CertificateFingerprint? { pins[Self.key(relay)] }

    /// Pins (or re-pins) a relay's fingerprint.
    public mutating func pin(_ fingerprint: CertificateFingerprint, for relay: String) {
        pins[Self.key(relay)] = fingerprint
    }

    /// Forgets a relay; true if it was known.
    @discardableResult
    public mutating func forget(_ relay: String) -> Bool { pins.removeValue(forKey: Self.key(relay)) != nil }

    private static func key(_ relay: String) -> String { relay.lowercased() }
}

/// A known_relays file that could not be used.
public enum KnownRelaysError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A line that is not `HOST:PORT SHA256:…`.
    case badLine(source: String, line: Int, why: String)
    /// The file could not be read or written.
    case file(String, String)

    public var description: String {
        switch self {
        case .badLine(let source, let line, let why): "\(source) line \(line): \(why); fix or delete that line"
        case .file(let path, let why): "\(path): \(why)"
        }
    }
}

/// How a client came to trust (or refuse) the certificate a relay showed.
public enum RelayTrustDecision: Equatable, Sendable {
    /// A certificate authority the system trusts vouches for the certificate and the host name.
    case authority
    /// The certificate matches the pinned fingerprint.
    case pinned(CertificateFingerprint)
    /// First contact: the fingerprint is now pinned.
    case pinnedOnFirstUse(CertificateFingerprint)
    /// The relay shows another certificate than the pinned one: refused, with what to do.
    case changed(RelayCertificateChanged)

    /// True when the connection may go on.
    public var isTrusted: Bool {
        if case .changed = self { return false }
        return true
    }
}

/// Why a relay's certificate was refused, in words that say what to do.
public struct RelayCertificateChanged: Error, Equatable, Sendable, CustomStringConvertible {
    /// The refused decision's details.
    public let relay: String, pinned: CertificateFingerprint, presented: CertificateFingerprint, file: String

    /// The refusal of `presented` where `pinned` was expected.
    public init(relay: String, pinned: CertificateFingerprint, presented: CertificateFingerprint, file: String) {
        self.relay = relay
        self.pinned = pinned
        self.presented = presented
        self.file = file
    }

    public var description: String {
        """
        the relay \(relay) shows a different TLS certificate than the one pinned when you first connected \
        (pinned \(pinned), now \(presented)). Someone may be intercepting the connection, or the relay's operator \
        replaced its certificate. Ask the operator for the fingerprint `parley serve` prints; if it is \(presented), \
        run `parley relays forget \(relay)` (or delete its line in \(file)) and connect again. Not connected.
        """
    }
}

/// The known relays, kept in a file (or only in memory), safe to consult from any thread.
public final class RelayTrustStore: Sendable {
    /// The file, nil for an in-memory store (tests, the demo).
    public let path: String?
    private let state: LockedBox<KnownRelays>
    private let extraRoots: [Certificate]
    /// Relays a redirect sent a join to, with the certificate they must show (the redirecting relay's): a node of a
    /// cluster shares its certificate, so a redirect cannot lead to a stranger pinned on first use. Bounded.
    private let expected = LockedBox<[String: CertificateFingerprint]>([:])

    /// A store over the file at `path` (created on the first pin), or in memory with `pins`; `extraRoots` are
    /// authorities trusted besides the system's (tests).
    public init(path: String?, pins: KnownRelays = KnownRelays(), extraRoots: [Certificate] = [])
        throws(KnownRelaysError)
    {
        self.path = path
        self.extraRoots = extraRoots
        var known = pins
        if let path, FileManager.default.fileExists(atPath: path) {
            let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
            guard size <= Self.maximumFileBytes else {
                throw .file(path, "is \(size) bytes; a known_relays file may have at most \(Self.maximumFileBytes)")
            }
            guard let data = FileManager.default.contents(atPath: path) else {
                throw .file(path, "cannot be read (no permission?)")
            }
            known = try KnownRelays(parsing: String(decoding: data, as: UTF8.self), source: path)
        }
        state = LockedBox(known)
    }

    /// Largest known_relays file read (about 10,000 relays).
    public static let maximumFileBytes = 1 << 20

    /// `$XDG_CONFIG_HOME/parley/known_relays`, or `~/.config/parley/known_relays`.
    public static func defaultPath(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        UserFolders.config(environment) + "/known_relays"
    }

    /// The pins as they stand.
    public var known: KnownRelays { state.withLock { $0 } }

    /// Makes `relay` (a redirect's target) acceptable only with `fingerprint` until it is pinned; returns the store.
    @discardableResult
    public func expecting(_ fingerprint: CertificateFingerprint, for relay: String) -> RelayTrustStore {
        expected.withLock {
            if $0.count >= 1000 { $0.removeAll() }
            $0[relay.lowercased()] = fingerprint
        }
        return self
    }

    /// Decides about the chain (DER, leaf first) that `relay` (`host:port`) showed, pinning it on first use.
    public func decide(relay: String, host: String, chainDER: [[UInt8]]) async -> RelayTrustDecision {
        guard let leafDER = chainDER.first else {
            return .changed(
                RelayCertificateChanged(
                    relay: relay, pinned: CertificateFingerprint(certificateDER: []),
                    presented: CertificateFingerprint(certificateDER: []),
                    file: path ?? "memory"))
        }
        let presented = CertificateFingerprint(certificateDER: leafDER)
        if let pinned = known.pin(for: relay) {
            return pinned == presented
                ? .pinned(pinned)
                : .changed(
                    RelayCertificateChanged(
                        relay: relay, pinned: pinned, presented: presented,
                        file: path ?? "memory"))
        }
        if let required = expected.withLock({ $0[relay.lowercased()] }) {
            // A redirect's target: the cluster's certificate, or nothing.
            guard required == presented else {
                return .changed(
                    RelayCertificateChanged(
                        relay: relay, pinned: required, presented: presented, file: path ?? "memory"))
            }
            state.withLock { $0.pin(presented, for: relay) }
            try? save()
            return .pinned(presented)
        }
        if await vouchedForByAuthority(host: host, chainDER: chainDER) { return .authority }
        state.withLock { $0.pin(presented, for: relay) }
        try? save()
        return .pinnedOnFirstUse(presented)
    }

    /// Forgets a relay and saves; true if it was known.
    public func forget(_ relay: String) throws(KnownRelaysError) -> Bool {
        let known = state.withLock { $0.forget(relay) }
        try save()
        return known
    }

    private func save() throws(KnownRelaysError) {
        guard let path else { return }
        let text = known.text
        let directory = (path as NSString).deletingLastPathComponent
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            try Data(text.utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
        } catch {
            throw .file(path, "cannot save the relay's fingerprint: \(error)")
        }
    }

    private func vouchedForByAuthority(host: String, chainDER: [[UInt8]]) async -> Bool {
        guard let chain = try? chainDER.map({ try Certificate(derEncoded: $0) }), let leaf = chain.first else {
            return false
        }
        // A self-signed leaf is its own issuer: only a pin can vouch for it, however the system store looks.
        if leaf.issuer == leaf.subject { return false }
        let isAddress = isIPAddress(host)
        var roots = CertificateStore.systemTrustRoots
        roots.append(contentsOf: extraRoots)
        var verifier = Verifier(rootCertificates: roots) {
            RFC5280Policy()
            ServerIdentityPolicy(serverHostname: isAddress ? nil : host, serverIP: isAddress ? host : nil)
        }
        let result = await verifier.validate(leaf: leaf, intermediates: CertificateStore(chain.dropFirst()))
        if case .validCertificate = result { return true }
        return false
    }
}

/// A value behind a lock (Foundation's, so it builds wherever the package does).
final class LockedBox<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    func withLock<Result>(_ body: (inout Value) -> Result) -> Result {
        lock.lock()
        defer { lock.unlock() }
        return body(&value)
    }
}
