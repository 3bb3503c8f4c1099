import Testing

@testable import ParleyWire

struct SignalingTests {
    static let ssrcs = MemberSSRCs(block: 0x1000_0004)
    static let alice = MemberInfo(
        id: 7, name: "alice", role: .broadcaster, audioMuted: false, videoMuted: true,
        ssrcs: ssrcs)

    static let clientMessages: [(String, ClientMessage)] = [
        ("join", .join(JoinRequest(room: "standup", name: "alice", role: .audience, audioMuted: true))),
        ("leave", .leave),
        ("mute audio only", .mute(MuteChange(audio: true))),
        ("mute both", .mute(MuteChange(audio: false, video: true))),
        ("chat with ref", .chat(ChatSend(text: "héllo \"world\" ✓", ref: "c1"))),
        ("chat without ref", .chat(ChatSend(text: "hi"))),
        ("stats", .stats(SenderStats(width: 640, height: 360, fps: 29.5, videoKbps: 612.25, audioKbps: 32))),
        ("ping", .ping(KeepAlive(token: UInt64.max))),
        ("role", .role(RoleRequest(role: .audience))),
    ]

    @Test(arguments: clientMessages)
    func clientMessageRoundTrips(name: String, message: ClientMessage) throws {
        let text = message.encoded()
        #expect(try ClientMessage.decode(text) == message, "\(name): \(text)")
    }

    static let serverMessages: [(String, ServerMessage)] = [
        (
            "joined",
            .joined(
                JoinedRoom(
                    room: "standup", you: alice, members: [alice],
                    media: MediaGrant(udpPort: 7878, credential: "00112233445566778899aabbccddeeff", ssrcs: ssrcs),
                    livenessTimeout: 10))
        ),
        ("member-joined", .memberJoined(MemberJoined(member: alice))),
        ("member-left", .memberLeft(MemberLeft(id: 7, reason: .timeout))),
        ("mute", .mute(MemberMute(id: 7, audio: true, video: false))),
        ("chat", .chat(ChatDelivery(seq: 3, from: 7, name: "alice", text: "hi", time: 1_700_000_000_000, ref: "c1"))),
        (
            "stats",
            .stats(
                MemberStats(
                    id: 7,
                    stats: SenderStats(
                        width: 320, height: 180, fps: 15, videoKbps: 300,
                        audioKbps: 32)))
        ),
        ("role", .role(MemberRoleChange(id: 7, role: .audience))),
        ("pong", .pong(KeepAlive(token: 42))),
        ("error", .error(SignalingError(.notJoined, "join a room first"))),
    ]

    @Test(arguments: serverMessages)
    func serverMessageRoundTrips(name: String, message: ServerMessage) throws {
        let text = message.encoded()
        #expect(try ServerMessage.decode(text) == message, "\(name): \(text)")
    }

    @Test func exactBytesOnTheWire() {
        #expect(ClientMessage.leave.encoded() == #"{"type":"leave","v":1}"#)
        #expect(ClientMessage.mute(MuteChange(audio: true)).encoded() == #"{"audio":true,"type":"mute","v":1}"#)
        #expect(
            ServerMessage.memberLeft(MemberLeft(id: 9, reason: .quit)).encoded()
                == #"{"id":9,"reason":"quit","type":"member-left","v":1}"#)
        #expect(
            ClientMessage.stats(SenderStats(width: 1, height: 1, fps: .nan, videoKbps: .infinity, audioKbps: 1))
                .encoded() == #"{"audioKbps":1,"fps":0,"height":1,"type":"stats","v":1,"videoKbps":0,"width":1}"#)
    }

    @Test func joinDefaultsOptionalFields() throws {
        let message = try ClientMessage.decode(#"{"v":1,"type":"join","room":"r","name":"n"}"#)
        #expect(message == .join(JoinRequest(room: "r", name: "n", role: .broadcaster)))
    }

    static let badClientInput: [(String, String, SignalingErrorCode, String)] = [
        ("empty", "", .badJSON, "message is empty; expected a JSON object"),
        ("whitespace", "  \n", .badJSON, "message is empty; expected a JSON object"),
        ("not json", "hello", .badJSON, "message is not valid JSON"),
        ("truncated", #"{"v":1,"type":"jo"#, .badJSON, "message is not valid JSON"),
        ("array", "[1,2]", .badJSON, "message must be a JSON object"),
        ("string", #""join""#, .badJSON, "message must be a JSON object"),
        ("no version", #"{"type":"leave"}"#, .unsupportedVersion, #"missing "v"; this relay speaks version 1"#),
        (
            "string version", #"{"v":"1","type":"leave"}"#, .unsupportedVersion,
            #""v" must be a whole number; this relay speaks version 1"#
        ),
        (
            "future version", #"{"v":2,"type":"leave"}"#, .unsupportedVersion,
            "version 2 is not supported; this relay speaks version 1"
        ),
        ("no type", #"{"v":1}"#, .unknownType, #"missing "type""#),
        ("numeric type", #"{"v":1,"type":5}"#, .unknownType, #""type" must be a string"#),
        (
            "unknown type", #"{"v":1,"type":"dance"}"#, .unknownType,
            #"unknown message type "dance"; expected join, leave, mute, chat, stats, ping, role, challenge, allow, remove, "#
                + #"readmit, tiles, video-sending, recording, recording-policy, control, typing or controller"#
        ),
        ("join without room", #"{"v":1,"type":"join","name":"a"}"#, .badField, #"join needs field "room""#),
        (
            "join numeric name", #"{"v":1,"type":"join","room":"r","name":3}"#, .badField,
            #"join field "name" must be a string"#
        ),
        (
            "join null room", #"{"v":1,"type":"join","room":null,"name":"a"}"#, .badField,
            #"join field "room" must be a string, not null"#
        ),
        (
            "join bad role", #"{"v":1,"type":"join","room":"r","name":"a","role":"king"}"#, .badField,
            #"join field "role" is invalid: "king" is not one of "broadcaster", "audience""#
        ),
        ("mute nothing", #"{"v":1,"type":"mute"}"#, .badField, #"mute needs "audio" or "video" (true or false)"#),
        (
            "mute string", #"{"v":1,"type":"mute","audio":"yes"}"#, .badField,
            #"mute field "audio" must be true or false"#
        ),
        ("chat blank", #"{"v":1,"type":"chat","text":"  "}"#, .badField, #"chat "text" is empty"#),
        ("chat missing", #"{"v":1,"type":"chat"}"#, .badField, #"chat needs field "text""#),
        ("ping negative", #"{"v":1,"type":"ping","token":-1}"#, .badField, "ping has a number out of range"),
        (
            "sealed chat with text", #"{"v":1,"type":"chat","text":"hi","sealed":"AAAA"}"#, .badField,
            #"chat has both "text" and "sealed"; a sealed line has no text"#
        ),
        (
            "sealed chat empty", #"{"v":1,"type":"chat","sealed":""}"#, .badField,
            #"chat "sealed" has 0 characters; it must have 1 to 11000"#
        ),
        ("allow without id", #"{"v":1,"type":"allow"}"#, .badField, #"allow needs field "id""#),
        (
            "remove string id", #"{"v":1,"type":"remove","id":"bob"}"#, .badField,
            #"remove field "id" must be a whole number"#
        ),
        (
            "stats text fps", #"{"v":1,"type":"stats","width":1,"height":1,"fps":"x","videoKbps":1,"audioKbps":1}"#,
            .badField, #"stats field "fps" must be a number"#
        ),
    ]

    @Test(arguments: badClientInput)
    func badClientInputIsRejectedWithAClearMessage(
        name: String, text: String, code: SignalingErrorCode,
        message: String
    ) {
        do {
            let parsed = try ClientMessage.decode(text)
            Issue.record("\(name): parsed as \(parsed)")
        } catch {
            #expect(error.code == code, "\(name)")
            #expect(error.message.hasPrefix(message), "\(name): \(error.message)")
        }
    }

    @Test func accessAndSealedChatMessagesRoundTrip() throws {
        let client: [ClientMessage] = [
            .challenge, .allow(MemberRef(id: 7)), .remove(MemberRef(id: 8)),
            .chat(ChatSend(text: "", sealed: "c2VhbGVk")),
            .join(JoinRequest(room: "r", name: "n", proof: "ab", verifier: "cd", encryption: "AES-128-GCM")),
        ]
        for message in client { #expect(try ClientMessage.decode(message.encoded()) == message) }
        let server: [ServerMessage] = [
            .challenge(AccessChallenge(nonce: "00ff")), .host(MemberRef(id: 1)), .hand(MemberRef(id: 2)),
            .removed(Removal(by: "alice", message: "alice, the host, removed you from r")),
            .chat(ChatDelivery(seq: 1, from: 2, name: "bob", text: "", time: 0, sealed: "c2VhbGVk")),
        ]
        for message in server { #expect(try ServerMessage.decode(message.encoded()) == message) }
        #expect(
            try ClientMessage.decode(#"{"v":1,"type":"chat","sealed":"QUJD"}"#)
                == .chat(ChatSend(text: "", sealed: "QUJD")))
    }

    @Test func oversizedAndOverlongInputIsRejected() {
        let big = #"{"v":1,"type":"chat","text":""# + String(repeating: "a", count: maxSignalingMessageBytes) + #""}"#
        #expect(throws: SignalingError(.tooLarge, "message is \(big.utf8.count) bytes; the limit is 16384")) {
            try ClientMessage.decode(big)
        }
        let long = String(repeating: "é", count: maxChatCharacters + 1)
        #expect(throws: SignalingError(.badField, "chat \"text\" has 2001 characters; the limit is 2000")) {
            try ClientMessage.decode(ClientMessage.chat(ChatSend(text: long)).encoded())
        }
    }

    @Test func nestedFieldErrorsNameThePath() {
        let text =
            #"{"v":1,"type":"member-joined","member":{"id":1,"name":"a","role":"audience","audioMuted":false,"#
            + #""videoMuted":false,"ssrcs":{"audio":1,"video":"x","videoLow":3}}}"#
        #expect(throws: SignalingError(.badField, #"member-joined field "member.ssrcs.video" must be a whole number"#))
        {
            try ServerMessage.decode(text)
        }
    }

    @Test func randomBytesNeverCrashTheParser() {
        var rng = SignalingFuzzRandom(seed: 2026)
        let alphabet = Array(#"{}[]":,0123456789.-truefalsnul vtypejoinchat\"#.utf8)
        for _ in 0..<2000 {
            let length = Int(rng.next() % 64)
            let bytes = (0..<length).map { _ in alphabet[Int(rng.next() % UInt64(alphabet.count))] }
            _ = try? ClientMessage.decode(String(decoding: bytes, as: UTF8.self))
            _ = try? ServerMessage.decode(String(decoding: bytes, as: UTF8.self))
        }
    }
}

/// Small deterministic generator for fuzz-style tests.
private struct SignalingFuzzRandom: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

struct ChatHistoryFitTests {
    func line(_ index: Int, characters: Int) -> ChatHistoryLine {
        ChatHistoryLine(
            kind: "message", from: "carol (guest)", text: "\(index) " + String(repeating: "é", count: characters),
            time: Int64(index))
    }

    @Test func aRoomsHistoryFitsOneSignalingMessageKeepingTheNewestLines() throws {
        // A hundred lines of 2,000 characters would be about 400 KB: the newest that fit go, and every client reads it.
        let long = (0..<150).map { line($0, characters: 2000) }
        let fitted = ChatHistory.fitting(room: "standup", lines: long)
        let text = ServerMessage.chatHistory(fitted).encoded()
        #expect(text.utf8.count <= maxSignalingMessageBytes)
        #expect(!fitted.lines.isEmpty && fitted.lines.last == long.last, "the newest line is kept")
        #expect(try ServerMessage.decode(text) == .chatHistory(fitted))
        // Short lines: the newest hundred, all of them.
        let short = (0..<150).map { line($0, characters: 10) }
        #expect(
            ChatHistory.fitting(room: "standup", lines: short).lines == Array(short.suffix(ChatHistory.maximumLines)))
    }
}
