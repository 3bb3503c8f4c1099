import ParleyTestLanes
import Testing

@testable import ParleyRelay

/// How many connections a relay holds for a file descriptor limit: all but 64 kept for itself, or half when the
/// limit is under 128, never none.
@Suite(.lane(.timing)) struct DescriptorBudgetTests {
    @Test(arguments: [
        (1, 1), (2, 1), (3, 2), (40, 20), (100, 50), (127, 64), (128, 64), (129, 65), (1024, 960), (65_536, 65_472),
    ])
    func connectionsForADescriptorLimit(descriptors: Int, connections: Int) {
        #expect(DescriptorBudget.connections(descriptors: descriptors) == connections)
    }
}

/// Timeouts as the relay's messages name them.
@Suite(.lane(.timing)) struct SpokenSecondsTests {
    @Test(arguments: [
        (Duration.seconds(10), "10 s"), (.milliseconds(2500), "2.5 s"), (.milliseconds(300), "0.3 s"),
        (.milliseconds(1_049), "1 s"), (.milliseconds(1_050), "1.1 s"), (.seconds(600), "600 s"), (.zero, "0 s"),
    ])
    func aDurationIsSaidInSecondsToATenth(duration: Duration, spoken: String) {
        #expect(duration.spokenSeconds == spoken)
    }
}
