import Dispatch
import Foundation
import Logging
import NIOWebSocket
import ParleySecurity
import ParleyStore
import ParleyWire

/// What a logged-in account asks for: direct messages, receipts, presence, channels.
extension MessagingService {
    func handle(_ request: MessagingRequest, from account: String, on id: UInt64) {
        guard let peer = connections[id]?.peer else { return }
        switch request {
        case .send, .received:
            break
        default:
            // Anything that reads sees every send and receipt that arrived before it.
            if flushScheduled || !pendingReceipts.isEmpty {
                flushSends()
                flushReceipts()
            }
        }
        do throws(StoreError) {
            switch request {
            case .send(let send):
                try queue(send, from: account, on: id, peer: peer)
            case .received(let receipt):
                pendingReceipts.append((id, receipt.sequences, account))
                scheduleFlush()
            case .read(let mark):
                let marks = try store.markRead(from: mark.peer, to: account, through: mark.through, at: wallClock())
                sendReceipts(marks, by: account, read: true)
            case .joinChannel(let ref):
                try join(ref.channel, account: account, peer: peer)
            case .leaveChannel(let ref):
                try leave(ref.channel, account: account, peer: peer)
            case .members(let ref):
                guard let channel = channelName(ref.channel, peer: peer) else { return }
                let members = try store.members(of: channel, limit: maxMessagesPerPage)
                peer.send(
                    .members(
                        ChannelMembers(
                            channel: channel, count: members.count, names: members.names,
                            member: channelsOf[account]?.contains(channel) == true)))
            case .channelPost(let send):
                try post(send, by: account, peer: peer)
            case .channelHistory(let query):
                try sendChannelHistory(query, to: account, peer: peer)
            case .channelRead(let mark):
                guard let channel = channelName(mark.channel, peer: peer) else { return }
                try store.markChannelRead(channel, by: account, through: mark.through)
            case .conversations(let query):
                try sendConversations(query, of: account, peer: peer)
            case .watch(let list):
                try watch(list, on: id, peer: peer)
            case .keys(let ref):
                try sendKeys(of: ref.name, peer: peer)
            case .presence(let ref):
                guard try store.keys(of: ref.name) != nil else {
                    peer.send(.error(Self.unknownAccount(ref.name)))
                    return
                }
                peer.send(.presence(try presence(of: ref.name)))
            case .history(let query):
                try sendHistory(query, of: account, peer: peer)
            case .login, .proof, .ping:
                break
            }
        } catch {
            peer.send(.error(Self.refusal(error)))
        }
    }

    static func unknownAccount(_ name: String) -> SignalingError {
        SignalingError(.unknownAccount, "no account is named \(name.prefix(128))")
    }

    /// A direct message to an account that exists, queued for the next batch write.
    private func queue(_ send: DirectMessageSend, from account: String, on id: UInt64, peer: any MessagingPeer)
        throws(StoreError)
    {
        if !knownAccounts.contains(send.to) {
            guard try store.keys(of: send.to) != nil else {
                peer.send(.error(Self.unknownAccount(send.to)))
                return
            }
            if knownAccounts.count >= Self.knownAccountsLimit { knownAccounts.removeAll(keepingCapacity: true) }
            knownAccounts.insert(send.to)
        }
        pendingSends.append((id, send, account))
        scheduleFlush()
    }

    /// Joins a channel within the per-account and per-channel limits; the members line goes to everyone in it.
    private func join(_ name: String, account: String, peer: any MessagingPeer) throws(StoreError) {
        guard let channel = channelName(name, peer: peer) else { return }
        let mine = channelsOf[account] ?? []
        guard mine.count < limits.channelsPerAccount || mine.contains(channel) else {
            peer.send(
                .error(
                    SignalingError(
                        .limitReached,
                        "\(account) is in \(limits.channelsPerAccount) channels, the most one account may"
                    )))
            return
        }
        let before = try store.members(of: channel, limit: 0).count
        guard before < limits.membersPerChannel || mine.contains(channel) else {
            peer.send(
                .error(
                    SignalingError(
                        .limitReached,
                        "channel \(channel) has \(limits.membersPerChannel) members, the most a channel may")))
            return
        }
        let line = try store.join(channel: channel, account: account, at: wallClock())
        channelsOf[account, default: []].insert(channel)
        onlineMembers[channel, default: []].insert(account)
        if let line { deliver(line) }
        peer.send(.members(ChannelMembers(channel: channel, count: line?.members ?? before, names: [], member: true)))
    }

    private func leave(_ name: String, account: String, peer: any MessagingPeer) throws(StoreError) {
        guard let channel = channelName(name, peer: peer) else { return }
        let line = try store.leave(channel: channel, account: account, at: wallClock())
        if let line { deliver(line) }
        channelsOf[account]?.remove(channel)
        onlineMembers[channel]?.remove(account)
        if onlineMembers[channel]?.isEmpty == true { onlineMembers[channel] = nil }
        var count = line?.members ?? 0
        if line == nil { count = try store.members(of: channel, limit: 0).count }
        peer.send(.members(ChannelMembers(channel: channel, count: count, names: [], member: false)))
    }

    /// A member's post: stored once (a repeated id is acknowledged, not stored again), then delivered.
    private func post(_ send: ChannelPostSend, by account: String, peer: any MessagingPeer) throws(StoreError) {
        guard let channel = channelName(send.channel, peer: peer), isMember(account, of: channel, peer: peer)
        else { return }
        let result = try store.post(
            NewChannelPost(id: send.id, channel: channel, sender: account, text: send.text, postedAt: wallClock()))
        peer.send(.channelStored(ChannelPostStored(channel: channel, id: send.id, sequence: result.stored.sequence)))
        if result.isNew {
            deliver(result.stored)
            channelPostObserver?(result.stored)
        }
    }

    private func sendChannelHistory(_ query: ChannelHistoryQuery, to account: String, peer: any MessagingPeer)
        throws(StoreError)
    {
        guard let channel = channelName(query.channel, peer: peer), isMember(account, of: channel, peer: peer)
        else { return }
        let page = try store.channelHistory(channel, before: query.before, limit: query.limit)
        for line in page {
            var answer = Self.delivery(line)
            answer.inHistory = true
            peer.send(.channelPost(answer))
        }
        peer.send(.channelHistoryEnd(ChannelHistoryEnd(channel: channel, count: page.count)))
    }

    private func sendConversations(_ query: ConversationsQuery, of account: String, peer: any MessagingPeer)
        throws(StoreError)
    {
        let lines = try store.conversations(of: account, limit: query.limit)
        for line in lines {
            switch line.kind {
            case .direct(let peerName, let last):
                peer.send(
                    .conversation(
                        ConversationLine(
                            kind: "direct", name: peerName, unread: line.unread, lastAt: line.lastAt,
                            lastMessage: delivery(last, to: account))))
            case .channel(let name, let last):
                peer.send(
                    .conversation(
                        ConversationLine(
                            kind: "channel", name: name, unread: line.unread, lastAt: line.lastAt,
                            lastPost: last.map(Self.delivery))))
            }
        }
        peer.send(.conversationsEnd(ConversationsEnd(count: lines.count)))
    }

    /// Replaces the connection's watch list; the current presence of each name is sent at once, changes follow.
    private func watch(_ list: WatchList, on id: UInt64, peer: any MessagingPeer) throws(StoreError) {
        for name in connections[id]?.watching ?? [] { unwatch(name, by: id) }
        let names = Set(list.names.map { String($0.prefix(DisplayName.maximumLength)) })
        connections[id]?.watching = names
        for name in names { watchers[name, default: []].insert(id) }
        for name in names.sorted() { peer.send(.presence(try presence(of: name))) }
    }

    private func sendKeys(of name: String, peer: any MessagingPeer) throws(StoreError) {
        guard let keys = try store.keys(of: name) else {
            peer.send(.error(Self.unknownAccount(name)))
            return
        }
        peer.send(
            .keys(
                AccountCard(
                    name: name, signingKey: Data(keys.signing).base64EncodedString(),
                    agreementKey: Data(keys.agreement).base64EncodedString())))
    }

    private func sendHistory(_ query: HistoryQuery, of account: String, peer: any MessagingPeer) throws(StoreError) {
        let page = try store.history(between: account, and: query.peer, before: query.before, limit: query.limit)
        for stored in page {
            var answer = delivery(stored, to: account)
            answer.inHistory = true
            peer.send(.message(answer))
        }
        peer.send(.historyEnd(HistoryEnd(peer: query.peer, count: page.count)))
    }
}

extension MessagingService {
    /// A channel name as the room name rules allow it, or nil after telling the peer what to type instead.
    func channelName(_ text: String, peer: any MessagingPeer) -> String? {
        if let name = try? RoomName.validate(text), name == text { return name }
        peer.send(
            .error(
                SignalingError(
                    .badRoomName,
                    "channel \"\(text.prefix(80))\" is not a valid name: use letters, digits, spaces or "
                        + "\(RoomName.punctuation), at most \(RoomName.maximumBytes) bytes (e.g. \(RoomName.clean(text).isEmpty ? "team" : RoomName.clean(text)))"
                )))
        return nil
    }

    func isMember(_ account: String, of channel: String, peer: any MessagingPeer) -> Bool {
        if channelsOf[account]?.contains(channel) == true { return true }
        peer.send(
            .error(SignalingError(.notAllowed, "\(account) is not a member of channel \(channel): join it first")))
        return false
    }

    static func delivery(_ line: StoredChannelPost) -> ChannelPostDelivery {
        ChannelPostDelivery(
            channel: line.post.channel, sequence: line.sequence, id: line.post.id, from: line.post.sender,
            kind: line.post.kind.rawValue, text: line.post.text, sentAt: line.post.postedAt,
            members: line.members)
    }

    /// A store's failure as the client is told it: `store-unavailable` while the database cannot be reached (the
    /// client keeps the message and sends it again), `store-failed` when it refused (full, read-only).
    static func refusal(_ error: any Error) -> SignalingError {
        switch error as? StoreError {
        case .idReused: SignalingError(.badField, "\(error)")
        case .unavailable: SignalingError(.storeUnavailable, "\(error)")
        default: SignalingError(.storeFailed, "\(error)")
        }
    }

    /// Sends a channel line to every connection of every member online here; with `publish`, the other nodes of a
    /// cluster are told to do the same.
    func deliver(_ line: StoredChannelPost, publish: Bool = true) {
        if publish { cluster?.publish(.channelPost(channel: line.post.channel, sequence: line.sequence)) }
        let event = MessagingEvent.channelPost(Self.delivery(line))
        for member in onlineMembers[line.post.channel] ?? [] {
            for connection in online[member] ?? [] { connections[connection]?.peer.send(event) }
        }
    }

    /// Tells each sender, on every connection it has open, which of its messages reached or were read by `reader`.
    func sendReceipts(_ marks: [MessageMark], by reader: String, read: Bool, publish: Bool = true) {
        if publish, !marks.isEmpty { cluster?.publish(.receipts(reader: reader, read: read, marks: marks)) }
        for (sender, marked) in Dictionary(grouping: marks, by: \.sender) {
            let event = MessagingEvent.receipt(
                MessageReceipt(by: reader, sequences: marked.map(\.sequence), read: read))
            for connection in online[sender] ?? [] { connections[connection]?.peer.send(event) }
        }
    }

    func unwatch(_ name: String, by id: UInt64) {
        watchers[name]?.remove(id)
        if watchers[name]?.isEmpty == true { watchers[name] = nil }
    }

    /// Online through a messaging connection or a call, on this node or another of the cluster.
    func isOnline(_ account: String) -> Bool {
        online[account] != nil || calls[account] != nil || remote[account] != nil
    }

    /// Where `account` is now: online, in a call (and which room, unless hidden), or when it was last seen.
    func presence(of account: String) throws(StoreError) -> PresenceAnswer {
        let isOnline = isOnline(account)
        let rooms = rooms(of: account)
        return PresenceAnswer(
            name: account, online: isOnline, lastSeen: isOnline ? nil : try store.lastSeen(account),
            inCall: rooms == nil ? nil : true, room: rooms?.first)
    }

    /// Tells the connections watching `account` where it is now.
    func announcePresence(of account: String) {
        guard let watching = watchers[account], !watching.isEmpty else { return }
        let answer =
            (try? presence(of: account)) ?? PresenceAnswer(name: account, online: isOnline(account), lastSeen: nil)
        let event = MessagingEvent.presence(answer)
        for id in watching { connections[id]?.peer.send(event) }
    }

    /// The WebSocket path of messaging connections.
    public static let path = "/parley/messages"
}
