import Foundation
import Logging
import ParleyStore
import PostgresNIO

// Channels and the conversation list of `PostgresMessageStore`: the same transactions as the direct messages beside
// them (PostgresMessageStore.swift), on `channel_member` and `channel_post`.

extension PostgresMessageStore {
    // MARK: Channels

    public func join(channel: String, account: String, at: Int64) throws(StoreError) -> StoredChannelPost? {
        let logger = logger
        return try transaction("add \(account) to channel \(channel)") { [self] connection in
            try await prepareInsert(connection, lock: Self.channelPostLock)
            // A member has read everything before it joined.
            let inserted = try await connection.query(
                """
                INSERT INTO channel_member (channel, account, joined_at, read_through)
                VALUES (\(channel), \(account), \(at),
                        (SELECT COALESCE(max(sequence), 0) FROM channel_post WHERE channel = \(channel)))
                ON CONFLICT (channel, account) DO NOTHING RETURNING account
                """, logger: logger
            ).collect()
            guard !inserted.isEmpty else { return nil }
            return try await Self.insertActivity(
                connection, channel: channel, account: account, kind: .joined, at: at, logger: logger)
        }
    }

    public func leave(channel: String, account: String, at: Int64) throws(StoreError) -> StoredChannelPost? {
        let logger = logger
        return try transaction("remove \(account) from channel \(channel)") { [self] connection in
            try await prepareInsert(connection, lock: Self.channelPostLock)
            let deleted = try await connection.query(
                "DELETE FROM channel_member WHERE channel = \(channel) AND account = \(account) RETURNING account",
                logger: logger
            ).collect()
            guard !deleted.isEmpty else { return nil }
            return try await Self.insertActivity(
                connection, channel: channel, account: account, kind: .left, at: at, logger: logger)
        }
    }

    private static func insertActivity(
        _ connection: PostgresConnection, channel: String, account: String, kind: ChannelPostKind, at: Int64,
        logger: Logger
    ) async throws -> StoredChannelPost {
        let members = try await count(
            connection, "SELECT count(*) FROM channel_member WHERE channel = \(channel)", logger: logger)
        // Activity ids are the store's own: unique per line, never chosen by a client.
        let id = "\(kind.rawValue)-\(at)-\(UInt32.random(in: 0...UInt32.max))"
        let line = NewChannelPost(id: id, channel: channel, sender: account, kind: kind, text: "", postedAt: at)
        let sequence = try await insertPost(connection, line, members: members, logger: logger)
        return StoredChannelPost(sequence: sequence, post: line, members: members)
    }

    private static func insertPost(
        _ connection: PostgresConnection, _ post: NewChannelPost, members: Int?, logger: Logger
    ) async throws -> Int64 {
        var sequence: Int64 = 0
        for try await value in try await connection.query(
            """
            INSERT INTO channel_post (channel, id, sender, kind, text, posted_at, members)
            VALUES (\(post.channel), \(post.id), \(post.sender), \(post.kind.rawValue), \(post.text), \(post.postedAt),
                    \(members))
            RETURNING sequence
            """, logger: logger
        ).decode(Int64.self) {
            sequence = value
        }
        return sequence
    }

    public func members(of channel: String, limit: Int) throws(StoreError) -> (count: Int, names: [String]) {
        let logger = logger
        let result = try transaction("read the members of channel \(channel)", readOnly: true) { connection in
            let count = try await Self.count(
                connection, "SELECT count(*) FROM channel_member WHERE channel = \(channel)", logger: logger)
            var names: [String] = []
            for try await name in try await connection.query(
                """
                SELECT account FROM channel_member WHERE channel = \(channel)
                ORDER BY joined_at, account LIMIT \(max(0, limit))
                """, logger: logger
            ).decode(String.self) {
                names.append(name)
            }
            return MembersPage(count: count, names: names)
        }
        return (result.count, result.names)
    }

    public func channels(of account: String) throws(StoreError) -> [String] {
        let logger = logger
        return try transaction("read the channels of \(account)", readOnly: true) { connection in
            var channels: [String] = []
            for try await channel in try await connection.query(
                "SELECT channel FROM channel_member WHERE account = \(account) ORDER BY joined_at, channel",
                logger: logger
            ).decode(String.self) {
                channels.append(channel)
            }
            return channels
        }
    }

    public func post(_ post: NewChannelPost) throws(StoreError) -> (stored: StoredChannelPost, isNew: Bool) {
        let logger = logger
        let result = try transaction("store message \(post.id) of \(post.sender) in channel \(post.channel)") {
            [self] connection in
            try await prepareInsert(connection, lock: Self.channelPostLock)
            if let existing = try await Self.posts(
                connection,
                """
                \(unescaped: Self.postColumns)
                WHERE channel = \(post.channel) AND sender = \(post.sender) AND id = \(post.id)
                """, logger: logger
            ).first {
                guard existing.post.text == post.text, existing.post.kind == post.kind else {
                    throw StoreError.idReused(sender: post.sender, id: post.id)
                }
                return PostResult(stored: existing, isNew: false)
            }
            let sequence = try await Self.insertPost(connection, post, members: post.members, logger: logger)
            return PostResult(
                stored: StoredChannelPost(sequence: sequence, post: post, members: post.members), isNew: true)
        }
        return (result.stored, result.isNew)
    }

    private static let postColumns =
        "SELECT sequence, channel, id, sender, kind, text, posted_at, members FROM channel_post"

    private static func posts(_ connection: PostgresConnection, _ query: PostgresQuery, logger: Logger)
        async throws -> [StoredChannelPost]
    {
        var posts: [StoredChannelPost] = []
        for try await row in try await connection.query(query, logger: logger) {
            let (sequence, channel, id, sender, kind, text, postedAt, members) =
                try row.decode((Int64, String, String, String, String, String, Int64, Int?).self)
            posts.append(
                StoredChannelPost(
                    sequence: sequence,
                    post: NewChannelPost(
                        id: id, channel: channel, sender: sender, kind: ChannelPostKind(rawValue: kind) ?? .message,
                        text: text, postedAt: postedAt),
                    members: members))
        }
        return posts
    }

    public func channelHistory(_ channel: String, before: Int64?, limit: Int) throws(StoreError)
        -> [StoredChannelPost]
    {
        let logger = logger
        return try transaction("read the history of channel \(channel)", readOnly: true) { connection in
            try await Self.posts(
                connection,
                """
                \(unescaped: Self.postColumns) WHERE channel = \(channel) AND sequence < \(before ?? Int64.max)
                ORDER BY sequence DESC LIMIT \(max(0, limit))
                """, logger: logger)
        }
    }

    public func markChannelRead(_ channel: String, by account: String, through sequence: Int64) throws(StoreError) {
        let logger = logger
        try transaction("mark channel \(channel) read") { connection in
            _ = try await connection.query(
                """
                UPDATE channel_member SET read_through = GREATEST(read_through, \(sequence))
                WHERE channel = \(channel) AND account = \(account)
                """, logger: logger)
        }
    }

    public func conversations(of account: String, limit: Int) throws(StoreError) -> [ConversationSummary] {
        let logger = logger
        let limit = max(0, limit)
        return try transaction("read the conversations of \(account)", readOnly: true) { connection in
            var summaries: [ConversationSummary] = []
            var last: [(peer: String, sequence: Int64)] = []
            for try await (peer, sequence) in try await connection.query(
                """
                SELECT peer, max(sequence) FROM (
                    SELECT recipient AS peer, sequence FROM direct_message WHERE sender = \(account)
                    UNION ALL
                    SELECT sender AS peer, sequence FROM direct_message WHERE recipient = \(account)
                ) AS exchanged GROUP BY peer ORDER BY max(sequence) DESC LIMIT \(limit)
                """, logger: logger
            ).decode((String, Int64).self) {
                last.append((peer, sequence))
            }
            for (peer, sequence) in last {
                guard
                    let message = try await Self.messages(
                        connection, "\(unescaped: Self.messageColumns) WHERE sequence = \(sequence)", logger: logger
                    ).first
                else { continue }
                let unread = try await Self.count(
                    connection,
                    """
                    SELECT count(*) FROM direct_message
                    WHERE recipient = \(account) AND sender = \(peer) AND read_at IS NULL
                    """, logger: logger)
                summaries.append(
                    ConversationSummary(
                        kind: .direct(peer: peer, last: message), unread: unread, lastAt: message.message.receivedAt))
            }
            var memberships: [(channel: String, readThrough: Int64)] = []
            for try await row in try await connection.query(
                "SELECT channel, read_through FROM channel_member WHERE account = \(account)", logger: logger
            ).decode((String, Int64).self) {
                memberships.append(row)
            }
            for membership in memberships {
                let lastPost = try await Self.posts(
                    connection,
                    "\(unescaped: Self.postColumns) WHERE channel = \(membership.channel) ORDER BY sequence DESC LIMIT 1",
                    logger: logger
                ).first
                let unread = try await Self.count(
                    connection,
                    """
                    SELECT count(*) FROM channel_post
                    WHERE channel = \(membership.channel) AND sequence > \(membership.readThrough)
                        AND kind = \(ChannelPostKind.message.rawValue) AND sender <> \(account)
                    """, logger: logger)
                summaries.append(
                    ConversationSummary(
                        kind: .channel(name: membership.channel, last: lastPost), unread: unread,
                        lastAt: lastPost?.post.postedAt ?? 0))
            }
            return Array(summaries.sorted { $0.lastAt > $1.lastAt }.prefix(limit))
        }
    }
}

/// `members(of:)`'s answer across the bridge (tuples are not `Sendable` results of a generic).
private struct MembersPage: Sendable {
    var count: Int
    var names: [String]
}

/// `post`'s answer across the bridge.
private struct PostResult: Sendable {
    var stored: StoredChannelPost
    var isNew: Bool
}
