import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Runs `body` (opening a store and bringing its schema up to date) holding an exclusive `flock` on
/// `databasePath + ".lock"`. Two processes opening a new store at once (two relays started together on one state
/// folder, as the end-to-end tests start them on a fresh machine) both ran the first migration, and the second
/// failed with "table channelMember already exists": GRDB's migrator reads which migrations ran before SQLite's
/// write lock is its. Without a lock file (a folder it cannot write), the open goes on unlocked and fails on its
/// own terms.
func withSchemaLock<T>(_ databasePath: String, _ body: () throws -> T) throws -> T {
    let descriptor = open(databasePath + ".lock", O_CREAT | O_RDWR | O_CLOEXEC, 0o600)
    guard descriptor >= 0 else { return try body() }
    defer { close(descriptor) }
    while flock(descriptor, LOCK_EX) != 0, errno == EINTR {}
    defer { flock(descriptor, LOCK_UN) }
    return try body()
}
