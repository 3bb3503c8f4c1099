import Dispatch
import Foundation
import Logging
import NIOWebSocket
import ParleySecurity
import ParleyStore
import ParleyWire

/// Logging in: the challenge, the signed proof, then what waited for the account.
extension MessagingService {
    func startLogin(_ login: AccountCard, on id: UInt64) {
        guard let peer = connections[id]?.peer else { return }
        guard connections[id]?.account == nil else {
            peer.send(.error(SignalingError(.notAllowed, "already logged in as \(connections[id]?.account ?? "")")))
            return
        }
        do throws(NameError) {
            _ = try DisplayName.validate(login.name)
        } catch {
            peer.send(.error(SignalingError(.badName, "account name: \(error)")))
            return
        }
        guard let signing = Data(base64Encoded: login.signingKey),
            let agreement = Data(base64Encoded: login.agreementKey),
            let keys = try? AccountKeys(signing: Array(signing), agreement: Array(agreement))
        else {
            peer.send(
                .error(
                    SignalingError(
                        .badField,
                        "login \"signingKey\" and \"agreementKey\" must be base64 of 32-byte Curve25519 public keys")))
            return
        }
        var nonce = [UInt8](repeating: 0, count: 32)
        var random = SystemRandomNumberGenerator()
        for index in nonce.indices { nonce[index] = UInt8.random(in: 0...255, using: &random) }
        connections[id]?.pending = (login.name, keys, nonce)
        peer.send(.challenge(LoginChallenge(nonce: Data(nonce).base64EncodedString())))
    }

    func finishLogin(_ proof: LoginProof, on id: UInt64) {
        guard let connection = connections[id] else { return }
        let peer = connection.peer
        guard let pending = connection.pending else {
            peer.send(.error(SignalingError(.notAllowed, "proof without a login: send login first")))
            return
        }
        connections[id]?.pending = nil
        let message = AccountIdentity.loginMessage(name: pending.name, challenge: pending.nonce)
        guard let signature = AccountKeys.signature(base64: proof.signature),
            pending.keys.verifies(signature, of: message)
        else {
            peer.send(.error(SignalingError(.accountRefused, "the login proof does not verify with the keys sent")))
            return
        }
        let binding: AccountBinding
        do {
            binding = try store.bind(account: pending.name, to: pending.keys)
        } catch {
            peer.send(.error(Self.refusal(error)))
            return
        }
        guard binding != .belongsToOtherKeys else {
            peer.send(
                .error(
                    SignalingError(
                        .accountRefused,
                        "the account \(pending.name) belongs to another key: pick another name, or import your identity "
                            + "from the computer that created it (parley account import)")))
            return
        }
        guard (online[pending.name]?.count ?? 0) < limits.connectionsPerAccount else {
            peer.send(
                .error(
                    SignalingError(
                        .limitReached,
                        "\(pending.name) holds \(limits.connectionsPerAccount) connections, the most one account may")))
            return
        }
        if online[pending.name] == nil {
            let channels: [String]
            do {
                channels = try store.channels(of: pending.name)
            } catch {
                peer.send(.error(Self.refusal(error)))
                return
            }
            channelsOf[pending.name] = Set(channels)
            for channel in channels { onlineMembers[channel, default: []].insert(pending.name) }
        }
        let wasOnline = isOnline(pending.name)
        let wasHere = online[pending.name] != nil
        connections[id]?.account = pending.name
        online[pending.name, default: []].insert(id)
        if !wasHere { publishPresence(of: pending.name) }
        if !wasOnline { announcePresence(of: pending.name) }
        let waiting = (try? store.undeliveredCount(to: pending.name)) ?? 0
        peer.send(.loggedIn(LoggedIn(name: pending.name, created: binding == .created, waiting: waiting)))
        logger.info("account logged in", metadata: ["account": "\(pending.name)", "created": "\(binding == .created)"])
        deliverBacklog(to: id)
    }

    /// Sends the next page of what waited for this account, once the previous page was acknowledged.
    func deliverBacklog(to id: UInt64) {
        guard let connection = connections[id], let account = connection.account, !connection.caughtUp,
            connection.unacknowledged.isEmpty
        else { return }
        let page: [StoredDirectMessage]
        do {
            page = try store.undelivered(to: account, limit: maxMessagesPerPage)
        } catch {
            connection.peer.send(.error(Self.refusal(error)))
            return
        }
        connections[id]?.unacknowledged = Set(page.map(\.sequence))
        if page.count < maxMessagesPerPage { connections[id]?.caughtUp = true }
        for stored in page { connection.peer.send(.message(delivery(stored))) }
    }

    /// A stored message as `reader` receives it: the sender's own copy only when the sender reads it.
    func delivery(_ stored: StoredDirectMessage, to reader: String? = nil) -> DirectMessageDelivery {
        DirectMessageDelivery(
            sequence: stored.sequence, id: stored.message.id, from: stored.message.sender,
            to: stored.message.recipient, sealed: Data(stored.message.sealed).base64EncodedString(),
            sentAt: stored.message.receivedAt, delivered: stored.deliveredAt != nil, read: stored.readAt != nil,
            senderCopy: reader == stored.message.sender
                ? stored.message.senderCopy.map { Data($0).base64EncodedString() } : nil)
    }

}
