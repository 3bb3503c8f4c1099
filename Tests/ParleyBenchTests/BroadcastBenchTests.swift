import Foundation
import Testing

@testable import ParleyBench

/// The broadcast benchmark's settings and the broadcaster statistics it reads.
struct BroadcastBenchTests {
    static func message(_ body: () throws -> Void) -> String {
        do {
            try body()
            return ""
        } catch {
            return "\(error)"
        }
    }

    @Test(
        "audience sizes",
        arguments: [
            ("0,1,10,25,50", [0, 1, 10, 25, 50]),
            ("0, 5", [0, 5]),
            ("0,200", [0, 200]),
        ])
    func audiences(text: String, expected: [Int]) throws {
        #expect(try BroadcastBench.Settings.audiences(parsing: text) == expected)
    }

    @Test(
        "bad audience sizes",
        arguments: [
            ("0,10,10", "PARLEY_BROADCAST_BENCH_VIEWERS=0,10,10: counts must go up (10 after 10)"),
            ("0,x", "PARLEY_BROADCAST_BENCH_VIEWERS=0,x: \"x\" is not a viewer count in 0…200"),
            ("0,201", "PARLEY_BROADCAST_BENCH_VIEWERS=0,201: \"201\" is not a viewer count in 0…200"),
            ("0,,5", "PARLEY_BROADCAST_BENCH_VIEWERS=0,,5: \"\" is not a viewer count in 0…200"),
            ("1,10", "PARLEY_BROADCAST_BENCH_VIEWERS=1,10: start at 0 and give at least one more count, e.g. 0,10,50"),
            ("0", "PARLEY_BROADCAST_BENCH_VIEWERS=0: start at 0 and give at least one more count, e.g. 0,10,50"),
        ])
    func badAudiences(text: String, expected: String) {
        #expect(Self.message { _ = try BroadcastBench.Settings.audiences(parsing: text) } == expected)
    }

    @Test func settingsFromEnvironment() throws {
        let settings = try BroadcastBench.Settings.fromEnvironment(
            parleyPath: "/bin/parley",
            environment: ["PARLEY_BROADCAST_BENCH_SECONDS": "8", "PARLEY_BROADCAST_BENCH_VIEWERS": "0,3"])
        #expect(settings.seconds == 8)
        #expect(settings.audiences == [0, 3])
        let defaults = try BroadcastBench.Settings.fromEnvironment(parleyPath: "/bin/parley", environment: [:])
        #expect(defaults.audiences == [0, 1, 10, 25, 50])
        #expect(defaults.seconds == 15)
        #expect(
            Self.message {
                _ = try BroadcastBench.Settings.fromEnvironment(
                    parleyPath: "/bin/parley", environment: ["PARLEY_BROADCAST_BENCH_SECONDS": "2"])
            } == "PARLEY_BROADCAST_BENCH_SECONDS=2 is not a number in 5…600")
    }

    /// A statistics file as the call engine writes it (keys sorted).
    static let statisticsLine =
        #"{"activeVideoLayers":[true],"audioBytesSent":40000,"audioPacketsSent":500,"#
        + #""audioPlannedLossPercent":0,"encryption":null,"keyframeRequestsReceived":2,"localID":1,"mediaBound":true,"#
        + #""peers":[],"speakerDropped":0,"speakerUnderruns":0,"time":1795576081.5,"videoBytesSent":1250000,"#
        + #""videoFramesCaptured":310,"videoFramesSent":300,"videoKeyframesSent":1,"videoPacketsSent":900}"#

    /// `statisticsLine` with one field's text replaced.
    static func statistics(replacing field: String, with replacement: String) -> String {
        statisticsLine.replacingOccurrences(of: field, with: replacement)
    }

    @Test func broadcasterStatistics() throws {
        #expect(
            try BroadcastBench.BroadcasterStats.parse(Data(Self.statisticsLine.utf8), path: "s.json")
                == .init(
                    time: 1_795_576_081.5, mediaBound: true, videoFramesSent: 300, videoFramesCaptured: 310,
                    videoBytesSent: 1_250_000,
                    audioBytesSent: 40_000, keyframeRequestsReceived: 2))
    }

    @Test(
        "bad broadcaster statistics",
        arguments: [
            (
                BroadcastBenchTests.statistics(replacing: #""keyframeRequestsReceived":2,"#, with: ""),
                "broadcaster statistics s.json: no \"keyframeRequestsReceived\" field"
            ),
            (
                BroadcastBenchTests.statistics(
                    replacing: #""videoFramesSent":300"#, with: #""videoFramesSent":"many""#),
                "broadcaster statistics s.json: \"videoFramesSent\" has the wrong type"
            ),
        ])
    func badStatistics(json: String, expected: String) {
        #expect(
            Self.message { _ = try BroadcastBench.BroadcasterStats.parse(Data(json.utf8), path: "s.json") }
                == expected)
    }

    @Test func notJSONIsRefused() {
        #expect(
            Self.message { _ = try BroadcastBench.BroadcasterStats.parse(Data("half a fi".utf8), path: "s.json") }
                .hasPrefix("broadcaster statistics s.json is not a JSON object: "))
    }

    @Test func relayCostPerViewer() {
        let figures = { (cpu: Double) in CallBench.ProcessFigures(cpuPercent: cpu, peakMiB: 30) }
        func step(_ viewers: Int, relay: Double) -> BroadcastBench.Step {
            BroadcastBench.Step(
                viewers: viewers, broadcaster: figures(10), relay: figures(relay), audienceProcessPercent: 1,
                forwardedMbps: 0, perViewerKbps: 0, sentKbps: 1030, framesPerSecond: 30, keyframeRequests: 0)
        }
        #expect(BroadcastBench.relayPerViewer(step(50, relay: 12), baseline: step(0, relay: 2)) == 0.2)
        #expect(BroadcastBench.relayPerViewer(step(0, relay: 2), baseline: step(0, relay: 2)) == nil)
        #expect(BroadcastBench.relayPerViewer(step(10, relay: 4), baseline: step(1, relay: 2)) == nil)
    }
}
