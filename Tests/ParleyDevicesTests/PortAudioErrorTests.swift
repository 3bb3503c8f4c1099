import Testing

@testable import ParleyDevices

/// What a person reads when PortAudio refuses: each step (open, start, read or write) maps its codes to the error
/// that names what happened. Codes are PortAudio 19's `PaErrorCode` values.
@Suite
struct PortAudioErrorTests {
    static let unanticipatedHostError: Int32 = -9999
    static let invalidSampleRate: Int32 = -9997
    static let timedOut: Int32 = -9987
    static let internalError: Int32 = -9986
    static let deviceUnavailable: Int32 = -9985

    @Test func openingNamesTheFormatOrTheBusyDevice() {
        #expect(
            PortAudioStream.openError(Self.deviceUnavailable, device: "pulse", sampleRate: 48_000, channels: 1)
                == .busy(name: "pulse"))
        #expect(
            PortAudioStream.openError(Self.invalidSampleRate, device: "pulse", sampleRate: 48_000, channels: 1)
                == .unsupportedFormat(name: "pulse", sampleRate: 48_000, channels: 1))
        let other = PortAudioStream.openError(Self.internalError, device: "pulse", sampleRate: 48_000, channels: 1)
        #expect("\(other)".hasPrefix("\"pulse\": Pa_OpenStream failed: "))
    }

    /// A sound server that stops between opening and starting answers ALSA's prepare with an I/O error: the person
    /// reads that the device stopped working, not a PortAudio call's name.
    @Test func startingAfterTheDeviceWentAwaySaysSo() {
        #expect(
            PortAudioStream.startError(Self.unanticipatedHostError, device: "default") == .disconnected(name: "default")
        )
        #expect(PortAudioStream.startError(Self.deviceUnavailable, device: "default") == .busy(name: "default"))
        let other = PortAudioStream.startError(Self.timedOut, device: "default")
        #expect("\(other)".hasPrefix("\"default\": Pa_StartStream failed: "))
    }

    @Test func aFailingTransferIsTheDeviceGoingAway() {
        #expect(
            PortAudioStream.transferError(Self.unanticipatedHostError, device: "default", call: "Pa_ReadStream")
                == .disconnected(name: "default"))
        let misuse = PortAudioStream.transferError(-10000, device: "default", call: "Pa_ReadStream")
        #expect("\(misuse)".hasPrefix("\"default\": Pa_ReadStream failed: "))
    }
}
