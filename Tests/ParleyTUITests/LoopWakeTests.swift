import Foundation
import ParleyMedia
import ParleyRoom
import ParleyTestLanes
import Testing

@testable import ParleyTUI

/// The draw loop's wake: readable after a signal, one byte however many signals, empty after a drain, and signalled
/// by what the call's pictures and events go through.
@Suite(.lane(.timing))
struct LoopWakeTests {
    /// Whether the wake's descriptor is readable right now (poll without waiting).
    static func readable(_ wake: LoopWake) -> Bool {
        var wait = pollfd(fd: wake.descriptor, events: Int16(POLLIN), revents: 0)
        return poll(&wait, 1, 0) == 1 && wait.revents & Int16(POLLIN) != 0
    }

    /// Bytes waiting in the pipe (FIONREAD).
    static func waitingBytes(_ wake: LoopWake) -> Int32 {
        var count: Int32 = 0
        _ = ioctl(wake.descriptor, UInt(FIONREAD), &count)
        return count
    }

    @Test("quiet until signalled; many signals leave one byte; a drain empties it and the next signal writes again")
    func signalAndDrain() throws {
        let wake = try #require(LoopWake())
        #expect(!Self.readable(wake))
        for _ in 0..<100 { wake.signal() }
        #expect(Self.readable(wake))
        #expect(Self.waitingBytes(wake) == 1)
        wake.drain()
        #expect(!Self.readable(wake))
        wake.signal()
        #expect(Self.readable(wake))
        wake.drain()
        #expect(!Self.readable(wake))
    }

    @Test("signals from other threads all wake a loop that drains between them")
    func threads() async throws {
        let wake = try #require(LoopWake())
        for round in 0..<50 {
            await withTaskGroup(of: Void.self) { group in
                for _ in 0..<4 { group.addTask { wake.signal() } }
            }
            #expect(Self.readable(wake), "round \(round)")
            wake.drain()
        }
    }

    @Test("a picture delivered to the frame store signals its wake")
    func frameStore() throws {
        let wake = try #require(LoopWake())
        let store = FrameStore(wake: wake)
        #expect(!Self.readable(wake))
        store.deliver(
            VideoFrame(
                width: 2, height: 2, y: [1, 2, 3, 4], u: [128], v: [128]),
            from: ParticipantID(7))
        #expect(Self.readable(wake))
        #expect(store.hasNewFrames)
    }

    @Test("an engine event reaching the inbox signals its wake, and so does the end of the events")
    func inbox() async throws {
        let wake = try #require(LoopWake())
        let inbox = EventInbox(wake: wake)
        let (events, continuation) = AsyncStream.makeStream(of: RoomEvent.self)
        let task = inbox.consume(events)
        continuation.yield(.notice("hello"))
        continuation.finish()
        await task.value
        #expect(Self.readable(wake))
        #expect(inbox.drain().count == 1)
        #expect(inbox.isFinished)
    }
}
