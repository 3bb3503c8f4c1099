// Where Parley's mouth-to-ear milliseconds go, from what the two clients' `--stats-file`s say. Pure: the documents are
// decoded here and turned into table rows; reading the files is the caller's.
import Foundation
import ParleyEngine
import ParleyWire

/// The part of a `--stats-file` document the breakdown reads: the listener's concealments and speaker underruns, and
/// every number whose name ends in `Ms` (a device latency, a jitter-buffer delay), at the top level or per remote
/// member, whatever the writer calls it. Fields a writer does not have yet are simply absent.
struct LatencyFields: Decodable, Equatable {
    /// One remote member's part.
    struct Peer: Decodable, Equatable {
        var name: String
        var concealments: Int
        var audioPlayed: Int
        /// Every numeric `…Ms` field of this member, by name.
        var milliseconds: [String: Double]

        init(name: String, concealments: Int, audioPlayed: Int, milliseconds: [String: Double] = [:]) {
            self.name = name
            self.concealments = concealments
            self.audioPlayed = audioPlayed
            self.milliseconds = milliseconds
        }

        init(from decoder: any Decoder) throws {
            let fields = try decoder.container(keyedBy: AnyKey.self)
            name = try fields.decode(String.self, forKey: AnyKey("name"))
            concealments = try fields.decode(Int.self, forKey: AnyKey("concealments"))
            audioPlayed = try fields.decode(Int.self, forKey: AnyKey("audioPlayed"))
            milliseconds = LatencyFields.milliseconds(in: fields)
        }
    }

    var time: Double
    var speakerUnderruns: Int
    var speakerDropped: Int
    var peers: [Peer]
    /// Every numeric top-level `…Ms` field, by name.
    var milliseconds: [String: Double]

    init(
        time: Double, speakerUnderruns: Int = 0, speakerDropped: Int = 0, peers: [Peer] = [],
        milliseconds: [String: Double] = [:]
    ) {
        self.time = time
        self.speakerUnderruns = speakerUnderruns
        self.speakerDropped = speakerDropped
        self.peers = peers
        self.milliseconds = milliseconds
    }

    init(from decoder: any Decoder) throws {
        let fields = try decoder.container(keyedBy: AnyKey.self)
        time = try fields.decode(Double.self, forKey: AnyKey("time"))
        speakerUnderruns = try fields.decode(Int.self, forKey: AnyKey("speakerUnderruns"))
        speakerDropped = try fields.decode(Int.self, forKey: AnyKey("speakerDropped"))
        peers = try fields.decode([Peer].self, forKey: AnyKey("peers"))
        milliseconds = Self.milliseconds(in: fields)
    }

    /// The statistics file at `path` now, or a message saying why not.
    static func read(path: String) throws -> LatencyFields {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw CallBenchError.unexpected("cannot read the statistics file \(path): \(error.localizedDescription)")
        }
        do {
            return try JSONDecoder().decode(LatencyFields.self, from: data)
        } catch {
            throw CallBenchError.unexpected("the statistics file \(path) is not a statistics report: \(error)")
        }
    }

    /// The member called `name`.
    func peer(_ name: String) -> Peer? { peers.first { $0.name == name } }

    fileprivate static func milliseconds(in fields: KeyedDecodingContainer<AnyKey>) -> [String: Double] {
        var found: [String: Double] = [:]
        for key in fields.allKeys where key.stringValue.hasSuffix("Ms") {
            if let value = try? fields.decode(Double.self, forKey: key), value.isFinite {
                found[key.stringValue] = value
            }
        }
        return found
    }

    fileprivate struct AnyKey: CodingKey {
        let stringValue: String
        var intValue: Int? { nil }
        init(_ name: String) { stringValue = name }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }
}

/// Parley's p50 split into the stages of its path, each from the clients' own statistics when they report it
/// (names like `microphoneLatencyMs`), from the code's fixed sizes where the size is the delay (the 20 ms Opus
/// frame), and the rest as the remainder, so the rows always add up to the measured p50.
struct MouthToEarBreakdown: Equatable {
    /// One stage: its name, its milliseconds (nil when nobody reports it) and where the figure comes from.
    struct Stage: Equatable {
        var name: String
        var milliseconds: Double?
        var source: String
    }

    /// The stages in path order, then the remainder.
    var stages: [Stage]
    /// `…Ms` fields the clients report that no stage reads, "listener: name = value", shown so nothing is hidden.
    var otherFields: [String]

    /// Names each stage reads, first present wins: the talker's capture buffer, the listener's jitter buffer
    /// (per member or overall), the listener's play-out buffer, and the network and relay.
    static let captureNames = ["microphoneLatencyMs", "captureLatencyMs", "inputLatencyMs"]
    static let jitterNames = [
        "audioDelayMs", "jitterBufferMs", "jitterBufferDelayMs", "jitterDelayMs", "playoutDelayMs",
    ]
    static let playoutNames = ["speakerLatencyMs", "playoutBufferMs", "outputLatencyMs"]
    static let networkNames = ["networkDelayMs", "networkLatencyMs", "oneWayDelayMs"]
    static let roundTripNames = ["roundTripMs", "roundTripTimeMs", "rttMs"]

    /// The breakdown of `p50` milliseconds from the talker's and the listener's statistics (the listener's entry for
    /// `talkerName` holds per-member fields), and where they say nothing of a device buffer, from the sound server's
    /// queue for the talker's recording stream or the listener's playing stream; the frame is Opus's 20 ms.
    init(
        p50: Double, talker: LatencyFields?, listener: LatencyFields?, talkerName: String,
        serverRecordingMs: Double? = nil, serverPlayingMs: Double? = nil,
        frameMilliseconds: Double = PeerAudioPlayout.callSettings.frameDuration.milliseconds
    ) {
        let fromTalker = listener?.peer(talkerName)?.milliseconds ?? [:]
        var used: Set<String> = []
        func first(_ names: [String], in fields: [String: Double]?, who: String) -> (Double, String)? {
            for name in names {
                if let value = fields?[name] {
                    used.insert("\(who): \(name)")
                    return (value, "\(who)'s `\(name)`")
                }
            }
            return nil
        }
        func stage(_ name: String, _ found: (Double, String)?, otherwise: String) -> Stage {
            Stage(name: name, milliseconds: found?.0, source: found?.1 ?? otherwise)
        }
        let configured = PeerAudioPlayout.callSettings
        let serverQueue =
            "only the sound server's queue for the talker's recording stream (pactl); the fragment the client "
            + "waits for and its own buffers (PortAudio, the ALSA plug-in) are in the remainder"
        var stages = [
            stage(
                "capture buffer (talker's microphone)",
                first(Self.captureNames, in: talker?.milliseconds, who: "talker")
                    ?? serverRecordingMs.map { ($0, serverQueue) },
                otherwise: "not reported by the talker's statistics yet: in the remainder"),
            Stage(
                name: "packetisation (one Opus frame)", milliseconds: frameMilliseconds,
                source: "the frame's length: its first sample waits for the last before encoding"),
        ]
        var network = first(Self.networkNames, in: listener?.milliseconds, who: "listener")
        if network == nil, let trip = first(Self.roundTripNames, in: listener?.milliseconds, who: "listener") {
            network = (trip.0 / 2, "half the \(trip.1)")
        }
        stages.append(
            stage(
                "network and relay (loopback)", network,
                otherwise: "not reported: in the remainder (loopback and the relay's forwarding, see Relay)"))
        let jitter =
            first(Self.jitterNames, in: fromTalker, who: "listener (for the talker)")
            ?? first(Self.jitterNames, in: listener?.milliseconds, who: "listener")
        stages.append(
            stage(
                "jitter buffer", jitter,
                otherwise: "not reported: in the remainder (its target starts at "
                    + "\(Self.text(configured.targetDelay.milliseconds)) ms and adapts within "
                    + "\(Self.text(configured.minimumDelay.milliseconds))–"
                    + "\(Self.text(configured.maximumDelay.milliseconds)) ms)"))
        stages.append(
            stage(
                "play-out buffer (listener's speaker)",
                first(Self.playoutNames, in: listener?.milliseconds, who: "listener")
                    ?? serverPlayingMs.map {
                        (
                            $0,
                            "only the sound server's queue for the listener's playing stream (pactl); what the "
                                + "client buffers itself before writing (its play-out queue, PortAudio) is in the "
                                + "remainder"
                        )
                    },
                otherwise: "not reported by the listener's statistics yet: in the remainder"))
        let known = stages.compactMap(\.milliseconds).reduce(0, +)
        stages.append(
            Stage(
                name: "remainder", milliseconds: p50 - known,
                source: "p50 minus the rows above: encoding and decoding, the mix, the sound server's own "
                    + "transfers and whatever is not reported"))
        self.stages = stages
        var others: [String] = []
        for (who, fields) in [("talker", talker?.milliseconds ?? [:]), ("listener", listener?.milliseconds ?? [:])] {
            for (name, value) in fields.sorted(by: { $0.key < $1.key }) where !used.contains("\(who): \(name)") {
                others.append("\(who): \(name) = \(Self.text(value))")
            }
        }
        for (name, value) in fromTalker.sorted(by: { $0.key < $1.key })
        where !used.contains("listener (for the talker): \(name)") {
            others.append("listener (for the talker): \(name) = \(Self.text(value))")
        }
        otherFields = others
    }

    /// The rows of the breakdown table: stage, milliseconds ("n/a" when not reported), source.
    var rows: [[String]] {
        stages.map { [$0.name, $0.milliseconds.map { formatted($0, decimals: 1) } ?? "n/a", $0.source] }
    }

    private static func text(_ value: Double) -> String { formatted(value, decimals: value.rounded() == value ? 0 : 1) }
}
