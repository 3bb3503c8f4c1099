import ParleyWire

/// The relay's side of each member's downlink estimate: send-time marks behind the media (`SendTimeMark`), and the
/// probes members ask for (`ProbeRequest`), paced over `UplinkProbe.duration`. Bounded by the members bound here: one
/// probe each at a time, at most one a second; a member's entries go when it does. Time is an input.
struct DownlinkMarks {
    /// A probe under way.
    struct Probe: Equatable {
        var ssrc: UInt32
        var cluster: UInt16
        var startedAt: Duration
        /// The marks it sends, and those sent so far.
        var count: Int
        var sent = 0
    }

    /// Bytes of a probe's mark on the wire (without UDP and IP).
    static let probeMarkBytes = 1_000
    /// The shortest time between two probes of one member's downlink.
    static let shortestGap: Duration = .seconds(1)

    /// The RTP packets written to each member when it was last marked: a member sent nothing since gets no mark.
    private var markedAt: [UInt32: UInt32] = [:]
    /// The probes under way, by member.
    private(set) var probes: [UInt32: Probe] = [:]
    /// When each member's last probe started.
    private var lastProbe: [UInt32: Duration] = [:]

    /// The members written to since their last mark, given `sentTo` (each member's running RTP count); each is
    /// marked now.
    mutating func due(sentTo: [UInt32: (packets: UInt32, bytes: UInt32)], asked: (UInt32) -> Bool) -> [UInt32] {
        var due: [UInt32] = []
        for (member, sent) in sentTo where markedAt[member] != sent.packets && asked(member) {
            markedAt[member] = sent.packets
            due.append(member)
        }
        return due.sorted()
    }

    /// A member's request at `now`: true when its probe starts; false (nothing sent) when one is under way or the
    /// last started less than `shortestGap` ago.
    mutating func request(_ request: ProbeRequest, from member: UInt32, at now: Duration) -> Bool {
        guard probes[member] == nil, lastProbe[member].map({ now - $0 >= Self.shortestGap }) ?? true else {
            return false
        }
        let bytes = Double(request.kbps) * 1_000 * UplinkProbe.duration / 1_000 / 8
        let count = min(DownlinkProbe.markLimit, max(5, Int((bytes / Double(Self.probeMarkBytes)).rounded(.up))))
        probes[member] = Probe(ssrc: request.ssrc, cluster: request.cluster, startedAt: now, count: count)
        lastProbe[member] = now
        return true
    }

    /// The probe marks due by `now` (mark i of n at i/n of the probe's duration), by member; a probe whose last mark
    /// went is done.
    mutating func owed(at now: Duration) -> [(member: UInt32, marks: [SendTimeMark])] {
        var owed: [(member: UInt32, marks: [SendTimeMark])] = []
        let sentAt = UInt64(max(0, now / .microseconds(1)))
        for member in probes.keys.sorted() {
            guard var probe = probes[member] else { continue }
            var marks: [SendTimeMark] = []
            let elapsed = (now - probe.startedAt) / .milliseconds(1)
            while probe.sent < probe.count, Double(probe.sent) * UplinkProbe.duration / Double(probe.count) <= elapsed {
                let tag = ProbeTag(cluster: probe.cluster, index: UInt16(probe.sent), count: UInt16(probe.count))
                marks.append(
                    SendTimeMark(
                        mediaSSRC: probe.ssrc, sentAt: sentAt, probe: tag,
                        padding: Self.probeMarkBytes - SendTimeMark.markBytes))
                probe.sent += 1
            }
            probes[member] = probe.sent < probe.count ? probe : nil
            if !marks.isEmpty { owed.append((member, marks)) }
        }
        return owed
    }

    /// A member gone: its marks and probes forgotten.
    mutating func forget(_ member: UInt32) {
        markedAt[member] = nil
        probes[member] = nil
        lastProbe[member] = nil
    }
}
