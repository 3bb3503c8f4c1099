import Foundation
import Testing
@testable import ParleyEngine

/// The `--stats-file` JSON: exact text, escaping, atomic replacement, and a clear error for a bad path.
struct CallStatisticsFileTests {
    func sample(peerName: String) -> CallStatistics {
        var stats = CallStatistics()
        stats.localID = 3
        stats.mediaBound = true
        stats.videoFramesSent = 90
        stats.videoKeyframesSent = 2
        stats.videoPacketsSent = 300
        stats.videoBytesSent = 120_000
        stats.audioPacketsSent = 150
        stats.audioBytesSent = 12_000
        stats.audioPlannedLossPercent = 6
        stats.keyframeRequestsReceived = 1
        stats.peers[7] = CallStatistics.Peer(
            name: peerName, audioPacketsReceived: 149, videoPacketsReceived: 298, videoBytesReceived: 119_000,
            framesDecoded: 89, decodeErrors: 0, audioFramesPlayed: 148, fecRecoveries: 1, concealments: 2,
            nacksSent: 3, keyframeRequestsSent: 4, decryptFailures: 5)
        stats.encryption = "AES-256-GCM"
        return stats
    }

    @Test func jsonHasEveryCounterInAFixedOrder() {
        let json = sample(peerName: "bob").json(time: 1.5, extra: [("screenDraws", 88)])
        #expect(json == """
            {"time":1.5,"localID":3,"mediaBound":true,"videoFramesSent":90,"videoKeyframesSent":2,\
            "videoFramesCaptured":0,"activeVideoLayers":[],\
            "videoPacketsSent":300,"videoBytesSent":120000,"audioPacketsSent":150,"audioBytesSent":12000,"audioPlannedLossPercent":6,\
            "speakerUnderruns":0,"speakerDropped":0,\
            "keyframeRequestsReceived":1,"encryption":"AES-256-GCM","screenDraws":88,"peers":[{"id":7,"name":"bob",\
            "framesDecoded":89,\
            "decodeErrors":0,"videoPackets":298,"videoBytes":119000,"audioPackets":149,"audioPlayed":148,\
            "concealments":2,"fecRecoveries":1,"nacksSent":3,"keyframeRequestsSent":4,"decryptFailures":5}]}
            """)
    }

    @Test("names are escaped", arguments: [
        ("quote", "a\"b", #""name":"a\"b""#),
        ("backslash", "a\\b", #""name":"a\\b""#),
        ("control character", "a\u{1}b", #""name":"a\u0001b""#),
        ("non-ASCII kept", "zoë", #""name":"zoë""#),
    ])
    func escaping(_ label: String, _ name: String, _ expected: String) throws {
        let json = sample(peerName: name).json(time: 0)
        #expect(json.contains(expected), "\(label): \(json)")
        let parsed = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any]
        let peers = parsed?["peers"] as? [[String: Any]]
        #expect(peers?.first?["name"] as? String == name, "\(label)")
    }

    @Test func writeReplacesTheFileWithOneLine() throws {
        let folder = NSTemporaryDirectory() + "parley-stats-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let file = CallStatisticsFile(path: folder + "/stats.json")
        try file.write(sample(peerName: "first"))
        try file.write(sample(peerName: "second"))
        let text = try String(contentsOfFile: file.path, encoding: .utf8)
        #expect(text.hasSuffix("}\n"))
        #expect(text.split(separator: "\n").count == 1)
        #expect(text.contains(#""name":"second""#))
        #expect(!FileManager.default.fileExists(atPath: file.path + ".tmp"))
    }

    @Test func aMissingFolderIsNamedInTheError() {
        let file = CallStatisticsFile(path: "/nonexistent-parley-folder/stats.json")
        #expect {
            try file.write(CallStatistics())
        } throws: { error in
            "\(error)".contains("cannot write the statistics file /nonexistent-parley-folder/stats.json.tmp")
        }
    }
}
