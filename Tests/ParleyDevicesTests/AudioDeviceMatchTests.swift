import ParleyTestLanes
import Testing

@testable import ParleyDevices

/// A laptop with a headset plugged in, as PortAudio lists it through ALSA.
private let laptop = [
    AudioDeviceInfo(
        name: "HDA Intel PCH: ALC257 Analog (hw:0,0)", inputChannels: 2, outputChannels: 2,
        defaultSampleRate: 44_100, hostAPI: "ALSA"),
    AudioDeviceInfo(
        name: "HDA Intel PCH: HDMI 0 (hw:0,3)", inputChannels: 0, outputChannels: 8,
        defaultSampleRate: 44_100, hostAPI: "ALSA"),
    AudioDeviceInfo(
        name: "USB Headset: Audio (hw:1,0)", inputChannels: 1, outputChannels: 2,
        defaultSampleRate: 48_000, hostAPI: "ALSA"),
    AudioDeviceInfo(name: "pulse", inputChannels: 32, outputChannels: 32, defaultSampleRate: 44_100, hostAPI: "ALSA"),
    AudioDeviceInfo(
        name: "pulse2", inputChannels: 32, outputChannels: 32, defaultSampleRate: 44_100,
        hostAPI: "ALSA"),
    AudioDeviceInfo(
        name: "default", inputChannels: 32, outputChannels: 32, defaultSampleRate: 44_100,
        isDefaultInput: true, isDefaultOutput: true, hostAPI: "ALSA"),
]
private let laptopMicrophones = laptop.filter { $0.inputChannels > 0 }.map(\.name)
private let noDefaults = laptop.map { device in
    var device = device
    device.isDefaultInput = false
    device.isDefaultOutput = false
    return device
}

@Suite(.lane(.blocking))
struct AudioDeviceMatchTests {
    struct Row: CustomTestStringConvertible, Sendable {
        var label: String
        var name: String?
        var kind: AudioDeviceKind
        var devices: [AudioDeviceInfo] = laptop
        var expected: Result<String, AudioDeviceError>
        var testDescription: String { label }
    }

    static let rows: [Row] = [
        Row(label: "no name picks the system default", name: nil, kind: .microphone, expected: .success("default")),
        Row(
            label: "no name and no default picks the first of the kind", name: nil, kind: .microphone,
            devices: noDefaults, expected: .success("HDA Intel PCH: ALC257 Analog (hw:0,0)")),
        Row(label: "exact name", name: "pulse", kind: .speaker, expected: .success("pulse")),
        Row(
            label: "exact name wins over a longer name it starts", name: "pulse", kind: .microphone,
            expected: .success("pulse")),
        Row(
            label: "unique prefix, any case", name: "usb", kind: .microphone,
            expected: .success("USB Headset: Audio (hw:1,0)")),
        Row(
            label: "prefix counts only devices of the kind", name: "HDA", kind: .microphone,
            expected: .success("HDA Intel PCH: ALC257 Analog (hw:0,0)")),
        Row(
            label: "ambiguous prefix lists the candidates", name: "hda intel", kind: .speaker,
            expected: .failure(
                .ambiguousDevice(
                    .speaker, name: "hda intel",
                    matches: [
                        "HDA Intel PCH: ALC257 Analog (hw:0,0)", "HDA Intel PCH: HDMI 0 (hw:0,3)",
                    ]))),
        Row(
            label: "unknown name lists what exists", name: "Blue Yeti", kind: .microphone,
            expected: .failure(.unknownDevice(.microphone, name: "Blue Yeti", available: laptopMicrophones))),
        Row(
            label: "an output-only device is no microphone", name: "HDA Intel PCH: HDMI 0 (hw:0,3)",
            kind: .microphone,
            expected: .failure(
                .unknownDevice(
                    .microphone, name: "HDA Intel PCH: HDMI 0 (hw:0,3)", available: laptopMicrophones))),
        Row(
            label: "empty name matches nothing", name: "", kind: .microphone,
            expected: .failure(.unknownDevice(.microphone, name: "", available: laptopMicrophones))),
        Row(
            label: "overlong name is refused", name: "p" + String(repeating: "u", count: 300), kind: .microphone,
            expected: .failure(
                .unknownDevice(
                    .microphone, name: "p" + String(repeating: "u", count: 300),
                    available: laptopMicrophones))),
        Row(label: "nothing listed", name: nil, kind: .speaker, devices: [], expected: .failure(.noDevice(.speaker))),
        Row(
            label: "only speakers listed, microphone wanted", name: "pulse", kind: .microphone,
            devices: laptop.filter { $0.inputChannels == 0 }, expected: .failure(.noDevice(.microphone))),
    ]

    @Test(arguments: rows)
    func picks(_ row: Row) {
        let result = Result { () throws(AudioDeviceError) in
            try AudioDeviceMatch.pick(row.name, kind: row.kind, among: row.devices).name
        }
        #expect(result == row.expected)
    }

    @Test(arguments: [
        (AudioDeviceError.noDevice(.microphone), "no microphone found"),
        (.noDevice(.speaker), "no speaker found"),
        (
            .unknownDevice(.microphone, name: "Yeti", available: ["default", "pulse"]),
            "no microphone named \"Yeti\"; available: \"default\", \"pulse\""
        ),
        (.unknownDevice(.speaker, name: "x", available: []), "no speaker named \"x\"; available: none"),
        (
            .ambiguousDevice(.speaker, name: "HDA", matches: ["HDA a", "HDA b"]),
            "\"HDA\" could be any of these speakers: \"HDA a\", \"HDA b\"; give more of the name"
        ),
        (.busy(name: "hw:0,0"), "\"hw:0,0\" is busy: another program is using it"),
        (
            .unsupportedFormat(name: "hw:0,0", sampleRate: 48_000, channels: 2),
            "\"hw:0,0\" cannot work at 48000 Hz with 2 channels"
        ),
        (
            .unsupportedFormat(name: "hw:0,0", sampleRate: 8_000, channels: 1),
            "\"hw:0,0\" cannot work at 8000 Hz with 1 channel"
        ),
        (
            .unsupportedBlockSize(name: "pulse", framesPerBlock: 0, sampleRate: 48_000),
            "\"pulse\" cannot use blocks of 0 frames: at 48000 Hz a block is 1 to 48000 frames (one second)"
        ),
        (.disconnected(name: "USB Headset"), "\"USB Headset\" stopped working (unplugged or taken away)"),
        (
            .failed(name: "pulse", call: "Pa_OpenStream", message: "Invalid device"),
            "\"pulse\": Pa_OpenStream failed: Invalid device"
        ),
        (
            .unknownDevice(.microphone, name: "bad\u{1B}[2Jname", available: []),
            "no microphone named \"bad\\u{1B}[2Jname\"; available: none"
        ),
        (
            .busy(name: String(repeating: "x", count: 250)),
            "\"" + String(repeating: "x", count: 200) + "…\" is busy: another program is using it"
        ),
    ])
    func describesInPlainWords(_ error: AudioDeviceError, _ message: String) {
        #expect(error.description == message)
    }

    @Test(
        arguments: [
            ("Parley's rate and block", 48_000, 1, 960, nil),
            ("stereo", 48_000, 2, 480, nil),
            ("one frame", 8_000, 1, 1, nil),
            ("one second", 48_000, 1, 48_000, nil),
            (
                "rate too low", 4_000, 1, 960,
                AudioDeviceError.unsupportedFormat(name: "d", sampleRate: 4_000, channels: 1)
            ),
            ("rate too high", 384_000, 1, 960, .unsupportedFormat(name: "d", sampleRate: 384_000, channels: 1)),
            ("no channels", 48_000, 0, 960, .unsupportedFormat(name: "d", sampleRate: 48_000, channels: 0)),
            ("surround", 48_000, 6, 960, .unsupportedFormat(name: "d", sampleRate: 48_000, channels: 6)),
            ("empty block", 48_000, 1, 0, .unsupportedBlockSize(name: "d", framesPerBlock: 0, sampleRate: 48_000)),
            (
                "block over a second", 48_000, 1, 48_001,
                .unsupportedBlockSize(name: "d", framesPerBlock: 48_001, sampleRate: 48_000)
            ),
        ] as [(String, Int, Int, Int, AudioDeviceError?)])
    func checksStreamFormat(_ label: String, _ rate: Int, _ channels: Int, _ frames: Int, _ expected: AudioDeviceError?)
    {
        let result = Result { () throws(AudioDeviceError) in
            try AudioStreamFormat.check(device: "d", sampleRate: rate, channels: channels, framesPerBlock: frames)
        }
        switch result {
        case .success: #expect(expected == nil, "\(label)")
        case .failure(let error): #expect(error == expected, "\(label)")
        }
    }

    @Test func layerPicksAmongItsOwnKindOfDevices() throws {
        let layer = FakeAudioLayer(devices: laptop)
        #expect(try layer.device(named: "usb", kind: .speaker).name == "USB Headset: Audio (hw:1,0)")
        #expect(try layer.device(named: nil, kind: .speaker).name == "default")
        #expect(throws: AudioDeviceError.unknownDevice(.microphone, name: "HDMI", available: laptopMicrophones)) {
            try layer.device(named: "HDMI", kind: .microphone)
        }
        #expect(throws: AudioDeviceError.noDevice(.microphone)) {
            try FakeAudioLayer(devices: []).device(named: nil, kind: .microphone)
        }
    }
}
