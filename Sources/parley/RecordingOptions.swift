import ArgumentParser
import ParleyEngine

/// `--record FILE.webm` and `--record-tracks`, shared by `join`, the lobby and `bot`.
struct RecordingOptions: ParsableArguments {
    @Option(
        name: .customLong("record"),
        help:
            "Record the call to this .webm file from the start (an existing file is never overwritten: FILE-2.webm…)."
    )
    var record: String?

    @Flag(
        name: .customLong("record-tracks"),
        help: "Record each member's audio as its own track instead of the mix this client plays.")
    var recordTracks = false

    func validate() throws {
        if let record, !record.lowercased().hasSuffix(".webm") {
            throw ValidationError("--record must name a .webm file, got \"\(record)\"")
        }
    }

    /// The engine's recording settings.
    var settings: RecordingSettings {
        RecordingSettings(path: record, startsAtJoin: record != nil, audioPerMember: recordTracks)
    }
}
