import ArgumentParser
import Foundation
import ParleyDevices
import ParleyEngine
import ParleyTUI

/// `parley devices`: the microphones, speakers and cameras a call can use, by the names the options accept.
struct Devices: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List microphones, speakers and cameras with the names --mic, --speaker and --camera accept.")

    func run() throws {
        let devices = MediaDevices.system
        var lines: [String] = []
        lines.append("Microphones (--mic NAME):")
        lines += Self.audioLines(
            Result { try devices.audio.inputDevices() }, isDefault: \.isDefaultInput,
            channels: \.inputChannels, noneFound: "calls send a synthetic voice instead")
        lines.append("Speakers (--speaker NAME):")
        lines += Self.audioLines(
            Result { try devices.audio.outputDevices() }, isDefault: \.isDefaultOutput,
            channels: \.outputChannels, noneFound: "calls play nothing (--audio-out FILE.wav keeps what you hear)")
        lines.append("Cameras (--camera NAME):")
        switch Result(catching: { try devices.cameras.cameras() }) {
        case .success(let cameras) where cameras.isEmpty:
            lines.append("  none found: calls start with the camera off (a synthetic picture is one `v` away)")
        case .success(let cameras):
            for camera in cameras {
                let best = camera.formats.max { $0.width * $0.height < $1.width * $1.height }
                let detail = best.map { " (\(camera.path), up to \($0.width)x\($0.height))" } ?? " (\(camera.path))"
                lines.append("  \"\(camera.name)\"" + detail)
            }
        case .failure(let error):
            lines.append("  cannot list cameras: \(error)")
        }
        say(lines.joined(separator: "\n"))
    }

    /// One line per device, the default marked; `noneFound` says what a call does without one; the failure in plain
    /// words when listing failed.
    static func audioLines(
        _ listing: Result<[AudioDeviceInfo], any Error>, isDefault: KeyPath<AudioDeviceInfo, Bool>,
        channels: KeyPath<AudioDeviceInfo, Int>, noneFound: String
    ) -> [String] {
        switch listing {
        case .success(let found) where found.isEmpty:
            return ["  none found: \(noneFound)"]
        case .success(let found):
            return found.map { device in
                let mark = device[keyPath: isDefault] ? "* " : "  "
                let server = device.serverName.map { "\($0), " } ?? ""
                return "\(mark)\"\(device.name)\" (\(server)\(device[keyPath: channels]) ch, "
                    + "\(Int(device.defaultSampleRate)) Hz, \(device.hostAPI))"
            } + ["  (* the default, used when no name is given)"]
        case .failure(let error):
            return ["  cannot list: \(error)"]
        }
    }
}

/// `parley resources`: where Parley finds the files it ships (default key map, sample media, sound-server setup).
struct Resources: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show where Parley's shipped files are: the default key map, sample media, test sound setup.")

    func run() throws {
        do {
            let folder = try BundledResources.directory()
            say(folder)
            for name in [
                BundledResources.defaultKeys, BundledResources.defaultTheme, BundledResources.speech,
                BundledResources.sampleVideo, BundledResources.soundSetup,
            ] {
                say("  " + (try BundledResources.path(name)))
            }
            // The key map and theme are read at every start: a broken one is an error here too.
            _ = try ShippedSettings.load(folder: folder)
        } catch {
            throw CommandFailure("\(error)")
        }
    }
}
