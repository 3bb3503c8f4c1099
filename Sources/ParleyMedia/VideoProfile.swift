import Foundation

/// A camera resolution with the frame rate and bitrate sent at it, as on the reference apps' settings screens.
public struct VideoProfile: Sendable, Hashable, CustomStringConvertible {
    /// Width in pixels.
    public var width: Int
    /// Height in pixels.
    public var height: Int
    /// Frames per second.
    public var fps: Int
    /// Target VP8 bitrate in kbit/s.
    public var bitrateKbps: Int

    /// A profile.
    public init(width: Int, height: Int, fps: Int, bitrateKbps: Int) {
        self.width = width
        self.height = height
        self.fps = fps
        self.bitrateKbps = bitrateKbps
    }

    /// The profiles offered in settings, smallest first.
    public static let all: [VideoProfile] = [
        VideoProfile(width: 160, height: 120, fps: 15, bitrateKbps: 65),
        VideoProfile(width: 320, height: 180, fps: 15, bitrateKbps: 140),
        VideoProfile(width: 320, height: 240, fps: 15, bitrateKbps: 200),
        VideoProfile(width: 640, height: 360, fps: 30, bitrateKbps: 600),
        VideoProfile(width: 640, height: 480, fps: 30, bitrateKbps: 750),
        VideoProfile(width: 1280, height: 720, fps: 30, bitrateKbps: 1500),
    ]

    /// The default for a call: 640x360 at 30 fps, 600 kbit/s.
    public static let standard = all[3]

    /// `WIDTHxHEIGHT`, the name used on the command line (`--profile 640x360`).
    public var name: String { "\(width)x\(height)" }

    public var description: String { "\(name) \(fps) fps \(bitrateKbps) kbit/s" }

    /// Finds a listed profile by its `WIDTHxHEIGHT` name, with a message listing the choices otherwise.
    public static func named(_ text: String) throws(ProfileError) -> VideoProfile {
        let wanted = text.lowercased().trimmingCharacters(in: .whitespaces)
        guard let profile = all.first(where: { $0.name == wanted }) else {
            throw ProfileError(
                "unknown video profile \"\(text)\"; choose one of \(all.map(\.name).joined(separator: ", "))")
        }
        return profile
    }
}

/// A video profile name that is not in the list.
public struct ProfileError: Error, Equatable, Sendable, CustomStringConvertible {
    /// What was wrong and what to type instead.
    public var message: String

    /// An error with its message.
    public init(_ message: String) { self.message = message }

    public var description: String { message }
}
