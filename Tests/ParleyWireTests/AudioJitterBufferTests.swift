import ParleyWire
import Testing

/// An Opus RTP packet of 20 ms (TOC 0xFC) whose second byte names it.
func opus(_ index: Int, firstSequenceNumber: UInt16 = 1000, firstTimestamp: UInt32 = 48_000, marker: Bool = false)
    -> RTPPacket
{
    RTPPacket(
        header: RTPHeader(
            marker: marker, payloadType: 111, sequenceNumber: firstSequenceNumber &+ UInt16(truncatingIfNeeded: index),
            timestamp: firstTimestamp &+ UInt32(truncatingIfNeeded: 960 * index), ssrc: 0xA0D1),
        payload: [0xFC, UInt8(truncatingIfNeeded: index)])
}

/// What a slot played, in short: "p3" packet 3, "f4" missing with packet 4 next, "m" missing, "-" silence.
func describe(_ playout: AudioPlayout) -> String {
    switch playout {
    case .packet(let packet): return "p\(packet.payload[1])"
    case .missingNextAvailable(let next): return "f\(next.payload[1])"
    case .missing: return "m"
    case .silence: return "-"
    }
}

struct AudioJitterBufferTests {
    static let fixed = AudioJitterBuffer.Settings(targetDelay: .milliseconds(60), adaptive: false)

    /// Packets `indices` arrive one per 20 ms slot (index i at 20 i ms unless `arrivals` says otherwise); a slot is
    /// pulled every 20 ms after that slot's arrivals. Returns the slot descriptions.
    static func run(
        _ buffer: inout AudioJitterBuffer, packets: [Int], arrivals: [Int: Int] = [:], slots: Int
    ) -> [String] {
        var played: [String] = []
        for slot in 0..<slots {
            let now = 20 * slot
            for index in packets
            where (arrivals[index] ?? 20 * index) > now - 20 && (arrivals[index] ?? 20 * index) <= now {
                _ = buffer.insert(opus(index), at: ms(arrivals[index] ?? 20 * index))
            }
            played.append(describe(buffer.nextSlot(at: ms(now))))
        }
        return played
    }

    @Test func startsAfterTheTargetDelayAndPlaysInOrder() {
        var buffer = AudioJitterBuffer(settings: Self.fixed)
        let played = Self.run(&buffer, packets: Array(0..<10), slots: 19)
        #expect(
            played == [
                "-", "-", "-", "p0", "p1", "p2", "p3", "p4", "p5", "p6", "p7", "p8", "p9",
                "m", "m", "m", "m", "m", "-",
            ])
        #expect(!buffer.isPlaying)
        #expect(buffer.statistics.packetsReceived == 10 && buffer.statistics.lost == 0)
    }

    @Test("packets that piled up before playing began are skipped down to the newest that waited the target")
    func aPileUpBeforePlayingIsSkipped() {
        var buffer = AudioJitterBuffer(settings: Self.fixed)
        // Ten packets arrive every 20 ms while nobody asks (the receiver is held up); the first pull comes at 300 ms.
        for index in 0..<10 { _ = buffer.insert(opus(index), at: ms(20 * index)) }
        // At 300 ms every packet has waited at least 120 ms: the newest, packet 9, starts the play-out and the nine
        // before it are dropped.
        let first = describe(buffer.nextSlot(at: ms(300)))
        #expect(first == "p9", "started at \(first) rather than playing 180 ms of backlog first")
        #expect(buffer.packetsDiscarded == 9)
        // A pile-up within two frames of the target plays from the first packet, as before.
        var small = AudioJitterBuffer(settings: Self.fixed)
        for index in 0..<3 { _ = small.insert(opus(index), at: ms(20 * index)) }
        #expect(describe(small.nextSlot(at: ms(90))) == "p0")
        #expect(small.packetsDiscarded == 0)
    }

    @Test func aLostPacketWithItsSuccessorHereOffersFEC() {
        var buffer = AudioJitterBuffer(settings: Self.fixed)
        let played = Self.run(&buffer, packets: [0, 1, 2, 3, 5, 6, 7, 8, 9], slots: 13)
        #expect(played == ["-", "-", "-", "p0", "p1", "p2", "p3", "f5", "p5", "p6", "p7", "p8", "p9"])
        #expect(buffer.statistics.lost == 1)
    }

    @Test func twoLostPacketsConcealThenOfferFEC() {
        var buffer = AudioJitterBuffer(settings: Self.fixed)
        let played = Self.run(&buffer, packets: [0, 1, 2, 3, 6, 7, 8, 9], slots: 13)
        #expect(played == ["-", "-", "-", "p0", "p1", "p2", "p3", "m", "f6", "p6", "p7", "p8", "p9"])
    }

    @Test func reorderedPacketsPlayInOrder() {
        var buffer = AudioJitterBuffer(settings: Self.fixed)
        #expect(buffer.insert(opus(0), at: ms(0)) == .accepted)
        #expect(buffer.insert(opus(2), at: ms(20)) == .accepted)
        #expect(buffer.insert(opus(1), at: ms(25)) == .recovered)
        #expect(buffer.insert(opus(1), at: ms(26)) == .duplicate)
        let played = (3..<6).map { describe(buffer.nextSlot(at: ms(20 * $0))) }
        #expect(played == ["p0", "p1", "p2"])
        #expect(buffer.statistics.duplicates == 1 && buffer.statistics.recovered == 1)
    }

    @Test func aLatePacketIsRefusedAndRaisesTheAdaptiveTarget() {
        var buffer = AudioJitterBuffer()  // adaptive, 60 ms to start
        let played = Self.run(&buffer, packets: [0, 1, 2, 3, 5, 6, 7, 8], slots: 9)
        #expect(played == ["-", "-", "-", "p0", "p1", "p2", "p3", "f5", "p5"])
        #expect(buffer.insert(opus(4), at: ms(165)) == .late)
        #expect(buffer.statistics.late == 1)
        #expect(buffer.targetDelay == .milliseconds(80))
        // Ten quiet seconds bring it back down by one frame.
        _ = buffer.nextSlot(at: ms(165 + 10_000))
        #expect(buffer.targetDelay == .milliseconds(60))
    }

    /// Packets arrive every 20 ms, 15 ms into each slot, and the device asks for a slot 10 ms into it (each packet
    /// waits 15 ms); at slot 20 the device asks `extraPulls` more times at once (a sound server refilling its buffer
    /// after an underrun): the first takes the packet in hand, the rest are ahead of the arrivals. Returns what played
    /// and the buffer.
    static func pulledAhead(extraPulls: Int) -> (played: [String], buffer: AudioJitterBuffer) {
        var buffer = AudioJitterBuffer(
            settings: .init(targetDelay: .milliseconds(20), minimumDelay: .milliseconds(20)))
        var played: [String] = []
        for slot in 0..<60 {
            if slot > 0 { _ = buffer.insert(opus(slot - 1), at: ms(20 * (slot - 1) + 15)) }
            played.append(describe(buffer.nextSlot(at: ms(20 * slot + 10))))
            if slot == 20 {
                for _ in 0..<extraPulls { played.append(describe(buffer.nextSlot(at: ms(20 * slot + 10)))) }
            }
        }
        return (played, buffer)
    }

    @Test(
        "slots asked for ahead of the arrivals are concealed once, and the packets they passed play after them",
        arguments: [2, 3, 5])
    func slotsAskedAheadOfTheArrivalsAreInserted(extraPulls: Int) {
        let (played, buffer) = Self.pulledAhead(extraPulls: extraPulls)
        let concealed = played.filter { $0 == "m" }.count
        // Before this, the packet the play head passed came late, and so did every one after it, until the buffer
        // went idle (100 ms) and started afresh with a target five frames higher.
        #expect(concealed == extraPulls - 1, "\(played)")
        #expect(!played.dropFirst(3).contains("-"), "the buffer never went idle: \(played)")
        let packets = played.compactMap { $0.hasPrefix("p") ? Int($0.dropFirst()) : nil }
        #expect(packets == Array(packets.first!...packets.last!), "every packet played, in order: \(played)")
        #expect(buffer.statistics.late == 0 && buffer.lateKept == 1)
        #expect(buffer.targetDelay == .milliseconds(40), "one late arrival, one frame more")
    }

    @Test func aPacketOlderThanOnePlayedIsStillRefused() {
        var buffer = AudioJitterBuffer(settings: Self.fixed)
        _ = Self.run(&buffer, packets: [0, 1, 2, 3], slots: 9)  // p0-p3 played, then nothing buffered
        // Packet 2 again with another sequence number (a stray copy): older than what played, so late.
        var stray = opus(2)
        stray.header.sequenceNumber = 1100
        #expect(buffer.insert(stray, at: ms(185)) == .late)
        #expect(buffer.lateKept == 0)
    }

    /// A call's settings: 40 ms to start, down to 20 ms, the first lowering after 2 quiet seconds.
    static let call: AudioJitterBuffer.Settings = {
        var settings = AudioJitterBuffer.Settings(targetDelay: .milliseconds(40), minimumDelay: .milliseconds(20))
        settings.firstAdaptationWindow = .seconds(2)
        return settings
    }()

    @Test(
        "the target comes down after a quiet window only if the arrivals spread less than the lowered target",
        arguments: [
            (lateBy: 0, target: 20), (lateBy: 5, target: 20), (lateBy: 16, target: 40), (lateBy: 25, target: 40),
        ])
    func theTargetComesDownOnlyAsFarAsTheArrivalsSpread(lateBy: Int, target: Int) {
        var buffer = AudioJitterBuffer(settings: Self.call)
        // Every fifth packet arrives `lateBy` ms after its time (a busy machine's sender or network), none so late
        // that the 40 ms target misses it.
        let packets = Array(0..<250)
        let arrivals = Dictionary(uniqueKeysWithValues: packets.filter { $0 % 5 == 1 }.map { ($0, 20 * $0 + lateBy) })
        let played = Self.run(&buffer, packets: packets, arrivals: arrivals, slots: 250)
        #expect(buffer.statistics.late == 0)
        #expect(!played.dropFirst(3).contains("m"), "\(played)")
        #expect(buffer.targetDelay == .milliseconds(target))
    }

    @Test func theAdaptiveTargetStaysWithinItsBounds() {
        var buffer = AudioJitterBuffer(settings: .init(maximumDelay: .milliseconds(100)))
        _ = buffer.insert(opus(10), at: ms(0))
        for slot in 3..<8 { _ = buffer.nextSlot(at: ms(20 * slot)) }
        for late in 0..<5 { #expect(buffer.insert(opus(late), at: ms(200)) == .late) }
        #expect(buffer.targetDelay == .milliseconds(100))
        // One frame down per quiet adaptation window, never below the minimum.
        let expected = [80, 60, 40, 40]
        for (step, target) in expected.enumerated() {
            _ = buffer.nextSlot(at: ms(200 + 50_000 + 10_000 * step))
            #expect(buffer.targetDelay == .milliseconds(target))
        }
    }

    @Test func aNewTalkspurtStartsAfreshAfterAPause() {
        var buffer = AudioJitterBuffer(settings: Self.fixed)
        // Talkspurt 1: packets 0-2. DTX pause: the sender skips timestamps 3-29 while sequence numbers continue.
        let first = Self.run(&buffer, packets: [0, 1, 2], slots: 12)
        #expect(first == ["-", "-", "-", "p0", "p1", "p2", "m", "m", "m", "m", "m", "-"])
        var next = opus(30, marker: true)
        next.header.sequenceNumber = 1003
        #expect(buffer.insert(next, at: ms(600)) == .accepted)
        let second = (30..<34).map { describe(buffer.nextSlot(at: ms(20 * $0))) }
        #expect(second == ["-", "-", "-", "p30"])
        #expect(buffer.statistics.lost == 0)
    }

    @Test func wrapsAroundTimestampsAndSequenceNumbers() {
        var buffer = AudioJitterBuffer(settings: Self.fixed)
        for index in 0..<4 {
            let packet = opus(index, firstSequenceNumber: 65534, firstTimestamp: UInt32.max - 1919)
            #expect(buffer.insert(packet, at: ms(20 * index)) == .accepted)
        }
        let played = (3..<7).map { describe(buffer.nextSlot(at: ms(20 * $0))) }
        #expect(played == ["p0", "p1", "p2", "p3"])
        #expect(buffer.statistics.highestSequenceNumber == 65537)
    }

    @Test func aBurstIsTrimmedBackToTheTarget() {
        var buffer = AudioJitterBuffer(settings: Self.fixed)
        for index in 0..<10 { _ = buffer.insert(opus(index), at: ms(0)) }
        let played = (3..<10).map { describe(buffer.nextSlot(at: ms(20 * $0))) }
        #expect(played == ["p1", "p3", "p5", "p6", "p7", "p8", "p9"])
        #expect(buffer.packetsDiscarded == 3)
    }

    @Test func runningShortWhilePacketsStillFlowHoldsASlot() {
        var buffer = AudioJitterBuffer(settings: Self.fixed)
        // From packet 7 on the network delay grows by 50 ms: the buffer runs dry, then holds one slot to rebuild.
        let delayed = Dictionary(uniqueKeysWithValues: (7..<12).map { ($0, 20 * $0 + 50) })
        let played = Self.run(&buffer, packets: Array(0..<12), arrivals: delayed, slots: 13)
        #expect(played == ["-", "-", "-", "p0", "p1", "p2", "p3", "p4", "p5", "p6", "m", "p7", "p8"])
        #expect(buffer.slotsHeld == 1)
    }

    @Test func refusesMalformedPackets() {
        var buffer = AudioJitterBuffer()
        var packet = opus(0)
        packet.payload = []
        #expect(buffer.insert(packet, at: ms(0)) == .malformed(.truncated(.opusPacket, needed: 1, available: 0)))
        packet.payload = [0x03, 0x00]
        #expect(buffer.insert(packet, at: ms(0)) == .malformed(.invalidOpusFrameCount(0)))
        #expect(buffer.statistics.malformed == 2 && buffer.bufferedPacketCount == 0)
    }

    @Test func aSenderRestartIsFollowed() {
        var buffer = AudioJitterBuffer(settings: Self.fixed)
        _ = Self.run(&buffer, packets: [0, 1, 2, 3, 4], slots: 5)
        #expect(buffer.isPlaying)
        // New random counters: sequence far away, timestamp far behind.
        let restarted = opus(0, firstSequenceNumber: 30000, firstTimestamp: 100)
        #expect(buffer.insert(restarted, at: ms(100)) == .accepted)
        #expect(!buffer.isPlaying)
        #expect(describe(buffer.nextSlot(at: ms(160))) == "p0")
    }

    @Test("the player held up for 120 ms: a 20 ms skip at the default 3 frames, nothing lost with dropAboveFrames 8")
    func stallsPassWithAWiderDropThreshold() {
        // Packets arrive every 20 ms; the player takes a slot every 20 ms but none between 200 and 320 ms, then
        // catches up with the six slots it owes at once (a device thread held up).
        for (threshold, dropped) in [(3, true), (8, false)] {
            var settings = Self.fixed
            settings.dropAboveFrames = threshold
            var buffer = AudioJitterBuffer(settings: settings)
            var played: [String] = []
            var next = 0
            for now in stride(from: 0, through: 1000, by: 20) {
                while next < 40, 20 * next <= now {
                    _ = buffer.insert(opus(next), at: ms(20 * next))
                    next += 1
                }
                if now > 200 && now < 320 { continue }
                let owed = now == 320 ? 7 : 1
                for _ in 0..<owed { played.append(describe(buffer.nextSlot(at: ms(now)))) }
            }
            #expect((buffer.packetsDiscarded > 0) == dropped, "threshold \(threshold): \(played)")
            let packets = played.filter { $0.hasPrefix("p") }.count
            #expect(packets + buffer.packetsDiscarded == 40, "threshold \(threshold): \(played)")
        }
    }
}
