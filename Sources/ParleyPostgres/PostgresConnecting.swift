import Foundation
import Logging
import NIOCore
import NIOPosix
import NIOSSL
import ParleyStore
import PostgresNIO

// Turning `DatabaseSettings` into postgres-nio configurations, and postgres-nio's errors into one line a user can act
// on (PSQLError's own description is deliberately generic).

extension DatabaseSettings {
    /// The TLS configuration `sslmode` asks for, nil for `disable`.
    func tlsConfiguration() -> TLSConfiguration? {
        var configuration = TLSConfiguration.makeClientConfiguration()
        switch tls {
        case .disable: return nil
        // libpq checks no certificate in these modes: TLS against eavesdropping only.
        case .allow, .prefer, .require: configuration.certificateVerification = .none
        case .verifyCA: configuration.certificateVerification = .noHostnameVerification
        case .verifyFull: configuration.certificateVerification = .fullVerification
        }
        if let rootCertificate { configuration.trustRoots = .file(rootCertificate) }
        return configuration
    }

    /// The pool's configuration.
    func clientConfiguration(readOnly: Bool) -> PostgresClient.Configuration {
        let mode: PostgresClient.Configuration.TLS
        switch (tls, tlsConfiguration()) {
        case (.disable, _), (_, nil): mode = .disable
        case (.allow, let tls?), (.prefer, let tls?): mode = .prefer(tls)
        case (_, let tls?): mode = .require(tls)
        }
        var configuration = PostgresClient.Configuration(
            host: host, port: port, username: user, password: password, database: database, tls: mode)
        configuration.options.maximumConnections = 8
        configuration.options.connectTimeout = .seconds(5)
        if readOnly { configuration.options.additionalStartupParameters = [("default_transaction_read_only", "on")] }
        return configuration
    }

    /// One connection's configuration (the start-up check and the migrations).
    func connectionConfiguration() throws -> PostgresConnection.Configuration {
        let mode: PostgresConnection.Configuration.TLS
        switch (tls, tlsConfiguration()) {
        case (.disable, _), (_, nil): mode = .disable
        case (.allow, let tls?), (.prefer, let tls?): mode = .prefer(try NIOSSLContext(configuration: tls))
        case (_, let tls?): mode = .require(try NIOSSLContext(configuration: tls))
        }
        var configuration = PostgresConnection.Configuration(
            host: host, port: port, username: user, password: password, database: database, tls: mode)
        configuration.options.connectTimeout = .seconds(5)
        return configuration
    }
}

enum PostgresFailure {
    /// `error` as one line: what was being done, and PostgreSQL's or the network's reason.
    static func explain(_ error: any Error, doing what: String, settings: DatabaseSettings) -> StoreError {
        if let store = error as? StoreError { return store }
        if case .newerSchema(let database, let known) = error as? PostgresSchemaError {
            return .database(
                "the database \(settings.redacted) has schema version \(database), newer than this parley knows "
                    + "(\(known)): upgrade parley on this node (nothing was changed)")
        }
        if case .olderSchema(let database, let known) = error as? PostgresSchemaError {
            return .database(
                "the database \(settings.redacted) has schema version \(database), older than this parley needs "
                    + "(\(known)), and a read-only store cannot migrate it")
        }
        let place = "PostgreSQL at \(settings.host):\(settings.port)"
        if let psql = error as? PSQLError {
            let state = psql.serverInfo?[.sqlState] ?? ""
            let message = psql.serverInfo?[.message] ?? ""
            switch psql.code {
            case .server:
                switch state {
                case "28P01":
                    return .database(
                        "could not \(what): \(place) refused the password of user \(settings.user) "
                            + "(check the URL, PGPASSFILE or --database-password-file)")
                case "28000":
                    return .database("could not \(what): \(place) refused user \(settings.user): \(message)")
                case "3D000":
                    return .database(
                        "could not \(what): \(place) has no database \(settings.database) "
                            + "(create it: createdb \(settings.database))")
                case "25006":
                    return .database(
                        "could not \(what): the message store is read-only (the database is a standby, or the "
                            + "session is read-only)")
                case "42501":
                    return .database(
                        "could not \(what): the message store is read-only for user \(settings.user) (\(message))")
                case "53100":
                    return .database(
                        "could not \(what): the message store is full (the database server's disk is full)")
                // Shutting down, starting up, or a connection lost: the server is there, or will be again.
                case "57P01", "57P02", "57P03":
                    return .unavailable("could not \(what): \(place) is not available now: \(message)")
                case _ where state.hasPrefix("08"):
                    return .unavailable("could not \(what): \(place) is not available now: \(message)")
                default:
                    return .database("could not \(what): \(place) says: \(message) (SQLSTATE \(state))")
                }
            case .sslUnsupported:
                return .database(
                    "could not \(what): \(place) does not offer TLS, and sslmode=\(settings.tls.rawValue) requires it")
            case .authMechanismRequiresPassword:
                return .database(
                    "could not \(what): \(place) asks a password of user \(settings.user): give it in the URL, "
                        + "PGPASSFILE or --database-password-file")
            case .unsupportedAuthMechanism:
                return .database("could not \(what): \(place) asks for an authentication postgres-nio cannot do")
            case .connectionError where psql.underlying is NIOSSLError || psql.underlying is NIOSSLExtraError:
                return .database("could not \(what): TLS to \(place) failed: \(tlsReason(psql.underlying, settings))")
            case .connectionError, .serverClosedConnection, .uncleanShutdown:
                if psql.underlying == nil, psql.code != .connectionError {
                    return .unavailable(
                        "could not \(what): cannot reach \(place): it closed the connection before answering "
                            + "(is that PostgreSQL's port?)")
                }
                return .unavailable("could not \(what): cannot reach \(place): \(reason(psql.underlying))")
            case .failedToAddSSLHandler:
                return .database("could not \(what): TLS to \(place) failed: \(reason(psql.underlying))")
            default:
                return .database("could not \(what): \(place): \(psql.code)")
            }
        }
        // The pool's own error type is not public: its circuit breaker opens when no connection could be made.
        if "\(error)".contains("CircuitBreaker") {
            return .unavailable("could not \(what): cannot reach \(place) (no connection could be made for a minute)")
        }
        if error is NIOSSLError || error is BoringSSLError {
            return .database("could not \(what): TLS to \(place) failed: \(error)")
        }
        if error is IOError || error is NIOConnectionError || error is ChannelError {
            return .unavailable("could not \(what): cannot reach \(place): \(reason(error))")
        }
        return .database("could not \(what): \(reason(error))")
    }

    /// Why TLS failed, short: BoringSSL's reason token and which roots were trusted.
    static func tlsReason(_ error: (any Error)?, _ settings: DatabaseSettings) -> String {
        let text = "\(error.map { "\($0)" } ?? "")"
        let token = text.firstMatch(of: /OPENSSL_internal:([A-Z_]+)/).map { String($0.1) }
        // Checking the certificate is what the verify modes add: a failed handshake there is a refused certificate
        // (BoringSSL says CERTIFICATE_VERIFY_FAILED, or BAD_SIGNATURE for a look-alike issuer).
        if settings.tls == .verifyCA || settings.tls == .verifyFull {
            return "its certificate is not trusted for \(settings.host) by "
                + (settings.rootCertificate.map { "sslrootcert \($0)" } ?? "the system's roots")
                + " (sslmode=\(settings.tls.rawValue)\(token.map { ", " + $0 } ?? ""))"
        }
        return token ?? text
    }

    /// The network's reason, short: "connection refused" rather than a nested dump.
    static func reason(_ error: (any Error)?) -> String {
        guard let error else { return "the connection failed" }
        if let connection = error as? NIOConnectionError {
            if let first = connection.connectionErrors.first { return reason(first.error) }
            if connection.dnsAError != nil || connection.dnsAAAAError != nil {
                return "its host name does not resolve"
            }
            return "no address to connect to"
        }
        if let io = error as? IOError { return String(cString: strerror(io.errnoCode)).lowercased() }
        if error is ChannelError, "\(error)".contains("connectTimeout") { return "no answer within 5 s" }
        if let psql = error as? PSQLError { return "\(psql.code)" }
        return "\(error)"
    }
}

extension Logger {
    /// This logger for postgres-nio's pool, which says each failed connection attempt at info: warnings and worse.
    var quiet: Logger {
        var logger = self
        if logger.logLevel < .warning { logger.logLevel = .warning }
        return logger
    }
}
