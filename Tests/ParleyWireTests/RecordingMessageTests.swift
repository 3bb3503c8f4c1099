import Testing

@testable import ParleyWire

/// The recording messages' bad input, each refused with the words a user or developer needs.
struct RecordingMessageTests {
    struct Bad: Sendable, CustomTestStringConvertible {
        let name: String
        let text: String
        let message: String
        var testDescription: String { name }
    }

    static let badClient: [Bad] = [
        Bad(
            name: "recording without the flag", text: #"{"v":1,"type":"recording"}"#,
            message: #"recording needs field "recording""#),
        Bad(
            name: "recording as a word", text: #"{"v":1,"type":"recording","recording":"yes"}"#,
            message: #"recording field "recording" must be true or false"#),
        Bad(
            name: "policy without allowed", text: #"{"v":1,"type":"recording-policy"}"#,
            message: #"recording-policy needs field "allowed""#),
        Bad(
            name: "policy with an empty name", text: #"{"v":1,"type":"recording-policy","allowed":true,"by":""}"#,
            message: #"recording-policy field "by" must have 1 to 160 characters, not 0"#),
    ]

    static let badServer: [Bad] = [
        Bad(
            name: "notice for member 0", text: #"{"v":1,"type":"recording","id":0,"name":"a","recording":true}"#,
            message: #"recording field "id" must be a member id, not 0"#),
        Bad(
            name: "notice without a name", text: #"{"v":1,"type":"recording","id":3,"name":"","recording":true}"#,
            message: #"recording field "name" must have 1 to 160 characters, not 0"#),
        Bad(
            name: "notice with a negative id", text: #"{"v":1,"type":"recording","id":-1,"name":"a","recording":true}"#,
            message: "recording has a number out of range: ids, tokens and sizes are whole numbers, 0 or more"),
        Bad(
            name: "notice without recording", text: #"{"v":1,"type":"recording","id":3,"name":"a"}"#,
            message: #"recording needs field "recording""#),
    ]

    @Test(arguments: badClient) func clientRefuses(_ bad: Bad) {
        #expect(throws: SignalingError(.badField, bad.message)) { try ClientMessage.decode(bad.text) }
    }

    @Test(arguments: badServer) func serverRefuses(_ bad: Bad) {
        #expect(throws: SignalingError(.badField, bad.message)) { try ServerMessage.decode(bad.text) }
    }

    @Test func joinedCarriesTheRoomsRecordingState() throws {
        let ssrcs = MemberSSRCs(block: 0x1000_0004)
        let you = MemberInfo(
            id: 2, name: "bob", role: .broadcaster, audioMuted: false, videoMuted: false, ssrcs: ssrcs)
        var joined = JoinedRoom(
            room: "r", you: you, members: [],
            media: MediaGrant(udpPort: 7878, credential: "00", ssrcs: ssrcs), livenessTimeout: 10)
        joined.recordingForbidden = "alice forbade it"
        joined.recorders = [1]
        let text = ServerMessage.joined(joined).encoded()
        #expect(text.contains(#""recorders":[1]"#))
        #expect(text.contains(#""recordingForbidden":"alice forbade it""#))
        #expect(try ServerMessage.decode(text) == .joined(joined))
    }
}
