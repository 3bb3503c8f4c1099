import Foundation
import Testing

@testable import ParleyMedia

@Suite struct SyntheticCameraTests {
    @Test func framesCarryMediaTimeCounterAndStamp() throws {
        let camera = SyntheticCamera(name: "Ana", participant: 12, width: 320, height: 180, framesPerSecond: 30)
        let frames = (0..<4).map { _ in camera.nextFrame() }
        #expect(frames.map(\.timestampMicros) == [0, 33_333, 66_666, 100_000])
        #expect(camera.frameNumber == 4)
        #expect(camera.frameIntervalMicros == 33_333)
        for (index, frame) in frames.enumerated() {
            let stamp = try #require(SyntheticCamera.readStamp(from: frame))
            #expect(stamp.participant == 12 && stamp.frame == UInt32(index))
        }
        #expect(frames[0].y != frames[1].y, "the pattern must move")
    }

    @Test func renderingIsRepeatableAndNoiseIsOptional() {
        let noisy = SyntheticCamera(name: "Ana", participant: 1, width: 160, height: 120)
        let clean = SyntheticCamera(name: "Ana", participant: 1, width: 160, height: 120, addsNoise: false)
        #expect(noisy.render(frameNumber: 5) == noisy.render(frameNumber: 5))
        #expect(noisy.render(frameNumber: 5).y != clean.render(frameNumber: 5).y)
        // Noise is small: the same frame with and without it stays close (above 40 dB).
        #expect(noisy.render(frameNumber: 5).psnr(against: clean.render(frameNumber: 5))!.y > 40)
    }

    @Test func participantsGetDistinctColours() {
        let tints = (1...8).map { SyntheticCamera.tint(forParticipant: $0) }
        for (i, a) in tints.enumerated() {
            for b in tints[(i + 1)...] {
                let distance = abs(Int(a.u) - Int(b.u)) + abs(Int(a.v) - Int(b.v))
                #expect(distance >= 12, "tints \(a) and \(b) are too close")
            }
        }
        let picture = SyntheticCamera(name: "C", participant: 3, width: 160, height: 120).render(frameNumber: 0)
        let tint = SyntheticCamera.tint(forParticipant: 3)
        #expect(picture.u[picture.u.count - 1] == tint.u && picture.v[picture.v.count - 1] == tint.v)
    }

    @Test func nameIsDrawnInThePicture() {
        func picture(_ name: String) -> VideoFrame {
            SyntheticCamera(name: name, participant: 1, width: 320, height: 180, addsNoise: false).render(
                frameNumber: 0)
        }
        let white = { (frame: VideoFrame) in frame.y.filter { $0 == 235 }.count }
        // The stamp has no white cells for participant 1, frame 0 except its checksum; text adds far more.
        #expect(white(picture("MMMM")) > white(picture("I")) + 500)
        #expect(picture("Ana").y != picture("Bob").y)
    }
}

@Suite struct PacingTests {
    @Test func framesAreReleasedWhenTheClockReachesThem() async throws {
        let clock = ManualClock()
        let pacer = MediaPacer(clock: clock)
        let task = Task {
            let camera = SyntheticCamera(name: "Pace", participant: 1, width: 32, height: 32)
            var released: [(elapsed: Int64, late: Int64)] = []
            for _ in 0..<3 {
                let frame = camera.nextFrame()
                let late = try await pacer.waitUntilDue(frame.timestampMicros)
                released.append((pacer.elapsedMicros, late))
            }
            return released
        }
        await clock.waitForSleepers(1)  // Frame 0 went at once; frame 1 waits for 33 333 µs.
        clock.advance(by: .milliseconds(20))
        #expect(clock.sleeperCount == 1, "20 ms is too early for frame 1")
        clock.advance(by: .milliseconds(20))
        await clock.waitForSleepers(1)  // Frame 2 waits for 66 666 µs.
        clock.advance(by: .milliseconds(30))
        let released = try await task.value
        #expect(released.map(\.elapsed) == [0, 40_000, 70_000])
        #expect(released.map(\.late) == [0, 6_667, 3_334])
    }

    @Test func anyClockOfDurationCanDriveThePacer() async throws {
        let manual = ManualClock()
        let clock: any Clock<Duration> = manual
        let pacer = MediaPacer(clock: clock)
        manual.advance(by: .milliseconds(50))
        #expect(pacer.elapsedMicros == 50_000)
        #expect(try await pacer.waitUntilDue(20_000) == 30_000, "already due: returns at once, 30 ms late")
    }

    @Test func cancellingAWaitingLoopEndsIt() async {
        let clock = ManualClock()
        let pacer = MediaPacer(clock: clock)
        let task = Task { try await pacer.waitUntilDue(1_000_000) }
        await clock.waitForSleepers(1)
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(clock.sleeperCount == 0)
    }
}

@Suite struct SyntheticVoiceTests {
    @Test func talksInPhrasesWithPauses() {
        let voice = SyntheticVoice(participant: 4)
        var detector = AudioLevel()
        var levels: [Double] = []
        var changes = 0
        var speaking = false
        for _ in 0..<500 {  // 10 s of 20 ms frames.
            let frame = voice.nextFrame(samplesPerChannel: 960)
            levels.append(frame.rmsDBFS)
            if detector.update(with: frame) != speaking {
                speaking.toggle()
                changes += 1
            }
        }
        let loud = Double(levels.filter { $0 > -35 }.count) / 500
        let quiet = Double(levels.filter { $0 < -60 }.count) / 500
        #expect(loud > 0.3 && loud < 0.85, "speech share \(loud)")
        #expect(quiet > 0.1, "pause share \(quiet)")
        #expect(levels.max()! < -10, "no clipping-level frames")
        #expect(changes >= 6, "voice activity should start and stop several times, saw \(changes)")
    }

    @Test func eachParticipantHasItsOwnPitch() throws {
        var pitches: [Double] = []
        for participant: UInt32 in [1, 2, 3] {
            let voice = SyntheticVoice(participant: participant)
            // Find a loud stretch and measure its pitch.
            var frame = voice.nextFrame(samplesPerChannel: 4800)
            while frame.rmsDBFS < -32 { frame = voice.nextFrame(samplesPerChannel: 4800) }
            let pitch = estimatedPitch(frame.samples[...])
            #expect(abs(pitch - voice.pitchHz) / voice.pitchHz < 0.12, "measured \(pitch) Hz, set \(voice.pitchHz) Hz")
            pitches.append(pitch)
        }
        #expect(Set(pitches.map { Int($0 / 10) }).count == 3, "pitches \(pitches) should differ")
    }

    @Test func stereoRepeatsTheVoiceInBothChannels() {
        let frame = SyntheticVoice(participant: 1, channels: 2).nextFrame(samplesPerChannel: 48_000)
        #expect(frame.channels == 2 && frame.frameCount == 48_000)
        #expect(
            stride(from: 0, to: frame.samples.count, by: 2).allSatisfy { frame.samples[$0] == frame.samples[$0 + 1] })
    }
}

@Suite struct AudioLevelTests {
    struct Row: CustomTestStringConvertible, Sendable {
        var name: String
        var samples: [Int16]
        var dBFS: Double
        var testDescription: String { name }
    }

    @Test(arguments: [
        Row(name: "full-scale square", samples: [32767, -32768, 32767, -32768], dBFS: 0),
        Row(name: "half-scale square", samples: [16384, -16384], dBFS: -6.02),
        Row(name: "one LSB", samples: [1, -1], dBFS: -90.31),
        Row(name: "silence", samples: [0, 0, 0], dBFS: -120),
    ])
    func rmsInDecibels(_ row: Row) {
        let frame = AudioFrame(samples: row.samples)
        #expect(abs(frame.rmsDBFS - row.dBFS) < 0.01)
    }

    @Test func speakingLevelMapsDecibelsToAMeter() {
        #expect(AudioLevel.normalised(dBFS: -120) == 0)
        #expect(AudioLevel.normalised(dBFS: -35) == 0.5)
        #expect(AudioLevel.normalised(dBFS: 0) == 1)
        #expect(AudioFrame(samples: [16384, -16384]).speakingLevel == 1)
    }

    @Test func speakingHoldsThroughShortGaps() {
        var detector = AudioLevel(thresholdDBFS: -45, hangoverMicros: 400_000)
        let loud = AudioFrame(samples: [Int16](repeating: 3000, count: 960))
        let quiet = AudioFrame(samples: [Int16](repeating: 3, count: 960))
        let started = detector.update(with: loud)
        #expect(started)
        let held = (0..<19).map { _ in detector.update(with: quiet) }
        #expect(held.allSatisfy { $0 }, "380 ms of quiet is still inside the hangover")
        let afterHangover = detector.update(with: quiet)
        #expect(!afterHangover, "400 ms of quiet ends speaking")
        #expect(detector.level < 0.1)
    }
}
