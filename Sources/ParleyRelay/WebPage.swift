import Foundation
import ParleyWire

/// The page a browser guest joins a room from (issue 53), served on the relay's signaling port: `/ROOM` (and `/`,
/// where the page asks for the room) is the page, `/web/FILE` its script and style. The files are read once when the
/// relay starts (`Resources/web`), so a request never touches the disk.
public struct WebPage: Sendable {
    /// One answer to an HTTP request.
    public struct Answer: Sendable, Equatable {
        /// The status code.
        public var status: Int
        /// The `Content-Type`.
        public var contentType: String
        /// The body.
        public var body: [UInt8]
    }

    /// Why the page could not be read.
    public struct LoadError: Error, CustomStringConvertible, Sendable {
        public var description: String
    }

    /// The page's files by name (`room.html`, `room.js`, …).
    let files: [String: [UInt8]]
    /// Why there is no page (the relay was started without its web folder), or nil.
    let missing: String?

    /// The file every room's address answers with.
    static let pageFile = "room.html"
    /// At most this many bytes in all: the folder holds a few small files.
    static let maximumBytes = 1 << 20
    /// The folder prefix of the page's own files; a room name never holds a slash, so it never shadows a room.
    static let assetPrefix = "/web/"

    /// No page: every room address answers 404 with `reason`.
    public init(missing reason: String) {
        files = [:]
        missing = reason
    }

    /// The page from files in memory (the tests).
    init(files: [String: [UInt8]]) {
        self.files = files
        missing = nil
    }

    /// Reads the page's files (`.html`, `.js`, `.css`) from `folder`.
    public init(folder: String) throws(LoadError) {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: folder)
        } catch {
            throw LoadError(description: "cannot read the web page's folder \(folder): \(error.localizedDescription)")
        }
        var files: [String: [UInt8]] = [:]
        var total = 0
        for name in names.sorted() where Self.contentType(of: name) != nil {
            guard let data = FileManager.default.contents(atPath: folder + "/" + name) else {
                throw LoadError(description: "cannot read \(folder)/\(name)")
            }
            total += data.count
            guard total <= Self.maximumBytes else {
                throw LoadError(
                    description: "the web page's files in \(folder) are over \(Self.maximumBytes) bytes (the limit)")
            }
            files[name] = Array(data)
        }
        guard files[Self.pageFile] != nil else {
            throw LoadError(description: "\(folder) holds no \(Self.pageFile)")
        }
        self.files = files
        missing = nil
    }

    static func contentType(of name: String) -> String? {
        if name.hasSuffix(".html") { return "text/html; charset=utf-8" }
        if name.hasSuffix(".js") { return "text/javascript; charset=utf-8" }
        if name.hasSuffix(".css") { return "text/css; charset=utf-8" }
        return nil
    }

    /// The answer to `method` on `uri` (its query and fragment ignored).
    public func answer(method: String, uri: String) -> Answer {
        guard method == "GET" || method == "HEAD" else {
            return Self.text(
                405,
                "Parley relay: the web page answers GET; a Parley client connects with a WebSocket "
                    + "(protocol version \(signalingProtocolVersion)).\n")
        }
        let path = String(uri.prefix { $0 != "?" && $0 != "#" })
        if path.hasPrefix(Self.assetPrefix) {
            let name = String(path.dropFirst(Self.assetPrefix.count))
            guard let body = files[name], let type = Self.contentType(of: name) else {
                return Self.text(404, "Parley relay: no file \(path) here.\n")
            }
            return Answer(status: 200, contentType: type, body: body)
        }
        guard path.hasPrefix("/") else { return Self.text(400, "Parley relay: a request names a path from /.\n") }
        let encoded = path.dropFirst()
        guard !encoded.contains("/") else {
            return Self.text(
                404,
                "Parley relay: no page at \(path); a room's page is at /ROOM (a room name holds no slash).\n")
        }
        if !encoded.isEmpty {
            guard let room = String(encoded).removingPercentEncoding else {
                return Self.text(400, "Parley relay: \(path) has a broken %-escape (%20 is a space).\n")
            }
            do {
                _ = try RoomName.validate(room)
            } catch {
                return Self.text(404, "Parley relay: \(path) names no room: \(error.description)\n")
            }
        }
        guard let page = files[Self.pageFile] else {
            return Self.text(
                404, "Parley relay: this relay serves no web page (\(missing ?? "none loaded")); join with Parley.\n")
        }
        return Answer(status: 200, contentType: "text/html; charset=utf-8", body: page)
    }

    static func text(_ status: Int, _ body: String) -> Answer {
        Answer(status: status, contentType: "text/plain; charset=utf-8", body: Array(body.utf8))
    }
}
