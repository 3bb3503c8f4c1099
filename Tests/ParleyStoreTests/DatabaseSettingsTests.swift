import Foundation
import ParleyPostgres
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `--database` URLs and where their password comes from.
struct DatabaseSettingsTests {
    @Test func aURLGivesUserHostPortDatabaseAndTLSMode() throws {
        let settings = try DatabaseSettings(url: "postgresql://ann:s%40cret@db.example:6543/chat?sslmode=verify-full")
        #expect(settings.user == "ann" && settings.password == "s@cret")
        #expect(settings.host == "db.example" && settings.port == 6543 && settings.database == "chat")
        #expect(settings.tls == .verifyFull)
        #expect(settings.redacted == "postgres://ann@db.example:6543/chat", "never the password")
        let defaults = try DatabaseSettings(
            url: "postgres://ann@db.example/chat", environment: ["HOME": "/nonexistent"])
        #expect(defaults.port == 5432 && defaults.tls == .prefer && defaults.password == nil)
    }

    @Test func aPasswordFileMatchesLikeLibpq() throws {
        let folder = NSTemporaryDirectory() + "parley-pgpass-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/pgpass"
        try """
        # comment
        other.example:5432:*:ann:not-this
        db.example:5432:chat:bob:not-this-either
        db.example:*:chat:ann:pa\\:ss\\\\word
        *:*:*:*:fallback
        """.write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o600)
        let environment = ["PGPASSFILE": path]
        #expect(
            try DatabaseSettings(url: "postgres://ann@db.example/chat", environment: environment).password
                == "pa:ss\\word")
        #expect(
            try DatabaseSettings(url: "postgres://carol@db.example/chat", environment: environment).password
                == "fallback")
        #expect(
            try DatabaseSettings(url: "postgres://ann:given@db.example/chat", environment: environment).password
                == "given", "the URL's password comes first")
        #expect(throws: DatabaseSettingsError.self) {
            try DatabaseSettings(url: "postgres://ann@db.example/chat", environment: ["PGPASSFILE": folder + "/none"])
        }
    }
}
