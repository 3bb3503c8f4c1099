import ParleyTestLanes
import Testing

@testable import ParleyDevices

/// A desktop's sound server as libpulse lists it: descriptions shown, the server's names kept for matching.
private func sink(_ name: String, _ server: String, default isDefault: Bool = false) -> AudioDeviceInfo {
    AudioDeviceInfo(
        name: name, inputChannels: 0, outputChannels: 2, defaultSampleRate: 48_000, isDefaultOutput: isDefault,
        hostAPI: "PulseAudio", serverName: server)
}

private func source(_ name: String, _ server: String, default isDefault: Bool = false) -> AudioDeviceInfo {
    AudioDeviceInfo(
        name: name, inputChannels: 1, outputChannels: 0, defaultSampleRate: 48_000, isDefaultInput: isDefault,
        hostAPI: "PulseAudio", serverName: server)
}

@Suite(.lane(.blocking))
struct AudioDeviceChangesTests {
    struct Row: CustomTestStringConvertible, Sendable {
        var label: String
        var before: ([AudioDeviceInfo], [AudioDeviceInfo])
        var after: ([AudioDeviceInfo], [AudioDeviceInfo])
        var expected: [String]
        var testDescription: String { label }
    }

    static let laptopSpeakers = sink("Built-in Audio Analog Stereo", "alsa_output.pci", default: true)
    static let laptopMicrophone = source("Built-in Audio Analog Stereo", "alsa_input.pci", default: true)
    static let headset = sink("USB Headset", "alsa_output.usb")
    static let headsetMicrophone = source("USB Headset Mono", "alsa_input.usb")

    static let rows: [Row] = [
        Row(
            label: "nothing changed", before: ([laptopMicrophone], [laptopSpeakers]),
            after: ([laptopMicrophone], [laptopSpeakers]), expected: []),
        Row(
            label: "a headset plugged in: its microphone and its speaker",
            before: ([laptopMicrophone], [laptopSpeakers]),
            after: ([laptopMicrophone, headsetMicrophone], [laptopSpeakers, headset]),
            expected: ["Microphone plugged in: USB Headset Mono", "Speaker plugged in: USB Headset"]),
        Row(
            label: "the headset made the default speaker",
            before: ([laptopMicrophone], [laptopSpeakers, headset]),
            after: (
                [laptopMicrophone],
                [
                    sink("Built-in Audio Analog Stereo", "alsa_output.pci"),
                    sink("USB Headset", "alsa_output.usb", default: true),
                ]
            ),
            expected: ["Default speaker is now USB Headset"]),
        Row(
            label: "the headset pulled out while default: unplugged, and the laptop's is the default again",
            before: (
                [laptopMicrophone],
                [
                    sink("Built-in Audio Analog Stereo", "alsa_output.pci"),
                    sink("USB Headset", "alsa_output.usb", default: true),
                ]
            ),
            after: ([laptopMicrophone], [laptopSpeakers]),
            expected: ["Speaker unplugged: USB Headset", "Default speaker is now Built-in Audio Analog Stereo"]),
        Row(
            label: "no default left says nothing about defaults", before: ([laptopMicrophone], [laptopSpeakers]),
            after: ([], []),
            expected: [
                "Microphone unplugged: Built-in Audio Analog Stereo", "Speaker unplugged: Built-in Audio Analog Stereo",
            ]),
    ]

    @Test("what changed between two device lists, in the chat pane's words", arguments: rows)
    func notices(_ row: Row) {
        #expect(
            AudioDeviceChanges.notices(
                from: (row.before.0, row.before.1), to: (row.after.0, row.after.1)) == row.expected)
    }

    @Test("--speaker takes the sound server's own name as well as the description")
    func serverNames() throws {
        let speakers = [Self.laptopSpeakers, Self.headset]
        #expect(try AudioDeviceMatch.pick("alsa_output.usb", kind: .speaker, among: speakers).name == "USB Headset")
        #expect(try AudioDeviceMatch.pick("USB", kind: .speaker, among: speakers).name == "USB Headset")
        #expect(throws: AudioDeviceError.self) {
            try AudioDeviceMatch.pick("alsa_output", kind: .speaker, among: speakers)
        }
    }
}
