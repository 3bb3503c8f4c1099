#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The wall clock (CLOCK_REALTIME), for times another process or machine reads: statistics files, RTCP sender
/// reports, chat lines. Durations inside one process use a monotonic clock instead, since this one can jump.
public enum WallClock {
    /// Seconds since the Unix epoch.
    public static var seconds: Double {
        let now = read()
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }

    /// Whole milliseconds since the Unix epoch.
    public static var milliseconds: Int64 {
        let now = read()
        return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
    }

    private static func read() -> timespec {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return now
    }
}
