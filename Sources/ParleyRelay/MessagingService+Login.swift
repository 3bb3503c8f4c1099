import Foundation
import Logging
import ParleyStore
import ParleyWire

/// Logging in and the backlog: the store's calls the state's decisions ask for.
extension MessagingService {
    /// A login's proof: checked, the account bound to its keys, its channels read on its first connection here, and
    /// what waits for it counted.
    func finishLogin(_ proof: LoginProof, on id: UInt64) {
        let pending: MessagingState.PendingLogin
        switch state.checkProof(proof, on: id) {
        case .success(let value): pending = value
        case .failure(let refusal):
            perform(refusal.actions)
            return
        }
        do throws(StoreError) {
            let binding = try store.bind(account: pending.name, to: pending.keys)
            let readsChannels: Bool
            switch state.checkBinding(binding, of: pending.name, on: id) {
            case .success(let value): readsChannels = value
            case .failure(let refusal):
                perform(refusal.actions)
                return
            }
            let channels = readsChannels ? try store.channels(of: pending.name) : nil
            let waiting = (try? store.undeliveredCount(to: pending.name)) ?? 0
            logger.info(
                "account logged in", metadata: ["account": "\(pending.name)", "created": "\(binding == .created)"])
            perform(
                state.loggedIn(id, as: pending.name, created: binding == .created, channels: channels, waiting: waiting)
            )
        } catch {
            peers[id]?.send(.error(MessagingState.refusal(error)))
        }
    }

    /// Sends the next page of what waited for this connection's account, once the previous page was acknowledged.
    func deliverBacklog(to id: UInt64) {
        guard let account = state.backlogDue(for: id) else { return }
        do throws(StoreError) {
            perform(state.backlogPage(try store.undelivered(to: account, limit: maxMessagesPerPage), for: id))
        } catch {
            peers[id]?.send(.error(MessagingState.refusal(error)))
        }
    }

    /// Tells the connections watching `account` where it is now (its last-seen time read when it is offline).
    func announcePresence(of account: String) {
        guard state.watchers[account]?.isEmpty == false else { return }
        let answer =
            (try? presence(of: account))
            ?? PresenceAnswer(name: account, online: state.isOnline(account), lastSeen: nil)
        perform(state.announcements(answer))
    }

    /// Where `account` is now: online, in a call (and which room, unless hidden), or when it was last seen.
    func presence(of account: String) throws(StoreError) -> PresenceAnswer {
        state.presence(of: account, lastSeen: state.isOnline(account) ? nil : try store.lastSeen(account))
    }
}
