import Foundation
import Logging
import ParleyMedia
import ParleyRoom
import ParleySecurity
import ParleyTestLanes
import ParleyWire
import Synchronization
import Testing

@testable import ParleyEngine
@testable import ParleyRelay

/// Collects the events of one engine.
final class EventLog: Sendable {
    private let events = Mutex<[RoomEvent]>([])

    func consume(_ engine: CallEngine) -> Task<Void, Never> {
        Task {
            for await event in engine.events { events.withLock { $0.append(event) } }
        }
    }

    var all: [RoomEvent] { events.withLock { $0 } }

    var chats: [String] {
        all.compactMap { if case .chatMessage(_, let text) = $0 { text } else { nil } }
    }
}

/// Whole calls: the real relay, real engines with real codecs, on loopback.
@Suite(.serialized, .lane(.timing))
struct CallTests {
    func quietLogger() -> Logger {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        return logger
    }

    func startRelay() async throws -> Relay {
        try await Relay.start(RelayConfiguration(host: "127.0.0.1", port: 0, logger: quietLogger()))
    }

    func configuration(_ name: String, port: Int) -> CallConfiguration {
        CallConfiguration(
            server: ServerAddress(host: "127.0.0.1", port: port), room: "standup", name: name,
            profile: VideoProfile(width: 160, height: 120, fps: 15, bitrateKbps: 150), showsSelfView: false,
            logger: quietLogger())
    }

    @Test func threePeopleSeeAndHearEachOther() async throws {
        let relay = try await startRelay()
        let names = ["alice", "bob", "carol"]
        var engines: [CallEngine] = []
        var logs: [EventLog] = []
        var tasks: [Task<Void, Never>] = []
        for name in names {
            let engine = try CallEngine(configuration(name, port: relay.signalingPort))
            let log = EventLog()
            tasks.append(log.consume(engine))
            engine.start()
            engines.append(engine)
            logs.append(log)
            try await Task.sleep(for: .milliseconds(100))
        }
        // Each engine decodes the other two: pictures carry the sender's member id and a rising frame counter.
        let allSee = await eventually(within: .seconds(8)) {
            var ok = true
            for engine in engines {
                let stats = await engine.statistics()
                ok =
                    ok && stats.peers.count == 2
                    && stats.peers.values.allSatisfy {
                        $0.framesDecoded >= 10 && $0.audioFramesPlayed >= 20
                    }
            }
            return ok
        }
        #expect(allSee)
        var ids: [UInt32] = []
        for engine in engines { ids.append(await engine.statistics().localID) }
        for engine in engines {
            let stats = await engine.statistics()
            for (id, peer) in stats.peers {
                #expect(peer.lastStamp?.participant == id, "\(peer.name)'s picture carries its own id")
                #expect((peer.lastStamp?.frame ?? 0) >= 9, "the frame counter in the picture rises")
                #expect(peer.lastFrameSize == VideoSize(width: 160, height: 120))
                #expect(peer.decodeErrors == 0)
            }
            #expect(stats.audioPlannedLossPercent == 0, "nothing lost on loopback: no FEC planned")
        }
        // Every packet sent carries a transport-wide sequence number, and the relay reports their arrival back every
        // 50 ms: each engine has an uplink estimate from it (on loopback, climbing from its start, never lost).
        let estimated = await eventually(within: .seconds(5)) {
            var ok = true
            for engine in engines {
                let stats = await engine.statistics()
                ok =
                    ok && stats.transportFeedbackReceived >= 10 && (stats.uplinkEstimateKbps ?? 0) >= 100
                    && stats.forgedFeedbackDropped == 0 && stats.uplinkEstimateReason?.hasPrefix("loss") == false
            }
            return ok
        }
        #expect(estimated, "every engine estimates its uplink from the relay's feedback")

        // Each sees what it actually sends (the local tile's stats) and what arrives from each peer.
        let measured = await eventually {
            logs[0].all.contains {
                if case .localStats(let info) = $0 { info.fps >= 5 && info.bitrateKbps > 20 } else { false }
            }
                && logs[0].all.contains {
                    if case .remoteStats(ParticipantID(ids[1]), let info) = $0 {
                        info.resolution == VideoSize(width: 160, height: 120) && info.fps >= 5
                    } else {
                        false
                    }
                }
        }
        #expect(measured, "local and remote stats carry measured rates")

        // Chat arrives in order at everyone.
        for line in 0..<5 { engines[0].perform(.sendChat("a\(line)")) }
        for line in 0..<5 { engines[1].perform(.sendChat("b\(line)")) }
        let chatArrived = await eventually { logs[2].chats.count == 10 }
        #expect(chatArrived)
        #expect(logs[2].chats.filter { $0.hasPrefix("a") } == (0..<5).map { "a\($0)" })
        #expect(logs[2].chats.filter { $0.hasPrefix("b") } == (0..<5).map { "b\($0)" })

        // Mute goes over the network and reaches the others.
        engines[1].perform(.setMicrophoneMuted(true))
        engines[1].perform(.setCameraEnabled(false))
        let muted = await eventually {
            logs[0].all.contains { if case .remoteAudioMuted(ParticipantID(ids[1]), true) = $0 { true } else { false } }
                && logs[2].all.contains {
                    if case .remoteVideoMuted(ParticipantID(ids[1]), true) = $0 { true } else { false }
                }
        }
        #expect(muted)
        #expect(try await relay.member(ids[1])?.audioMuted == true)

        // Leaving is seen by the rest as a quit.
        await engines[2].leave()
        let left = await eventually {
            logs[0].all.contains { if case .userOffline(ParticipantID(ids[2]), .quit) = $0 { true } else { false } }
        }
        #expect(left)
        for engine in engines.prefix(2) { await engine.leave() }
        for task in tasks { task.cancel() }
        await relay.shutdown()
    }

    @Test func mediaIsTakenOnlyFromTheRelay() async throws {
        // Someone who learns a client's media port and a peer's SSRC (both visible on the wire) sends pictures
        // and keyframe requests straight to it: the client takes datagrams only from its relay's media address.
        let relay = try await startRelay()
        let alice = try CallEngine(configuration("alice", port: relay.signalingPort))
        let bob = try CallEngine(configuration("bob", port: relay.signalingPort))
        let logs = [EventLog(), EventLog()]
        let tasks = [logs[0].consume(alice), logs[1].consume(bob)]
        alice.start()
        bob.start()
        let decoding = await eventually(within: .seconds(8)) {
            await alice.statistics().peers.values.first.map { $0.framesDecoded >= 5 } ?? false
        }
        #expect(decoding)
        let aliceStats = await alice.statistics()
        let bobStats = await bob.statistics()
        let bobID = bobStats.localID
        let bobSSRCs = MemberSSRCs(block: try #require(try await relay.member(bobID)).ssrcs.block)
        let ownVideo = try #require(try await relay.member(aliceStats.localID)).ssrcs.video
        let before = aliceStats.peers[bobID]!

        let stranger = try await TestUDPSocket.open()
        for sequence in 0..<20 {
            let audio = RTPPacket(
                header: RTPHeader(
                    payloadType: 111, sequenceNumber: UInt16(60_000 + sequence),
                    timestamp: 1, ssrc: bobSSRCs.audio), payload: [0xF8, 0xFF, 0xFE])
            await stranger.send(audio.serialized(), toPort: aliceStats.localMediaPort)
        }
        let pli = PictureLossIndication(senderSSRC: bobSSRCs.audio, mediaSSRC: ownVideo)
        await stranger.send(RTCPPacket.pictureLossIndication(pli).serialized(), toPort: aliceStats.localMediaPort)
        let refused = await eventually(within: .seconds(2)) { await alice.statistics().datagramsFromStrangers == 21 }
        #expect(refused)
        let after = await alice.statistics()
        #expect(after.keyframeRequestsReceived == aliceStats.keyframeRequestsReceived)
        // Bob's real media keeps arriving through the relay, undisturbed.
        let stillDecoding = await eventually(within: .seconds(3)) {
            await alice.statistics().peers[bobID].map { $0.framesDecoded > before.framesDecoded + 5 } ?? false
        }
        #expect(stillDecoding)
        #expect(await alice.statistics().peers[bobID]?.decodeErrors == 0)

        await alice.leave()
        await bob.leave()
        for task in tasks { task.cancel() }
        await relay.shutdown()
    }

    @Test func aPasswordRoomTheHostAndRemoval() async throws {
        let relay = try await startRelay()
        func engine(_ name: String, password: String?) throws -> (CallEngine, EventLog, Task<Void, Never>) {
            var settings = configuration(name, port: relay.signalingPort)
            settings.room = "vault"
            settings.password = password
            let engine = try CallEngine(settings)
            let log = EventLog()
            let task = log.consume(engine)
            engine.start()
            return (engine, log, task)
        }
        // Alice creates the room with its password and hosts it; Bob knows the password; Eve guesses.
        let (alice, aliceLog, aliceTask) = try engine("alice", password: "correct horse")
        let inRoom = await eventually { aliceLog.all.contains { if case .joined = $0 { true } else { false } } }
        #expect(inRoom)
        let (bob, bobLog, bobTask) = try engine("bob", password: "correct horse")
        let (eve, eveLog, eveTask) = try engine("eve", password: "battery staple")
        let (mallory, malloryLog, malloryTask) = try engine("mallory", password: nil)
        let settled = await eventually {
            bobLog.all.contains { if case .joined = $0 { true } else { false } }
                && eveLog.all.contains { if case .joinFailed = $0 { true } else { false } }
                && malloryLog.all.contains { if case .joinFailed = $0 { true } else { false } }
        }
        #expect(settled)
        #expect(eveLog.all.contains(.joinFailed(reason: "wrong password for vault")))
        #expect(malloryLog.all.contains(.joinFailed(reason: "vault needs its password")))
        let aliceID = await alice.statistics().localID
        let bobID = await bob.statistics().localID
        #expect(bobLog.all.contains(.hostChanged(ParticipantID(aliceID))))

        // The host removes Bob: he is told, his call ends, and he does not walk back in by reconnecting.
        alice.perform(.removeParticipant(ParticipantID(bobID)))
        let removed = await eventually {
            bobLog.all.contains {
                if case .removedFromRoom(let text) = $0 { text.contains("removed you") } else { false }
            }
                && aliceLog.all.contains(.userOffline(ParticipantID(bobID), reason: .removed))
        }
        #expect(removed)
        // His engine's call is over: its event stream ends (a bot or `parley join` exits with the reason).
        let bobEnded = Mutex(false)
        Task {
            await bobTask.value
            bobEnded.withLock { $0 = true }
        }
        #expect(await eventually { bobEnded.withLock { $0 } }, "bob's event stream ended with the removal")
        #expect(try await relay.rooms()["vault"] == [aliceID], "bob stayed out")

        // Bob tries again with the password: refused until the host lets him back in.
        let (bobAgain, bobAgainLog, bobAgainTask) = try engine("bob", password: "correct horse")
        #expect(await eventually { bobAgainLog.all.contains { if case .joinFailed = $0 { true } else { false } } })
        #expect(
            bobAgainLog.all.contains(
                .joinFailed(reason: "alice, the host, removed you from vault; only the host can let you back in")))
        alice.perform(.readmit("bob"))
        try await Task.sleep(for: .milliseconds(300))
        let (bobBack, bobBackLog, bobBackTask) = try engine("bob", password: "correct horse")
        #expect(await eventually { bobBackLog.all.contains { if case .joined = $0 { true } else { false } } })

        for engine in [alice, bob, eve, mallory, bobAgain, bobBack] { await engine.leave() }
        for task in [aliceTask, bobTask, eveTask, malloryTask, bobAgainTask, bobBackTask] { task.cancel() }
        await relay.shutdown()
    }

    @Test func anEncryptedCallAndAMemberWithTheWrongSecret() async throws {
        let relay = try await startRelay()
        func engine(_ name: String, secret: String) throws -> (CallEngine, EventLog, Task<Void, Never>) {
            var settings = configuration(name, port: relay.signalingPort)
            settings.room = "secret-standup"
            settings.encryption = try CallEncryption(secret: secret, room: "secret-standup", suite: .aes128GCM)
            let engine = try CallEngine(settings)
            let log = EventLog()
            let task = log.consume(engine)
            engine.start()
            return (engine, log, task)
        }
        let (alice, aliceLog, aliceTask) = try engine("alice", secret: "tiger lily")
        let (bob, bobLog, bobTask) = try engine("bob", secret: "tiger lily")
        let (carol, carolLog, carolTask) = try engine("carol", secret: "daffodil")
        let aliceID = await waitForID(alice)
        let bobID = await waitForID(bob)
        let carolID = await waitForID(carol)

        // Alice and Bob see and hear each other through the relay, which only ever forwarded ciphertext.
        let talking = await eventually(within: .seconds(8)) {
            let a = await alice.statistics().peers[bobID]
            let b = await bob.statistics().peers[aliceID]
            return (a?.framesDecoded ?? 0) >= 10 && (b?.framesDecoded ?? 0) >= 10
                && (a?.audioFramesPlayed ?? 0) >= 20 && (b?.audioFramesPlayed ?? 0) >= 20
        }
        #expect(talking)
        // Carol, with another secret, decodes nothing: her tiles say why, and so do theirs for her.
        let told = await eventually(within: .seconds(5)) {
            carolLog.all.contains(.cannotDecrypt(ParticipantID(aliceID), true))
                && carolLog.all.contains(.cannotDecrypt(ParticipantID(bobID), true))
                && aliceLog.all.contains(.cannotDecrypt(ParticipantID(carolID), true))
        }
        #expect(told)
        let carolStats = await carol.statistics()
        for peer in carolStats.peers.values {
            #expect(
                peer.framesDecoded == 0 && peer.audioFramesPlayed == 0 && peer.decodeErrors == 0,
                "never garbage pictures or noise: \(peer)")
        }

        alice.perform(.sendChat("the launch is on friday"))
        let chatted = await eventually { bobLog.chats.contains("the launch is on friday") }
        #expect(chatted)
        try await Task.sleep(for: .milliseconds(300))
        #expect(!carolLog.chats.contains("the launch is on friday"))
        #expect(
            aliceLog.all.contains {
                if case .security(let security) = $0 {
                    security.encryption == "AES-128-GCM" && security.safetyCode != nil
                } else {
                    false
                }
            })

        for engine in [alice, bob, carol] { await engine.leave() }
        for task in [aliceTask, bobTask, carolTask] { task.cancel() }
        await relay.shutdown()
    }

    func waitForID(_ engine: CallEngine) async -> UInt32 {
        var id: UInt32 = 0
        _ = await eventually {
            id = await engine.statistics().localID
            return id != 0
        }
        return id
    }
}
