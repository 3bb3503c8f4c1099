import Foundation
import ParleyStore
import ParleyWire

/// Receipts and sends gathered and written in batches, and catching up after the cluster's bus was down.
extension MessagingService {
    /// Commits every pending send in one transaction, then acknowledges each and delivers the new ones live; then a
    /// chunk of receipts.
    func flushSends() {
        defer { flushReceipts(all: false) }
        let (batch, messages) = state.takeSends(at: wallClock())
        guard !batch.isEmpty else { return }
        let results: Result<[Result<(stored: StoredDirectMessage, isNew: Bool), StoreError>], StoreError>
        do throws(StoreError) {
            results = .success(try store.store(batch: messages))
        } catch {
            results = .failure(error)
        }
        perform(state.sendsStored(batch, results))
    }

    /// Marks pending receipts' messages delivered in one transaction, then sends the next backlog pages and tells
    /// the senders. Unless `all`, at most about `MessagingState.receiptChunk` messages a turn.
    func flushReceipts(all: Bool = true) {
        let (batch, actions) = state.takeReceipts(all: all)
        perform(actions)
        guard !batch.isEmpty else { return }
        let results: Result<[[MessageMark]], StoreError>
        do throws(StoreError) {
            results = .success(
                try store.markDelivered(batch: batch.map { ($0.sequences, $0.account) }, at: wallClock()))
        } catch {
            results = .failure(error)
        }
        perform(state.receiptsMarked(batch, results))
    }

    /// After the bus was down: each caught-up connection gets what waits for its account and it has not had. While
    /// the database does not answer, tried again each second until it does.
    func redeliverMissed() {
        for account in state.accountsToCatchUp() {
            do throws(StoreError) {
                let waiting = try store.undelivered(to: account, limit: maxMessagesPerPage)
                perform(waiting.flatMap { state.deliverLive($0) })
            } catch {
                scheduleCatchUp()
                return
            }
        }
    }

    /// A catch-up from the tables in a second (once, however often asked meanwhile).
    func scheduleCatchUp() {
        guard !state.catchUpScheduled else { return }
        state.catchUpScheduled = true
        perform([.catchUpSoon])
    }
}
