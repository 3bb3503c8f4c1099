import Foundation
import NIOCore
import NIOPosix
import ParleyTestSupport
import Testing

/// The lab's Chromium call server (`LabSignaling`) on loopback: messages reach the member named, once; reports are
/// kept; what is malformed or too large is refused with a status that says so and counted.
struct LabSignalingTests {
    /// One HTTP/1.1 request with `Connection: close`; the whole reply.
    func exchange(_ method: String, _ path: String, body: String = "", port: Int) async throws -> String {
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connect(host: "127.0.0.1", port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        return try await channel.executeThenClose { inbound, outbound in
            try await outbound.write(
                ByteBuffer(
                    string: "\(method) \(path) HTTP/1.1\r\nHost: lab\r\nConnection: close\r\n"
                        + "Content-Length: \(body.utf8.count)\r\n\r\n\(body)"))
            var reply = ""
            for try await chunk in inbound { reply += String(buffer: chunk) }
            return reply
        }
    }

    func status(_ reply: String) -> String { String(reply.split(separator: "\r\n").first ?? "") }
    func body(_ reply: String) -> String {
        reply.range(of: "\r\n\r\n").map { String(reply[$0.upperBound...]) } ?? ""
    }

    @Test func signalsReachTheMemberNamedOnceAndReportsAreKept() async throws {
        let server = try await LabSignaling.start(in: nil, host: "127.0.0.1", port: 0, page: ChromiumCall.page)
        defer { Task { await server.stop() } }
        let page = try await exchange("GET", "/call.html", port: server.port)
        #expect(status(page) == "HTTP/1.1 200 OK")
        #expect(body(page).contains("RTCPeerConnection"))

        let offer = #"{"from":"alice","description":{"type":"offer","sdp":"v=0"}}"#
        #expect(
            status(try await exchange("POST", "/signal?from=alice&to=bob", body: offer, port: server.port))
                == "HTTP/1.1 204 No Content")
        #expect(body(try await exchange("GET", "/signal?for=alice", port: server.port)) == "[]")
        #expect(body(try await exchange("GET", "/signal?for=bob", port: server.port)) == "[\(offer)]")
        #expect(body(try await exchange("GET", "/signal?for=bob", port: server.port)) == "[]")

        let report = """
            {"me":"bob","ms":1000,"sentVideoBytes":75000,"sentAudioBytes":4000,"targetBps":600000,
            "availableOutgoingBps":900000,"peers":{"alice":{"framesDecoded":30,"framesPresented":30,"freezes":0,
            "frozenMs":0,"statsFreezes":0,"statsFrozenMs":0,"concealedSamples":0,"totalSamples":48000,
            "concealmentEvents":0,"firstAudioMs":400,"videoPacketsLost":0,"frameWidth":640,"path":"relay/udp"}}}
            """
        #expect(
            status(try await exchange("POST", "/stats?from=bob", body: report, port: server.port))
                == "HTTP/1.1 204 No Content")
        #expect(server.reports["bob"]?.peers["alice"]?.framesDecoded == 30)
        #expect(server.reports["bob"]?.availableOutgoingBps == 900_000)
        #expect(server.refused == 0)
    }

    @Test func garbageIsRefusedNamingWhatWasWrong() async throws {
        let server = try await LabSignaling.start(in: nil, host: "127.0.0.1", port: 0, page: ChromiumCall.page)
        defer { Task { await server.stop() } }
        let notAReport = try await exchange("POST", "/stats?from=bob", body: "{\"me\":1}", port: server.port)
        #expect(status(notAReport) == "HTTP/1.1 400 Bad Request")
        #expect(body(notAReport).contains("not a report"))
        let nobody = try await exchange("POST", "/signal?from=alice", body: "{}", port: server.port)
        #expect(body(nobody).contains("no to="))
        let unknown = try await exchange("GET", "/etc/passwd", port: server.port)
        #expect(status(unknown) == "HTTP/1.1 404 Not Found")
        let large = String(repeating: "x", count: 300 * 1024)
        let tooLarge = try await exchange("POST", "/signal?from=alice&to=bob", body: large, port: server.port)
        #expect(status(tooLarge) == "HTTP/1.1 413 Payload Too Large")
        #expect(body(try await exchange("GET", "/signal?for=bob", port: server.port)) == "[]")
        for _ in 0..<512 {
            _ = try await exchange("POST", "/signal?from=alice&to=bob", body: "{}", port: server.port)
        }
        let full = try await exchange("POST", "/signal?from=alice&to=bob", body: "{}", port: server.port)
        #expect(body(full).contains("bob's queue is full"))
        // A call names at most 64 members: the 65th name is refused, saying so.
        for index in 0..<64 {
            _ = try await exchange("POST", "/error?from=m\(index)", body: "x", port: server.port)
        }
        let crowd = try await exchange("POST", "/error?from=m64", body: "x", port: server.port)
        #expect(body(crowd) == "more than 64 members")
        #expect(server.errors.count == 64)
        #expect(server.refused == 6)
    }
}
