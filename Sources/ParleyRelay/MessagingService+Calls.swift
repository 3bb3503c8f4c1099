import Dispatch
import Foundation
import Logging
import NIOWebSocket
import ParleySecurity
import ParleyStore
import ParleyWire

// MARK: - Calls

extension MessagingService {
    /// Calls `observer` (on the service's queue) with every message a messaging client posts in a channel.
    public func observeChannelPosts(_ observer: @escaping @Sendable (StoredChannelPost) -> Void) {
        queue.async { [self] in
            channelPostObserver = observer
            state.observesChannelPosts = true
        }
    }

    /// Checks the account a call's join claims: `signature` over `message` with the account's keys. `answer` is
    /// called on the service's queue.
    public func checkAccount(
        _ name: String, message: [UInt8], signature: [UInt8],
        answer: @escaping @Sendable (AccountCheck) -> Void
    ) {
        queue.async { [self] in
            let keys: AccountKeys?
            do {
                keys = try store.keys(of: name)
            } catch {
                answer(.unverified("the relay could not read its accounts (\(error)); you joined as a guest"))
                return
            }
            guard let keys else {
                answer(
                    .unverified(
                        "this relay has no account \(name) (log in here once with parley login); you joined as a guest")
                )
                return
            }
            guard keys.verifies(signature, of: message) else {
                answer(
                    .refused(
                        "the account \(name) did not sign this join with its key: join as a guest (--guest), "
                            + "or import the identity that owns the account (parley account import)"))
                return
            }
            answer(.verified(name))
        }
    }

    /// Someone joined or left a call: the account's presence changes, and in a kept room the line goes into the
    /// room's channel (and live to its members online). On a join, `history` gets the room's lines from before it
    /// (oldest first, at most `ChatHistory.maximumLines`).
    public func callActivity(_ activity: CallActivity, history: (@Sendable ([StoredChannelPost]) -> Void)? = nil) {
        queue.async { [self] in
            if let account = activity.member.account {
                perform(
                    state.callActivity(
                        account: account, member: activity.member.id, joined: activity.joined,
                        room: activity.hidesRoom ? nil : activity.room, at: wallClock()))
            }
            guard activity.kept else {
                history?([])
                return
            }
            let now = wallClock()
            let line = NewChannelPost(
                id: "call-\(activity.joined ? "joined" : "left")-\(activity.member.id)-\(now)", channel: activity.room,
                sender: activity.sender, kind: activity.joined ? .callJoined : .callLeft, text: "", postedAt: now,
                members: activity.members)
            do throws(StoreError) {
                let stored = try store.post(line).stored
                perform(state.deliver(stored))
                if let history {
                    let page = try store.channelHistory(
                        activity.room, before: stored.sequence,
                        limit: ChatHistory.maximumLines)
                    history(page.reversed())
                }
            } catch {
                logger.warning("room activity not kept", metadata: ["room": "\(activity.room)", "error": "\(error)"])
                history?([])
            }
        }
    }

    /// A chat line said in a kept room's call: stored in the room's channel and sent to its members online.
    public func roomChat(room: String, id: String, sender: String, text: String, time: Int64) {
        queue.async { [self] in
            do throws(StoreError) {
                let result = try store.post(
                    NewChannelPost(
                        id: id, channel: room, sender: sender, text: text,
                        postedAt: time))
                if result.isNew { perform(state.deliver(result.stored)) }
            } catch {
                logger.warning("room chat not kept", metadata: ["room": "\(room)", "error": "\(error)"])
            }
        }
    }
}
