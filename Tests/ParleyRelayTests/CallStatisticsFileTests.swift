import Foundation
import ParleyTestLanes
import Testing

@testable import ParleyEngine

/// The `--stats-file` document and the bot's `--stats` line: exact bytes, names that need escaping read back
/// exactly, extra fields, atomic replacement, and clear errors naming the path.
@Suite(.lane(.timing))
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

    func text(_ report: CallStatisticsReport) throws -> String {
        String(decoding: try report.encoded(), as: UTF8.self)
    }

    @Test func theFileHasEveryCounterUnderItsKeySorted() throws {
        let report = CallStatisticsReport(sample(peerName: "bob"), time: 1.5, extra: ["screenDraws": 88])
        #expect(
            try text(report) == """
                {"activeVideoLayers":[],"audioBytesSent":12000,"audioPacketsSent":150,"audioPlannedLossPercent":6,\
                "chatLinesReceived":0,"chatLinesSent":0,"chatLinesWaiting":0,\
                "encryption":"AES-256-GCM","keyframeRequestsReceived":1,"localID":3,"mediaBound":true,"mediaPath":"udp",\
                "mediaSocketReopens":0,\
                "microphoneBlockGaps":0,"microphoneLongestBlockGapMs":0,\
                "microphoneOverruns":0,"peers":[{"audioArrivalGaps":0,"audioCorrectionPPM":0,"audioDelayMs":0,"audioDiscarded":0,\
                "audioDropouts":0,"audioHeld":0,"audioLate":0,"audioLateKept":0,"audioPackets":149,"audioPlayed":148,"audioTargetMs":0,\
                "concealments":2,"decodeErrors":0,"decryptFailures":5,\
                "fecRecoveries":1,"framesDecoded":89,"id":7,"keyframeRequestsSent":4,\
                "longestAudioArrivalGapMs":0,"longestAudioGapMs":0,\
                "nacksSent":3,"name":"bob",\
                "videoBytes":119000,"videoFreezes":0,"videoFrozenMs":0,"videoPackets":298}],"screenDraws":88,"signalingRejoins":0,"speakerDeviceUnderruns":0,\
                "speakerDropped":0,"speakerUnderruns":0,\
                "time":1.5,"videoBytesSent":120000,"videoFramesCaptured":0,"videoFramesDroppedBusy":0,"videoFramesSent":90,\
                "videoKeyframesSent":2,\
                "videoPacketsSent":300,"videoTargetKbps":0}
                """)
    }

    @Test func anUnencryptedCallWritesEncryptionAsNull() throws {
        var stats = sample(peerName: "bob")
        stats.encryption = nil
        let report = CallStatisticsReport(stats, time: 0)
        #expect(try text(report).contains(#""encryption":null"#))
        #expect(try JSONDecoder().decode(CallStatisticsReport.self, from: report.encoded()).encryption == nil)
    }

    @Test(
        "names are escaped and read back exactly",
        arguments: [
            ("quote and backslash", #"a"b\c"#, #""name":"a\"b\\c""#),
            ("control character", "a\u{1}b", #""name":"a\u0001b""#),
            ("slash kept", "a/b", #""name":"a/b""#),
            ("non-ASCII kept", "zoë", #""name":"zoë""#),
        ])
    func escaping(_ label: String, _ name: String, _ expected: String) throws {
        let report = CallStatisticsReport(sample(peerName: name), time: 1_795_576_081.25, extra: ["screenDraws": 4])
        let encoded = try report.encoded()
        #expect(String(decoding: encoded, as: UTF8.self).contains(expected), "\(label)")
        let decoded = try JSONDecoder().decode(CallStatisticsReport.self, from: encoded)
        #expect(decoded == report, "\(label)")
        #expect(decoded.peers.map(\.name) == [name], "\(label)")
    }

    @Test func extraFieldsNeverReplaceACounter() throws {
        let report = CallStatisticsReport(sample(peerName: "bob"), time: 2, extra: ["time": 12345, "localID": 12345])
        let encoded = try text(report)
        #expect(encoded.contains(#""time":2,"#) && encoded.contains(#""localID":3,"#), "\(encoded)")
        #expect(!encoded.contains("12345"), "\(encoded)")
    }

    @Test func aReaderKeepsUnknownIntegersAsExtraAndSkipsOtherNewFields() throws {
        let written = try text(CallStatisticsReport(sample(peerName: "bob"), time: 2))
        let newer = written.dropLast() + #","screenDraws":12,"renderer":"sixel"}"#
        let decoded = try JSONDecoder().decode(CallStatisticsReport.self, from: Data(newer.utf8))
        #expect(decoded.extra == ["screenDraws": 12])
        #expect(decoded.peers.first?.name == "bob")
    }

    @Test func writeReplacesTheFileWithOneLineAndLeavesNothingBeside() throws {
        let folder = NSTemporaryDirectory() + "parley-stats-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let file = CallStatisticsFile(path: folder + "/stats.json")
        try file.write(sample(peerName: "first"))
        try file.write(sample(peerName: #"se"c\ond"#), extra: ["screenDraws": 3])
        let text = try String(contentsOfFile: file.path, encoding: .utf8)
        #expect(text.hasSuffix("}\n"))
        #expect(text.split(separator: "\n").count == 1)
        let report = try file.read()
        #expect(report.peers.map(\.name) == [#"se"c\ond"#])
        #expect(report.extra == ["screenDraws": 3])
        #expect(abs(report.time - Date().timeIntervalSince1970) < 60, "time is the wall clock: \(report.time)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder) == ["stats.json"])
    }

    @Test func aMissingFolderIsNamedInTheError() {
        let file = CallStatisticsFile(path: "/nonexistent-parley-folder/stats.json")
        #expect {
            try file.write(CallStatistics())
        } throws: { error in
            "\(error)" == "cannot write the statistics file \(file.path): No such file or directory"
        }
        #expect {
            try file.read()
        } throws: { error in
            "\(error)" == "cannot read the statistics file \(file.path): No such file or directory"
        }
    }

    @Test func aFileThatIsNotAReportIsNamedInTheError() throws {
        let path = NSTemporaryDirectory() + "parley-stats-\(UUID().uuidString).json"
        try Data(#"{"time":1}"#.utf8).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect {
            try CallStatisticsFile(path: path).read()
        } throws: { error in
            "\(error)".hasPrefix("the statistics file \(path) is not a statistics report: ")
        }
    }

    @Test func theBotSummaryHasItsKeysAndReadsBackANameWithQuoteAndBackslash() throws {
        var stats = sample(peerName: #"b"o\b"#)
        stats.peers[7]?.lastStamp = (participant: 7, frame: 41)
        let summary = CallStatisticsSummary(stats)
        let encoded = try summary.encoded()
        #expect(
            String(decoding: encoded, as: UTF8.self) == #"""
                {"audioPacketsSent":150,"localID":3,"peers":[{"audioPackets":149,"audioPlayed":148,"framesDecoded":89,\#
                "id":7,"name":"b\"o\\b","stampFrame":41,"stampParticipant":7,"videoPackets":298}],"videoFramesSent":90}
                """#)
        let decoded = try JSONDecoder().decode(CallStatisticsSummary.self, from: encoded)
        #expect(decoded == summary)
        #expect(decoded.peers.map(\.name) == [#"b"o\b"#])
    }
}
