import Foundation
import ParleyStore
import ParleyWire

/// What a logged-in account asks for: direct messages, receipts, presence, channels. Each asks the store what the
/// state's decision needs.
extension MessagingService {
    func handle(_ request: MessagingRequest, from account: String, on id: UInt64) {
        if state.readMustWaitForWrites(request) {
            // Anything that reads sees every send and receipt that arrived before it.
            flushSends()
            flushReceipts()
        }
        do throws(StoreError) {
            switch request {
            case .send(let send):
                let exists = state.needsLookup(send.to) ? try store.keys(of: send.to) != nil : nil
                perform(state.queue(send, from: account, on: id, exists: exists))
            case .received(let receipt):
                perform(state.queue(receipt, from: account, on: id))
            case .read(let mark):
                let marks = try store.markRead(from: mark.peer, to: account, through: mark.through, at: wallClock())
                perform(state.receipts(marks, by: account, read: true))
            case .joinChannel(let ref):
                try join(ref.channel, account: account, on: id)
            case .leaveChannel(let ref):
                guard let channel = channelName(ref.channel, on: id) else { return }
                let line = try store.leave(channel: channel, account: account, at: wallClock())
                var count = line?.members ?? 0
                if line == nil { count = try store.members(of: channel, limit: 0).count }
                perform(state.left(channel, account: account, line: line, count: count, on: id))
            case .members(let ref):
                guard let channel = channelName(ref.channel, on: id) else { return }
                let members = try store.members(of: channel, limit: maxMessagesPerPage)
                send([state.membersAnswer(channel, members, for: account)], to: id)
            case .channelPost(let post):
                guard let channel = memberChannel(post.channel, of: account, on: id) else { return }
                let result = try store.post(
                    NewChannelPost(
                        id: post.id, channel: channel, sender: account, text: post.text, postedAt: wallClock()))
                perform(state.posted(result, id: post.id, on: id))
            case .channelHistory(let query):
                guard let channel = memberChannel(query.channel, of: account, on: id) else { return }
                let page = try store.channelHistory(channel, before: query.before, limit: query.limit)
                send(MessagingState.channelHistory(page, of: channel), to: id)
            case .channelRead(let mark):
                guard let channel = channelName(mark.channel, on: id) else { return }
                try store.markChannelRead(channel, by: account, through: mark.through)
            case .conversations(let query):
                let lines = try store.conversations(of: account, limit: query.limit)
                send(MessagingState.conversations(lines, of: account), to: id)
            case .watch(let list):
                for name in state.watch(list, on: id) { send([.presence(try presence(of: name))], to: id) }
            case .keys(let ref):
                guard let keys = try store.keys(of: ref.name) else {
                    send([.error(MessagingState.unknownAccount(ref.name))], to: id)
                    return
                }
                send([MessagingState.card(ref.name, keys)], to: id)
            case .presence(let ref):
                guard try store.keys(of: ref.name) != nil else {
                    send([.error(MessagingState.unknownAccount(ref.name))], to: id)
                    return
                }
                send([.presence(try presence(of: ref.name))], to: id)
            case .history(let query):
                let page = try store.history(
                    between: account, and: query.peer, before: query.before, limit: query.limit)
                send(MessagingState.history(page, of: account, with: query.peer), to: id)
            case .login, .proof, .ping:
                break
            }
        } catch {
            send([.error(MessagingState.refusal(error))], to: id)
        }
    }

    /// Joins a channel within the per-account and per-channel limits; the line goes to everyone in it.
    private func join(_ name: String, account: String, on id: UInt64) throws(StoreError) {
        guard let channel = channelName(name, on: id) else { return }
        if let refusal = state.joinRefusal(of: account, to: channel, members: nil) {
            send([.error(refusal)], to: id)
            return
        }
        let before = try store.members(of: channel, limit: 0).count
        if let refusal = state.joinRefusal(of: account, to: channel, members: before) {
            send([.error(refusal)], to: id)
            return
        }
        let line = try store.join(channel: channel, account: account, at: wallClock())
        perform(state.joined(channel, account: account, line: line, before: before, on: id))
    }

    func send(_ events: [MessagingEvent], to id: UInt64) {
        perform(events.map { .send($0, to: id) })
    }

    /// A channel name as the room name rules allow it, or nil after telling the connection what to type instead.
    private func channelName(_ text: String, on id: UInt64) -> String? {
        switch MessagingState.channelName(text) {
        case .success(let name): return name
        case .failure(let error):
            send([.error(error)], to: id)
            return nil
        }
    }

    /// A valid channel name `account` is a member of, or nil after saying why not.
    private func memberChannel(_ text: String, of account: String, on id: UInt64) -> String? {
        guard let channel = channelName(text, on: id) else { return nil }
        if let error = state.membership(of: account, in: channel) {
            send([.error(error)], to: id)
            return nil
        }
        return channel
    }
}
