import Foundation
import ParleyBus
import ParleySecurity
import ParleyStore
import ParleyWire

/// Channels, and what other nodes tell this one: the decisions, given what the store answered.
extension MessagingState {
    // MARK: - Channels

    /// A channel name as the room name rules allow it, or the error that says what to type instead.
    static func channelName(_ text: String) -> Result<String, SignalingError> {
        if let name = try? RoomName.validate(text), name == text { return .success(name) }
        let example = RoomName.clean(text).isEmpty ? "team" : RoomName.clean(text)
        return .failure(
            SignalingError(
                .badRoomName,
                "channel \"\(text.prefix(80))\" is not a valid name: use letters, digits, spaces or "
                    + "\(RoomName.punctuation), at most \(RoomName.maximumBytes) bytes (e.g. \(example))"))
    }

    /// Nil when `account` is a member of `channel`; otherwise the error that says to join first.
    func membership(of account: String, in channel: String) -> SignalingError? {
        if channelsOf[account]?.contains(channel) == true { return nil }
        return SignalingError(.notAllowed, "\(account) is not a member of channel \(channel): join it first")
    }

    /// Nil when `account` may join `channel`, which has `members` (nil: not counted yet); otherwise the limit hit.
    func joinRefusal(of account: String, to channel: String, members: Int?) -> SignalingError? {
        let mine = channelsOf[account] ?? []
        guard !mine.contains(channel) else { return nil }
        guard mine.count < limits.channelsPerAccount else {
            return SignalingError(
                .limitReached, "\(account) is in \(limits.channelsPerAccount) channels, the most one account may")
        }
        if let members, members >= limits.membersPerChannel {
            return SignalingError(
                .limitReached, "channel \(channel) has \(limits.membersPerChannel) members, the most a channel may")
        }
        return nil
    }

    /// `account` joined `channel` (`line` the store's line about it, `before` the members before): the line goes to
    /// everyone in it, the count to the joiner.
    mutating func joined(_ channel: String, account: String, line: StoredChannelPost?, before: Int, on id: UInt64)
        -> [MessagingAction]
    {
        channelsOf[account, default: []].insert(channel)
        onlineMembers[channel, default: []].insert(account)
        let members = ChannelMembers(channel: channel, count: line?.members ?? before, names: [], member: true)
        return (line.map { deliver($0) } ?? []) + [.send(.members(members), to: id)]
    }

    /// `account` left `channel`, which has `count` members now.
    mutating func left(_ channel: String, account: String, line: StoredChannelPost?, count: Int, on id: UInt64)
        -> [MessagingAction]
    {
        let actions = line.map { deliver($0) } ?? []
        channelsOf[account]?.remove(channel)
        onlineMembers[channel]?.remove(account)
        if onlineMembers[channel]?.isEmpty == true { onlineMembers[channel] = nil }
        return actions + [
            .send(.members(ChannelMembers(channel: channel, count: count, names: [], member: false)), to: id)
        ]
    }

    /// A member's post as stored: acknowledged, and when new (a repeated id is not stored again) delivered and
    /// shown in the room's calls.
    func posted(_ result: (stored: StoredChannelPost, isNew: Bool), id postID: String, on id: UInt64)
        -> [MessagingAction]
    {
        let stored = ChannelPostStored(
            channel: result.stored.post.channel, id: postID, sequence: result.stored.sequence)
        var actions: [MessagingAction] = [.send(.channelStored(stored), to: id)]
        if result.isNew {
            actions += deliver(result.stored)
            if observesChannelPosts { actions.append(.observe(result.stored)) }
        }
        return actions
    }

    /// A channel's members as `account` asked for them.
    func membersAnswer(_ channel: String, _ members: (count: Int, names: [String]), for account: String)
        -> MessagingEvent
    {
        .members(
            ChannelMembers(
                channel: channel, count: members.count, names: members.names,
                member: channelsOf[account]?.contains(channel) == true))
    }

    /// A page of a channel's history, then its end.
    static func channelHistory(_ page: [StoredChannelPost], of channel: String) -> [MessagingEvent] {
        page.map { line in
            var answer = delivery(line)
            answer.inHistory = true
            return .channelPost(answer)
        } + [.channelHistoryEnd(ChannelHistoryEnd(channel: channel, count: page.count))]
    }

    /// A page of the direct messages between `account` and `peer`, then its end.
    static func history(_ page: [StoredDirectMessage], of account: String, with peer: String) -> [MessagingEvent] {
        page.map { stored in
            var answer = delivery(stored, to: account)
            answer.inHistory = true
            return .message(answer)
        } + [.historyEnd(HistoryEnd(peer: peer, count: page.count))]
    }

    /// `account`'s conversations, newest first, then their end.
    static func conversations(_ lines: [ConversationSummary], of account: String) -> [MessagingEvent] {
        lines.map { line in
            switch line.kind {
            case .direct(let peerName, let last):
                .conversation(
                    ConversationLine(
                        kind: "direct", name: peerName, unread: line.unread, lastAt: line.lastAt,
                        lastMessage: delivery(last, to: account)))
            case .channel(let name, let last):
                .conversation(
                    ConversationLine(
                        kind: "channel", name: name, unread: line.unread, lastAt: line.lastAt,
                        lastPost: last.map(delivery)))
            }
        } + [.conversationsEnd(ConversationsEnd(count: lines.count))]
    }

    /// An account's public keys as a card.
    static func card(_ name: String, _ keys: AccountKeys) -> MessagingEvent {
        .keys(
            AccountCard(
                name: name, signingKey: Data(keys.signing).base64EncodedString(),
                agreementKey: Data(keys.agreement).base64EncodedString()))
    }

    // MARK: - Other nodes

    /// Of messages another node stored: those carried in the event go live now; the sequences to read back (the
    /// rest, for recipients here that take messages live).
    mutating func messagesElsewhere(_ references: [MessageReference]) -> (actions: [MessagingAction], read: [Int64]) {
        let wanted = references.filter { !caughtUpConnections(of: $0.recipient).isEmpty }
        var actions: [MessagingAction] = []
        for reference in wanted { if let carried = reference.carried { actions += deliverLive(carried) } }
        return (actions, wanted.filter { $0.carried == nil }.map(\.sequence))
    }

    /// Messages read back by sequence: those not yet delivered go live.
    mutating func deliverUndelivered(_ messages: [StoredDirectMessage]) -> [MessagingAction] {
        messages.filter { $0.deliveredAt == nil }.flatMap { deliverLive($0) }
    }

    /// Whether a channel line posted on another node has anyone here to go to.
    func wantsChannelLine(_ channel: String) -> Bool {
        onlineMembers[channel]?.isEmpty == false || observesChannelPosts
    }

    /// A channel line posted on another node, read back: delivered here, and shown in calls when a message.
    func channelLineElsewhere(_ line: StoredChannelPost) -> [MessagingAction] {
        deliver(line, publish: false) + (line.post.kind == .message && observesChannelPosts ? [.observe(line)] : [])
    }

    /// Where `account` is on `node` now (nil: nowhere there).
    mutating func presenceElsewhere(of account: String, on node: String, _ presence: NodePresence?)
        -> [MessagingAction]
    {
        let before = presenceSummary(of: account)
        if let presence {
            guard remote[account] != nil || remote.count < Self.remotePresenceLimit else { return [] }
            remote[account, default: [:]][node] = presence
        } else {
            remote[account]?[node] = nil
            if remote[account]?.isEmpty == true { remote[account] = nil }
        }
        return presenceSummary(of: account) != before ? [.announcePresence(of: account)] : []
    }

    /// A node is gone: its accounts are no longer there.
    mutating func nodeGone(_ gone: String) -> [MessagingAction] {
        remote.filter { $0.value[gone] != nil }.map(\.key).sorted().flatMap { presenceElsewhere(of: $0, on: gone, nil) }
    }

    /// The bus (re)connected: `fresh` is every other live node's presence. What changed is announced.
    mutating func caughtUp(with fresh: [String: [String: NodePresence]]) -> [MessagingAction] {
        let changed = Set(fresh.keys).union(remote.keys).filter { fresh[$0] != remote[$0] }
        let before = Dictionary(uniqueKeysWithValues: changed.map { ($0, presenceSummary(of: $0)) })
        remote = fresh
        return changed.sorted().filter { presenceSummary(of: $0) != before[$0] }.map { .announcePresence(of: $0) }
    }

    /// Accounts with a connection here that takes messages live: after the bus was down, each gets what waits for
    /// it and it has not had.
    func accountsToCatchUp() -> [String] {
        online.keys.filter { !caughtUpConnections(of: $0).isEmpty }.sorted()
    }
}
