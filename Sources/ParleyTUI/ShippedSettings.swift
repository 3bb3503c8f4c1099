import Foundation
import ParleyEngine
import ParleyPictures
import ParleyRoom

/// The key map and theme Parley ships in its resources folder (`keys/default.keys`, `theme/default.theme`): the
/// base that the user's own `~/.config/parley/keys` and `theme` change. Read when the program starts, so editing
/// the installed files changes every user's defaults.
public struct ShippedSettings: Sendable {
    /// The key map before the user's file.
    public var keymap: Keymap
    /// The theme's rich styles before the user's file.
    public var themeOverrides: [ColorRole: CellStyle]
    /// The folder they came from; nil when no resources folder was found and the built-in copies are in use.
    public var folder: String?

    /// A shipped file that cannot be read or parsed; the message names the file and the line.
    public struct BadFile: Error, CustomStringConvertible, Sendable {
        /// The file's full path.
        public var path: String
        /// What is wrong with it.
        public var reason: String

        public var description: String { "Parley's shipped file \(path): \(reason)" }
    }

    /// The built-in key map and theme (the shipped files are tested to say exactly this).
    public static let builtIn = ShippedSettings(keymap: .standard, themeOverrides: [:], folder: nil)

    /// Reads both files from `folder`; with nil, the built-in settings.
    public static func load(folder: String?) throws(BadFile) -> ShippedSettings {
        guard let folder else { return builtIn }
        let keymap = try parse(folder + "/" + BundledResources.defaultKeys) { text in try Keymap.parse(text) }
        let theme = try parse(folder + "/" + BundledResources.defaultTheme) { text in try Theme.parseOverrides(text) }
        return ShippedSettings(keymap: keymap, themeOverrides: theme, folder: folder)
    }

    /// The settings of the resources folder in use (``BundledResources/directory()``), or the built-in ones when
    /// Parley runs without its resources.
    public static func installed() throws(BadFile) -> ShippedSettings {
        try load(folder: try? BundledResources.directory())
    }

    /// Reads `path` and parses it; any failure is a `BadFile` naming the path.
    private static func parse<Value>(_ path: String, _ parse: (String) throws -> Value) throws(BadFile) -> Value {
        let text = try read(path)
        do {
            return try parse(text)
        } catch {
            throw BadFile(path: path, reason: "\(error)")
        }
    }

    /// Shipped files are small; anything past this is not one of them.
    static let largestFile = 64 * 1024

    private static func read(_ path: String) throws(BadFile) -> String {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw BadFile(path: path, reason: "cannot be read")
        }
        guard data.count <= largestFile else {
            throw BadFile(
                path: path, reason: "\(data.count) bytes is more than the \(largestFile) a settings file may have")
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw BadFile(path: path, reason: "is not UTF-8 text")
        }
        return text
    }
}
