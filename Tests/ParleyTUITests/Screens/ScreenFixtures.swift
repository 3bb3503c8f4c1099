import Foundation
import ParleyMedia
import ParleyRoom
import Testing

@testable import ParleyPictures
@testable import ParleyTUI

/// Golden screens: the characters of a rendered screen compared with a text file next to this source file.
/// `PARLEY_RECORD_GOLDEN=1` writes the files instead of comparing.
enum Golden {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Golden")

    static var isRecording: Bool { ProcessInfo.processInfo.environment["PARLEY_RECORD_GOLDEN"] == "1" }

    static func check(_ screen: Screen, _ name: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let file = directory.appendingPathComponent(name + ".txt")
        let actual = screen.text + "\n"
        if isRecording {
            do {
                try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
                try actual.write(to: file, atomically: true, encoding: .utf8)
            } catch {
                Issue.record("could not write golden \(file.path): \(error)", sourceLocation: sourceLocation)
            }
            return
        }
        guard let expected = try? String(contentsOf: file, encoding: .utf8) else {
            let message =
                "golden screen \(file.path) is missing; record it with "
                + "PARLEY_RECORD_GOLDEN=1 swift test --filter ParleyTUITests, then review and commit it"
            Issue.record(Comment(rawValue: message), sourceLocation: sourceLocation)
            return
        }
        guard expected != actual else { return }
        let expectedRows = expected.split(separator: "\n", omittingEmptySubsequences: false)
        let actualRows = actual.split(separator: "\n", omittingEmptySubsequences: false)
        let common = min(expectedRows.count, actualRows.count)
        let row = (0..<common).first { expectedRows[$0] != actualRows[$0] } ?? common
        let wanted = row < expectedRows.count ? String(expectedRows[row]) : "<no row>"
        let got = row < actualRows.count ? String(actualRows[row]) : "<no row>"
        let message =
            "screen differs from golden \(name).txt at row \(row):\n  expected: \(wanted)\n  actual:   \(got)\n"
            + "whole screen:\n\(actual)(re-record with PARLEY_RECORD_GOLDEN=1 if the change is intended)"
        Issue.record(Comment(rawValue: message), sourceLocation: sourceLocation)
    }
}

/// I420 frames built for the screen tests (the video renderer's own tests have theirs).
enum ScreenFrames {
    /// A 16:9 frame: luma rising left to right, chroma set per `tint` so participants look different.
    static func gradient(tint: Int, width: Int = 64, height: Int = 36) -> VideoFrame {
        var y = [UInt8](repeating: 0, count: width * height)
        for row in 0..<height {
            for column in 0..<width {
                y[row * width + column] = UInt8(16 + (219 * column) / max(1, width - 1))
            }
        }
        let chroma = ((width + 1) / 2) * ((height + 1) / 2)
        let u = UInt8(truncatingIfNeeded: 64 + 40 * (tint % 4))
        let v = UInt8(truncatingIfNeeded: 200 - 30 * (tint % 5))
        return VideoFrame(
            width: width, height: height, y: y, u: [UInt8](repeating: u, count: chroma),
            v: [UInt8](repeating: v, count: chroma))
    }

    /// A frame of one colour.
    static func solid(y: UInt8, u: UInt8 = 128, v: UInt8 = 128, width: Int = 64, height: Int = 36) -> VideoFrame {
        VideoFrame(width: width, height: height, fillY: y, fillU: u, fillV: v)
    }
}

/// Builds room states the way a call does: through the reducer, with the engine's events and the user's keys.
struct RoomFixture {
    var state: RoomState
    var frames: [ParticipantID: VideoFrame] = [:]
    var now: Duration = .zero
    private var nextID: UInt32 = 2

    static let localID = ParticipantID(1)
    static let small = TerminalSize(columns: 80, rows: 24)
    static let large = TerminalSize(columns: 160, rows: 48)

    /// Joined as alice in "standup", camera on with a first frame.
    init(room: String = "standup", local: String = "alice", role: Role = .broadcaster, cameraOn: Bool = true) {
        state = RoomState(roomName: room, localName: local, role: role, cameraEnabled: cameraOn)
        send(.event(.joined(localID: Self.localID)))
        if cameraOn && role == .broadcaster {
            send(.event(.firstLocalFrame(VideoSize(width: 64, height: 36))))
            frames[Self.localID] = ScreenFrames.gradient(tint: 0)
        }
    }

    @discardableResult
    mutating func send(_ input: RoomInput) -> [RoomEffect] {
        reduce(&state, input)
    }

    /// A key at the current time.
    @discardableResult
    mutating func press(_ key: Key) -> [RoomEffect] {
        send(.key(key, at: now))
    }

    /// Moves the clock to `seconds` after the start (drives the call timer).
    mutating func advance(to seconds: Int) {
        now = .seconds(seconds)
        send(.tick(now))
    }

    enum Video { case live, off, waiting }

    /// A broadcasting peer; `.live` delivers a first frame, `.off` mutes their camera, `.waiting` sends nothing.
    @discardableResult
    mutating func addPeer(_ name: String, video: Video = .live, muted: Bool = false) -> ParticipantID {
        let id = ParticipantID(nextID)
        nextID += 1
        send(.event(.userJoined(id, name: name, role: .broadcaster)))
        switch video {
        case .live:
            send(.event(.firstRemoteFrame(id, size: VideoSize(width: 64, height: 36))))
            frames[id] = ScreenFrames.gradient(tint: Int(id.rawValue))
        case .off:
            send(.event(.remoteVideoMuted(id, true)))
        case .waiting:
            break
        }
        if muted { send(.event(.remoteAudioMuted(id, true))) }
        return id
    }

    /// Tells the reducer where the video goes at `size`, as the shell does.
    mutating func fit(_ size: TerminalSize) {
        send(.container(RoomScreenLayout(size: size, state: state).video))
        send(.screen(columns: size.columns, rows: size.rows))
    }

    /// Renders at `size` after reporting the container for it.
    mutating func render(_ size: TerminalSize, theme: Theme = Theme(depth: .palette256)) -> Screen {
        fit(size)
        return RoomScreen.render(state: state, frames: frames, size: size, theme: theme)
    }

    /// A room with `peerCount` peers with live video, the first peer speaking.
    static func withPeers(_ names: [String]) -> RoomFixture {
        var fixture = RoomFixture()
        for name in names { fixture.addPeer(name) }
        fixture.advance(to: 125)
        return fixture
    }
}

extension Screen {
    /// The rows whose text contains `text`.
    func rows(containing text: String) -> [Int] {
        (0..<height).filter { self.text(row: $0).contains(text) }
    }

    /// How many times `text` appears on the screen, row by row.
    func occurrences(of text: String) -> Int {
        (0..<height).reduce(0) { count, row in
            count + self.text(row: row).split(separator: text, omittingEmptySubsequences: false).count - 1
        }
    }

    /// The column where `text` starts on `row` (counting cells, wide characters as two), if it is there.
    func column(of text: String, row: Int) -> Int? {
        let target = Array(text)
        var characters: [Character] = []
        var columns: [Int] = []
        for column in 0..<width where !self[column, row].isContinuation {
            characters.append(self[column, row].character)
            columns.append(column)
        }
        guard target.count <= characters.count else { return nil }
        for start in 0...(characters.count - target.count)
        where Array(characters[start..<(start + target.count)]) == target {
            return columns[start]
        }
        return nil
    }
}
