import ParleyWire
import Testing

struct MemberSSRCsTests {
    @Test func aBlockIsFourConsecutiveSSRCs() {
        let ssrcs = MemberSSRCs(block: 0x1234_5677)
        #expect(ssrcs == MemberSSRCs(audio: 0x1234_5674, video: 0x1234_5675, videoLow: 0x1234_5676))
        #expect(ssrcs.block == 0x1234_5674)
        #expect([0x1234_5674, 0x1234_5675, 0x1234_5676, 0x1234_5677].allSatisfy { ssrcs.contains($0) })
        #expect(!ssrcs.contains(0x1234_5678) && !ssrcs.contains(0x1234_5673))
    }

    @Test func allocatesUniqueNonZeroBlocksAndReusesReleasedOnes() {
        var random = SplitMix64(seed: 7)
        var allocator = SSRCAllocator()
        let members = (0..<200).map { _ in allocator.allocate(using: &random) }
        #expect(Set(members.map(\.block)).count == 200)
        #expect(members.allSatisfy { $0.audio != 0 && $0.audio & 3 == 0 })
        #expect(allocator.owner(of: members[7].video) == members[7])
        #expect(allocator.owner(of: 0) == nil && allocator.owner(of: 3) == nil)  // block 0 is never handed out
        allocator.release(members[7])
        #expect(allocator.owner(of: members[7].video) == nil)
        #expect(allocator.blocks.count == 199)
    }
}
