#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A stand-in microphone that talks: a pulse-train voice through vowel formants, in syllables and phrases with
/// pauses, so levels, voice activity and Opus's speech mode behave as with a person. Pitch differs per participant.
public final class SyntheticVoice: AudioSource {
    /// Samples per second.
    public let sampleRate: Int
    /// 1 or 2 (stereo repeats the voice in both channels).
    public let channels: Int
    /// Average voice pitch in Hz.
    public let pitchHz: Double

    private var random: UInt64
    private var produced: Int64 = 0
    private var sampleClock: Int64 = 0
    // Phrase structure.
    private var talking = false
    private var segmentLeft = 0
    private var syllableLeft = 0
    private var syllableLength = 1
    private var spurtPosition = 0
    private var spurtLength = 1
    // Voice source.
    private var phase = 0.0
    private var tilt = 0.0
    private var envelope = 0.0
    // Formant resonators: current and target frequencies, and two samples of state each.
    private var formants: [Double] = [700, 1200, 2500]
    private var targets: [Double] = [700, 1200, 2500]
    private var history = [Double](repeating: 0, count: 6)
    private var coefficients = [Double](repeating: 0, count: 9)

    /// A voice for one participant; `pitchHz` defaults to one picked from the participant id (95–245 Hz).
    public init(participant: UInt32, sampleRate: Int = 48_000, channels: Int = 1, pitchHz: Double? = nil) {
        precondition(channels == 1 || channels == 2, "channels must be 1 or 2")
        self.sampleRate = sampleRate
        self.channels = channels
        self.pitchHz = pitchHz ?? Self.pitch(forParticipant: participant)
        random = 0x9E37_79B9_7F4A_7C15 ^ (UInt64(participant) &* 0xBF58_476D_1CE4_E5B9)
        // Start a little way into a pause so the first words come quickly.
        segmentLeft = sampleRate / 5
        updateCoefficients()
    }

    /// The default pitch of a participant's voice: spread over 95–245 Hz (low and high voices).
    public static func pitch(forParticipant participant: UInt32) -> Double {
        95 + Double((participant &* 53) % 151)
    }

    public func nextFrame(samplesPerChannel: Int) -> AudioFrame {
        var samples = [Int16](repeating: 0, count: samplesPerChannel * channels)
        for index in 0..<samplesPerChannel {
            let value = Int16(clamping: Int(nextSample().rounded()))
            for channel in 0..<channels { samples[index * channels + channel] = value }
        }
        let frame = AudioFrame(
            sampleRate: sampleRate, channels: channels, samples: samples,
            timestampMicros: produced * 1_000_000 / Int64(sampleRate))
        produced += Int64(samplesPerChannel)
        return frame
    }

    // Vowel formants F1, F2, F3 in Hz (a, e, i, o, u of an average adult voice).
    private static let vowels: [[Double]] = [
        [730, 1090, 2440], [530, 1840, 2480], [300, 2200, 2950], [570, 840, 2410], [330, 900, 2300],
    ]
    private static let bandwidths: [Double] = [80, 100, 140]

    private func nextSample() -> Double {
        advanceSchedule()
        sampleClock += 1
        let rate = Double(sampleRate)
        // Syllable envelope: 25 ms rise, hold, 50 ms fall, and silence in pauses.
        var target = 0.0
        if talking {
            let elapsed = syllableLength - syllableLeft
            let rise = Double(elapsed) / (0.025 * rate)
            let fall = Double(syllableLeft) / (0.05 * rate)
            target = min(1, rise, fall)
        }
        envelope += (target - envelope) * 0.01
        // Intonation: slow wobble plus a fall across each phrase.
        let progress = Double(spurtPosition) / Double(max(1, spurtLength))
        let pitch =
            pitchHz * (1.08 - 0.16 * progress) * (1 + 0.04 * sin(Double(sampleClock) / rate * 2 * Double.pi * 3))
        phase += pitch / rate
        var excitation = 0.0
        if phase >= 1 {
            phase -= 1
            excitation = 1
        }
        // Glottal roll-off (about -6 dB/octave), a breath of noise, then the vocal tract.
        tilt = 0.95 * tilt + excitation + 0.015 * noise()
        var value = tilt * envelope
        for formant in 0..<3 {
            let a = coefficients[formant * 3]
            let b = coefficients[formant * 3 + 1]
            let c = coefficients[formant * 3 + 2]
            let output = a * value + b * history[formant * 2] + c * history[formant * 2 + 1]
            history[formant * 2 + 1] = history[formant * 2]
            history[formant * 2] = output
            value = output
        }
        if sampleClock % 64 == 0 { glideFormants() }
        // A microphone's own hiss keeps pauses from being digital silence (about -70 dBFS).
        let sample = value * 4800 + noise() * 6
        return max(-32000, min(32000, sample))
    }

    private func advanceSchedule() {
        if talking {
            spurtPosition += 1
            syllableLeft -= 1
            if syllableLeft <= 0 {
                startSyllable()
            }
        }
        segmentLeft -= 1
        if segmentLeft > 0 { return }
        talking.toggle()
        if talking {
            spurtLength = Int(Double(sampleRate) * (1.0 + 2.0 * uniform()))
            segmentLeft = spurtLength
            spurtPosition = 0
            startSyllable()
        } else {
            segmentLeft = Int(Double(sampleRate) * (0.35 + 0.8 * uniform()))
        }
    }

    private func startSyllable() {
        syllableLength = Int(Double(sampleRate) * (0.14 + 0.14 * uniform()))
        syllableLeft = syllableLength
        targets = Self.vowels[Int(uniform() * Double(Self.vowels.count)) % Self.vowels.count]
    }

    private func glideFormants() {
        for index in 0..<3 { formants[index] += (targets[index] - formants[index]) * 0.25 }
        updateCoefficients()
    }

    /// Two-pole resonator coefficients (Klatt): unity gain at DC, peak at the formant.
    private func updateCoefficients() {
        let period = 1 / Double(sampleRate)
        for index in 0..<3 {
            let c = -exp(-2 * Double.pi * Self.bandwidths[index] * period)
            let b =
                2 * exp(-Double.pi * Self.bandwidths[index] * period) * cos(2 * Double.pi * formants[index] * period)
            coefficients[index * 3] = 1 - b - c
            coefficients[index * 3 + 1] = b
            coefficients[index * 3 + 2] = c
        }
    }

    private func uniform() -> Double {
        random = random &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return Double(random >> 11) / Double(1 << 53)
    }

    private func noise() -> Double { uniform() + uniform() - 1 }
}
