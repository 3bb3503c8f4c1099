import Foundation
import ParleyMedia
import ParleyTestLanes
import ParleyWire
import Testing

@testable import ParleyRelay

/// The dominant speaker over level sequences recorded from real speech (Resources/media/speech.wav, measured as a
/// sender measures it: 20 ms blocks through the voice activity detector) and from made-up sounds: coughs,
/// back-channel "mm-hm"s, a noisy fan.
@Suite("Dominant speaker", .lane(.timing))
struct DominantSpeakerTests {
    static let speechPath = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Resources/media/speech.wav").path

    /// One 20 ms level per slot, or nil when the member sends nothing (muted).
    typealias Track = [AudioLevelIndication?]

    /// `seconds` of speech.wav's levels, starting `offset` seconds in (the file loops).
    static func speech(seconds: Double, offset: Double = 0) throws -> Track {
        let source = try WAVFileSource(path: speechPath)
        var detector = AudioLevel()
        var track: Track = []
        let skip = Int(offset * 50)
        for slot in 0..<(skip + Int(seconds * 50)) {
            let frame = source.nextFrame(samplesPerChannel: 960)
            detector.update(with: frame)
            if slot >= skip {
                track.append(AudioLevelIndication(voiceActivity: detector.isSpeaking, dBFS: detector.lastDBFS))
            }
        }
        return track
    }

    static func constant(seconds: Double, dBFS: Double, voice: Bool) -> Track {
        Array(repeating: AudioLevelIndication(voiceActivity: voice, dBFS: dBFS), count: Int(seconds * 50))
    }

    static func silence(_ seconds: Double) -> Track { constant(seconds: seconds, dBFS: -75, voice: false) }

    /// Runs the tracks (member id → track) through a detector: a decision every 300 ms. Returns the dominant
    /// speaker after each decision, with its time.
    static func run(_ tracks: [UInt32: Track], leaving: (member: UInt32, at: Double)? = nil)
        -> [(at: Double, dominant: UInt32?)]
    {
        var detector = DominantSpeakerDetector()
        var decisions: [(Double, UInt32?)] = []
        let slots = tracks.values.map(\.count).max() ?? 0
        for slot in 0..<slots {
            let now = Duration.milliseconds(20 * slot)
            for (member, track) in tracks.sorted(by: { $0.key < $1.key }) where slot < track.count {
                if let leaving, member == leaving.member, Double(slot) / 50 >= leaving.at { continue }
                if let level = track[slot] { detector.record(level, from: member, at: now) }
            }
            if let leaving, slot == Int(leaving.at * 50) { detector.remove(leaving.member) }
            if slot % 15 == 14 {
                _ = detector.decide(at: now)
                decisions.append((Double(slot + 1) / 50, detector.dominant))
            }
        }
        return decisions
    }

    static func switches(_ decisions: [(at: Double, dominant: UInt32?)]) -> Int {
        zip(decisions, decisions.dropFirst()).filter { $0.dominant != nil && $0.dominant != $1.dominant }.count
    }

    @Test("someone talking takes the floor within a second, against silence")
    func talkerTakesTheFloor() throws {
        let decisions = Self.run([1: try Self.speech(seconds: 6), 2: Self.silence(6)])
        let first = try #require(decisions.first { $0.dominant == 1 })
        #expect(first.at <= 1.2, "took \(first.at) s")
        #expect(decisions.allSatisfy { $0.dominant != 2 })
    }

    @Test("a cough in the speaker's pause does not take the floor")
    func coughIsIgnored() throws {
        // Alice pauses for breath at 3 s, just as bob coughs: for that moment bob is the only sound.
        let alice = try Self.speech(seconds: 3) + Self.silence(0.4) + (try Self.speech(seconds: 2.6, offset: 3.4))
        let cough = Self.silence(3) + Self.constant(seconds: 0.25, dBFS: -8, voice: true) + Self.silence(2.75)
        let decisions = Self.run([1: alice, 2: cough])
        #expect(decisions.filter { $0.at > 1.5 }.allSatisfy { $0.dominant == 1 }, "\(decisions)")
    }

    @Test("back-channel \"mm-hm\"s in the speaker's pauses do not take the floor")
    func backChannelIsIgnored() throws {
        var speaker: Track = []
        var listener: Track = []
        for round in 0..<4 {
            speaker += (try Self.speech(seconds: 2.6, offset: Double(round) * 3)) + Self.silence(0.5)
            listener += Self.silence(2.6) + (try Self.speech(seconds: 0.4, offset: 1)) + Self.silence(0.1)
        }
        let decisions = Self.run([1: speaker, 2: listener])
        #expect(decisions.filter { $0.at > 1.5 }.allSatisfy { $0.dominant == 1 }, "\(decisions)")
    }

    @Test("a fan the sender knows is not speech never wins, however loud")
    func noiseWithoutVoiceIsIgnored() throws {
        let decisions = Self.run([
            1: try Self.speech(seconds: 8), 2: Self.constant(seconds: 8, dBFS: -20, voice: false),
        ])
        #expect(decisions.filter { $0.at > 1.5 }.allSatisfy { $0.dominant == 1 })
    }

    @Test("turns: the floor follows each speaker within two seconds, and switches once per turn")
    func turnsAreFollowed() throws {
        // Four turns of 5 s: alice, bob, alice, bob; the other is silent (muted: sends nothing).
        let turn = 5.0
        let aliceTalk = try Self.speech(seconds: turn)
        let bobTalk = try Self.speech(seconds: turn, offset: 3)
        let quiet: Track = Array(repeating: nil, count: Int(turn * 50))
        let decisions = Self.run([1: aliceTalk + quiet + aliceTalk + quiet, 2: quiet + bobTalk + quiet + bobTalk])
        for index in 1..<4 {
            let expected: UInt32 = index % 2 == 0 ? 1 : 2
            let start = Double(index) * turn
            let taken = try #require(decisions.first { $0.at > start && $0.dominant == expected })
            #expect(taken.at - start <= 2.0, "turn \(index) taken after \(taken.at - start) s")
        }
        #expect(Self.switches(decisions) == 3, "one switch per change of turn: \(decisions)")

        // The anchor it beats: picking the loudest packet every 300 ms flips at every pause within a turn.
        var loudestSwitches = 0
        var last: UInt32?
        let tracks: [UInt32: Track] = [1: aliceTalk + quiet + aliceTalk + quiet, 2: quiet + bobTalk + quiet + bobTalk]
        for slot in stride(from: 14, to: 20 * 50, by: 15) {
            let levels = tracks.compactMap { entry in entry.value[slot].map { (entry.key, 127 - Int($0.level)) } }
            guard let loudest = levels.filter({ $0.1 > 30 }).max(by: { $0.1 < $1.1 })?.0 else { continue }
            if last != nil, loudest != last { loudestSwitches += 1 }
            last = loudest
        }
        #expect(loudestSwitches >= Self.switches(decisions), "loudest-packet picking: \(loudestSwitches) switches")
    }

    @Test("two people talking over each other: the one who started keeps the floor")
    func overlapKeepsTheHolder() throws {
        let alice = try Self.speech(seconds: 8)
        let bob = Self.silence(3) + (try Self.speech(seconds: 1, offset: 4)) + Self.silence(4)
        let decisions = Self.run([1: alice, 2: bob])
        #expect(decisions.filter { $0.at > 1.5 }.allSatisfy { $0.dominant == 1 }, "\(decisions)")
    }

    @Test("when the dominant speaker leaves, whoever talks next takes over at once")
    func leavingHandsTheFloorOver() throws {
        let decisions = Self.run(
            [1: try Self.speech(seconds: 6), 2: Self.silence(3) + (try Self.speech(seconds: 3, offset: 2))],
            leaving: (member: 1, at: 3.5))
        #expect(decisions.contains { $0.at < 3.5 && $0.dominant == 1 })
        let after = try #require(decisions.first { $0.at > 3.5 && $0.dominant == 2 })
        #expect(after.at <= 4.5)
    }
}

@Suite("Simulcast layer choice", .lane(.timing))
struct LayerForwardingTests {
    static let layers: [VideoLayerSize?] = [
        VideoLayerSize(width: 640, height: 360), VideoLayerSize(width: 320, height: 180),
        VideoLayerSize(width: 160, height: 90),
    ]

    @Test(
        "the smallest layer that covers the tile",
        arguments: [
            (VideoLayerSize(width: 640, height: 360), 0, "fullscreen on a big terminal: the full layer"),
            (VideoLayerSize(width: 1200, height: 675), 0, "bigger than any layer: the largest"),
            (VideoLayerSize(width: 321, height: 180), 0, "one pixel wider than the middle layer"),
            (VideoLayerSize(width: 320, height: 180), 1, "exactly the middle layer"),
            (VideoLayerSize(width: 196, height: 110), 1, "a 200x60 pane's 1:1 tile"),
            (VideoLayerSize(width: 160, height: 90), 2, "exactly the small layer"),
            (VideoLayerSize(width: 38, height: 21), 2, "a strip tile: the small layer"),
        ] as [(VideoLayerSize, Int, String)])
    func choice(tile: VideoLayerSize, layer: Int, why: String) {
        #expect(LayerForwarding.layer(for: tile, among: Self.layers) == layer, "\(why)")
    }

    @Test("no tile: nothing; one layer or unknown sizes: the full layer")
    func edges() {
        #expect(LayerForwarding.layer(for: nil, among: Self.layers) == nil)
        #expect(LayerForwarding.layer(for: VideoLayerSize(width: 10, height: 10), among: [nil]) == 0)
        #expect(LayerForwarding.layer(for: VideoLayerSize(width: 10, height: 10), among: [Self.layers[0]]) == 0)
    }

    @Test("a switch waits for a keyframe of the new layer, then frees the old one")
    func switchAtKeyframe() {
        var forwarding = LayerForwarding()
        let sizes = Self.layers.compactMap { $0 }
        // Sender 1 (three layers), receivers 2 and 3: both get the full layer from the start, as without simulcast.
        _ = forwarding.add(member: 1, room: "r", layers: sizes)
        _ = forwarding.add(member: 2, room: "r", layers: nil)
        let joined = forwarding.add(member: 3, room: "r", layers: nil)
        #expect(forwarding.choice(of: 1, for: 2) == .init(current: 0, target: nil))
        #expect(
            !joined.contains { if case .requestKeyframe = $0 { true } else { false } },
            "no keyframe asked for on a join: the receiver asks once its media is bound")
        #expect(joined.last == .demand(sender: 3, active: [true]))
        func received(by receiver: UInt32) -> [String] {
            forwarding.layersReceived(by: receiver).map { "\($0.sender):\($0.layer)" }
        }
        #expect(received(by: 3) == ["1:0", "2:0"], "what the relay asks keyframes of once 3's media is bound")
        let passed1 = forwarding.forwards(layer: 0, startsKeyframe: false, from: 1, to: 2)
        #expect(passed1, "the full layer flows at once")
        let passed2 = forwarding.forwards(layer: 0, startsKeyframe: true, from: 1, to: 2)
        #expect(passed2)
        let passed3 = forwarding.forwards(layer: 0, startsKeyframe: true, from: 1, to: 3)
        #expect(passed3)
        #expect(forwarding.takeDemandChanges().isEmpty, "the full layer was already wanted")

        // Receiver 3 draws sender 1 small: it asks for the small layer's keyframe and keeps the full one meanwhile.
        let effects = forwarding.report(TileReport(tiles: [TileSize(id: 1, width: 150, height: 84)]), from: 3)
        #expect(effects == [.requestKeyframe(sender: 1, layer: 2), .demand(sender: 1, active: [true, false, true])])
        let passed4 = forwarding.forwards(layer: 0, startsKeyframe: false, from: 1, to: 3)
        #expect(passed4, "the old layer flows on")
        let passed5 = forwarding.forwards(layer: 2, startsKeyframe: false, from: 1, to: 3)
        #expect(!passed5, "not mid-stream")
        #expect(forwarding.keyframeLayer(of: 1, for: 3) == 2, "its keyframe requests are for the layer it waits for")
        #expect(received(by: 3) == ["1:2", "2:0"], "a rebind asks for the layer it waits for")
        let passed6 = forwarding.forwards(layer: 2, startsKeyframe: true, from: 1, to: 3)
        #expect(passed6)
        let passed7 = forwarding.forwards(layer: 0, startsKeyframe: false, from: 1, to: 3)
        #expect(!passed7, "switched: the old layer stops")
        #expect(forwarding.takeDemandChanges().isEmpty, "receiver 2 still gets the full layer")

        // Receiver 2 goes small too: once it switched, nobody needs the full layer and the sender pauses it.
        _ = forwarding.report(TileReport(tiles: [TileSize(id: 1, width: 150, height: 84)]), from: 2)
        let passed8 = forwarding.forwards(layer: 2, startsKeyframe: true, from: 1, to: 2)
        #expect(passed8)
        #expect(forwarding.takeDemandChanges() == [.demand(sender: 1, active: [false, false, true])])

        // Fullscreen at receiver 2: the full layer resumes (asked with a keyframe), the small one stays for 3.
        let fullscreen = forwarding.report(TileReport(tiles: [TileSize(id: 1, width: 640, height: 360)]), from: 2)
        #expect(
            fullscreen == [.requestKeyframe(sender: 1, layer: 0), .demand(sender: 1, active: [true, false, true])])

        // Off screen at both: nothing forwarded, every layer paused.
        _ = forwarding.report(TileReport(tiles: [TileSize(id: 1, width: 0, height: 0)]), from: 2)
        let hidden = forwarding.report(TileReport(tiles: [TileSize(id: 1, width: 0, height: 0)]), from: 3)
        #expect(hidden == [.demand(sender: 1, active: [false, false, false])])
        let passed9 = forwarding.forwards(layer: 2, startsKeyframe: true, from: 1, to: 3)
        #expect(!passed9)
        #expect(forwarding.keyframeLayer(of: 1, for: 3) == nil, "a receiver that gets nothing asks nothing")
        #expect(received(by: 3) == ["2:0"])

        // The receivers leave: nobody to send to.
        _ = forwarding.report(TileReport(tiles: [TileSize(id: 1, width: 300, height: 170)]), from: 3)
        #expect(forwarding.remove(member: 3) == [.demand(sender: 1, active: [false, false, false])])
    }

    @Test("a report naming members of another room or itself changes nothing there")
    func reportsStayInTheRoom() {
        var forwarding = LayerForwarding()
        let sizes = Self.layers.compactMap { $0 }
        _ = forwarding.add(member: 1, room: "a", layers: sizes)
        _ = forwarding.add(member: 2, room: "b", layers: sizes)
        _ = forwarding.add(member: 3, room: "a", layers: nil)
        #expect(
            forwarding.report(
                TileReport(tiles: [
                    TileSize(id: 2, width: 1, height: 1),
                    TileSize(id: 3, width: 1, height: 1),
                ]), from: 3) == [])
        #expect(forwarding.choice(of: 2, for: 3) == nil)
        #expect(forwarding.choice(of: 1, for: 3) == .init(current: 0, target: nil), "unlisted: the full layer")
    }
}
