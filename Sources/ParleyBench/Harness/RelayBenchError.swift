import Foundation
import ParleyWire
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Errors setting up the relay benchmark; each names the step that failed.
public enum RelayBenchError: Error, CustomStringConvertible {
    /// `parley serve` did not start or did not say where it listens.
    case relayDidNotStart(String)
    /// A socket call failed.
    case socket(call: String, errno: Int32)
    /// The relay refused or did not answer the join.
    case joinFailed(String)
    /// The relay did not acknowledge a media bind.
    case bindFailed(String)
    /// What the bench waited for did not come in time; names what it waited for.
    case timedOut(String, after: Duration)

    public var description: String {
        switch self {
        case .relayDidNotStart(let detail): "parley serve did not start: \(detail)"
        case .socket(let call, let code): "\(call) failed: \(String(cString: strerror(code)))"
        case .joinFailed(let detail): "join failed: \(detail)"
        case .bindFailed(let detail): "media bind failed: \(detail)"
        case .timedOut(let what, let limit): "timed out after \(limit) waiting for \(what)"
        }
    }
}
