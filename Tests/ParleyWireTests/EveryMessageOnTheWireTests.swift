import Foundation
import Testing

@testable import ParleyWire

/// One value of every message case in both directions with the exact JSON it is sent as, and a refusal of each
/// kind with its exact words. The JSON and the refusals were recorded from the code before the case tables (commit
/// 2baf6c3), so a table can change neither a byte on the wire nor a word of an error.
struct EveryMessageOnTheWireTests {
    /// A message, the JSON text it travels as, and the name of the row.
    struct Row<Message: Sendable>: Sendable, CustomTestStringConvertible {
        let name: String
        let message: Message
        let json: String

        init(_ name: String, _ message: Message, _ json: String) {
            self.name = name
            self.message = message
            self.json = json
        }

        var testDescription: String { name }
    }

    /// Text a decoder refuses, with the error it answers.
    struct Refusal<Message: Sendable>: Sendable, CustomTestStringConvertible {
        let name: String
        let text: String
        let error: SignalingError

        init(_ name: String, _ text: String, _ code: SignalingErrorCode, _ message: String) {
            self.name = name
            self.text = text
            self.error = SignalingError(code, message)
        }

        var testDescription: String { name }
    }

    /// The `type` field of a JSON message, read the way a peer reads it.
    struct TypeField: Decodable {
        let type: String
    }

    static func typeField(_ json: String) throws -> String {
        try JSONDecoder().decode(TypeField.self, from: Data(json.utf8)).type
    }

    static let ssrcs = MemberSSRCs(block: 0x1000_0004)
    static let alice = MemberInfo(
        id: 7, name: "alice", role: .broadcaster, audioMuted: false, videoMuted: true,
        ssrcs: ssrcs, account: "alice")
    static let bob = MemberInfo(
        id: 8, name: "bob", role: .audience, audioMuted: true, videoMuted: false,
        ssrcs: MemberSSRCs(block: 0x2000_0008))

    static let client: [Row<ClientMessage>] = [
        Row(
            "join, defaults", .join(JoinRequest(room: "standup", name: "alice")),
            #"{"audioMuted":false,"name":"alice","role":"broadcaster","room":"standup","type":"join","v":1,"#
                + #""videoMuted":false}"#),
        Row(
            "join, every field",
            .join(
                JoinRequest(
                    room: "standup", name: "alice", role: .audience, audioMuted: true, videoMuted: true,
                    resume: ResumeToken(member: 7, credential: "00112233445566778899aabbccddeeff"), proof: "ab12",
                    verifier: "cd34",
                    encryption: "AES-128-GCM", videoKbps: 1200, account: AccountClaim(name: "alice", signature: "c2ln"),
                    hideRoom: true,
                    videoLayers: [VideoLayerSize(width: 1280, height: 720), VideoLayerSize(width: 640, height: 360)],
                    downlinkCounts: true)),
            #"{"account":{"name":"alice","signature":"c2ln"},"audioMuted":true,"downlinkCounts":true,"#
                + #""encryption":"AES-128-GCM","hideRoom":true,"name":"alice","proof":"ab12","#
                + #""resume":{"credential":"00112233445566778899aabbccddeeff","member":7},"role":"audience","#
                + #""room":"standup","type":"join","v":1,"verifier":"cd34","videoKbps":1200,"#
                + #""videoLayers":[{"height":720,"width":1280},{"height":360,"width":640}],"videoMuted":true}"#),
        Row(
            "join, a browser's offer", .join(JoinRequest(room: "standup", name: "bea", webrtc: "v=0\r\n")),
            #"{"audioMuted":false,"name":"bea","role":"broadcaster","room":"standup","type":"join","v":1,"#
                + #""videoMuted":false,"webrtc":"v=0\r\n"}"#),
        Row(
            "leave", .leave,
            #"{"type":"leave","v":1}"#),
        Row(
            "mute, audio only", .mute(MuteChange(audio: true)),
            #"{"audio":true,"type":"mute","v":1}"#),
        Row(
            "mute, both", .mute(MuteChange(audio: false, video: true)),
            #"{"audio":false,"type":"mute","v":1,"video":true}"#),
        Row(
            "chat, text", .chat(ChatSend(text: "héllo \"world\" ✓ </b>", ref: "c1")),
            #"{"ref":"c1","text":"héllo \"world\" ✓ </b>","type":"chat","v":1}"#),
        Row(
            "chat, sealed", .chat(ChatSend(text: "", ref: "c2", sealed: "c2VhbGVk")),
            #"{"ref":"c2","sealed":"c2VhbGVk","text":"","type":"chat","v":1}"#),
        Row(
            "stats", .stats(SenderStats(width: 640, height: 360, fps: 29.5, videoKbps: 612.25, audioKbps: 32)),
            #"{"audioKbps":32,"fps":29.5,"height":360,"type":"stats","v":1,"videoKbps":612.25,"width":640}"#),
        Row(
            "ping", .ping(KeepAlive(token: UInt64.max)),
            #"{"token":18446744073709551615,"type":"ping","v":1}"#),
        Row(
            "role", .role(RoleRequest(role: .broadcaster)),
            #"{"role":"broadcaster","type":"role","v":1}"#),
        Row(
            "challenge", .challenge,
            #"{"type":"challenge","v":1}"#),
        Row(
            "allow", .allow(MemberRef(id: 9)),
            #"{"id":9,"type":"allow","v":1}"#),
        Row(
            "remove", .remove(MemberRef(id: 10)),
            #"{"id":10,"type":"remove","v":1}"#),
        Row(
            "readmit", .readmit(Readmission(name: "m2")),
            #"{"name":"m2","type":"readmit","v":1}"#),
        Row(
            "tiles",
            .tiles(
                TileReport(tiles: [TileSize(id: 7, width: 320, height: 180), TileSize(id: 8, width: 0, height: 0)])),
            #"{"tiles":[{"height":180,"id":7,"width":320},{"height":0,"id":8,"width":0}],"type":"tiles","v":1}"#),
        Row(
            "tiles, with the downlink", .tiles(TileReport(tiles: [], downlinkKbps: 900)),
            #"{"downlinkKbps":900,"tiles":[],"type":"tiles","v":1}"#),
        Row(
            "video-sending", .videoSending(VideoSending(active: [false, true, true])),
            #"{"active":[false,true,true],"type":"video-sending","v":1}"#),
        Row(
            "recording", .recording(RecordingChange(recording: true)),
            #"{"recording":true,"type":"recording","v":1}"#),
        Row(
            "recording-policy", .recordingPolicy(RecordingPolicy(allowed: false)),
            #"{"allowed":false,"type":"recording-policy","v":1}"#),
        Row(
            "control", .control(ControlGrant(terminal: 9, to: 4)),
            #"{"terminal":9,"to":4,"type":"control","v":1}"#),
        Row(
            "typing", .typing(TerminalTyping(terminal: 9, keys: "bHM=")),
            #"{"keys":"bHM=","terminal":9,"type":"typing","v":1}"#),
        Row(
            "controller", .controller(ControllerChange(controller: 4)),
            #"{"controller":4,"type":"controller","v":1}"#),
    ]

    static let server: [Row<ServerMessage>] = [
        Row(
            "joined, defaults",
            .joined(
                JoinedRoom(
                    room: "standup", you: alice, members: [],
                    media: MediaGrant(udpPort: 7878, credential: "00112233445566778899aabbccddeeff", ssrcs: ssrcs),
                    livenessTimeout: 10)),
            #"{"host":0,"livenessTimeout":10,"media":{"credential":"00112233445566778899aabbccddeeff","#
                + #""ssrcs":{"audio":268435460,"video":268435461,"videoLow":268435462},"udpPort":7878},"members":[],"#
                + #""openStage":false,"passwordProtected":false,"room":"standup","type":"joined","v":1,"#
                + #""you":{"account":"alice","audioMuted":false,"id":7,"name":"alice","role":"broadcaster","#
                + #""ssrcs":{"audio":268435460,"video":268435461,"videoLow":268435462},"videoMuted":true}}"#),
        Row(
            "joined, every field",
            .joined(
                JoinedRoom(
                    room: "standup", you: alice, members: [bob],
                    media: MediaGrant(udpPort: 7878, credential: "00112233445566778899aabbccddeeff", ssrcs: ssrcs),
                    livenessTimeout: 12.5, host: 8, passwordProtected: true, openStage: true, encryption: "AES-256-GCM",
                    accountProblem: "this relay keeps no accounts", chatKept: true)),
            #"{"accountProblem":"this relay keeps no accounts","chatKept":true,"encryption":"AES-256-GCM","host":8,"#
                + #""livenessTimeout":12.5,"media":{"credential":"00112233445566778899aabbccddeeff","#
                + #""ssrcs":{"audio":268435460,"video":268435461,"videoLow":268435462},"udpPort":7878},"#
                + #""members":[{"audioMuted":true,"id":8,"name":"bob","role":"audience","ssrcs":{"audio":536870920,"#
                + #""video":536870921,"videoLow":536870922},"videoMuted":false}],"openStage":true,"#
                + #""passwordProtected":true,"room":"standup","type":"joined","v":1,"you":{"account":"alice","#
                + #""audioMuted":false,"id":7,"name":"alice","role":"broadcaster","ssrcs":{"audio":268435460,"#
                + #""video":268435461,"videoLow":268435462},"videoMuted":true}}"#),
        Row(
            "member-joined", .memberJoined(MemberJoined(member: bob)),
            #"{"member":{"audioMuted":true,"id":8,"name":"bob","role":"audience","ssrcs":{"audio":536870920,"#
                + #""video":536870921,"videoLow":536870922},"videoMuted":false},"type":"member-joined","v":1}"#),
        Row(
            "member-left", .memberLeft(MemberLeft(id: 7, reason: .removed)),
            #"{"id":7,"reason":"removed","type":"member-left","v":1}"#),
        Row(
            "mute", .mute(MemberMute(id: 7, audio: true, video: false)),
            #"{"audio":true,"id":7,"type":"mute","v":1,"video":false}"#),
        Row(
            "chat, text",
            .chat(ChatDelivery(seq: 3, from: 7, name: "alice", text: "a/b", time: 1_700_000_000_000, ref: "c1")),
            #"{"from":7,"name":"alice","ref":"c1","seq":3,"text":"a/b","time":1700000000000,"type":"chat","v":1}"#),
        Row(
            "chat, sealed", .chat(ChatDelivery(seq: 4, from: 8, name: "bob", text: "", time: 0, sealed: "c2VhbGVk")),
            #"{"from":8,"name":"bob","sealed":"c2VhbGVk","seq":4,"text":"","time":0,"type":"chat","v":1}"#),
        Row(
            "stats",
            .stats(
                MemberStats(
                    id: 7, stats: SenderStats(width: 320, height: 180, fps: 15, videoKbps: 300.5, audioKbps: 32))),
            #"{"id":7,"stats":{"audioKbps":32,"fps":15,"height":180,"videoKbps":300.5,"width":320},"type":"stats","#
                + #""v":1}"#),
        Row(
            "role", .role(MemberRoleChange(id: 7, role: .audience)),
            #"{"id":7,"role":"audience","type":"role","v":1}"#),
        Row(
            "pong", .pong(KeepAlive(token: 42)),
            #"{"token":42,"type":"pong","v":1}"#),
        Row(
            "error", .error(SignalingError(.notJoined, "join a room first")),
            #"{"code":"not-joined","message":"join a room first","type":"error","v":1}"#),
        Row(
            "challenge", .challenge(AccessChallenge(nonce: "00ff")),
            #"{"nonce":"00ff","type":"challenge","v":1}"#),
        Row(
            "host", .host(MemberRef(id: 8)),
            #"{"id":8,"type":"host","v":1}"#),
        Row(
            "hand", .hand(MemberRef(id: 9)),
            #"{"id":9,"type":"hand","v":1}"#),
        Row(
            "removed", .removed(Removal(by: "alice", message: "alice, the host, removed you from standup")),
            #"{"by":"alice","message":"alice, the host, removed you from standup","type":"removed","v":1}"#),
        Row(
            "chat-history",
            .chatHistory(
                ChatHistory(
                    room: "standup",
                    lines: [
                        ChatHistoryLine(kind: "message", from: "bob", text: "hi", time: 1),
                        ChatHistoryLine(kind: "call-joined", from: "carol (guest)", text: "", time: 2, members: 3),
                    ])),
            #"{"lines":[{"from":"bob","kind":"message","text":"hi","time":1},{"from":"carol (guest)","#
                + #""kind":"call-joined","members":3,"text":"","time":2}],"room":"standup","type":"chat-history","#
                + #""v":1}"#),
        Row(
            "video-layers", .videoLayers(VideoLayerDemand(active: [true, false, true])),
            #"{"active":[true,false,true],"type":"video-layers","v":1}"#),
        Row(
            "video-held", .videoHeld(SimulcastSignalingTests.held),
            #"{"downlinkKbps":900,"held":[{"height":180,"id":3,"width":320},{"id":4}],"type":"video-held","v":1}"#),
        Row(
            "dominant-speaker", .dominantSpeaker(DominantSpeakerNotice(id: 7)),
            #"{"id":7,"type":"dominant-speaker","v":1}"#),
        Row(
            "redirect", .redirect(Redirect(room: "standup", server: "10.0.0.2:7878", node: "b")),
            #"{"node":"b","room":"standup","server":"10.0.0.2:7878","type":"redirect","v":1}"#),
        Row(
            "move", .move(Redirect(room: "standup", server: "10.0.0.3:7878", node: "c")),
            #"{"node":"c","room":"standup","server":"10.0.0.3:7878","type":"move","v":1}"#),
        Row(
            "recording", .recording(RecordingNotice(id: 7, name: "alice", recording: true, encrypted: true)),
            #"{"encrypted":true,"id":7,"name":"alice","recording":true,"type":"recording","v":1}"#),
        Row(
            "recording-policy", .recordingPolicy(RecordingPolicy(allowed: false, by: "alice")),
            #"{"allowed":false,"by":"alice","type":"recording-policy","v":1}"#),
        Row(
            "control", .control(ControlGrant(terminal: 9, to: 0, from: 3)),
            #"{"from":3,"terminal":9,"to":0,"type":"control","v":1}"#),
        Row(
            "typing, sealed", .typing(TerminalTyping(terminal: 9, keys: "", sealed: "AAEC", from: 4)),
            #"{"from":4,"keys":"","sealed":"AAEC","terminal":9,"type":"typing","v":1}"#),
        Row(
            "controller", .controller(ControllerChange(controller: 4, terminal: 9)),
            #"{"controller":4,"terminal":9,"type":"controller","v":1}"#),
        Row(
            "slots",
            .slots(BrowserSlots(slots: [BrowserSlots.Slot(member: 3, audio: "2", video: "3")], unseen: [8])),
            #"{"slots":[{"audio":"2","member":3,"video":"3"}],"type":"slots","unseen":[8],"v":1}"#),
    ]

    static let requests: [Row<MessagingRequest>] = [
        Row(
            "login", .login(AccountCard(name: "alice", signingKey: "a2V5", agreementKey: "YWdy")),
            #"{"agreementKey":"YWdy","name":"alice","signingKey":"a2V5","type":"login","v":1}"#),
        Row(
            "proof", .proof(LoginProof(signature: "c2ln")),
            #"{"signature":"c2ln","type":"proof","v":1}"#),
        Row(
            "send, sender copy", .send(DirectMessageSend(id: "m1", to: "bob", sealed: "AQID", senderCopy: "BAUG")),
            #"{"id":"m1","sealed":"AQID","senderCopy":"BAUG","to":"bob","type":"send","v":1}"#),
        Row(
            "send, no copy", .send(DirectMessageSend(id: "m2", to: "bob", sealed: "AQID")),
            #"{"id":"m2","sealed":"AQID","to":"bob","type":"send","v":1}"#),
        Row(
            "received", .received(DeliveryReceipt(sequences: [1, 2])),
            #"{"sequences":[1,2],"type":"received","v":1}"#),
        Row(
            "keys", .keys(AccountRef(name: "bob")),
            #"{"name":"bob","type":"keys","v":1}"#),
        Row(
            "presence", .presence(AccountRef(name: "carol")),
            #"{"name":"carol","type":"presence","v":1}"#),
        Row(
            "history, before", .history(HistoryQuery(peer: "bob", before: 9, limit: 20)),
            #"{"before":9,"limit":20,"peer":"bob","type":"history","v":1}"#),
        Row(
            "history, newest", .history(HistoryQuery(peer: "bob")),
            #"{"limit":50,"peer":"bob","type":"history","v":1}"#),
        Row(
            "read", .read(ReadMark(peer: "bob", through: 7)),
            #"{"peer":"bob","through":7,"type":"read","v":1}"#),
        Row(
            "join-channel", .joinChannel(ChannelRef(channel: "team")),
            #"{"channel":"team","type":"join-channel","v":1}"#),
        Row(
            "leave-channel", .leaveChannel(ChannelRef(channel: "team")),
            #"{"channel":"team","type":"leave-channel","v":1}"#),
        Row(
            "members", .members(ChannelRef(channel: "team")),
            #"{"channel":"team","type":"members","v":1}"#),
        Row(
            "channel-post", .channelPost(ChannelPostSend(channel: "team", id: "p1", text: "hello")),
            #"{"channel":"team","id":"p1","text":"hello","type":"channel-post","v":1}"#),
        Row(
            "channel-history", .channelHistory(ChannelHistoryQuery(channel: "team", before: 5, limit: 200)),
            #"{"before":5,"channel":"team","limit":200,"type":"channel-history","v":1}"#),
        Row(
            "channel-read", .channelRead(ChannelReadMark(channel: "team", through: 3)),
            #"{"channel":"team","through":3,"type":"channel-read","v":1}"#),
        Row(
            "conversations", .conversations(ConversationsQuery(limit: 50)),
            #"{"limit":50,"type":"conversations","v":1}"#),
        Row(
            "watch", .watch(WatchList(names: ["bob", "carol"])),
            #"{"names":["bob","carol"],"type":"watch","v":1}"#),
        Row(
            "ping", .ping(KeepAlive(token: 5)),
            #"{"token":5,"type":"ping","v":1}"#),
    ]

    static let events: [Row<MessagingEvent>] = [
        Row(
            "challenge", .challenge(LoginChallenge(nonce: "bm9uY2U=")),
            #"{"nonce":"bm9uY2U=","type":"challenge","v":1}"#),
        Row(
            "logged-in", .loggedIn(LoggedIn(name: "alice", created: true, waiting: 3)),
            #"{"created":true,"name":"alice","type":"logged-in","v":1,"waiting":3}"#),
        Row(
            "stored", .stored(MessageStored(id: "m1", sequence: 4)),
            #"{"id":"m1","sequence":4,"type":"stored","v":1}"#),
        Row(
            "message, live",
            .message(DirectMessageDelivery(sequence: 4, id: "m1", from: "alice", to: "bob", sealed: "AQID", sentAt: 1)),
            #"{"delivered":false,"from":"alice","id":"m1","read":false,"sealed":"AQID","sentAt":1,"sequence":4,"#
                + #""to":"bob","type":"message","v":1}"#),
        Row(
            "message, history",
            .message(
                DirectMessageDelivery(
                    sequence: 5, id: "m2", from: "bob", to: "alice", sealed: "AQID", sentAt: 2, delivered: true,
                    read: true,
                    senderCopy: "BAUG", inHistory: true)),
            #"{"delivered":true,"from":"bob","id":"m2","inHistory":true,"read":true,"sealed":"AQID","#
                + #""senderCopy":"BAUG","sentAt":2,"sequence":5,"to":"alice","type":"message","v":1}"#),
        Row(
            "keys", .keys(AccountCard(name: "bob", signingKey: "a2V5", agreementKey: "YWdy")),
            #"{"agreementKey":"YWdy","name":"bob","signingKey":"a2V5","type":"keys","v":1}"#),
        Row(
            "presence, offline", .presence(PresenceAnswer(name: "bob", online: false, lastSeen: 1_700_000_000_000)),
            #"{"lastSeen":1700000000000,"name":"bob","online":false,"type":"presence","v":1}"#),
        Row(
            "presence, in a call",
            .presence(PresenceAnswer(name: "bob", online: true, lastSeen: nil, inCall: true, room: "standup")),
            #"{"inCall":true,"name":"bob","online":true,"room":"standup","type":"presence","v":1}"#),
        Row(
            "history-end", .historyEnd(HistoryEnd(peer: "bob", count: 2)),
            #"{"count":2,"peer":"bob","type":"history-end","v":1}"#),
        Row(
            "receipt", .receipt(MessageReceipt(by: "bob", sequences: [4, 5], read: true)),
            #"{"by":"bob","read":true,"sequences":[4,5],"type":"receipt","v":1}"#),
        Row(
            "channel-post",
            .channelPost(
                ChannelPostDelivery(
                    channel: "team", sequence: 8, id: "p1", from: "alice", kind: "joined", text: "", sentAt: 2,
                    members: 3,
                    inHistory: true)),
            #"{"channel":"team","from":"alice","id":"p1","inHistory":true,"kind":"joined","members":3,"sentAt":2,"#
                + #""sequence":8,"text":"","type":"channel-post","v":1}"#),
        Row(
            "channel-stored", .channelStored(ChannelPostStored(channel: "team", id: "p1", sequence: 8)),
            #"{"channel":"team","id":"p1","sequence":8,"type":"channel-stored","v":1}"#),
        Row(
            "members", .members(ChannelMembers(channel: "team", count: 2, names: ["alice", "bob"], member: true)),
            #"{"channel":"team","count":2,"member":true,"names":["alice","bob"],"type":"members","v":1}"#),
        Row(
            "channel-history-end", .channelHistoryEnd(ChannelHistoryEnd(channel: "team", count: 0)),
            #"{"channel":"team","count":0,"type":"channel-history-end","v":1}"#),
        Row(
            "conversation",
            .conversation(
                ConversationLine(
                    kind: "direct", name: "bob", unread: 1, lastAt: 2,
                    lastMessage: DirectMessageDelivery(
                        sequence: 4, id: "m1", from: "bob", to: "alice", sealed: "AQID", sentAt: 2),
                    lastPost: ChannelPostDelivery(
                        channel: "team", sequence: 1, id: "p", from: "bob", kind: "message", text: "x", sentAt: 1))),
            #"{"kind":"direct","lastAt":2,"lastMessage":{"delivered":false,"from":"bob","id":"m1","read":false,"#
                + #""sealed":"AQID","sentAt":2,"sequence":4,"to":"alice"},"lastPost":{"channel":"team","from":"bob","#
                + #""id":"p","kind":"message","sentAt":1,"sequence":1,"text":"x"},"name":"bob","type":"conversation","#
                + #""unread":1,"v":1}"#),
        Row(
            "conversations-end", .conversationsEnd(ConversationsEnd(count: 1)),
            #"{"count":1,"type":"conversations-end","v":1}"#),
        Row(
            "pong", .pong(KeepAlive(token: 5)),
            #"{"token":5,"type":"pong","v":1}"#),
        Row(
            "error", .error(SignalingError(.notAllowed, "no")),
            #"{"code":"not-allowed","message":"no","type":"error","v":1}"#),
    ]

    static let badClient: [Refusal<ClientMessage>] = [
        Refusal(
            "unknown type", #"{"v":1,"type":"dance"}"#, .unknownType,
            #"unknown message type "dance"; expected join, leave, mute, chat, stats, ping, role, challenge, allow,"#
                + #" remove, readmit, tiles, video-sending, recording, recording-policy, control, typing or controller"#
        ),
        Refusal(
            "long unknown type", #"{"v":1,"type":"\#(String(repeating: "x", count: 50))"}"#, .unknownType,
            #"unknown message type "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"; expected join, leave, mute,"#
                + #" chat, stats, ping, role, challenge, allow, remove, readmit, tiles, video-sending, recording,"#
                + #" recording-policy, control, typing or controller"#),
        Refusal(
            "typing too long", #"{"v":1,"type":"typing","terminal":9,"keys":"\#(String(repeating: "A", count: 400))"}"#,
            .badField, #"typing "keys" has 400 characters; the limit is 344 (256 bytes)"#),
        Refusal(
            "join missing field", #"{"v":1,"type":"join","name":"a"}"#, .badField,
            #"join needs field "room""#),
        Refusal(
            "mute with nothing", #"{"v":1,"type":"mute"}"#, .badField,
            #"mute needs "audio" or "video" (true or false)"#),
        Refusal(
            "tiles too big", #"{"v":1,"type":"tiles","tiles":[{"id":1,"width":9000,"height":1}]}"#, .badField,
            #"tiles[0] is 9000x1; sizes are 0 to 8192 pixels"#),
        Refusal(
            "video-sending without the smallest layer", #"{"v":1,"type":"video-sending","active":[true,false]}"#,
            .badField, #"video-sending leaves out the smallest layer; it is always sent"#),
        Refusal(
            "video-sending with too many layers",
            #"{"v":1,"type":"video-sending","active":[true,true,true,true]}"#, .badField,
            #"video-sending lists 4 layers; a sender has 1 to 3"#),
        Refusal(
            "chat too long", #"{"v":1,"type":"chat","text":"\#(String(repeating: "a", count: 2001))"}"#, .badField,
            #"chat "text" has 2001 characters; the limit is 2000"#),
        Refusal(
            "join bad layers", #"{"v":1,"type":"join","room":"r","name":"n","videoLayers":[]}"#, .badField,
            #"join "videoLayers" has 0 layers; a sender has 1 to 3"#),
        Refusal(
            "join bad kbps", #"{"v":1,"type":"join","room":"r","name":"n","videoKbps":0}"#, .badField,
            #"join field "videoKbps" is invalid: videoKbps 0 is outside 1…20000"#),
    ]

    static let badServer: [Refusal<ServerMessage>] = [
        Refusal(
            "unknown type", #"{"v":1,"type":"join"}"#, .unknownType,
            #"unknown message type "join""#),
        Refusal(
            "member-left bad reason", #"{"v":1,"type":"member-left","id":1,"reason":"bored"}"#, .badField,
            #"member-left field "reason" is invalid: "bored" is not one of "quit", "timeout", "dropped", "removed""#),
        Refusal(
            "video-layers empty", #"{"v":1,"type":"video-layers","active":[]}"#, .badField,
            #"video-layers has 0 flags; a sender has 1 to 3 layers"#),
        Refusal(
            "error bad code", #"{"v":1,"type":"error","code":"oops","message":"m"}"#, .badField,
            #"error field "code" is invalid: "oops" is not one of "bad-json", "unknown-type", "unsupported-version","#
                + #" "bad-field", "too-large", "not-joined", "already-joined", "bad-room-name", "bad-name","#
                + #" "rate-limited", "not-allowed", "password-required", "wrong-password", "password-setup","#
                + #" "name-taken", "encryption-mismatch", "limit-reached", "removed-by-host", "not-logged-in","#
                + #" "account-refused","#
                + #" "unknown-account", "store-failed", "store-unavailable", "media-failed", "internal""#),
        Refusal(
            "redirect without a port", #"{"v":1,"type":"redirect","room":"r","server":"node-b","node":"b"}"#,
            .badField,
            #"redirect or move "server" must be HOST:PORT (port 1…65535, at most 261 bytes), got "node-b""#),
        Refusal(
            "redirect port 0", #"{"v":1,"type":"redirect","room":"r","server":"b:0","node":"b"}"#, .badField,
            #"redirect or move "server" must be HOST:PORT (port 1…65535, at most 261 bytes), got "b:0""#),
        Refusal(
            "move without a port", #"{"v":1,"type":"move","room":"r","server":"node-c","node":"c"}"#, .badField,
            #"redirect or move "server" must be HOST:PORT (port 1…65535, at most 261 bytes), got "node-c""#),
        Refusal(
            "redirect empty node", #"{"v":1,"type":"redirect","room":"r","server":"b:7878","node":""}"#, .badField,
            #"redirect or move "node" must be 1…128 bytes"#),
        Refusal(
            "pong missing token", #"{"v":1,"type":"pong"}"#, .badField,
            #"pong needs field "token""#),
    ]

    static let badRequests: [Refusal<MessagingRequest>] = [
        Refusal(
            "unknown type", #"{"v":1,"type":"\#(String(repeating: "y", count: 50))"}"#, .unknownType,
            #"unknown messaging type "yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy""#),
        Refusal(
            "send too large",
            #"{"v":1,"type":"send","id":"a","to":"b","sealed":"\#(Data(count: 8193).base64EncodedString())"}"#,
            .tooLarge,
            #"the message is 8193 bytes sealed; the limit is 8192"#),
        Refusal(
            "send bad copy", #"{"v":1,"type":"send","id":"a","to":"b","sealed":"AQID","senderCopy":"!"}"#,
            .badField,
            #"send "senderCopy" must be base64 of at most 8192 bytes"#),
        Refusal(
            "send long id",
            #"{"v":1,"type":"send","id":"\#(String(repeating: "i", count: 65))","to":"b","sealed":"AQID"}"#, .badField,
            #"send "id" has 65 characters; it must have 1 to 64"#),
        Refusal(
            "received too many",
            #"{"v":1,"type":"received","sequences":[\#((0...200).map(String.init).joined(separator: ","))]}"#,
            .tooLarge,
            #"received lists 201 messages; at most 200"#),
        Refusal(
            "history limit", #"{"v":1,"type":"history","peer":"bob","limit":0}"#, .badField,
            #"history "limit" must be 1 to 200, got 0"#),
        Refusal(
            "channel-post long id", #"{"v":1,"type":"channel-post","channel":"t","id":"","text":"x"}"#, .badField,
            #"channel-post "id" has 0 characters; it must have 1 to 64"#),
        Refusal(
            "keys missing name", #"{"v":1,"type":"keys"}"#, .badField,
            #"keys needs field "name""#),
    ]

    static let badEvents: [Refusal<MessagingEvent>] = [
        Refusal(
            "unknown type", #"{"v":1,"type":"login"}"#, .unknownType,
            #"unknown messaging type "login""#),
        Refusal(
            "stored bad sequence", #"{"v":1,"type":"stored","id":"m","sequence":"4"}"#, .badField,
            #"stored field "sequence" must be a whole number"#),
    ]

    @Test(arguments: client) func clientMessage(_ row: Row<ClientMessage>) throws {
        #expect(row.message.encoded() == row.json)
        #expect(try row.message.type == Self.typeField(row.json))
        #expect(try ClientMessage.decode(row.json) == row.message)
    }

    @Test(arguments: server) func serverMessage(_ row: Row<ServerMessage>) throws {
        #expect(row.message.encoded() == row.json)
        #expect(try row.message.type == Self.typeField(row.json))
        #expect(try ServerMessage.decode(row.json) == row.message)
    }

    @Test(arguments: requests) func messagingRequest(_ row: Row<MessagingRequest>) throws {
        #expect(row.message.encoded() == row.json)
        #expect(try row.message.type == Self.typeField(row.json))
        #expect(try MessagingRequest.decode(row.json) == row.message)
    }

    @Test(arguments: events) func messagingEvent(_ row: Row<MessagingEvent>) throws {
        #expect(row.message.encoded() == row.json)
        #expect(try row.message.type == Self.typeField(row.json))
        #expect(try MessagingEvent.decode(row.json) == row.message)
    }

    /// Each enum's case table has exactly the wire types of the rows above, so no case goes without its exact JSON.
    @Test func everyCaseTableEntryHasARow() throws {
        #expect(try Set(Self.client.map { try Self.typeField($0.json) }) == Set(ClientMessage.wire.cases.map(\.type)))
        #expect(try Set(Self.server.map { try Self.typeField($0.json) }) == Set(ServerMessage.wire.cases.map(\.type)))
        #expect(
            try Set(Self.requests.map { try Self.typeField($0.json) }) == Set(MessagingRequest.wire.cases.map(\.type)))
        #expect(try Set(Self.events.map { try Self.typeField($0.json) }) == Set(MessagingEvent.wire.cases.map(\.type)))
    }

    @Test(arguments: badClient) func badClientMessage(_ refusal: Refusal<ClientMessage>) {
        #expect(throws: refusal.error) { try ClientMessage.decode(refusal.text) }
    }

    @Test(arguments: badServer) func badServerMessage(_ refusal: Refusal<ServerMessage>) {
        #expect(throws: refusal.error) { try ServerMessage.decode(refusal.text) }
    }

    @Test(arguments: badRequests) func badMessagingRequest(_ refusal: Refusal<MessagingRequest>) {
        #expect(throws: refusal.error) { try MessagingRequest.decode(refusal.text) }
    }

    @Test(arguments: badEvents) func badMessagingEvent(_ refusal: Refusal<MessagingEvent>) {
        #expect(throws: refusal.error) { try MessagingEvent.decode(refusal.text) }
    }
}
