import ParleyTestLanes
import ParleyWire
import Testing

@testable import ParleyRelay

/// Recording in the relay's state: everyone is told who records, the host (or the rooms file) may forbid it, a
/// joiner learns both, and a recorder who leaves is no longer listed.
@Suite(.lane(.timing))
struct RecordingRelayTests {
    func relay(rooms: [String: ConfiguredRoom] = [:]) -> Harness {
        var harness = Harness()
        harness.state = RelayState(
            limits: SignalingLimits(livenessTimeout: .seconds(10), burst: 100, messagesPerSecond: 100),
            udpPort: 7878, roomRule: { .success($0) }, nameRule: { .success($0) }, random: SeededRandom(state: 3),
            configuredRooms: rooms, wallClock: { 0 })
        return harness
    }

    @Test func startingAndStoppingTellsEveryoneTheRecorderIncluded() {
        var relay = relay()
        let a = relay.connect(1)
        let b = relay.connect(2)
        let alice = relay.join("alice", on: a)
        _ = relay.join("bob", on: b)
        let started = relay.send(.recording(RecordingChange(recording: true)), on: b)
        let notice = ServerMessage.recording(RecordingNotice(id: alice + 1, name: "bob", recording: true))
        #expect(messages(to: a, in: started) == [notice])
        #expect(messages(to: b, in: started) == [notice])
        #expect(relay.state.rooms["standup"]?.recorders == [alice + 1])
        let stopped = relay.send(.recording(RecordingChange(recording: false)), on: b)
        #expect(
            messages(to: a, in: stopped) == [.recording(RecordingNotice(id: alice + 1, name: "bob", recording: false))])
        #expect(relay.state.rooms["standup"]?.recorders == [])
    }

    @Test func anEncryptedRoomsNoticeSaysItIsTheMembersDecryptedView() {
        var relay = relay()
        let a = relay.connect(1)
        let actions = relay.send(.join(JoinRequest(room: "secret", name: "alice", encryption: "AES-128-GCM")), on: a)
        let id = joinedAnswer(to: a, in: actions)?.you.id ?? 0
        let started = relay.send(.recording(RecordingChange(recording: true)), on: a)
        #expect(
            messages(to: a, in: started)
                == [.recording(RecordingNotice(id: id, name: "alice", recording: true, encrypted: true))])
    }

    @Test func theHostForbidsAndEveryoneIsToldThenRecordingIsRefused() {
        var relay = relay()
        let a = relay.connect(1)
        let b = relay.connect(2)
        _ = relay.join("alice", on: a)
        _ = relay.join("bob", on: b)
        // Only the host decides.
        let notHost = relay.send(.recordingPolicy(RecordingPolicy(allowed: false)), on: b)
        #expect(
            errorAnswer(to: b, in: notHost)
                == SignalingError(.notAllowed, "only the room's host can allow or forbid recording"))
        let forbidden = relay.send(.recordingPolicy(RecordingPolicy(allowed: false)), on: a)
        let policy = ServerMessage.recordingPolicy(RecordingPolicy(allowed: false, by: "alice"))
        #expect(messages(to: a, in: forbidden) == [policy])
        #expect(messages(to: b, in: forbidden) == [policy])
        let refused = relay.send(.recording(RecordingChange(recording: true)), on: b)
        #expect(
            errorAnswer(to: b, in: refused)
                == SignalingError(.notAllowed, "recording is not allowed in standup: alice forbade it"))
        #expect(messages(to: a, in: refused).isEmpty)
        // A joiner learns the rule in its `joined`.
        let c = relay.connect(3)
        let joined = joinedAnswer(to: c, in: relay.send(.join(JoinRequest(room: "standup", name: "carol")), on: c))
        #expect(joined?.recordingForbidden == "alice forbade it")
        // And the host allows it again.
        let allowed = relay.send(.recordingPolicy(RecordingPolicy(allowed: true)), on: a)
        #expect(messages(to: b, in: allowed) == [.recordingPolicy(RecordingPolicy(allowed: true, by: "alice"))])
        let accepted = relay.send(.recording(RecordingChange(recording: true)), on: b)
        #expect(messages(to: c, in: accepted).count == 1)
    }

    @Test func theRoomsFileForbidsAndTheHostCannotLiftIt() {
        var relay = relay(rooms: ["board": ConfiguredRoom(recording: false)])
        let a = relay.connect(1)
        let joined = joinedAnswer(to: a, in: relay.send(.join(JoinRequest(room: "board", name: "alice")), on: a))
        #expect(joined?.recordingForbidden == "the relay's rooms file forbids it")
        let refusal = SignalingError(
            .notAllowed, "recording is not allowed in board: the relay's rooms file forbids it")
        #expect(errorAnswer(to: a, in: relay.send(.recording(RecordingChange(recording: true)), on: a)) == refusal)
        #expect(
            errorAnswer(to: a, in: relay.send(.recordingPolicy(RecordingPolicy(allowed: true)), on: a)) == refusal)
    }

    @Test func aJoinerLearnsWhoRecordsAndARecorderWhoLeavesIsForgotten() {
        var relay = relay()
        let a = relay.connect(1)
        let b = relay.connect(2)
        let alice = relay.join("alice", on: a)
        _ = relay.send(.recording(RecordingChange(recording: true)), on: a)
        let joined = joinedAnswer(to: b, in: relay.send(.join(JoinRequest(room: "standup", name: "bob")), on: b))
        #expect(joined?.recorders == [alice])
        #expect(joined?.recordingForbidden == nil)
        _ = relay.send(.leave, on: a)
        #expect(relay.state.rooms["standup"]?.recorders == [])
    }
}
