import Foundation
import NIOHTTP1

/// The operators' endpoints on `--admin`.
public enum AdminRoute: Sendable, Equatable {
    /// `GET /metrics`: Prometheus text.
    case metrics
    /// `GET /healthz`: 200 while the node is up and its store answers, 503 with the reason otherwise.
    case health
}

/// What one request asks, from its head alone.
public enum AdminRequest: Sendable, Equatable {
    case serve(AdminRoute)
    /// A path that is not an endpoint: 404.
    case notFound
    /// An endpoint asked with another method than GET: 405.
    case methodNotAllowed

    /// Decides from the method and the target (a query string is ignored).
    public init(method: HTTPMethod, uri: String) {
        let path = uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        let route: AdminRoute? =
            switch path {
            case "/metrics": .metrics
            case "/healthz": .health
            default: nil
            }
        guard let route else {
            self = .notFound
            return
        }
        self = method == .GET ? .serve(route) : .methodNotAllowed
    }
}

/// An answer to write: status, content type and body.
public struct AdminAnswer: Sendable, Equatable {
    public var status: HTTPResponseStatus
    public var contentType: String
    public var body: [UInt8]

    /// An answer.
    public init(status: HTTPResponseStatus, contentType: String = "text/plain; charset=utf-8", body: [UInt8]) {
        self.status = status
        self.contentType = contentType
        self.body = body
    }

    /// A short plain-text answer.
    public init(status: HTTPResponseStatus, text: String) {
        self.init(status: status, body: Array((text + "\n").utf8))
    }

    /// Prometheus' text exposition format, version 0.0.4.
    public static let metricsContentType = "text/plain; version=0.0.4; charset=utf-8"

    /// `/healthz`: 200 with `{"node":"up","status":"ok","store":…}` while the relay's event loop and the store
    /// answer (or there is no store), 503 with `"status":"failing"` and the reason when one does not.
    public static func health(_ store: StoreHealth, relayLoop: RelayLoopHealth = .answering) -> AdminAnswer {
        var report: HealthReport =
            switch store {
            case .none: HealthReport(status: "ok", store: "none")
            case .reachable: HealthReport(status: "ok", store: "reachable")
            case .failed(let why):
                HealthReport(status: "failing", store: "failing", reason: "the message store failed: \(why)")
            case .timedOut(let limit):
                HealthReport(
                    status: "failing", store: "unreachable",
                    reason: "the message store did not answer within \(limit.spokenSeconds)")
            }
        if case .stuck(let limit) = relayLoop {
            report.node = "stuck"
            report.status = "failing"
            report.reason = (["the relay's event loop did not answer within \(limit.spokenSeconds)"] + [report.reason])
                .compactMap { $0 }.joined(separator: "; ")
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let body = ((try? encoder.encode(report)).map(Array.init) ?? []) + [UInt8(ascii: "\n")]
        return AdminAnswer(
            status: report.status == "ok" ? .ok : .serviceUnavailable, contentType: "application/json", body: body)
    }
}

/// Whether the relay's event loop ran a task in time (`EventLoopProbe`).
public enum RelayLoopHealth: Sendable, Equatable {
    case answering
    /// It did not answer within this long.
    case stuck(Duration)
}

/// The body of `/healthz`.
struct HealthReport: Codable, Equatable {
    /// "up", or "stuck" when the relay's event loop did not answer.
    var node = "up"
    /// "ok" or "failing".
    var status: String
    /// "none", "reachable", "failing" or "unreachable".
    var store: String
    /// Why it is failing.
    var reason: String?

    init(status: String, store: String, reason: String? = nil) {
        self.status = status
        self.store = store
        self.reason = reason
    }
}

/// One admin connection's requests, as a state machine the handler drives: it is told each part of a request and
/// answers what to do. Requests arrive one at a time (NIO's pipelining handler holds the next until the answer).
public struct AdminConnectionState: Sendable {
    /// Bytes of body a request may carry (the endpoints take none); past it the answer is 413 and the connection
    /// closes.
    public static let maximumBodyBytes = 1024

    enum Phase: Sendable, Equatable {
        case idle
        case receiving(AdminRequest, bodyBytes: Int, keepAlive: Bool)
        case answering(keepAlive: Bool)
        case closed
    }

    /// What the handler does next.
    public enum Action: Sendable, Equatable {
        case nothing
        /// Fetch the endpoint's answer, then write it.
        case serve(AdminRoute, keepAlive: Bool)
        /// Write this answer now.
        case answer(AdminAnswer, keepAlive: Bool)
    }

    var phase = Phase.idle

    /// A state for a new connection.
    public init() {}

    /// A request's head arrived.
    public mutating func head(_ head: HTTPRequestHead) -> Action {
        guard case .idle = phase else { return .nothing }
        phase = .receiving(AdminRequest(method: head.method, uri: head.uri), bodyBytes: 0, keepAlive: head.isKeepAlive)
        return .nothing
    }

    /// Body bytes arrived.
    public mutating func body(_ count: Int) -> Action {
        guard case .receiving(let request, let bytes, let keepAlive) = phase else { return .nothing }
        guard bytes + count <= Self.maximumBodyBytes else {
            phase = .closed
            return .answer(
                AdminAnswer(
                    status: .payloadTooLarge,
                    text: "a request here carries at most \(Self.maximumBodyBytes) bytes of body"),
                keepAlive: false)
        }
        phase = .receiving(request, bodyBytes: bytes + count, keepAlive: keepAlive)
        return .nothing
    }

    /// The request ended.
    public mutating func end() -> Action {
        guard case .receiving(let request, _, let keepAlive) = phase else { return .nothing }
        phase = .answering(keepAlive: keepAlive)
        switch request {
        case .serve(let route):
            return .serve(route, keepAlive: keepAlive)
        case .notFound:
            return .answer(
                AdminAnswer(status: .notFound, text: "not found: try /metrics or /healthz"), keepAlive: keepAlive)
        case .methodNotAllowed:
            return .answer(
                AdminAnswer(status: .methodNotAllowed, text: "only GET is served here"), keepAlive: keepAlive)
        }
    }

    /// The answer was written: the next request may come, unless the connection is to close.
    public mutating func answered() {
        if case .answering(let keepAlive) = phase { phase = keepAlive ? .idle : .closed }
    }
}
