import Foundation
import Testing

@testable import ParleyMedia

@Suite("Sample media shipped in Resources")
struct SampleMediaTests {
    static let media = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Resources/media").path

    @Test("speech.wav is 48 kHz mono speech of at least 10 s that the WAV reader loops")
    func speech() throws {
        let source = try WAVFileSource(path: Self.media + "/speech.wav")
        #expect(source.sampleRate == 48_000 && source.channels == 1)
        #expect(source.audio.samples.count >= 480_000)
        let first = source.nextFrame(samplesPerChannel: 48_000)
        #expect(first.rmsDBFS > -40, "there is speech in the first second")
    }

    @Test("sample.y4m is a 160x120 moving picture the Y4M reader loops")
    func video() throws {
        let source = try Y4MFileSource(path: Self.media + "/sample.y4m")
        #expect(source.width == 160 && source.height == 120)
        let first = try source.nextFrame()
        let second = try source.nextFrame()
        #expect(first.y != second.y, "the picture moves")
    }
}
