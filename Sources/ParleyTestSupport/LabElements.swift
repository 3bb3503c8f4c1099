import ParleyProcesses

extension NetworkLab {
    /// Starts the user-space element of every member whose link asks for one (delay, jitter, loss in bursts), its
    /// media redirected through it; the relay listens for media on `relayPort`. Each element draws from its own
    /// seed, so a run is repeatable.
    public func startElements(relayPort: Int, seed: UInt64 = 0x51_0B11E) async throws -> [EmulatedLink] {
        var started: [EmulatedLink] = []
        do {
            for (index, member) in members.enumerated() where member.link.needsElement {
                started.append(
                    try await EmulatedLink.start(
                        in: self, for: member, relayPort: relayPort, uplink: member.link.uplinkElement,
                        downlink: member.link.downlinkElement, seed: seed &+ UInt64(index) &* 2))
            }
        } catch {
            for link in started { await link.stop() }
            throw error
        }
        return started
    }
}
