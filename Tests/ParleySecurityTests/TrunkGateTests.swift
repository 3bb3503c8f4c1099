import Foundation
import Testing

@testable import ParleySecurity

#if canImport(Glibc)
import Glibc
#endif

/// The trunks' authentication between the nodes of a cluster: hellos and control messages carry the cluster
/// secret's HMAC, and everything else about them is checked too.
struct TrunkGateTests {
    static let secret = try! ClusterSecret(bytes: Array("0123456789abcdef0123456789abcdef".utf8))
    static let otherSecret = try! ClusterSecret(bytes: Array("fedcba9876543210fedcba9876543210".utf8))
    static let now: Int64 = 1_790_000_000_000
    static let nonce = [UInt8](repeating: 7, count: 16)

    func gate(_ id: String, _ secret: ClusterSecret = secret, boot: Int64 = now) throws -> TrunkGate {
        try TrunkGate(nodeID: id, boot: boot, secret: secret)
    }

    @Test func aHelloIsAcceptedOnceAndAnswered() throws {
        let a = try gate("a")
        var b = try gate("b")
        let hello = a.hello(to: "b", now: Self.now, nonce: Self.nonce)
        let (kind, accepted) = try b.accept(hello: hello, now: Self.now + 40)
        #expect(kind == .hello && accepted == TrunkHello(from: "a", to: "b", time: Self.now, nonce: Self.nonce))
        #expect(throws: TrunkRefusal.replayed(.hello)) { try b.accept(hello: hello, now: Self.now + 50) }
        var a2 = a
        let (answerKind, answer) = try a2.accept(hello: b.answer(accepted, now: Self.now + 60), now: Self.now + 70)
        #expect(answerKind == .helloAnswer && answer.from == "b" && answer.nonce == Self.nonce)
    }

    /// The hello a test starts from, changed as `name` says.
    static func changed(_ name: String, _ hello: [UInt8]) -> [UInt8] {
        var hello = hello
        switch name {
        case "another secret":
            hello = try! TrunkGate(nodeID: "a", boot: 0, secret: otherSecret).hello(to: "b", now: now, nonce: nonce)
        case "a flipped time bit": hello[5] ^= 1
        case "a flipped MAC bit": hello[hello.count - 1] ^= 1
        case "cut short": hello.removeLast(31)
        case "a byte more": hello.append(0)
        case "an RTP packet": hello = [0x80, 96] + [UInt8](repeating: 0, count: 10)
        case "version 2": hello[2] = 2
        case "kind 9": hello[3] = 9
        case "empty node id": hello = Array(hello[0..<28]) + [0] + Array(hello[30...])
        default: break
        }
        return hello
    }

    @Test(
        "hellos refused, each with what was wrong",
        arguments: [
            ("another secret", "trunk hello does not carry the cluster secret's HMAC (wrong or no secret)"),
            ("a flipped time bit", "trunk hello does not carry the cluster secret's HMAC (wrong or no secret)"),
            ("a flipped MAC bit", "trunk hello does not carry the cluster secret's HMAC (wrong or no secret)"),
            ("cut short", "trunk hello truncated: needed 32 bytes, 1 left"),
            ("a byte more", "trunk hello has 1 bytes after its end"),
            ("an RTP packet", "not a trunk datagram (no \"PT\" magic)"),
            ("version 2", "trunk version 2, this relay speaks 1"),
            ("kind 9", "unknown trunk datagram kind 9"),
            ("empty node id", "trunk node id refused: 0 bytes, not 1 to 128"),
        ])
    func refusedHellos(_ name: String, _ message: String) throws {
        var b = try gate("b")
        let hello = Self.changed(name, try gate("a").hello(to: "b", now: Self.now, nonce: Self.nonce))
        do {
            _ = try b.accept(hello: hello, now: Self.now)
            Issue.record("\(name): accepted")
        } catch {
            #expect(error.description == message, "\(name)")
        }
    }

    @Test func helloForAnotherNodeOrOutOfTimeIsRefused() throws {
        var b = try gate("b")
        let a = try gate("a")
        #expect(throws: TrunkRefusal.wrongRecipient("c")) {
            try b.accept(hello: a.hello(to: "c", now: Self.now, nonce: Self.nonce), now: Self.now)
        }
        #expect(throws: TrunkRefusal.outsideTimeWindow(ageMilliseconds: 30_001)) {
            try b.accept(hello: a.hello(to: "b", now: Self.now, nonce: Self.nonce), now: Self.now + 30_001)
        }
        #expect(throws: TrunkRefusal.outsideTimeWindow(ageMilliseconds: -30_001)) {
            try b.accept(hello: a.hello(to: "b", now: Self.now + 30_001, nonce: Self.nonce), now: Self.now)
        }
    }

    @Test func rememberedNoncesAreBoundedAndExpire() throws {
        var b = try gate("b")
        let a = try gate("a")
        func nonce(_ index: Int) -> [UInt8] {
            withUnsafeBytes(of: index) { Array($0) } + [UInt8](repeating: 0, count: 8)
        }
        for index in 0..<TrunkGate.maximumRememberedNonces {
            _ = try b.accept(hello: a.hello(to: "b", now: Self.now, nonce: nonce(index)), now: Self.now)
        }
        let next = a.hello(to: "b", now: Self.now, nonce: nonce(-1))
        #expect(throws: TrunkRefusal.replayMemoryFull) { try b.accept(hello: next, now: Self.now) }
        // Once the remembered ones left the window (and could no longer be replayed), room again.
        let later = a.hello(to: "b", now: Self.now + 30_001, nonce: nonce(-1))
        _ = try b.accept(hello: later, now: Self.now + 30_001)
    }

    @Test func controlMessagesInOrderOnly() throws {
        var a = try gate("a")
        var b = try gate("b")
        let first = try a.control(Array("layers".utf8))
        let second = try a.control([])
        #expect(
            try b.accept(control: first)
                == TrunkControl(from: "a", boot: Self.now, sequence: 1, payload: Array("layers".utf8)))
        #expect(try b.accept(control: second).sequence == 2)
        #expect(throws: TrunkRefusal.replayed(.control)) { try b.accept(control: first) }
        #expect(throws: TrunkRefusal.replayed(.control)) { try b.accept(control: second) }
        // The node restarted: a later boot starts its sequence again.
        var restarted = try gate("a", boot: Self.now + 5_000)
        #expect(try b.accept(control: restarted.control([1])).sequence == 1)
        #expect(throws: TrunkRefusal.replayed(.control)) { try b.accept(control: try a.control([2])) }
    }

    @Test func forgedOrOversizedControlIsRefused() throws {
        var stranger = try gate("a", Self.otherSecret)
        var b = try gate("b")
        #expect(throws: TrunkRefusal.forged(.control)) { try b.accept(control: try stranger.control([1, 2, 3])) }
        var a = try gate("a")
        #expect(throws: TrunkRefusal.payloadTooLarge(1_201)) {
            try a.control([UInt8](repeating: 0, count: TrunkGate.maximumControlPayload + 1))
        }
        var tampered = try a.control([1, 2, 3])
        tampered[tampered.count - 33] ^= 0xFF  // the payload's last byte
        #expect(throws: TrunkRefusal.forged(.control)) { try b.accept(control: tampered) }
        #expect(throws: TrunkRefusal.unknownKind(1)) {
            try b.accept(control: a.hello(to: "b", now: 0, nonce: Self.nonce))
        }
    }

    @Test func mediaIsFramedUntouched() throws {
        let datagram: [UInt8] = [0x80, 96, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0xAA, 0xBB]
        let framed = TrunkPacket.media(datagram)
        #expect(framed.count == datagram.count + TrunkPacket.mediaOverhead)
        #expect(Array(framed.dropFirst(4)) == datagram)
        #expect(try TrunkPacket.kind(of: framed) == .media)
        // No RTP or RTCP datagram (version 2) is ever a trunk datagram.
        for first in UInt8(0x80)...0xBF { #expect(![first, 0x54, 1, 4].withUnsafeBytes(TrunkPacket.isTrunk)) }
    }

    @Test(
        "secret files refused, each with what to do",
        arguments: [
            (
                "short", "tooshort\n", 0o600,
                "has 8 bytes, fewer than 32 (make one with: openssl rand -hex 32 > FILE; chmod 600 FILE)"
            ),
            ("readable", String(repeating: "a", count: 64), 0o644, "can be read by others (mode 644): chmod 600 it"),
            ("empty", "", 0o600, "has 0 bytes, fewer than 32"),
        ])
    func secretFiles(_ name: String, _ content: String, _ mode: Int, _ message: String) throws {
        let path = NSTemporaryDirectory() + "parley-secret-\(getpid())-\(name)"
        defer { try? FileManager.default.removeItem(atPath: path) }
        try content.write(toFile: path, atomically: false, encoding: .utf8)
        chmod(path, mode_t(mode))
        do {
            _ = try ClusterSecret.load(path: path)
            Issue.record("\(name): accepted")
        } catch {
            #expect(error.description.contains(message), "\(error)")
        }
    }

    @Test func aSecretFileIsItsFirstLineTrimmed() throws {
        let path = NSTemporaryDirectory() + "parley-secret-\(getpid())-good"
        defer { try? FileManager.default.removeItem(atPath: path) }
        try "  0123456789abcdef0123456789abcdef \r\nignored\n".write(toFile: path, atomically: false, encoding: .utf8)
        chmod(path, 0o600)
        let loaded = try ClusterSecret.load(path: path)
        var b = try TrunkGate(nodeID: "b", boot: 0, secret: loaded)
        _ = try b.accept(hello: try gate("a").hello(to: "b", now: Self.now, nonce: Self.nonce), now: Self.now)
        #expect(throws: ClusterSecretError.self) { try ClusterSecret.load(path: path + "-missing") }
    }
}
