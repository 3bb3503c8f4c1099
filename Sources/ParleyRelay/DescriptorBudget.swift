#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How many connections the relay can hold with the file descriptors it may open.
///
/// Every signaling connection is one descriptor. A process that runs out cannot accept, and SwiftNIO then retries the
/// listening socket in a tight loop (the pending connection keeps it readable), so the relay stays below its
/// descriptor limit instead: it refuses connections past the budget with a message, and never reaches the edge.
public enum DescriptorBudget {
    /// Descriptors kept for the relay's own use: standard streams, event loops, the UDP socket, the log, TLS files.
    public static let reserved = 64

    /// Raises the soft descriptor limit to the hard one (what `ulimit -Hn` allows without privileges); returns the
    /// soft limit in force afterwards, nil when it cannot be read.
    @discardableResult
    public static func raiseSoftLimit() -> Int? {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return nil }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { limit = raised }
        }
        return Int(clamping: limit.rlim_cur)
    }

    /// Connections that fit in `descriptors`: all but the reserve, or half when the limit is small.
    public static func connections(descriptors: Int) -> Int {
        max(1, descriptors - min(reserved, descriptors / 2))
    }
}
