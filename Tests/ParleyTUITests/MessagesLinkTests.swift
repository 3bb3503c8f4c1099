import Testing

@testable import ParleyTUI

/// The messages screen's connection as a state machine, driven by hand: time is an instant passed in, never a sleep.
@Suite struct MessagesLinkTests {
    let zero = ContinuousClock.now
    func at(_ seconds: Double) -> ContinuousClock.Instant { zero + .milliseconds(Int(seconds * 1000)) }

    func newLink() -> MessagesLink { MessagesLink(server: "relay:7878", me: "alice") }

    static let hello = MessagesAction.sendDirect(id: "m1", to: "bob", text: "hello")
    static let design = ConversationKey(.channel, "design")

    @Test func failedLoginsAreTriedAgainFurtherApartUpToThirtySeconds() {
        var link = newLink()
        #expect(link.start() == [.connect(generation: 1)])
        var now = 0.0
        var waits: [Int] = []
        for generation in 1...7 {
            let effects = link.connectFailed("connection refused", generation: generation, now: at(now))
            guard case .wake(let until) = effects.last else {
                Issue.record("no timer after a failed login: \(effects)")
                return
            }
            waits.append(Int((until - at(now)).components.seconds))
            #expect(link.wake(now: until - .milliseconds(1)) == [], "not before its time")
            now += Double(waits.last!)
            #expect(link.wake(now: until) == [.connect(generation: generation + 1)])
        }
        #expect(waits == [1, 2, 4, 8, 16, 30, 30])
        #expect((1...8).map(MessagesLink.retryDelay(after:)) == [1, 2, 4, 8, 16, 30, 30, 30])
    }

    @Test func theNoticeSaysWhyAndWhen() {
        var link = newLink()
        _ = link.start()
        let effects = link.connectFailed("the relay refused the login", generation: 1, now: at(0))
        #expect(
            effects.first
                == .show(
                    .disconnected(
                        "Cannot log in to relay:7878 as alice: the relay refused the login; trying again in 1 s")))
    }

    @Test func aBrokenConnectionIsMadeAgainAfterASecondAndWhatWasOpenReloads() {
        var link = newLink()
        _ = link.start()
        #expect(link.connected(generation: 1) == [.catchUp(reopen: nil, resend: [])])
        #expect(link.action(.open(Self.design)) == [.perform(.open(Self.design))])
        let effects = link.closed(generation: 1, now: at(10))
        #expect(effects == [.show(.disconnected("Connection to relay:7878 lost: reconnecting…")), .wake(at: at(11))])
        #expect(link.wake(now: at(11)) == [.connect(generation: 2)])
        // A second failure after a break waits 2 s, as the break counted as one.
        #expect(link.connectFailed("refused", generation: 2, now: at(11)).last == .wake(at: at(13)))
        #expect(link.wake(now: at(13)) == [.connect(generation: 3)])
        #expect(link.connected(generation: 3) == [.catchUp(reopen: Self.design, resend: [])])
        #expect(link.failures == 0)
    }

    @Test func eventsAndClosesOfAnOldConnectionCountForNothing() {
        var link = newLink()
        _ = link.start()
        _ = link.connected(generation: 1)
        _ = link.closed(generation: 1, now: at(0))
        _ = link.wake(now: at(1))
        #expect(!link.isCurrent(1) && link.isCurrent(2))
        #expect(link.closed(generation: 1, now: at(2)) == [], "the old connection's close, late")
        #expect(link.connected(generation: 1) == [], "a login that was given up on")
        #expect(link.connectFailed("late", generation: 1, now: at(2)) == [])
        #expect(link.phase == .connecting && link.generation == 2)
    }

    @Test func aSendTheBreakCaughtGoesAgainOnTheNextConnectionOnce() {
        var link = newLink()
        _ = link.start()
        _ = link.connected(generation: 1)
        #expect(link.action(Self.hello) == [.perform(Self.hello)])
        let broke = link.performed(Self.hello, generation: 1, stillConnected: false, now: at(5))
        #expect(broke.last == .wake(at: at(6)))
        // The close the connection reports after changes nothing more.
        #expect(link.closed(generation: 1, now: at(5)) == [])
        _ = link.wake(now: at(6))
        #expect(link.connected(generation: 2) == [.catchUp(reopen: nil, resend: [Self.hello])])
        _ = link.closed(generation: 2, now: at(7))
        _ = link.wake(now: at(8))
        #expect(link.connected(generation: 3) == [.catchUp(reopen: nil, resend: [])], "sent once")
    }

    @Test func actionsMadeWhileDisconnectedWaitAndGoInOrder() {
        var link = newLink()
        _ = link.start()
        let post = MessagesAction.post(id: "p1", channel: "design", text: "hi")
        #expect(link.action(Self.hello) == [])
        #expect(link.action(.open(Self.design)) == [], "an open is the reload, not a request of its own")
        #expect(link.action(post) == [])
        #expect(
            link.connected(generation: 1) == [
                .catchUp(reopen: Self.design, resend: []), .perform(Self.hello), .perform(post),
            ])
        #expect(link.waiting.isEmpty)
    }

    @Test func whatWaitsIsBoundedAndSaysSo() {
        var link = newLink()
        _ = link.start()
        for index in 0..<MessagesLink.keptLimit {
            #expect(link.action(.markRead(Self.design, through: Int64(index))) == [])
        }
        let refused = link.action(Self.hello)
        #expect(refused.count == 1)
        if case .show(.notice(let text)) = refused.first {
            #expect(text.contains("\(MessagesLink.keptLimit) requests wait already"))
        } else {
            Issue.record("no notice: \(refused)")
        }
        #expect(link.waiting.count == MessagesLink.keptLimit)
    }

    @Test func aSuccessfulActionChangesNothingAndStoppingClosesOnlyAConnection() {
        var link = newLink()
        #expect(link.stop() == [], "nothing to close")
        var running = newLink()
        _ = running.start()
        _ = running.connected(generation: 1)
        #expect(running.performed(Self.hello, generation: 1, stillConnected: true, now: at(1)) == [])
        #expect(running.stop() == [.close])
        #expect(running.action(Self.hello) == [], "stopped: nothing more")
        #expect(running.wake(now: at(100)) == [])
        link = running
        #expect(link.phase == .stopped)
    }
}
