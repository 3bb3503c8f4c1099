/// What every section's benchmarks are given: the `parley` binary they start, where progress goes, and the options
/// of the command line that some of them read.
public struct BenchContext: Sendable {
    /// Absolute path of the `parley` binary the relay, load, messaging, cluster, call and broadcast benchmarks start.
    public var parley: String
    /// Progress lines (stderr in `parley-bench`).
    public var log: @Sendable (String) -> Void
    /// With `render`/`picture`: a folder for PNGs of one frame in every picture mode.
    public var pictures: String?
    /// With `mouth-to-ear`: clicks per path, one a second.
    public var seconds: Int?

    public init(
        parley: String, log: @escaping @Sendable (String) -> Void, pictures: String? = nil, seconds: Int? = nil
    ) {
        self.parley = parley
        self.log = log
        self.pictures = pictures
        self.seconds = seconds
    }
}

/// A benchmark that could not run, said in one line.
public struct BenchFailure: Error, CustomStringConvertible {
    public var description: String

    public init(_ description: String) { self.description = description }
}

extension BenchSection {
    /// Sections whose benchmarks start the `parley` binary.
    public var startsParley: Bool {
        switch self {
        case .relay, .load, .messaging, .cluster, .encryption, .call, .broadcast, .mouthToEar, .network, .share,
            .firstRun, .browser:
            true
        case .codecs, .wire, .latency, .picture, .render, .echo, .simulcast: false
        }
    }

    /// Runs this section's benchmarks and returns their tables: the one shape every benchmark is reached through.
    public func measure(_ context: BenchContext) async throws -> [BenchTable] {
        let log = context.log
        switch self {
        case .codecs:
            return try CodecBench.run(log: log)
        case .wire:
            return [WireBench.run()]
        case .relay:
            return [try RelayBench.run(executable: context.parley, log: log)]
        case .load:
            return try LoadBench.run(executable: context.parley, log: log)
        case .messaging:
            return try await MessagingBench.run(executable: context.parley, log: log)
        case .cluster:
            return try await ClusterBench.run(executable: context.parley, log: log)
        case .latency:
            return [try await LatencyBench.run(log: log)]
        case .picture:
            let quality = try RenderQualityBench.run(pictures: context.pictures, progress: log)
            return [quality, try PixelRenderBench.run(progress: log)]
        case .render:
            return try RenderBench.run(progress: log)
        case .echo:
            return try EchoBench.run(log: log) + [try await CallEchoBench.run(log: log)]
        case .encryption:
            return try Self.naming("encryption") {
                try EncryptionBench.run(CallBench.Settings.fromEnvironment(parleyPath: context.parley), log: log)
            }
        case .simulcast:
            return [try SimulcastQualityBench.run(log: log)]
        case .call:
            return try Self.naming("call") {
                try CallBench.run(CallBench.Settings.fromEnvironment(parleyPath: context.parley), log: log)
            }
        case .mouthToEar:
            return try Self.naming("mouth-to-ear") {
                try MouthToEarBench.run(
                    MouthToEarBench.Settings(parleyPath: context.parley, seconds: context.seconds ?? 60), log: log)
            }
        case .network:
            return try await NetworkBench.run(parley: context.parley, log: log)
        case .share:
            return try await ShareBench.run(parley: context.parley, log: log)
        case .browser:
            return try await BrowserMemberBench.run(parley: context.parley, log: log)
        case .firstRun:
            return try FirstRunBench.run(parley: context.parley, log: log)
        case .broadcast:
            return try Self.naming("broadcast") {
                try BroadcastBench.run(BroadcastBench.Settings.fromEnvironment(parleyPath: context.parley), log: log)
            }
        }
    }

    /// A call-style benchmark's failure said with the benchmark's name.
    private static func naming(_ name: String, _ body: () throws -> [BenchTable]) throws -> [BenchTable] {
        do {
            return try body()
        } catch let error as CallBenchError {
            throw BenchFailure("\(name) benchmark: \(error)")
        }
    }
}
