import Foundation
import NIOConcurrencyHelpers
import NIOPosix
import ParleyEngine
import ParleyProcesses
import ParleyWire

/// Why a DevTools conversation failed: the words say which step.
public struct DevToolsError: Error, CustomStringConvertible {
    public let description: String

    public init(_ description: String) {
        self.description = description
    }
}

/// A headless Chromium opened on one page and driven over the Chrome DevTools Protocol, as a user would: it
/// evaluates JavaScript in the page (`evaluate`), and types keys (`press`, `type`) as real input events. The
/// browser's WebSocket endpoint comes from the `DevToolsActivePort` file Chromium writes into its profile when
/// started with `--remote-debugging-port=0`; one session is attached to the page target (`flatten`).
public final class DevToolsPage: Sendable {
    /// Debian's Chromium.
    public static let chromium = "/usr/bin/chromium"

    /// Why no Chromium can be driven here, or nil.
    public static var missing: String? {
        FileManager.default.isExecutableFile(atPath: chromium)
            ? nil : "Debian's chromium is missing (`make deps` installs it)"
    }

    /// The Chromium process.
    public let process: BackgroundProcess
    /// The folder of its profile and log (every helper process of this Chromium names it on its command line).
    public let folder: String
    private let connection: SignalingConnection
    private let session: String
    private let waiting: NIOLockedValueBox<Waiting>

    private struct Waiting {
        var nextID = 1
        var replies: [Int: CheckedContinuation<String, any Error>] = [:]
        var closed = false
    }

    private init(
        process: BackgroundProcess, folder: String, connection: SignalingConnection, session: String,
        waiting: NIOLockedValueBox<Waiting>
    ) {
        self.process = process
        self.folder = folder
        self.connection = connection
        self.session = session
        self.waiting = waiting
    }

    /// Starts a headless Chromium (fake camera and microphone, its certificate errors ignored: the relay's own is
    /// self-signed) on `url` and attaches to its page; `arguments` are more Chromium flags (a window size, the fake
    /// devices' files).
    public static func open(_ url: String, tag: String, arguments: [String] = []) async throws -> DevToolsPage {
        if let missing { throw DevToolsError(missing) }
        let folder = NSTemporaryDirectory() + "parley-devtools-\(tag)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try? FileManager.default.removeItem(atPath: folder)
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let process = try BackgroundProcess(
            chromium,
            [
                "--headless=new", "--no-sandbox", "--no-first-run", "--disable-gpu", "--mute-audio",
                "--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream", "--ignore-certificate-errors",
                "--allow-loopback-in-peer-connection", "--disable-features=WebRtcHideLocalIpsWithMdns",
                "--autoplay-policy=no-user-gesture-required", "--remote-debugging-port=0",
                "--remote-allow-origins=*", "--user-data-dir=\(folder)/profile",
            ] + arguments + [url], outputPath: "\(folder)/chromium.log")
        do {
            let (port, path) = try await endpoint(profile: "\(folder)/profile", process: process)
            let waiting = NIOLockedValueBox(Waiting())
            let connection = try await SignalingConnection.connect(
                to: ServerAddress(host: "127.0.0.1", port: port), path: path,
                on: MultiThreadedEventLoopGroup.singleton.next(), timeout: .seconds(10)
            ) { text in
                Self.received(text, waiting: waiting)
            }.get()
            let targets = try await call(connection, waiting, "Target.getTargets", [:], session: nil)
            let pages = ((targets["targetInfos"] as? [[String: Any]]) ?? []).filter { $0["type"] as? String == "page" }
            guard let target = pages.first?["targetId"] as? String else {
                throw DevToolsError("Chromium shows no page: \(targets)")
            }
            let attached = try await call(
                connection, waiting, "Target.attachToTarget", ["targetId": target, "flatten": true], session: nil)
            guard let session = attached["sessionId"] as? String else {
                throw DevToolsError("Chromium did not attach to its page: \(attached)")
            }
            return DevToolsPage(
                process: process, folder: folder, connection: connection, session: session, waiting: waiting)
        } catch {
            process.stop()
            try? FileManager.default.removeItem(atPath: folder)
            throw error
        }
    }

    /// The port and path Chromium's DevTools listens on, once it wrote them (within 20 s).
    private static func endpoint(profile: String, process: BackgroundProcess) async throws -> (Int, String) {
        let file = profile + "/DevToolsActivePort"
        for _ in 0..<200 {
            if let text = try? String(contentsOfFile: file, encoding: .utf8) {
                let lines = text.split(separator: "\n").map(String.init)
                if lines.count >= 2, let port = Int(lines[0]) { return (port, lines[1]) }
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw DevToolsError("Chromium wrote no DevToolsActivePort within 20 s: \(process.output.suffix(1_500))")
    }

    private static func received(_ text: String?, waiting: NIOLockedValueBox<Waiting>) {
        guard let text else {
            let pending = waiting.withLockedValue { state in
                state.closed = true
                defer { state.replies = [:] }
                return Array(state.replies.values)
            }
            for reply in pending { reply.resume(throwing: DevToolsError("Chromium closed its DevTools connection")) }
            return
        }
        guard let message = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any],
            let id = (message["id"] as? NSNumber)?.intValue
        else { return }  // an event: none is enabled but the target's own
        guard let reply = waiting.withLockedValue({ $0.replies.removeValue(forKey: id) }) else { return }
        reply.resume(returning: text)
    }

    private static func call(
        _ connection: SignalingConnection, _ waiting: NIOLockedValueBox<Waiting>, _ method: String,
        _ params: [String: Any], session: String?
    ) async throws -> [String: Any] {
        let text: String = try await withCheckedThrowingContinuation { continuation in
            let id: Int? = waiting.withLockedValue { state in
                guard !state.closed else { return nil }
                defer { state.nextID += 1 }
                state.replies[state.nextID] = continuation
                return state.nextID
            }
            guard let id else {
                return continuation.resume(throwing: DevToolsError("Chromium closed its DevTools connection"))
            }
            var message: [String: Any] = ["id": id, "method": method, "params": params]
            if let session { message["sessionId"] = session }
            guard let data = try? JSONSerialization.data(withJSONObject: message) else {
                waiting.withLockedValue { _ = $0.replies.removeValue(forKey: id) }
                return continuation.resume(throwing: DevToolsError("\(method): parameters are not JSON"))
            }
            connection.sendRawText(String(decoding: data, as: UTF8.self))
        }
        let message = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] ?? [:]
        if let error = message["error"] as? [String: Any] {
            throw DevToolsError("DevTools \(method): \(error["message"] ?? error)")
        }
        return (message["result"] as? [String: Any]) ?? [:]
    }

    /// Sends one command to the page's session and returns its result.
    public func call(_ method: String, _ params: [String: Any] = [:]) async throws -> [String: Any] {
        try await Self.call(connection, waiting, method, params, session: session)
    }

    /// Evaluates `expression` in the page (a promise is awaited) and returns its value as JSON text, or throws what
    /// the page threw.
    public func evaluate(_ expression: String) async throws -> String {
        let result = try await call(
            "Runtime.evaluate",
            [
                "expression": "(async () => JSON.stringify(await (\(expression))))()", "awaitPromise": true,
                "returnByValue": true,
            ])
        if let exception = result["exceptionDetails"] as? [String: Any] {
            let thrown = (exception["exception"] as? [String: Any])?["description"] ?? exception["text"] ?? exception
            throw DevToolsError("the page threw: \(thrown)")
        }
        return ((result["result"] as? [String: Any])?["value"] as? String) ?? "null"
    }

    /// Evaluates `expression` and decodes its value.
    public func evaluate<Value: Decodable>(_ expression: String, as type: Value.Type) async throws -> Value {
        let text = try await evaluate(expression)
        do {
            return try JSONDecoder().decode(Value.self, from: Data(text.utf8))
        } catch {
            throw DevToolsError("\(expression) gave \(text.prefix(2_000)), not a \(Value.self): \(error)")
        }
    }

    /// Presses and releases one key, as the keyboard would: a printable character, or a named key (`Escape`,
    /// `Enter`).
    public func press(_ key: String) async throws {
        let named: [String: (code: String, keyCode: Int, text: String?)] = [
            "Escape": ("Escape", 27, nil), "Enter": ("Enter", 13, "\r"),
        ]
        var down: [String: Any] = ["type": "keyDown", "key": key]
        if let special = named[key] {
            down["code"] = special.code
            down["windowsVirtualKeyCode"] = special.keyCode
            if let text = special.text { down["text"] = text }
        } else {
            down["text"] = key
            if let scalar = key.unicodeScalars.first, key.unicodeScalars.count == 1, scalar.isASCII {
                let upper = Character(scalar).uppercased()
                if scalar.properties.isAlphabetic { down["code"] = "Key" + upper }
                if ("0"..."9").contains(key) { down["code"] = "Digit" + key }
                down["windowsVirtualKeyCode"] = Int(upper.unicodeScalars.first!.value)
            }
        }
        _ = try await call("Input.dispatchKeyEvent", down)
        var up = down
        up["type"] = "keyUp"
        up.removeValue(forKey: "text")
        _ = try await call("Input.dispatchKeyEvent", up)
    }

    /// Types `text` into the focused field.
    public func type(_ text: String) async throws {
        _ = try await call("Input.insertText", ["text": text])
    }

    /// Stops Chromium and removes its profile.
    public func stop() {
        connection.close()
        process.stop()
        try? FileManager.default.removeItem(atPath: folder)
    }
}
