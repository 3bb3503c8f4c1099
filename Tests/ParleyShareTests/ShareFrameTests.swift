import ParleyWire
import Testing

/// A share as it travels: updates framed for RTP (a full screen reads as a keyframe), a viewer's copy rebuilt from
/// frames and asking for a full screen when one is lost, and the member kind on the signaling wire.
@Suite("Share frames")
struct ShareFrameTests {
    static func screen(_ text: String, rows: Int = 2, columns: Int = 10) -> TerminalScreen {
        var screen = TerminalScreen(rows: rows, columns: columns)
        for (offset, letter) in text.enumerated() { screen[0, offset] = ShareCell(String(letter)) }
        return screen
    }

    @Test func aFullScreenIsFramedAsAKeyframeAndChangesAsADeltaFrame() throws {
        let first = ShareUpdate.between(nil, Self.screen("ab"), sequence: 1)
        let second = ShareUpdate.between(Self.screen("ab"), Self.screen("abc"), sequence: 2)
        let full = ShareFrame.encode(first)
        let changes = ShareFrame.encode(second)
        // VP8's keyframe test (bit 0 of the first byte after the descriptor) reads the flags byte.
        #expect(full.first == 0 && changes.first == 1)
        #expect(try ShareFrame.decode(full) == first)
        #expect(try ShareFrame.decode(changes) == second)
        var payloader = try VP8Payloader()
        #expect(VP8PayloadDescriptor.startsKeyframe(try payloader.payloads(for: full)[0]))
        #expect(!VP8PayloadDescriptor.startsKeyframe(try payloader.payloads(for: changes)[0]))
    }

    @Test(
        "a frame that is not a share update is refused by name",
        arguments: [
            ([UInt8](), "the frame's flags needs 1 bytes, 0 left"),
            ([2] + ShareUpdate.between(nil, screen("a"), sequence: 1).encoded(), "flags 2"),
            ([1] + ShareUpdate.between(nil, screen("a"), sequence: 1).encoded(), "flags 1"),
            ([0, 9], "version 9"),
        ])
    func garbageFramesAreRefused(frame: [UInt8], words: String) {
        do {
            _ = try ShareFrame.decode(frame)
            Issue.record("\(frame) was taken")
        } catch {
            #expect(error.description.contains(words), "\(error)")
        }
    }

    @Test func aViewerRebuildsTheScreenAndAsksAgainAfterALoss() {
        var viewer = ShareViewer()
        let screens = [Self.screen("a"), Self.screen("ab"), Self.screen("abc"), Self.screen("abcd")]
        var session = ShareSession()
        var frames: [[UInt8]] = []
        for (index, screen) in screens.enumerated() {
            frames.append(ShareFrame.encode(session.update(for: screen, at: Double(index) * 100)!))
        }
        // Changes before any full screen: nothing to apply them to.
        #expect(viewer.receive(frames[1]) == nil)
        #expect(viewer.receive(frames[0]) == screens[0])
        #expect(viewer.receive(frames[1]) == screens[1])
        // Update 3 lost: update 4's changes do not apply, the screen stays as it was.
        #expect(viewer.receive(frames[3]) == nil)
        #expect(viewer.screen == screens[1] && viewer.rejected == 2)
        #expect(viewer.lastError == .noBase(expected: 3, have: 2))
        // The sharer answers the request with a full screen.
        session.requestFullScreen()
        let full = session.update(for: screens[3], at: 1_000)!
        #expect(full.kind == .fullScreen)
        #expect(viewer.receive(ShareFrame.encode(full)) == screens[3])
    }

    @Test func aTerminalJoinsUnderItsSharersNameAndIsLabelledSo() throws {
        let request = JoinRequest(room: "standup", name: "alice", kind: .terminal)
        let text = ClientMessage.join(request).encoded()
        #expect(text.contains("\"kind\":\"terminal\""))
        #expect(try ClientMessage.decode(text) == .join(request))
        // A person's join says nothing of its kind: the wire is as it was.
        #expect(!ClientMessage.join(JoinRequest(room: "standup", name: "alice")).encoded().contains("kind"))
        #expect(throws: SignalingError.self) {
            try ClientMessage.decode(#"{"v":1,"type":"join","room":"r","name":"a","kind":"robot"}"#)
        }
        let ssrcs = MemberSSRCs(block: 4)
        let guest = MemberInfo(
            id: 2, name: "alice", role: .broadcaster, audioMuted: true, videoMuted: false, ssrcs: ssrcs, kind: .terminal
        )
        #expect(guest.label == "alice's terminal")
        var verified = guest
        verified.account = "alice"
        #expect(verified.label == "alice's terminal ✓")
        verified.account = "al"
        #expect(verified.label == "alice's terminal ✓al")
        // A person is stored without a kind.
        #expect(
            MemberInfo(
                id: 3, name: "bob", role: .broadcaster, audioMuted: false, videoMuted: false, ssrcs: ssrcs,
                kind: .person
            ).kind == nil)
    }
}
