import Foundation
import ParleyProcesses
import ParleyTestLanes
import Synchronization
import Testing

/// The waits the tests share (ParleyProcesses' Waiting.swift): they return as soon as what they wait for holds,
/// and otherwise fail by name with what they saw last.
@Suite(.lane(.timing))
struct WaitingTests {
    @Test func waitUntilReturnsOnceTheConditionHolds() async throws {
        let looks = Mutex(0)
        try await waitUntil("the third look", timeout: .seconds(10), every: .milliseconds(1)) {
            looks.withLock {
                $0 += 1
                return $0 == 3
            }
        }
        #expect(looks.withLock { $0 } == 3, "no look after it held")
    }

    @Test func waitUntilNamesWhatItWaitedForWhenTimeRunsOut() async throws {
        let started = ContinuousClock.now
        let error = await #expect(throws: WaitTimeout.self) {
            try await waitUntil("a condition that never holds", timeout: .milliseconds(100)) { false }
        }
        #expect(ContinuousClock.now - started >= .milliseconds(100), "it waited its whole timeout")
        #expect(error?.description == "timed out after 0.1 seconds waiting for a condition that never holds")
    }

    @Test func pollReturnsTheValueAndOnTimeoutSaysTheLastOneSeen() async throws {
        let counter = Mutex(0)
        func next() -> Int {
            counter.withLock {
                $0 += 1
                return $0
            }
        }
        #expect(
            try await poll("five", timeout: .seconds(10), every: .milliseconds(1), { next() }, until: { $0 == 5 }) == 5)
        let error = await #expect(throws: WaitTimeout.self) {
            try await poll("a negative count", timeout: .milliseconds(50), { next() }, until: { $0 < 0 })
        }
        let last = counter.withLock { $0 }
        #expect(error?.lastSeen == "\(last)", "\(String(describing: error))")
    }

    @Test func aProgramThatExitsWithoutTheTextFailsAtOnceSayingSo() async throws {
        let program = try BackgroundProcess("/bin/sh", ["-c", "echo started"])
        let started = ContinuousClock.now
        let error = await #expect(throws: WaitTimeout.self) {
            try await program.output(containing: "never printed", within: .seconds(30))
        }
        #expect(ContinuousClock.now - started < .seconds(10), "it did not wait out the timeout")
        #expect(error?.what.contains("(it exited first)") == true, "\(String(describing: error))")
        #expect(error?.lastSeen == "started\n")
        #expect(await program.exitStatus(within: .seconds(1)) == 0)
    }
}
