import Foundation

/// What `parley serve --database` was given, or why it cannot be used, in one line.
public struct DatabaseSettingsError: Error, Equatable, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}

/// How to reach PostgreSQL: parsed from `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?sslmode=…]`.
public struct DatabaseSettings: Sendable, Equatable {
    /// libpq's `sslmode`, as far as postgres-nio can honour it.
    public enum TLSMode: String, Sendable, CaseIterable {
        /// No TLS.
        case disable
        /// libpq tries plain first; postgres-nio cannot, so this is `prefer`.
        case allow
        /// TLS when the server offers it, else plain; the certificate is not checked (as libpq). The default.
        case prefer
        /// TLS or no connection; the certificate is not checked (as libpq without a root certificate).
        case require
        /// TLS with a certificate signed by `sslrootcert` (or the system's roots); any host name.
        case verifyCA = "verify-ca"
        /// TLS with a certificate signed by `sslrootcert` (or the system's roots) for the host connected to.
        case verifyFull = "verify-full"
    }

    public var user: String
    public var password: String?
    public var host: String
    public var port: Int
    public var database: String
    public var tls: TLSMode
    /// `sslrootcert`: a PEM file of the roots `verify-ca` and `verify-full` trust.
    public var rootCertificate: String?

    /// The URL without its password, for messages and logs.
    public var redacted: String { "postgres://\(user)@\(host):\(port)/\(database)" }

    /// Parses `url`; the password comes from the URL, else `passwordFile`, else PGPASSFILE (or ~/.pgpass).
    public init(url: String, passwordFile: String? = nil, environment: [String: String] = [:])
        throws(DatabaseSettingsError)
    {
        let example = "use postgres://USER@HOST:PORT/DATABASE"
        guard let components = URLComponents(string: url), let scheme = components.scheme else {
            throw DatabaseSettingsError("--database \(Self.redact(url)) is not a URL: \(example)")
        }
        guard scheme == "postgres" || scheme == "postgresql" else {
            throw DatabaseSettingsError(
                "--database \(Self.redact(url)) starts with \(scheme)://: only PostgreSQL is supported, \(example)")
        }
        guard let host = components.host, !host.isEmpty else {
            throw DatabaseSettingsError("--database \(Self.redact(url)) names no host: \(example)")
        }
        guard let user = components.user, !user.isEmpty else {
            throw DatabaseSettingsError("--database \(Self.redact(url)) names no user: \(example)")
        }
        let database = String(components.path.drop { $0 == "/" })
        guard !database.isEmpty, !database.contains("/") else {
            throw DatabaseSettingsError("--database \(Self.redact(url)) names no database: \(example)")
        }
        self.user = user
        self.host = host
        self.port = components.port ?? 5432
        self.database = database
        guard (1...65535).contains(port) else {
            throw DatabaseSettingsError("--database \(Self.redact(url)): port \(port) is not 1…65535")
        }
        tls = .prefer
        rootCertificate = nil
        for item in components.queryItems ?? [] {
            switch item.name {
            case "sslmode":
                guard let mode = TLSMode(rawValue: item.value ?? "") else {
                    throw DatabaseSettingsError(
                        "--database: sslmode=\(item.value ?? "") is unknown: use one of "
                            + TLSMode.allCases.map(\.rawValue).joined(separator: ", "))
                }
                tls = mode
            case "sslrootcert": rootCertificate = item.value
            default:
                throw DatabaseSettingsError(
                    "--database: parameter \(item.name) is not supported (only sslmode and sslrootcert)")
            }
        }
        if let password = components.password {
            self.password = password
        } else if let passwordFile {
            guard let text = try? String(contentsOfFile: passwordFile, encoding: .utf8) else {
                throw DatabaseSettingsError("--database-password-file \(passwordFile) cannot be read")
            }
            self.password = String(text.split(separator: "\n", omittingEmptySubsequences: false).first ?? "")
        } else {
            let home = environment["HOME"] ?? NSHomeDirectory()
            let passFile = environment["PGPASSFILE"] ?? home + "/.pgpass"
            self.password = try Self.password(
                in: passFile, explicit: environment["PGPASSFILE"] != nil, host: host, port: port,
                database: database, user: user)
        }
    }

    /// libpq's password file: `host:port:database:user:password` lines, `*` matching anything, `\:` and `\\`
    /// escaped; the first matching line wins. Like libpq, a file others can read is not used.
    static func password(
        in path: String, explicit: Bool, host: String, port: Int, database: String, user: String
    ) throws(DatabaseSettingsError) -> String? {
        guard FileManager.default.fileExists(atPath: path) else {
            if explicit { throw DatabaseSettingsError("PGPASSFILE \(path) does not exist") }
            return nil
        }
        var status = stat()
        if stat(path, &status) == 0, status.st_mode & 0o077 != 0 {
            throw DatabaseSettingsError(
                "password file \(path) can be read by others: chmod 600 it (PostgreSQL's tools refuse it too)")
        }
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw DatabaseSettingsError("password file \(path) cannot be read")
        }
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            var fields: [String] = []
            var field = ""
            var escaped = false
            for character in line {
                if escaped {
                    field.append(character)
                    escaped = false
                } else if character == "\\" {
                    escaped = true
                } else if character == ":" && fields.count < 4 {
                    fields.append(field)
                    field = ""
                } else {
                    field.append(character)
                }
            }
            fields.append(field)
            guard fields.count == 5 else { continue }
            let wanted = [host, String(port), database, user]
            if zip(fields, wanted).allSatisfy({ $0 == "*" || $0 == $1 }) { return fields[4] }
        }
        return nil
    }

    /// `url` with any password replaced by `***`.
    static func redact(_ url: String) -> String {
        guard var components = URLComponents(string: url), components.password != nil else { return url }
        components.password = "***"
        return components.string ?? url
    }
}
