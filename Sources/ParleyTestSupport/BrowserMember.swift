import Foundation
import ParleyProcesses

/// A headless Chromium joining a relay's room as a browser member, on Resources/lab/browser-member.html served by a
/// `PageServer`: the page a test or benchmark reads its reports from (`PageServer.report(name)`).
public struct BrowserMember {
    /// Debian's Chromium.
    public static let chromium = "/usr/bin/chromium"

    /// The page: Resources/lab/browser-member.html (`PARLEY_RESOURCES` overrides the Resources folder).
    public static var page: String {
        if let path = ProcessInfo.processInfo.environment["PARLEY_RESOURCES"], !path.isEmpty {
            return path + "/lab/browser-member.html"
        }
        return URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Resources/lab/browser-member.html").path
    }

    /// Why no browser member can run here (Chromium missing), or nil.
    public static var missing: String? {
        FileManager.default.isExecutableFile(atPath: chromium)
            ? nil : "Debian's chromium is missing (`make deps` installs it)"
    }

    /// The Chromium process.
    public let process: BackgroundProcess
    private let folder: String

    /// Starts Chromium on the page at `server`, joining `room` on the relay's plain WebSocket at `relayPort` as
    /// `name`; `query` adds the page's other settings (`say`, `mute`, `pairs`, `joinAfter`).
    public init(server: PageServer, relayPort: Int, room: String, name: String, query: [String: String] = [:]) throws {
        var items = URLComponents()
        items.queryItems =
            [
                URLQueryItem(name: "relay", value: "ws://127.0.0.1:\(relayPort)/"),
                URLQueryItem(name: "room", value: room), URLQueryItem(name: "name", value: name),
            ] + query.sorted { $0.key < $1.key }.map { URLQueryItem(name: $0.key, value: $0.value) }
        let url = "http://127.0.0.1:\(server.port)/?" + (items.percentEncodedQuery ?? "")
        folder = NSTemporaryDirectory() + "parley-browser-\(name)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try? FileManager.default.removeItem(atPath: folder)
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        process = try BackgroundProcess(
            Self.chromium,
            [
                "--headless=new", "--no-sandbox", "--no-first-run", "--disable-gpu", "--mute-audio",
                "--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream",
                "--allow-loopback-in-peer-connection", "--disable-features=WebRtcHideLocalIpsWithMdns",
                "--autoplay-policy=no-user-gesture-required", "--user-data-dir=\(folder)/profile", url,
            ], outputPath: "\(folder)/chromium.log")
    }

    /// Stops Chromium and removes its profile.
    public func stop() {
        process.stop()
        try? FileManager.default.removeItem(atPath: folder)
    }
}
