import Testing

@testable import ParleyWire

/// Builds a VP8 stream for scripted arrival tests: frame n has timestamp 3000 × n; packets carry a one-byte
/// descriptor and two data bytes; the first data byte holds the keyframe bit.
struct VP8StreamScript {
    var nextSequenceNumber: UInt16
    var frameIndex = 0

    init(firstSequenceNumber: UInt16) { nextSequenceNumber = firstSequenceNumber }

    mutating func frame(packets count: Int, keyframe: Bool) -> [RTPPacket] {
        defer { frameIndex += 1 }
        return (0..<count).map { index in
            let payload: [UInt8] =
                index == 0
                ? [0x10, keyframe ? 0x00 : 0x01, UInt8(truncatingIfNeeded: frameIndex)]
                : [0x00, UInt8(truncatingIfNeeded: frameIndex), UInt8(truncatingIfNeeded: index)]
            let header = RTPHeader(
                marker: index == count - 1, payloadType: 96, sequenceNumber: nextSequenceNumber,
                timestamp: UInt32(3000 * frameIndex), ssrc: 0xCAFE)
            nextSequenceNumber &+= 1
            return RTPPacket(header: header, payload: payload)
        }
    }
}

extension VideoJitterBuffer {
    /// Inserts packets all arriving at `now`.
    mutating func insert(_ packets: [RTPPacket], at now: Duration) -> [PacketArrival] {
        packets.map { insert($0, at: now) }
    }
}

/// Timestamps of the frames in an output, for compact expectations.
func timestamps(_ output: VideoJitterBuffer.Output) -> [UInt32] { output.frames.map(\.timestamp) }

struct VideoJitterBufferTests {
    @Test func deliversFramesInOrderAsTheyComplete() {
        var script = VP8StreamScript(firstSequenceNumber: 100)
        var buffer = VideoJitterBuffer()
        let key = script.frame(packets: 2, keyframe: true)
        #expect(buffer.insert(key, at: ms(0)) == [.accepted, .accepted])
        let first = buffer.poll(at: ms(0))
        #expect(
            first.frames == [
                VP8Frame(
                    timestamp: 0, data: [0x00, 0x00, 0x00, 0x01], isKeyframe: true, firstSequenceNumber: 100,
                    packetCount: 2)
            ])
        #expect(first.nacks == [] && !first.needsKeyframe)

        _ = buffer.insert(script.frame(packets: 1, keyframe: false), at: ms(33))
        _ = buffer.insert(script.frame(packets: 3, keyframe: false), at: ms(66))
        let next = buffer.poll(at: ms(66))
        #expect(timestamps(next) == [3000, 6000])
        #expect(next.frames.map(\.isKeyframe) == [false, false])
        #expect(next.frames[1].data == [0x01, 0x02, 0x02, 0x01, 0x02, 0x02])
        #expect(buffer.bufferedPacketCount == 0)
        #expect(buffer.statistics.packetsReceived == 6 && buffer.statistics.lost == 0)
    }

    @Test func waitsOutReorderingWithoutNACK() {
        var script = VP8StreamScript(firstSequenceNumber: 100)
        var buffer = VideoJitterBuffer()
        _ = buffer.insert(script.frame(packets: 2, keyframe: true), at: ms(0))
        #expect(timestamps(buffer.poll(at: ms(0))) == [0])
        let delta = script.frame(packets: 3, keyframe: false)  // 102, 103, 104
        #expect(buffer.insert(delta[0], at: ms(33)) == .accepted)
        #expect(buffer.insert(delta[2], at: ms(34)) == .accepted)
        #expect(buffer.poll(at: ms(34)) == .init())
        #expect(buffer.insert(delta[1], at: ms(40)) == .recovered)
        #expect(buffer.poll(at: ms(44)) == .init(frames: [try! VP8Depacketizer.assemble(delta)]))
        #expect(buffer.statistics.recovered == 1)
    }

    @Test func lossIsNACKedAndTheRetransmissionFillsTheGap() {
        var script = VP8StreamScript(firstSequenceNumber: 100)
        var buffer = VideoJitterBuffer()
        _ = buffer.insert(script.frame(packets: 2, keyframe: true), at: ms(0))
        _ = buffer.poll(at: ms(0))
        let delta = script.frame(packets: 3, keyframe: false)  // 102, [103 lost], 104
        let next = script.frame(packets: 1, keyframe: false)  // 105
        _ = buffer.insert([delta[0], delta[2]], at: ms(33))
        #expect(buffer.poll(at: ms(33)) == .init())
        #expect(buffer.poll(at: ms(43)) == .init(nacks: [103]))
        _ = buffer.insert(next, at: ms(66))
        #expect(buffer.poll(at: ms(66)) == .init())  // next retry at 43 + 50
        #expect(buffer.insert(delta[1], at: ms(80)) == .recovered)
        #expect(timestamps(buffer.poll(at: ms(80))) == [3000, 6000])
        #expect(buffer.statistics.lost == 0 && buffer.statistics.recovered == 1)
    }

    @Test func nacksBackOffAndStopAfterTheLastAttempt() {
        var script = VP8StreamScript(firstSequenceNumber: 100)
        var buffer = VideoJitterBuffer(settings: .init(frameDeadline: .seconds(5)))
        _ = buffer.insert(script.frame(packets: 2, keyframe: true), at: ms(0))
        _ = buffer.poll(at: ms(0))
        let delta = script.frame(packets: 3, keyframe: false)
        _ = buffer.insert([delta[0], delta[2]], at: ms(100))  // 103 missing from t = 100
        let schedule: [(Int, [UInt16])] = [
            (100, []), (109, []), (110, [103]), (159, []), (160, [103]), (259, []), (260, [103]), (460, []),
            (2000, []),
        ]
        for (time, nacks) in schedule {
            #expect(buffer.poll(at: ms(time)).nacks == nacks, "at \(time) ms")
        }
    }

    @Test func slowRepairsLengthenTheRetryAndTheDeadline() {
        var script = VP8StreamScript(firstSequenceNumber: 100)
        var buffer = VideoJitterBuffer()
        _ = buffer.insert(script.frame(packets: 2, keyframe: true), at: ms(0))
        _ = buffer.poll(at: ms(0))
        let first = script.frame(packets: 2, keyframe: false)  // [102 lost], 103
        _ = buffer.insert(first[1], at: ms(33))
        #expect(buffer.poll(at: ms(43)).nacks == [102])
        #expect(buffer.poll(at: ms(92)).nacks == [])
        // Answered 40 ms after the one NACK, before the retry at 93 ms: a repair takes 40 ms here.
        #expect(buffer.insert(first[0], at: ms(83)) == .recovered)
        #expect(timestamps(buffer.poll(at: ms(83))) == [3000])
        #expect(buffer.repairTime == ms(40))
        #expect(buffer.nackRetryInterval == ms(50) && buffer.frameDeadline == ms(350))

        // The path slows (a 200 ms round trip to the sender): the next repair teaches it at once.
        let second = script.frame(packets: 2, keyframe: false)  // [104 lost], 105
        _ = buffer.insert(second[1], at: ms(100))
        #expect(buffer.poll(at: ms(110)).nacks == [104])
        #expect(buffer.insert(second[0], at: ms(310)) == .recovered)
        #expect(buffer.repairTime == ms(200))
        #expect(buffer.nackRetryInterval == ms(250))
        #expect(buffer.frameDeadline == ms(510))  // 2.5 repairs and the 10 ms reordering wait
        _ = buffer.poll(at: ms(310))

        // Now a loss waits for its repair: one NACK, a retry only after 250 ms, no keyframe asked at 350 ms.
        let third = script.frame(packets: 2, keyframe: false)  // [106 lost], 107
        _ = buffer.insert(third[1], at: ms(400))
        _ = buffer.insert(script.frame(packets: 1, keyframe: false), at: ms(433))  // 108
        #expect(buffer.poll(at: ms(400)) == .init())  // stalled from here
        #expect(buffer.poll(at: ms(410)).nacks == [106])
        #expect(buffer.poll(at: ms(659)) == .init())
        #expect(buffer.poll(at: ms(660)).nacks == [106])
        #expect(buffer.poll(at: ms(800)) == .init())  // 400 ms stalled: the old deadline would have given up
        #expect(buffer.insert(third[0], at: ms(850)) == .recovered)
        #expect(timestamps(buffer.poll(at: ms(850))) == [9000, 12000])
        #expect(!buffer.isWaitingForKeyframe)
    }

    @Test func aRepairTimeFallsSlowlyAndTheDeadlineHasACeiling() {
        var buffer = VideoJitterBuffer()
        buffer.learnRepairTime(ms(200))
        buffer.learnRepairTime(ms(100))
        #expect(buffer.repairTime == ms(190))  // a tenth of the way down
        buffer.learnRepairTime(ms(300))
        #expect(buffer.repairTime == ms(300))  // all the way up
        buffer.learnRepairTime(.seconds(5))
        #expect(buffer.repairTime == .seconds(1))
        #expect(buffer.frameDeadline == VideoJitterBuffer.longestFrameDeadline)
        #expect(buffer.nackRetryInterval == ms(1_250))
    }

    @Test func unrepairedLossAsksForAKeyframeAndHoldsDeltasUntilOneArrives() {
        var script = VP8StreamScript(firstSequenceNumber: 100)
        var buffer = VideoJitterBuffer()
        _ = buffer.insert(script.frame(packets: 2, keyframe: true), at: ms(0))
        _ = buffer.poll(at: ms(0))
        let lost = script.frame(packets: 2, keyframe: false)  // [102 lost], 103
        _ = buffer.insert(lost[1], at: ms(33))
        _ = buffer.insert(script.frame(packets: 1, keyframe: false), at: ms(66))  // 104
        #expect(buffer.poll(at: ms(40)) == .init())  // stalled from here
        #expect(buffer.poll(at: ms(43)).nacks == [102])
        #expect(buffer.poll(at: ms(389)) == .init(nacks: [102]))  // second attempt, due since 93 ms
        #expect(buffer.poll(at: ms(390)) == .init(needsKeyframe: true))  // 350 ms after the stall began
        #expect(buffer.isWaitingForKeyframe)

        _ = buffer.insert(script.frame(packets: 1, keyframe: false), at: ms(400))  // 105: a delta, held back
        #expect(buffer.poll(at: ms(400)) == .init())
        let keyframe = script.frame(packets: 2, keyframe: true)  // 106, 107
        _ = buffer.insert(keyframe, at: ms(420))
        let recovered = buffer.poll(at: ms(420))
        #expect(timestamps(recovered) == [12000] && recovered.frames[0].isKeyframe)
        #expect(!buffer.isWaitingForKeyframe)
        _ = buffer.insert(script.frame(packets: 1, keyframe: false), at: ms(433))
        #expect(timestamps(buffer.poll(at: ms(433))) == [15000])
        #expect(buffer.insert(lost[0], at: ms(500)) == .late)  // the retransmission comes too late
        #expect(buffer.statistics.late == 1)
    }

    @Test func repeatsTheKeyframeRequestUntilOneArrives() {
        var buffer = VideoJitterBuffer()
        var script = VP8StreamScript(firstSequenceNumber: 500)
        _ = buffer.insert(script.frame(packets: 1, keyframe: false), at: ms(0))  // joined mid-stream: a delta
        #expect(buffer.poll(at: ms(0)) == .init(needsKeyframe: true))
        #expect(buffer.poll(at: ms(999)) == .init())
        _ = buffer.insert(script.frame(packets: 1, keyframe: false), at: ms(1000))
        #expect(buffer.poll(at: ms(1000)) == .init(needsKeyframe: true))
        _ = buffer.insert(script.frame(packets: 3, keyframe: true), at: ms(1100))
        let output = buffer.poll(at: ms(1100))
        #expect(timestamps(output) == [6000] && !output.needsKeyframe)
    }

    @Test func aKeyframeAlreadyArrivingIsNotRequestedAgainUnlessItStalls() {
        var buffer = VideoJitterBuffer()
        var script = VP8StreamScript(firstSequenceNumber: 10)
        let keyframe = script.frame(packets: 3, keyframe: true)  // 10, [11 lost], 12
        _ = buffer.insert(keyframe[0], at: ms(0))
        #expect(buffer.poll(at: ms(0)) == .init())
        _ = buffer.insert(keyframe[2], at: ms(1))
        #expect(buffer.poll(at: ms(11)) == .init(nacks: [11]))  // losses inside a keyframe are worth repairing
        #expect(buffer.insert(keyframe[1], at: ms(30)) == .recovered)
        #expect(timestamps(buffer.poll(at: ms(30))) == [0])

        var stalled = VideoJitterBuffer()
        _ = stalled.insert(keyframe[0], at: ms(0))
        #expect(stalled.poll(at: ms(349)) == .init())
        #expect(stalled.poll(at: ms(350)) == .init(needsKeyframe: true))
    }

    @Test func skipsToALaterCompleteKeyframeWithoutAsking() {
        var script = VP8StreamScript(firstSequenceNumber: 100)
        var buffer = VideoJitterBuffer()
        _ = buffer.insert(script.frame(packets: 2, keyframe: true), at: ms(0))
        _ = buffer.poll(at: ms(0))
        let broken = script.frame(packets: 2, keyframe: false)  // [102 lost], 103
        _ = buffer.insert(broken[1], at: ms(33))
        _ = buffer.insert(script.frame(packets: 2, keyframe: true), at: ms(66))  // 104, 105
        let output = buffer.poll(at: ms(66))
        #expect(timestamps(output) == [6000] && output.frames[0].isKeyframe && !output.needsKeyframe)
        #expect(buffer.poll(at: ms(100)) == .init())  // 102 is no longer worth a NACK
    }

    @Test func countsDuplicatesAndLatePackets() {
        var script = VP8StreamScript(firstSequenceNumber: 100)
        var buffer = VideoJitterBuffer()
        let key = script.frame(packets: 2, keyframe: true)
        #expect(buffer.insert(key[0], at: ms(0)) == .accepted)
        #expect(buffer.insert(key[0], at: ms(1)) == .duplicate)
        _ = buffer.insert(key[1], at: ms(2))
        #expect(timestamps(buffer.poll(at: ms(2))) == [0])
        #expect(buffer.insert(key[1], at: ms(3)) == .duplicate)  // after delivery
        var stray = key[0]
        stray.header.sequenceNumber = 99
        #expect(buffer.insert(stray, at: ms(4)) == .late)
        #expect(buffer.statistics.duplicates == 2 && buffer.statistics.late == 1)
        #expect(buffer.statistics.packetsReceived == 2)
    }

    @Test func wrapsAroundAt65535() {
        var script = VP8StreamScript(firstSequenceNumber: 65533)
        var buffer = VideoJitterBuffer()
        _ = buffer.insert(script.frame(packets: 2, keyframe: true), at: ms(0))  // 65533, 65534
        #expect(timestamps(buffer.poll(at: ms(0))) == [0])
        let delta = script.frame(packets: 3, keyframe: false)  // [65535 lost], 0, 1
        _ = buffer.insert([delta[1], delta[2]], at: ms(33))
        #expect(buffer.poll(at: ms(43)) == .init(nacks: [65535]))
        #expect(buffer.insert(delta[0], at: ms(50)) == .recovered)
        let output = buffer.poll(at: ms(50))
        #expect(output.frames.map(\.firstSequenceNumber) == [65535] && output.frames[0].packetCount == 3)
        _ = buffer.insert(script.frame(packets: 1, keyframe: false), at: ms(66))  // 2
        #expect(timestamps(buffer.poll(at: ms(66))) == [6000])
        #expect(buffer.statistics.highestSequenceNumber == 65538)
    }

    @Test func rejectsMalformedPayloads() {
        var buffer = VideoJitterBuffer()
        let packet = RTPPacket(
            header: RTPHeader(payloadType: 96, sequenceNumber: 1, timestamp: 0, ssrc: 1), payload: [])
        #expect(buffer.insert(packet, at: ms(0)) == .malformed(.truncated(.vp8Descriptor, needed: 1, available: 0)))
        #expect(buffer.statistics.malformed == 1 && buffer.bufferedPacketCount == 0)
    }

    @Test func aFarJumpNeedsTwoConsecutivePacketsToRestart() {
        var script = VP8StreamScript(firstSequenceNumber: 100)
        var buffer = VideoJitterBuffer()
        _ = buffer.insert(script.frame(packets: 1, keyframe: true), at: ms(0))
        #expect(timestamps(buffer.poll(at: ms(0))) == [0])
        var restarted = VP8StreamScript(firstSequenceNumber: 40000)
        let packets = restarted.frame(packets: 2, keyframe: false)
        #expect(buffer.insert(packets[0], at: ms(10)) == .outOfRange)
        #expect(buffer.insert(packets[1], at: ms(11)) == .accepted)
        #expect(buffer.isWaitingForKeyframe)
        #expect(buffer.poll(at: ms(11)) == .init(needsKeyframe: true))
        #expect(buffer.statistics.packetsReceived == 2)
    }

    @Test func anOverfullBufferGivesUpAndAsksForAKeyframe() {
        var script = VP8StreamScript(firstSequenceNumber: 100)
        var buffer = VideoJitterBuffer(settings: .init(frameDeadline: .seconds(10), maxBufferedPackets: 8))
        _ = buffer.insert(script.frame(packets: 1, keyframe: true), at: ms(0))
        _ = buffer.poll(at: ms(0))
        _ = script.frame(packets: 1, keyframe: false)  // 101 lost
        for index in 0..<12 { _ = buffer.insert(script.frame(packets: 1, keyframe: false), at: ms(10 + index)) }
        #expect(buffer.bufferedPacketCount <= 8)
        #expect(buffer.isWaitingForKeyframe)
        #expect(buffer.poll(at: ms(30)).needsKeyframe)
    }

    @Test func aDecoderFailureWaitsForTheNextKeyframe() {
        var script = VP8StreamScript(firstSequenceNumber: 100)
        var buffer = VideoJitterBuffer()
        _ = buffer.insert(script.frame(packets: 1, keyframe: true), at: ms(0))
        #expect(timestamps(buffer.poll(at: ms(0))) == [0])
        buffer.decoderNeedsKeyframe()
        _ = buffer.insert(script.frame(packets: 1, keyframe: false), at: ms(33))
        #expect(buffer.poll(at: ms(33)) == .init(needsKeyframe: true))
        _ = buffer.insert(script.frame(packets: 1, keyframe: true), at: ms(66))
        #expect(timestamps(buffer.poll(at: ms(66))) == [6000])
    }
}
