#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ParleyWire

extension CallStatistics {
    /// All counters as one line of JSON, with `extra` integer fields (e.g. screen redraws) and the wall-clock
    /// `time` in seconds, so a script reading the file twice can turn totals into rates.
    public func json(time: Double, extra: [(name: String, value: Int)] = []) -> String {
        var fields = [
            "\"time\":\(time)", "\"localID\":\(localID)", "\"mediaBound\":\(mediaBound)",
            "\"videoFramesSent\":\(videoFramesSent)", "\"videoKeyframesSent\":\(videoKeyframesSent)",
            "\"videoFramesCaptured\":\(videoFramesCaptured)",
            "\"activeVideoLayers\":[\(activeVideoLayers.map(String.init).joined(separator: ","))]",
            "\"videoPacketsSent\":\(videoPacketsSent)", "\"videoBytesSent\":\(videoBytesSent)",
            "\"audioPacketsSent\":\(audioPacketsSent)", "\"audioBytesSent\":\(audioBytesSent)",
            "\"audioPlannedLossPercent\":\(audioPlannedLossPercent)", "\"speakerUnderruns\":\(speakerUnderruns)",
            "\"speakerDropped\":\(speakerDropped)",
            "\"keyframeRequestsReceived\":\(keyframeRequestsReceived)",
            "\"encryption\":\(encryption.map(Self.quoted) ?? "null")",
        ]
        fields += extra.map { "\(Self.quoted($0.name)):\($0.value)" }
        let peerObjects = peers.sorted { $0.key < $1.key }.map { id, peer in
            """
            {"id":\(id),"name":\(Self.quoted(peer.name)),"framesDecoded":\(peer.framesDecoded),\
            "decodeErrors":\(peer.decodeErrors),"videoPackets":\(peer.videoPacketsReceived),\
            "videoBytes":\(peer.videoBytesReceived),"audioPackets":\(peer.audioPacketsReceived),\
            "audioPlayed":\(peer.audioFramesPlayed),"concealments":\(peer.concealments),\
            "fecRecoveries":\(peer.fecRecoveries),"nacksSent":\(peer.nacksSent),\
            "keyframeRequestsSent":\(peer.keyframeRequestsSent),"decryptFailures":\(peer.decryptFailures)}
            """
        }
        fields.append("\"peers\":[\(peerObjects.joined(separator: ","))]")
        return "{" + fields.joined(separator: ",") + "}"
    }

    /// A JSON string literal (quotes, backslashes and control characters escaped).
    static func quoted(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}

/// The `--stats-file` of `parley join` and `parley bot`: a file holding the latest statistics as one JSON line,
/// replaced atomically (write a sibling, then rename) so a reader never sees half a file.
public struct CallStatisticsFile: Sendable {
    /// Where the statistics go.
    public let path: String

    /// A statistics file at `path` (nothing is written until `write`).
    public init(path: String) {
        self.path = path
    }

    /// Replaces the file with `stats` (and `extra` fields); throws `CallSetupError` naming the path on failure.
    public func write(_ stats: CallStatistics, extra: [(name: String, value: Int)] = []) throws(CallSetupError) {
        let bytes = Array((stats.json(time: WallClock.seconds, extra: extra) + "\n").utf8)
        let temporary = path + ".tmp"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            throw CallSetupError("cannot write the statistics file \(temporary): \(String(cString: strerror(errno)))")
        }
        let written = writeBytes(bytes, to: descriptor)
        close(descriptor)
        guard written == bytes.count, rename(temporary, path) == 0 else {
            throw CallSetupError("cannot write the statistics file \(path): \(String(cString: strerror(errno)))")
        }
    }
}

/// `write(2)` of a whole buffer (outside the type, whose own `write` would shadow it).
private func writeBytes(_ bytes: [UInt8], to descriptor: Int32) -> Int {
    bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
}
