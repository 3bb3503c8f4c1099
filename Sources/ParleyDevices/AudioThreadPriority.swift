import CAudioShim
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// How a thread that feeds or drains a sound device is scheduled.
public enum AudioThreadScheduling: String, Sendable, Equatable, Codable {
    /// Real-time (`SCHED_FIFO`): runs before every ordinary thread, as PulseAudio's, JACK's and Chromium's audio
    /// threads do where they may.
    case realtime
    /// An ordinary thread at a raised priority (nice −11).
    case raised
    /// Left as it was: the system allows neither.
    case normal
}

/// Raises the calling audio thread's scheduling as far as the system allows. A device thread held up by a busy
/// machine (a build on the other core) for longer than its buffer is a gap the listener hears: the speaker runs dry
/// or the microphone's audio is skipped. Real-time scheduling is allowed to root, to a process with CAP_SYS_NICE and
/// to a user given an `rtprio` limit (`/etc/security/limits.d`, as for JACK); a raised nice value to a user given a
/// `nice` limit. Everyone else keeps ordinary scheduling, which is what `parley join` had before.
public enum AudioThreadPriority {
    /// The real-time priority asked for: PulseAudio's default for its own threads. Any real-time priority runs before
    /// every ordinary thread; a low one leaves the system's own real-time threads (and the sound server's, when it
    /// has them higher) first.
    public static let realtimePriority: Int32 = 5
    /// The nice value asked for when real-time is refused (PulseAudio's `high-priority` value).
    public static let raisedNice: Int32 = -11

    /// Raises the calling thread; says what it got.
    @discardableResult
    public static func raiseCurrentThread() -> AudioThreadScheduling {
        #if os(Linux)
        var parameters = sched_param()
        parameters.sched_priority = realtimePriority
        if pthread_setschedparam(pthread_self(), SCHED_FIFO, &parameters) == 0 { return .realtime }
        // A nice value is per thread on Linux: "who" 0 is the calling thread.
        if setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, raisedNice) == 0 { return .raised }
        return .normal
        #else
        return .normal  // macOS: the threads already run at the user-interactive quality of service
        #endif
    }

    /// Raises the calling thread to the raised nice value only, never to real-time: for a thread that feeds the
    /// sound devices but also does unbounded work (the call's media loop mixes each speaker block, and also encodes
    /// and decodes video), which at a real-time priority could hold a core from everything else. Says what it got.
    @discardableResult
    public static func raiseCurrentThreadNice() -> AudioThreadScheduling {
        #if os(Linux)
        if setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, raisedNice) == 0 { return .raised }
        return .normal
        #else
        return .normal
        #endif
    }

    /// Raises the process's scheduling group to the raised nice value: where the kernel groups processes by
    /// terminal session (Linux's autogroup, on by default), a thread's nice value weighs only against the threads of
    /// its own session, and a build started from another terminal gets as much of the processor as the whole call.
    /// Beside `make build` of this project on 2 cores the raised media loop still waited up to 57 ms for a core
    /// while its session stayed at nice 0 (docs/devices.md has the runs). The group is the whole terminal session (the shell too), so `restoreSessionGroup` puts it back when the
    /// call ends, and the terminal's signal and crash handlers and `exit` do as well. Says what it got: `.raised`,
    /// `.normal` when refused (the same permission as the nice value), or nil when there is no session group to read
    /// (a kernel built without autogroups, or a process in the first process's session, which has no group of its own,
    /// as on our CI machine): there is
    /// nothing to weigh against then.
    @discardableResult
    public static func raiseSessionGroup() -> AudioThreadScheduling? {
        #if os(Linux)
        let previous = parley_session_group_raise(raisedNice)
        if previous != Int32.min { return .raised }
        return errno == ENOENT ? nil : .normal
        #else
        return nil
        #endif
    }

    /// Whether this kernel groups processes by terminal session and shows this process its group
    /// (`/proc/self/autogroup` reads as "/autogroup-N nice V").
    public static var hasSessionGroups: Bool { sessionGroupNice != nil }

    /// The nice value of this process's session group, or nil when there is none to read.
    public static var sessionGroupNice: Int? {
        #if os(Linux)
        var nice: Int32 = 0
        return parley_session_group_nice(&nice) == 0 ? Int(nice) : nil
        #else
        return nil
        #endif
    }

    /// Puts the session's group back as it was before `raiseSessionGroup` (once; nothing if it was not raised).
    public static func restoreSessionGroup() {
        #if os(Linux)
        parley_session_group_restore()
        #endif
    }

    /// How the calling thread is scheduled now.
    public static func currentThread() -> AudioThreadScheduling {
        #if os(Linux)
        var policy: Int32 = 0
        var parameters = sched_param()
        if pthread_getschedparam(pthread_self(), &policy, &parameters) == 0, policy == SCHED_FIFO || policy == SCHED_RR
        {
            return .realtime
        }
        errno = 0
        let nice = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)
        return errno == 0 && nice < 0 ? .raised : .normal
        #else
        return .normal
        #endif
    }
}
