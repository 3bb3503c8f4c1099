import Foundation
import Testing

@testable import ParleyRelay

/// The browser guests' page on the relay's port: which address answers with what (`WebPage.answer`), and the
/// shipped files read from Resources/web.
struct WebPageTests {
    static let page = WebPage(files: [
        "room.html": Array("<page>".utf8), "room.js": Array("script".utf8), "room.css": Array("style".utf8),
    ])

    struct Row: CustomTestStringConvertible, Sendable {
        var method = "GET"
        var uri: String
        var status: Int
        var type: String
        /// The body, or a part of it for the texts.
        var body: String
        var testDescription: String { "\(method) \(uri)" }
    }

    static let html = "text/html; charset=utf-8"
    static let text = "text/plain; charset=utf-8"
    static let rows = [
        Row(uri: "/standup", status: 200, type: html, body: "<page>"),
        Row(uri: "/standup?name=bob&join=1", status: 200, type: html, body: "<page>"),
        Row(uri: "/design%20review", status: 200, type: html, body: "<page>"),
        Row(uri: "/", status: 200, type: html, body: "<page>"),
        Row(method: "HEAD", uri: "/standup", status: 200, type: html, body: "<page>"),
        Row(uri: "/web/room.js", status: 200, type: "text/javascript; charset=utf-8", body: "script"),
        Row(uri: "/web/room.css?v=2", status: 200, type: "text/css; charset=utf-8", body: "style"),
        Row(uri: "/web/missing.js", status: 404, type: text, body: "no file /web/missing.js here"),
        Row(uri: "/web/../../etc/passwd", status: 404, type: text, body: "no file"),
        Row(uri: "/a/b", status: 404, type: text, body: "a room name holds no slash"),
        Row(uri: "/%E6%97%A5%E6%9C%AC", status: 404, type: text, body: "names no room: Room name"),
        Row(uri: "/a%zz", status: 400, type: text, body: "broken %-escape"),
        Row(uri: "*", status: 400, type: text, body: "names a path from /"),
        Row(method: "POST", uri: "/standup", status: 405, type: text, body: "the web page answers GET"),
    ]

    @Test(arguments: rows)
    func addresses(_ row: Row) {
        let answer = Self.page.answer(method: row.method, uri: row.uri)
        #expect(answer.status == row.status)
        #expect(answer.contentType == row.type)
        let body = String(decoding: answer.body, as: UTF8.self)
        #expect(row.type == Self.text ? body.contains(row.body) : body == row.body, "\(body)")
    }

    @Test func withoutItsFolderEveryRoomSaysSo() {
        let answer = WebPage(missing: "cannot read /nowhere").answer(method: "GET", uri: "/standup")
        #expect(answer.status == 404)
        #expect(String(decoding: answer.body, as: UTF8.self).contains("serves no web page (cannot read /nowhere)"))
    }

    @Test func theShippedPageIsRead() throws {
        let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Resources/web").path
        let page = try WebPage(folder: folder)
        #expect(
            Set(page.files.keys) == ["room.html", "room.css", "room.js", "layout.js", "sframe.js", "sframe-worker.js"])
        let html = String(decoding: page.answer(method: "GET", uri: "/standup").body, as: UTF8.self)
        #expect(html.contains("<script type=\"module\" src=\"/web/room.js\">"))
        #expect(throws: WebPage.LoadError.self) { try WebPage(folder: "/nonexistent-parley-web") }
    }
}
