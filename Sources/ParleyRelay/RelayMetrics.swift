import ParleyBus
import ParleyStore
import Prometheus
import Synchronization

/// What the relay's event loop reports for one scrape of `/metrics`.
public struct RelaySample: Sendable, Equatable {
    /// Members in calls that joined through this relay now (`RelayState.localMemberCount`).
    public var members: Int
    /// Rooms with at least one of them now (`RelayState.localRoomCount`).
    public var rooms: Int
    /// The relay's running totals.
    public var counters: RelayCounters

    /// A sample.
    public init(members: Int, rooms: Int, counters: RelayCounters) {
        self.members = members
        self.rooms = rooms
        self.counters = counters
    }
}

/// Each `MessageStore` call, as the `operation` label of the store's latency and errors: a fixed set, so the label
/// never grows with rooms or accounts.
public enum StoreOperation: String, Sendable, CaseIterable {
    case bind, keys, store
    case storeBatch = "store_batch"
    case undelivered
    case undeliveredCount = "undelivered_count"
    case markDelivered = "mark_delivered"
    case markDeliveredBatch = "mark_delivered_batch"
    case markRead = "mark_read"
    case history
    case directMessages = "direct_messages"
    case setLastSeen = "set_last_seen"
    case lastSeen = "last_seen"
    case joinChannel = "join_channel"
    case leaveChannel = "leave_channel"
    case members, channels, post
    case channelHistory = "channel_history"
    case markChannelRead = "mark_channel_read"
    case conversations
}

/// The relay's metrics in a swift-prometheus registry, emitted as Prometheus text on `/metrics`. The relay's own
/// totals (`RelayCounters`) are read from its event loop at each scrape and mirrored here; the store's are recorded
/// as calls happen, by `MeasuredMessageStore`. Labels are fixed sets (`operation`, `kind`): nothing per room or
/// per account.
public final class RelayMetrics: Sendable {
    /// Every metric below; `exposition()` emits it.
    public let registry = PrometheusCollectorRegistry()
    /// Bucket bounds of the store latency histogram: a SQLite commit is about a millisecond, PostgreSQL's gives up
    /// at 15 s.
    public static let storeLatencyBuckets: [Duration] = [
        .microseconds(500), .milliseconds(1), .microseconds(2500), .milliseconds(5), .milliseconds(10),
        .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500),
        .seconds(1), .milliseconds(2500), .seconds(5), .seconds(15),
    ]

    private let members: Gauge
    private let rooms: Gauge
    private let packetsForwarded: Counter
    private let packetsDropped: Counter
    private let trunksUp: Gauge
    private let trunkRefused: [TrunkRefusedReason: Counter]
    /// Direct messages newly stored (a retry of a stored one is not counted).
    let directMessagesStored: Counter
    /// Channel messages newly stored (activity lines are not counted).
    let channelMessagesStored: Counter
    let storeLatency: [StoreOperation: DurationHistogram]
    let storeErrors: [StoreOperation: Counter]
    /// What the relay's totals were at the last scrape, so each scrape adds what is new; and the bus lag gauge,
    /// present only while the hook gives a value.
    private let mirror = Mutex<(forwarded: Int, dropped: Int, busLag: Gauge?, trunkRefused: [TrunkRefusedReason: Int])>(
        (0, 0, nil, [:]))

    /// The cluster's counters, registered at the first scrape that has them (a relay outside a cluster shows none).
    private let clusterSeries = Mutex<[String: (counter: Counter, value: Int)]>([:])

    /// Each cluster counter: its name, help and value.
    static func clusterValues(_ counters: ClusterCounters) -> [(name: String, help: String, value: Int)] {
        [
            ("cluster_heartbeats_failed", "Heartbeats that did not reach the database.", counters.heartbeatsFailed),
            ("cluster_nodes_reaped", "Other nodes this node found dead and cleared.", counters.nodesReaped),
            (
                "cluster_revivals", "Times this node found itself declared dead and announced itself again.",
                counters.revivals
            ),
            ("bus_events_published", "Events this node published on the cluster's bus.", counters.eventsPublished),
            ("bus_events_received", "Events received from other nodes on the bus.", counters.eventsReceived),
            ("bus_events_dropped", "Events dropped because the bus's outbox was full.", counters.eventsDropped),
            (
                "bus_connections", "Times the bus connected (the first, then each reconnection).",
                counters.busConnections
            ),
        ]
    }

    /// A cluster node's media over trunks (one copy per other node of a room, however many members there).
    static func trunkValues(_ counters: RelayCounters) -> [(name: String, help: String, value: Int)] {
        [
            (
                "trunk_packets_sent", "Media datagrams sent to other nodes over trunks, one per node per packet.",
                counters.trunkPacketsSent
            ),
            (
                "trunk_packets_received", "Media datagrams received from other nodes over trunks.",
                counters.trunkPacketsReceived
            ),
            (
                "trunk_packets_unsent",
                "Media datagrams for another node not sent: its trunk was not up, or the trunk socket's queue was full.",
                counters.trunkPacketsUnsent
            ),
            (
                "trunk_packets_withheld",
                "Video datagrams not sent to another node because none of its members needs their layer.",
                counters.trunkPacketsWithheld
            ),
            (
                "trunk_video_packets_sent",
                "Video datagrams sent to another node because one of its members needs their layer.",
                counters.trunkVideoPacketsSent
            ),
            (
                "trunk_packets_over_rate",
                "Media datagrams from another node's members dropped for going beyond the rate each is held to here.",
                counters.trunkPacketsOverRate
            ),
            (
                "trunk_control_sent", "Control messages (the layers a node's members need) sent to other nodes.",
                counters.trunkControlSent
            ),
            (
                "trunk_control_received", "Control messages (the layers another node's members need) taken.",
                counters.trunkControlReceived
            ),
            (
                "trunk_control_refused", "Authenticated control messages refused as malformed.",
                counters.trunkControlRefused
            ),
            (
                "remote_members_refused",
                "Members of other nodes not taken into a room here (a bad entry, an SSRC block in use, a full room).",
                counters.remoteMembersRefused
            ),
            (
                "remote_chat_refused", "Chat lines of other nodes' members over this node's limits.",
                counters.remoteChatRefused
            ),
            (
                "remote_controls_refused",
                "Host commands from other nodes refused: said by a member this node does not see as the room's host.",
                counters.remoteControlsRefused
            ),
        ]
    }

    private static var busLagName: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "parley", metricName: "bus_lag", unitName: "seconds",
            helpText: "How far this node's bus between nodes is behind, in seconds (absent while there is no bus).")
    }

    /// Registers every metric, at zero.
    public init() {
        members = registry.makeGauge(
            descriptor: MetricNameDescriptor(
                namespace: "parley", metricName: "members", unitName: "",
                helpText: "Members in calls on this node now."))
        rooms = registry.makeGauge(
            descriptor: MetricNameDescriptor(
                namespace: "parley", metricName: "rooms", unitName: "",
                helpText: "Rooms with at least one member on this node now."))
        packetsForwarded = registry.makeCounter(
            descriptor: MetricNameDescriptor(
                namespace: "parley", metricName: "packets_forwarded", unitName: "total",
                helpText: "RTP and RTCP packets forwarded, one per destination."))
        packetsDropped = registry.makeCounter(
            descriptor: MetricNameDescriptor(
                namespace: "parley", metricName: "packets_dropped", unitName: "total",
                helpText: "RTP and RTCP packets dropped: unknown or unproven source, garbage, over a limit."))
        trunksUp = registry.makeGauge(
            descriptor: MetricNameDescriptor(
                namespace: "parley", metricName: "trunks_up", unitName: "",
                helpText: "Trunks to other nodes of the cluster that are up now (their hello accepted lately)."))
        let refused = MetricNameDescriptor(
            namespace: "parley", metricName: "trunk_refused", unitName: "total",
            helpText: "Trunk datagrams refused, by reason (forged: without the cluster secret).")
        var refusals: [TrunkRefusedReason: Counter] = [:]
        for reason in TrunkRefusedReason.allCases {
            refusals[reason] = registry.makeCounter(descriptor: refused, labels: [("reason", reason.rawValue)])
        }
        trunkRefused = refusals
        let stored = MetricNameDescriptor(
            namespace: "parley", metricName: "messages_stored", unitName: "total",
            helpText: "Messages committed to the message store, by kind (direct or channel); retries not counted.")
        directMessagesStored = registry.makeCounter(descriptor: stored, labels: [("kind", "direct")])
        channelMessagesStored = registry.makeCounter(descriptor: stored, labels: [("kind", "channel")])
        let latency = MetricNameDescriptor(
            namespace: "parley", metricName: "store_latency", unitName: "seconds",
            helpText: "Time of each message store call, by operation, in seconds.")
        let errors = MetricNameDescriptor(
            namespace: "parley", metricName: "store_errors", unitName: "total",
            helpText: "Message store calls that failed, by operation.")
        var histograms: [StoreOperation: DurationHistogram] = [:]
        var failures: [StoreOperation: Counter] = [:]
        for operation in StoreOperation.allCases {
            histograms[operation] = registry.makeDurationHistogram(
                descriptor: latency, labels: [("operation", operation.rawValue)], buckets: Self.storeLatencyBuckets)
            failures[operation] = registry.makeCounter(
                descriptor: errors, labels: [("operation", operation.rawValue)])
        }
        storeLatency = histograms
        storeErrors = failures
    }

    /// Sets the gauges from `sample` and adds to the counters what is new since the last sample; `busLag` nil
    /// removes the bus lag gauge from the output (no bus, or it cannot tell).
    public func record(_ sample: RelaySample, busLag: Duration?, cluster: ClusterCounters? = nil) {
        if let cluster {
            clusterSeries.withLock { series in
                for entry in Self.clusterValues(cluster) + Self.trunkValues(sample.counters) {
                    let counter =
                        series[entry.name]?.counter
                        ?? registry.makeCounter(
                            descriptor: MetricNameDescriptor(
                                namespace: "parley", metricName: entry.name, unitName: "total", helpText: entry.help))
                    let last = series[entry.name]?.value ?? 0
                    // A counter never goes back (a sample read before the last one adds nothing).
                    if entry.value > last { counter.increment(by: Int64(entry.value - last)) }
                    series[entry.name] = (counter, max(last, entry.value))
                }
            }
        }
        members.set(Int64(sample.members))
        rooms.set(Int64(sample.rooms))
        trunksUp.set(Int64(sample.counters.trunksUp))
        mirror.withLock { last in
            for (reason, count) in sample.counters.trunkRefused where count > last.trunkRefused[reason, default: 0] {
                trunkRefused[reason]?.increment(by: Int64(count - last.trunkRefused[reason, default: 0]))
                last.trunkRefused[reason] = count
            }
            // Samples from concurrent scrapes may arrive out of order: a counter never goes back.
            let forwarded = sample.counters.packetsForwarded
            let dropped = sample.counters.packetsDropped
            if forwarded > last.forwarded {
                packetsForwarded.increment(by: Int64(forwarded - last.forwarded))
                last.forwarded = forwarded
            }
            if dropped > last.dropped {
                packetsDropped.increment(by: Int64(dropped - last.dropped))
                last.dropped = dropped
            }
            switch (busLag, last.busLag) {
            case (let lag?, let gauge?):
                gauge.set(lag.inSeconds)
            case (let lag?, nil):
                let gauge = registry.makeGauge(descriptor: Self.busLagName)
                gauge.set(lag.inSeconds)
                last.busLag = gauge
            case (nil, let gauge?):
                registry.unregisterGauge(gauge)
                last.busLag = nil
            case (nil, nil):
                break
            }
        }
    }

    /// Every metric in Prometheus' text exposition format (version 0.0.4), by swift-prometheus' emitter.
    public func exposition() -> [UInt8] {
        registry.emitToBuffer()
    }
}
