import ParleyRelay
import Testing

/// How many connections a relay holds for a file descriptor limit: all but 64 kept for itself, or half when the
/// limit is under 128, never none.
@Suite struct DescriptorBudgetTests {
    @Test(arguments: [
        (1, 1), (2, 1), (3, 2), (40, 20), (100, 50), (127, 64), (128, 64), (129, 65), (1024, 960), (65_536, 65_472),
    ])
    func connectionsForADescriptorLimit(descriptors: Int, connections: Int) {
        #expect(DescriptorBudget.connections(descriptors: descriptors) == connections)
    }
}
