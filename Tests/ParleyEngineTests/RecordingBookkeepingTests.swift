import Foundation
import Testing

@testable import ParleyEngine

/// The pure parts of recording: which tracks a file gets and where the next file goes (its timestamps:
/// RecordingTimelineTests).
struct RecordingBookkeepingTests {
    typealias Member = RecordingPlan.Member
    typealias Size = RecordingPlan.VideoSize

    struct PlanCase: Sendable, CustomTestStringConvertible {
        var name: String
        var members: [Member]
        var audioPerMember: Bool
        var tracks: [RecordingPlan.Track]
        var testDescription: String { name }
    }

    static let ana = Member(
        id: 2, name: "ana", broadcasts: true, sendsVideo: true, pictureSize: Size(width: 320, height: 240))
    static let bo = Member(id: 3, name: "bo ✓", broadcasts: true, sendsVideo: true)
    static let cy = Member(id: 4, name: "cy", broadcasts: true, sendsVideo: false)
    static let di = Member(id: 5, name: "di", broadcasts: false, sendsVideo: true)

    static let plans: [PlanCase] = [
        PlanCase(
            name: "alone: the mix and the chat", members: [], audioPerMember: false,
            tracks: [.mixedAudio(name: "Everyone (mixed)"), .chat(name: "Chat")]),
        PlanCase(
            name: "two cameras, named after their members, sized by their last picture or the standard profile",
            members: [ana, bo], audioPerMember: false,
            tracks: [
                .video(member: 2, name: "ana", size: Size(width: 320, height: 240)),
                .video(member: 3, name: "bo ✓", size: Size(width: 640, height: 360)),
                .mixedAudio(name: "Everyone (mixed)"), .chat(name: "Chat"),
            ]),
        PlanCase(
            name: "a camera off and the audience get no video track", members: [ana, cy, di], audioPerMember: false,
            tracks: [
                .video(member: 2, name: "ana", size: Size(width: 320, height: 240)),
                .mixedAudio(name: "Everyone (mixed)"), .chat(name: "Chat"),
            ]),
        PlanCase(
            name: "--record-tracks: one audio track per broadcaster", members: [ana, cy, di], audioPerMember: true,
            tracks: [
                .video(member: 2, name: "ana", size: Size(width: 320, height: 240)),
                .memberAudio(member: 2, name: "ana"), .memberAudio(member: 4, name: "cy"), .chat(name: "Chat"),
            ]),
    ]

    @Test(arguments: plans) func plan(_ row: PlanCase) {
        #expect(RecordingPlan(members: row.members, audioPerMember: row.audioPerMember).tracks == row.tracks)
    }

    struct PathCase: Sendable, CustomTestStringConvertible {
        var configured: String?
        var existing: [String]
        var path: String
        var testDescription: String { "\(configured ?? "default") with \(existing) → \(path)" }
    }

    static let paths: [PathCase] = [
        PathCase(configured: "call.webm", existing: [], path: "call.webm"),
        PathCase(configured: "call.webm", existing: ["call.webm"], path: "call-2.webm"),
        PathCase(configured: "call.webm", existing: ["call.webm", "call-2.webm"], path: "call-3.webm"),
        PathCase(configured: "out/call.WEBM", existing: ["out/call.WEBM", "out/call-2.webm"], path: "out/call-3.webm"),
        PathCase(configured: nil, existing: [], path: "parley-stand_up-20261126-143105.webm"),
        PathCase(
            configured: nil, existing: ["parley-stand_up-20261126-143105.webm"],
            path: "parley-stand_up-20261126-143105-2.webm"),
    ]

    @Test(arguments: paths) func nextPath(_ row: PathCase) {
        let date = Date(timeIntervalSince1970: 1_795_703_465)  // 2026-11-26 14:31:05 UTC
        let path = RecordingPath.next(
            configured: row.configured, room: "stand up", date: date, exists: { row.existing.contains($0) })
        #expect(path == row.path)
    }
}
