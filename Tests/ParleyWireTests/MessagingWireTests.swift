import Foundation
import Testing

@testable import ParleyWire

struct MessagingWireTests {
    static let sealed = Data([1, 2, 3]).base64EncodedString()

    static let requests: [MessagingRequest] = [
        .login(AccountCard(name: "alice", signingKey: "a", agreementKey: "b")),
        .proof(LoginProof(signature: "c")),
        .send(DirectMessageSend(id: "m1", to: "bob", sealed: sealed, senderCopy: sealed)),
        .received(DeliveryReceipt(sequences: [1, 2])),
        .keys(AccountRef(name: "bob")),
        .presence(AccountRef(name: "bob")),
        .history(HistoryQuery(peer: "bob", before: 9, limit: 20)),
        .read(ReadMark(peer: "bob", through: 7)),
        .joinChannel(ChannelRef(channel: "team")),
        .leaveChannel(ChannelRef(channel: "team")),
        .members(ChannelRef(channel: "team")),
        .channelPost(ChannelPostSend(channel: "team", id: "p1", text: "hello")),
        .channelHistory(ChannelHistoryQuery(channel: "team", before: nil, limit: 200)),
        .channelRead(ChannelReadMark(channel: "team", through: 3)),
        .conversations(ConversationsQuery(limit: 50)),
        .watch(WatchList(names: ["bob", "carol"])),
        .ping(KeepAlive(token: 5)),
    ]

    static let events: [MessagingEvent] = [
        .challenge(LoginChallenge(nonce: "n")),
        .loggedIn(LoggedIn(name: "alice", created: true, waiting: 3)),
        .stored(MessageStored(id: "m1", sequence: 4)),
        .message(
            DirectMessageDelivery(
                sequence: 4, id: "m1", from: "alice", to: "bob", sealed: sealed, sentAt: 1,
                delivered: true, read: false, senderCopy: nil, inHistory: true)),
        .keys(AccountCard(name: "bob", signingKey: "a", agreementKey: "b")),
        .presence(PresenceAnswer(name: "bob", online: false, lastSeen: 1_700_000_000_000)),
        .historyEnd(HistoryEnd(peer: "bob", count: 2)),
        .receipt(MessageReceipt(by: "bob", sequences: [4], read: true)),
        .channelPost(
            ChannelPostDelivery(
                channel: "team", sequence: 8, id: "p1", from: "alice", kind: "joined", text: "",
                sentAt: 2, members: 3)),
        .channelStored(ChannelPostStored(channel: "team", id: "p1", sequence: 8)),
        .members(ChannelMembers(channel: "team", count: 2, names: ["alice", "bob"], member: true)),
        .channelHistoryEnd(ChannelHistoryEnd(channel: "team", count: 0)),
        .conversation(ConversationLine(kind: "channel", name: "team", unread: 1, lastAt: 2)),
        .conversationsEnd(ConversationsEnd(count: 1)),
        .pong(KeepAlive(token: 5)),
        .error(SignalingError(.notAllowed, "no")),
    ]

    @Test(arguments: requests) func everyRequestSurvivesEncodeThenDecode(_ request: MessagingRequest) throws {
        #expect(try MessagingRequest.decode(request.encoded()) == request)
    }

    @Test(arguments: events) func everyEventSurvivesEncodeThenDecode(_ event: MessagingEvent) throws {
        #expect(try MessagingEvent.decode(event.encoded()) == event)
    }

    /// Garbage and broken limits, with the words the refusal must contain.
    static let refusals: [(text: String, code: SignalingErrorCode, says: String)] = [
        (#"{"v":1,"type":"channel-post","channel":"t","id":"","text":"x"}"#, .badField, "1 to 64"),
        (#"{"v":1,"type":"channel-post","channel":"t","id":"a","text":"  "}"#, .badField, "empty"),
        (
            #"{"v":1,"type":"channel-post","channel":"t","id":"a","text":"\#(String(repeating: "x", count: 2001))"}"#,
            .tooLarge, "the limit is 2000"
        ),
        (#"{"v":1,"type":"channel-history","channel":"t","limit":0}"#, .badField, "1 to 200"),
        (#"{"v":1,"type":"conversations","limit":201}"#, .badField, "1 to 200"),
        (
            #"{"v":1,"type":"watch","names":[\#((0...200).map { "\"u\($0)\"" }.joined(separator: ","))]}"#,
            .tooLarge, "at most 200"
        ),
        (#"{"v":1,"type":"read","peer":"bob"}"#, .badField, "through"),
        (#"{"v":1,"type":"send","id":"a","to":"bob","sealed":"!!"}"#, .badField, "base64"),
        (#"{"v":1,"type":"shout"}"#, .unknownType, "shout"),
        ("not json", .badJSON, "not valid JSON"),
    ]

    @Test func garbageIsRefusedWithWhatWasWrong() {
        for refusal in Self.refusals {
            do {
                _ = try MessagingRequest.decode(refusal.text)
                Issue.record("accepted: \(refusal.text.prefix(80))")
            } catch {
                #expect(error.code == refusal.code, "\(refusal.text.prefix(80)): \(error)")
                #expect(error.message.contains(refusal.says), "\(refusal.text.prefix(80)): \(error.message)")
            }
        }
    }
}
