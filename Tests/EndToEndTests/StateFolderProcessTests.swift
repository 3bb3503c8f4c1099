import Foundation
import ParleyProcesses
import ParleyTestLanes
import Testing

/// Relays started together on one new state folder (as the end-to-end suites start them on a fresh machine, on the
/// default folder): every one comes up. Before the stores took a lock while making their schema, two of them both
/// ran the message store's first migration and one exited with "table channelMember already exists".
@Suite(.serialized, .lane(.processes))
struct StateFolderProcessTests {
    @Test func relaysStartedTogetherOnANewStateFolderAllComeUp() async throws {
        let binary = try #require(parleyBinaryPath(), "set PARLEY_BIN to the parley binary")
        for round in 0..<3 {
            let state = NSTemporaryDirectory() + "parley-state-together-\(UUID().uuidString)"
            defer { try? FileManager.default.removeItem(atPath: state) }
            let relays = try (0..<4).map { _ in
                try BackgroundProcess(
                    binary, ["serve", "--port", "0", "--insecure", "--log-level", "error", "--state-dir", state])
            }
            for relay in relays {
                let up = try await AdminEndpointProcessTests.waitFor("media udp", in: relay)
                #expect(up, "round \(round): \(relay.output.suffix(600))")
            }
            await AdminEndpointProcessTests.stop(relays)
        }
    }
}
