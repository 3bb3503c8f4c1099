import Foundation

/// The files Parley ships beside its binary (`Resources/` in the source tree): the default key map, sample media
/// and the sound-server configuration the tests start.
///
/// Looked up, first found wins: `$PARLEY_RESOURCES`; `share/parley` next to the binary's `bin` folder (where
/// `make install` puts them); the `Resources` folder of the source checkout the binary was built from.
public enum BundledResources {
    /// A resource that is not where Parley looked; the message lists the places.
    public struct Missing: Error, CustomStringConvertible, Sendable {
        /// The file asked for, relative to the resources folder.
        public var name: String
        /// Every folder tried.
        public var searched: [String]

        public var description: String {
            "cannot find Parley's resource \(name); looked in \(searched.joined(separator: ", ")) "
                + "(set PARLEY_RESOURCES to the folder holding keys/ and media/)"
        }
    }

    /// The folders tried, in order.
    public static var candidates: [String] {
        var folders: [String] = []
        if let folder = ProcessInfo.processInfo.environment["PARLEY_RESOURCES"], !folder.isEmpty {
            folders.append(folder)
        }
        if let executable = Bundle.main.executableURL?.resolvingSymlinksInPath() {
            let bin = executable.deletingLastPathComponent()
            folders.append(bin.deletingLastPathComponent().appendingPathComponent("share/parley").path)
        }
        // Sources/ParleyEngine/BundledResources.swift → the checkout's Resources folder.
        let checkout = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        folders.append(checkout.appendingPathComponent("Resources").path)
        return folders
    }

    /// The resources folder in use: the first candidate holding the default key map.
    public static func directory() throws(Missing) -> String {
        let folders = candidates
        for folder in folders where FileManager.default.fileExists(atPath: folder + "/" + defaultKeys) {
            return folder
        }
        throw Missing(name: defaultKeys, searched: folders)
    }

    /// The full path of a resource, e.g. `media/speech.wav`.
    public static func path(_ name: String) throws(Missing) -> String {
        let folder = try directory()
        let path = folder + "/" + name
        guard FileManager.default.fileExists(atPath: path) else { throw Missing(name: name, searched: [folder]) }
        return path
    }

    /// The default key map, relative to the resources folder.
    public static let defaultKeys = "keys/default.keys"
    /// The built-in theme written out, relative to the resources folder.
    public static let defaultTheme = "theme/default.theme"
    /// A short speech recording (48 kHz mono): the sample microphone input of the demo and the tests.
    public static let speech = "media/speech.wav"
    /// The headless sound server's setup that the device tests start.
    public static let soundSetup = "sound/parley-test.pa"
    /// A short moving test picture (160x120, 15 frames/s): a sample camera.
    public static let sampleVideo = "media/sample.y4m"
}
