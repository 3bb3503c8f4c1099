import Dispatch
import Foundation
import Logging
import NIOCore
import NIOEmbedded
import NIOHTTP1
import NIOPosix
import ParleyBus
import ParleyStore
import ParleyTestLanes
import Synchronization
import Testing

@testable import ParleyRelay

/// The Prometheus text of `/metrics` as samples, by series (`name{labels}`), and each family's `# TYPE`.
struct ScrapedMetrics {
    var samples: [String: Double] = [:]
    var types: [String: String] = [:]

    init(_ text: String) {
        for line in text.split(separator: "\n") {
            let words = line.split(separator: " ")
            if line.hasPrefix("# TYPE "), words.count == 4 {
                types[String(words[2])] = String(words[3])
            } else if !line.hasPrefix("#"), words.count == 2, let value = Double(words[1]) {
                samples[String(words[0])] = value
            }
        }
    }

    init(_ bytes: [UInt8]) { self.init(String(decoding: bytes, as: UTF8.self)) }
}

/// `/metrics` and `/healthz` without sockets: the metrics text from known counters, the measured store, the routes,
/// the connection state machine, the health answers and the store probe.
@Suite(.lane(.timing))
struct AdminEndpointTests {
    static func counters(forwarded: Int, dropped: Int) -> RelayCounters {
        var counters = RelayCounters()
        counters.packetsForwarded = forwarded
        counters.packetsDropped = dropped
        counters.signalingErrors = 99  // not exported: only what the list in docs/scaling.md names
        return counters
    }

    @Test func theMetricsTextCarriesTheRelaysCountersAndGauges() {
        let metrics = RelayMetrics()
        metrics.record(
            RelaySample(members: 3, rooms: 2, counters: Self.counters(forwarded: 1500, dropped: 7)), busLag: nil)
        var scraped = ScrapedMetrics(metrics.exposition())
        #expect(scraped.samples["parley_members"] == 3)
        #expect(scraped.samples["parley_rooms"] == 2)
        #expect(scraped.samples["parley_packets_forwarded_total"] == 1500)
        #expect(scraped.samples["parley_packets_dropped_total"] == 7)
        #expect(scraped.samples["parley_messages_stored_total{kind=\"direct\"}"] == 0)
        #expect(scraped.samples["parley_messages_stored_total{kind=\"channel\"}"] == 0)
        #expect(scraped.samples["parley_store_latency_seconds_count{operation=\"store_batch\"}"] == 0)
        #expect(scraped.samples["parley_bus_lag_seconds"] == nil, "no bus: no gauge")
        #expect(
            scraped.types == [
                "parley_members": "gauge", "parley_rooms": "gauge", "parley_packets_forwarded_total": "counter",
                "parley_packets_dropped_total": "counter", "parley_messages_stored_total": "counter",
                "parley_store_latency_seconds": "histogram", "parley_store_errors_total": "counter",
                "parley_trunks_up": "gauge", "parley_trunk_refused_total": "counter",
            ])
        #expect(
            scraped.samples.keys.allSatisfy { $0.hasPrefix("parley_") }, "\(scraped.samples.keys.sorted())")

        // A later scrape: gauges follow, counters add what is new, and the bus lag appears with the hook's value.
        metrics.record(
            RelaySample(members: 1, rooms: 1, counters: Self.counters(forwarded: 2000, dropped: 7)),
            busLag: .milliseconds(250))
        scraped = ScrapedMetrics(metrics.exposition())
        #expect(scraped.samples["parley_members"] == 1)
        #expect(scraped.samples["parley_packets_forwarded_total"] == 2000)
        #expect(scraped.samples["parley_bus_lag_seconds"] == 0.25)
        #expect(scraped.types["parley_bus_lag_seconds"] == "gauge")

        // A sample older than the last (concurrent scrapes) never takes a counter back; no lag, no gauge again.
        metrics.record(
            RelaySample(members: 1, rooms: 1, counters: Self.counters(forwarded: 1800, dropped: 9)), busLag: nil)
        scraped = ScrapedMetrics(metrics.exposition())
        #expect(scraped.samples["parley_packets_forwarded_total"] == 2000)
        #expect(scraped.samples["parley_packets_dropped_total"] == 9)
        #expect(scraped.samples["parley_bus_lag_seconds"] == nil)

        // Trunks: the gauge follows, refusals count by reason and never go back.
        var trunked = Self.counters(forwarded: 2000, dropped: 9)
        trunked.trunksUp = 2
        trunked.trunkRefused = [.forged: 3, .malformed: 1]
        metrics.record(RelaySample(members: 1, rooms: 1, counters: trunked), busLag: nil)
        trunked.trunkRefused = [.forged: 2]
        metrics.record(RelaySample(members: 1, rooms: 1, counters: trunked), busLag: nil)
        scraped = ScrapedMetrics(metrics.exposition())
        #expect(scraped.samples["parley_trunks_up"] == 2)
        #expect(scraped.samples["parley_trunk_refused_total{reason=\"forged\"}"] == 3)
        #expect(scraped.samples["parley_trunk_refused_total{reason=\"malformed\"}"] == 1)
        #expect(scraped.samples["parley_trunk_refused_total{reason=\"replayed\"}"] == 0)
        #expect(scraped.samples["parley_cluster_nodes_reaped_total"] == nil, "no cluster: no cluster counters")

        // In a cluster: its counters appear, and follow without going back.
        var cluster = ClusterCounters()
        cluster.heartbeatsFailed = 2
        cluster.nodesReaped = 1
        cluster.eventsPublished = 40
        cluster.eventsReceived = 35
        cluster.busConnections = 1
        metrics.record(RelaySample(members: 1, rooms: 1, counters: trunked), busLag: nil, cluster: cluster)
        cluster.eventsPublished = 30  // read before the last
        metrics.record(RelaySample(members: 1, rooms: 1, counters: trunked), busLag: nil, cluster: cluster)
        cluster.eventsPublished = 45
        cluster.eventsDropped = 3
        metrics.record(RelaySample(members: 1, rooms: 1, counters: trunked), busLag: nil, cluster: cluster)
        scraped = ScrapedMetrics(metrics.exposition())
        #expect(scraped.samples["parley_cluster_heartbeats_failed_total"] == 2)
        #expect(scraped.samples["parley_cluster_nodes_reaped_total"] == 1)
        #expect(scraped.samples["parley_cluster_revivals_total"] == 0)
        #expect(scraped.samples["parley_bus_events_published_total"] == 45)
        #expect(scraped.samples["parley_bus_events_received_total"] == 35)
        #expect(scraped.samples["parley_bus_events_dropped_total"] == 3)
        #expect(scraped.samples["parley_bus_connections_total"] == 1)
        #expect(scraped.types["parley_bus_events_published_total"] == "counter")
    }

    @Test func theMeasuredStoreTimesEachCallAndCountsNewMessagesOnly() throws {
        let path = NSTemporaryDirectory() + "parley-measured-\(UUID().uuidString).sqlite"
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) } }
        let metrics = RelayMetrics()
        let store: any MessageStore = MeasuredMessageStore(try SQLiteMessageStore(path: path), metrics: metrics)
        func message(_ id: String, text: String = "x") -> NewDirectMessage {
            NewDirectMessage(id: id, sender: "alice", recipient: "bob", sealed: Array(text.utf8), receivedAt: 1)
        }
        _ = try store.store(batch: [message("m1"), message("m2")])
        _ = try store.store(batch: [message("m1"), message("m1", text: "reused")])  // a retry and a refusal
        _ = try store.store(message("m3"))
        _ = try store.join(channel: "crew", account: "alice", at: 1)
        _ = try store.post(NewChannelPost(id: "p1", channel: "crew", sender: "alice", text: "hi", postedAt: 2))
        _ = try store.post(NewChannelPost(id: "p1", channel: "crew", sender: "alice", text: "hi", postedAt: 2))
        #expect(try store.undelivered(to: "bob", limit: 10).map(\.message.id) == ["m1", "m2", "m3"])

        let scraped = ScrapedMetrics(metrics.exposition())
        #expect(scraped.samples["parley_messages_stored_total{kind=\"direct\"}"] == 3)
        #expect(scraped.samples["parley_messages_stored_total{kind=\"channel\"}"] == 1)
        #expect(scraped.samples["parley_store_latency_seconds_count{operation=\"store_batch\"}"] == 2)
        #expect(scraped.samples["parley_store_latency_seconds_count{operation=\"store\"}"] == 1)
        #expect(scraped.samples["parley_store_latency_seconds_count{operation=\"post\"}"] == 2)
        #expect(scraped.samples["parley_store_latency_seconds_count{operation=\"undelivered\"}"] == 1)
        #expect(scraped.samples["parley_store_latency_seconds_bucket{operation=\"post\",le=\"+Inf\"}"] == 2)
        #expect((scraped.samples["parley_store_latency_seconds_sum{operation=\"store_batch\"}"] ?? 0) > 0)
        #expect(scraped.samples["parley_store_errors_total{operation=\"store_batch\"}"] == 0)
        // One series per operation and bucket: nothing grows with accounts, channels or messages.
        let latencySeries = scraped.samples.keys.filter { $0.hasPrefix("parley_store_latency_seconds") }
        #expect(latencySeries.count == StoreOperation.allCases.count * (RelayMetrics.storeLatencyBuckets.count + 3))
    }

    @Test func aFailingStoreCallIsCountedAsAnError() throws {
        let metrics = RelayMetrics()
        let readOnly = NSTemporaryDirectory() + "parley-measured-\(UUID().uuidString).sqlite"
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: readOnly + suffix) } }
        _ = try SQLiteMessageStore(path: readOnly)
        let store = MeasuredMessageStore(try SQLiteMessageStore(path: readOnly, readOnly: true), metrics: metrics)
        #expect(throws: StoreError.self) {
            _ = try store.store(
                NewDirectMessage(id: "m1", sender: "alice", recipient: "bob", sealed: [1], receivedAt: 1))
        }
        let scraped = ScrapedMetrics(metrics.exposition())
        #expect(scraped.samples["parley_store_errors_total{operation=\"store\"}"] == 1)
        #expect(scraped.samples["parley_store_latency_seconds_count{operation=\"store\"}"] == 1)
        #expect(scraped.samples["parley_messages_stored_total{kind=\"direct\"}"] == 0)
    }

    @Test func adminAddressesParseOrSayWhatToType() throws {
        let good: [(String, AdminAddress)] = [
            ("127.0.0.1:9100", AdminAddress(host: "127.0.0.1", port: 9100)),
            ("localhost:0", AdminAddress(host: "localhost", port: 0)),
            ("[::1]:9100", AdminAddress(host: "::1", port: 9100)),
            ("0.0.0.0:65535", AdminAddress(host: "0.0.0.0", port: 65535)),
        ]
        for (text, address) in good {
            #expect(try AdminAddress(parsing: text) == address, "\(text)")
            #expect(address.description == text, "printed as given")
        }
        for bad in ["9100", ":9100", "127.0.0.1:", "127.0.0.1:70000", "127.0.0.1:-1", "::1:9100", "[::1]9100", "a:b"] {
            #expect(throws: AdminAddressError(text: bad), "\(bad)") { try AdminAddress(parsing: bad) }
        }
        #expect(
            AdminAddressError(text: "9100").description
                == "--admin takes HOST:PORT (a port 0…65535), e.g. --admin 127.0.0.1:9100; got \"9100\"")
    }

    @Test func theAdminAddressIsThePublicPortOnTheSameHostOnly() {
        let rows: [(admin: String, host: String, port: Int, isPublic: Bool)] = [
            ("127.0.0.1:7878", "127.0.0.1", 7878, true),
            ("0.0.0.0:7878", "127.0.0.1", 7878, true),
            ("127.0.0.1:7878", "0.0.0.0", 7878, true),
            ("[::1]:7878", "::", 7878, true),
            ("localhost:7878", "127.0.0.1", 7878, true),
            ("127.0.0.1:9100", "127.0.0.1", 7878, false),
            ("10.0.0.5:7878", "127.0.0.1", 7878, false),
            ("127.0.0.1:0", "127.0.0.1", 0, false),
        ]
        for row in rows {
            let address = try? AdminAddress(parsing: row.admin)
            #expect(address?.isPublicPort(host: row.host, port: row.port) == row.isPublic, "\(row)")
        }
    }

    @Test(arguments: [
        (HTTPMethod.GET, "/metrics", AdminRequest.serve(.metrics)),
        (.GET, "/healthz", .serve(.health)),
        (.GET, "/metrics?name=parley_members", .serve(.metrics)),
        (.POST, "/metrics", .methodNotAllowed),
        (.HEAD, "/healthz", .methodNotAllowed),
        (.DELETE, "/healthz", .methodNotAllowed),
        (.GET, "/", .notFound),
        (.GET, "/metrics/", .notFound),
        (.GET, "/parley/messages", .notFound),
        (.GET, "*", .notFound),
    ])
    func routes(_ method: HTTPMethod, _ uri: String, _ expected: AdminRequest) {
        #expect(AdminRequest(method: method, uri: uri) == expected)
    }

    @Test func aConnectionAnswersEachRequestAndRefusesALargeBody() {
        let get = HTTPRequestHead(version: .http1_1, method: .GET, uri: "/healthz")
        var state = AdminConnectionState()
        #expect(state.head(get) == .nothing)
        #expect(state.end() == .serve(.health, keepAlive: true))
        state.answered()
        // The next request on the same connection: not an endpoint.
        #expect(state.head(HTTPRequestHead(version: .http1_1, method: .GET, uri: "/admin")) == .nothing)
        guard case .answer(let notFound, keepAlive: true) = state.end() else {
            Issue.record("a 404 on a kept-alive connection")
            return
        }
        #expect(notFound.status == .notFound)
        state.answered()

        // A body past the limit: 413 at once, and the connection closes; the rest of the request is ignored.
        var closing = HTTPRequestHead(version: .http1_0, method: .POST, uri: "/metrics")
        closing.headers.add(name: "Content-Length", value: "5000")
        #expect(state.head(closing) == .nothing)
        #expect(state.body(1000) == .nothing)
        guard case .answer(let tooLarge, keepAlive: false) = state.body(1000) else {
            Issue.record("413 and close past \(AdminConnectionState.maximumBodyBytes) bytes")
            return
        }
        #expect(tooLarge.status == .payloadTooLarge)
        #expect(state.body(1000) == .nothing)
        #expect(state.end() == .nothing)
    }

    /// What the handler writes for `request` in an HTTP pipeline on an `EmbeddedChannel`.
    static func embeddedAnswer(_ request: String) throws -> String {
        let channel = EmbeddedChannel()
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 9100)).wait()
        let endpoints = AdminEndpoints(metrics: { [] }, health: { .health(.none) })
        try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
        try channel.pipeline.syncOperations.addHandler(
            AdminHTTPHandler(endpoints: endpoints, logger: Logger(label: "test")))
        _ = try? channel.writeInbound(ByteBuffer(string: request))
        var written = ""
        while let part: ByteBuffer = try channel.readOutbound() { written += String(buffer: part) }
        _ = try? channel.finish()
        return written
    }

    @Test func theHandlerAnswersErrorsInAnHTTPPipeline() throws {
        let notFound = try Self.embeddedAnswer("GET /admin HTTP/1.1\r\nHost: relay\r\n\r\n")
        #expect(notFound.hasPrefix("HTTP/1.1 404 Not Found\r\n"), "\(notFound)")
        #expect(notFound.hasSuffix("not found: try /metrics or /healthz\n"), "\(notFound)")
        let post = try Self.embeddedAnswer("POST /healthz HTTP/1.1\r\nContent-Length: 0\r\n\r\n")
        #expect(post.hasPrefix("HTTP/1.1 405 Method Not Allowed\r\n") && post.contains("Allow: GET\r\n"), "\(post)")
        let large = try Self.embeddedAnswer(
            "POST /metrics HTTP/1.1\r\nContent-Length: 2000\r\n\r\n" + String(repeating: "x", count: 2000))
        #expect(
            large.hasPrefix("HTTP/1.1 413 Payload Too Large\r\n") && large.contains("Connection: close"), "\(large)")
        let garbage = try Self.embeddedAnswer("\u{1}\u{2} NOT HTTP\r\n\r\n")
        #expect(garbage.hasPrefix("HTTP/1.1 400 Bad Request\r\n"), "\(garbage)")
    }

    @Test func healthAnswersSayWhatFailed() {
        let rows: [(StoreHealth, HTTPResponseStatus, String)] = [
            (.none, .ok, #"{"node":"up","status":"ok","store":"none"}"#),
            (.reachable, .ok, #"{"node":"up","status":"ok","store":"reachable"}"#),
            (
                .failed("message store: disk I/O error"), .serviceUnavailable,
                #"{"node":"up","reason":"the message store failed: message store: disk I/O error","status":"failing","store":"failing"}"#
            ),
            (
                .timedOut(.seconds(2)), .serviceUnavailable,
                #"{"node":"up","reason":"the message store did not answer within 2 s","status":"failing","store":"unreachable"}"#
            ),
        ]
        for (health, status, body) in rows {
            let answer = AdminAnswer.health(health)
            #expect(answer.status == status, "\(health)")
            #expect(answer.contentType == "application/json")
            #expect(String(decoding: answer.body, as: UTF8.self) == body + "\n")
        }
        // A relay loop that does not answer fails the node, whatever the store says.
        let stuck = AdminAnswer.health(.timedOut(.seconds(2)), relayLoop: .stuck(.seconds(2)))
        #expect(stuck.status == .serviceUnavailable)
        #expect(
            String(decoding: stuck.body, as: UTF8.self)
                == #"{"node":"stuck","reason":"the relay's event loop did not answer within 2 s; the message store did not answer within 2 s","status":"failing","store":"unreachable"}"#
                + "\n")
    }

    @Test func theStoreProbeTimesOutWithoutPilingUpChecks() async throws {
        let store = HangingStore()
        let probe = StoreHealthProbe(timeout: .milliseconds(200)) { store.check() }
        // Two callers while the check hangs: one check, both told it timed out.
        async let first = probe.health()
        async let second = probe.health()
        #expect(await [first, second] == [.timedOut(.milliseconds(200)), .timedOut(.milliseconds(200))])
        // While it still hangs, a caller is answered at once, and no second check starts.
        #expect(await probe.health() == .timedOut(.milliseconds(200)))
        #expect(store.calls.withLock { $0 } == 1)
        // Once the store answers again, so does the probe.
        store.hangs.withLock { $0 = false }
        store.release.signal()
        var health = StoreHealth.none
        for _ in 0..<100 {
            health = await probe.health()
            if health == .reachable { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(health == .reachable)

        let failing = StoreHealthProbe { throw StoreError.database("disk I/O error") }
        #expect(await failing.health() == .failed("message store: disk I/O error"))
    }

    @Test func aBusyEventLoopIsStuckAndAnIdleOneAnswers() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        #expect(await EventLoopProbe.answers(loop, within: .seconds(2)))
        // The loop's thread held in one long task (a stuck relay): the probe gives up (it returns while the loop is
        // still held, so it did not wait for the loop).
        let release = DispatchSemaphore(value: 0)
        loop.execute { release.wait() }
        #expect(await EventLoopProbe.answers(loop, within: .milliseconds(200)) == false)
        release.signal()
        #expect(await EventLoopProbe.answers(loop, within: .seconds(2)))
        try await group.shutdownGracefully()
    }
}

/// A store check that hangs (on the probe's own thread) until released.
final class HangingStore: Sendable {
    let hangs = Mutex(true)
    let calls = Mutex(0)
    let release = DispatchSemaphore(value: 0)

    func check() {
        calls.withLock { $0 += 1 }
        if hangs.withLock({ $0 }) { release.wait() }
    }
}
