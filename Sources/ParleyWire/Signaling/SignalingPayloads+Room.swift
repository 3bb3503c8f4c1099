// Running the room: roles and the stage, the host's controls (allow, remove, the new host), and keep-alive.

/// A request to switch role.
public struct RoleRequest: Codable, Sendable, Equatable {
    /// The wanted role.
    public var role: MemberRole

    /// A role request.
    public init(role: MemberRole) { self.role = role }
}

/// A member's role changed.
public struct MemberRoleChange: Codable, Sendable, Equatable {
    /// Whose role.
    public var id: UInt32
    /// The new role.
    public var role: MemberRole

    /// A role notice.
    public init(id: UInt32, role: MemberRole) {
        self.id = id
        self.role = role
    }
}

/// A member named by id (the host's `allow` and `remove`, the relay's `hand` and `host`).
public struct MemberRef: Codable, Sendable, Equatable {
    /// The member.
    public var id: UInt32

    /// A member reference.
    public init(id: UInt32) { self.id = id }
}

/// A member the host removed, named as they would join again (the host's `readmit`).
public struct Readmission: Codable, Sendable, Equatable {
    /// The display name or account they were removed under.
    public var name: String

    /// A readmission.
    public init(name: String) { self.name = name }
}

/// Why this member was removed from the room.
public struct Removal: Codable, Sendable, Equatable {
    /// Who removed it (the host's display name).
    public var by: String
    /// A sentence for the user.
    public var message: String

    /// A removal notice.
    public init(by: String, message: String) {
        self.by = by
        self.message = message
    }
}

/// A keep-alive token (`ping` and `pong`).
public struct KeepAlive: Codable, Sendable, Equatable {
    /// Opaque number echoed back.
    public var token: UInt64

    /// A keep-alive.
    public init(token: UInt64) { self.token = token }
}

/// Where a room lives when it is not on the relay that was asked: another node of its cluster.
public struct Redirect: Codable, Sendable, Equatable {
    /// The room asked for.
    public var room: String
    /// The node's address for clients, `HOST:PORT`.
    public var server: String
    /// The node's id in the cluster.
    public var node: String

    public init(room: String, server: String, node: String) {
        self.room = room
        self.server = server
        self.node = node
    }

    /// Longest `server` (a DNS name and a port) and `node` a redirect may carry.
    public static let maximumServerBytes = 261
    public static let maximumNodeBytes = 128
}

extension Redirect: ValidatedPayload {
    /// A server of the form `HOST:PORT` (port 1…65535) and a node id within their bounds.
    func validated() throws(SignalingError) -> Redirect {
        guard server.utf8.count <= Self.maximumServerBytes, let colon = server.lastIndex(of: ":"),
            colon != server.startIndex, let port = Int(server[server.index(after: colon)...]),
            (1...65535).contains(port),
            !server.contains(where: { $0.isWhitespace })
        else {
            throw SignalingError(
                .badField,
                "redirect or move \"server\" must be HOST:PORT (port 1…65535, at most \(Self.maximumServerBytes) bytes), got "
                    + "\"\(server.prefix(80))\"")
        }
        guard (1...Self.maximumNodeBytes).contains(node.utf8.count) else {
            throw SignalingError(.badField, "redirect or move \"node\" must be 1…\(Self.maximumNodeBytes) bytes")
        }
        return self
    }
}
