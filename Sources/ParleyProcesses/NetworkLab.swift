import Foundation

/// Why the network lab could not be set up or used: the command and what it said.
public struct NetworkLabError: Error, CustomStringConvertible {
    public var description: String

    public init(description: String) {
        self.description = description
    }
}

/// A private network for a call, made of Linux network namespaces (root only): the relay in one, each member in its
/// own, each member joined to the relay by a veth pair of its own, so every member has its own uplink and downlink
/// to shape. Addresses come from the benchmarking range 198.18.0.0/15 (RFC 2544), inside namespaces the lab made,
/// never routed anywhere: member `i` is 198.18.i.2 (later .3, .4… when it moves), the relay's end of its link
/// 198.18.i.1, each link a /29. Capacity and queue come
/// from `tc` token buckets (this kernel has no netem). Everything the lab made goes in `tearDown`, also on deinit.
public final class NetworkLab: @unchecked Sendable {
    /// One member's link to the relay: capacity each way (nil: not shaped), the longest a packet may queue, the
    /// share of packets lost at random each way (0...100 per cent, every packet drawn on its own), and what a
    /// user-space element does to its media each way (delay, jitter, loss in bursts: `EmulatedLink`, which whoever
    /// starts the call starts for every member whose link asks for one).
    public struct Link: Sendable, Equatable {
        public var uplinkKbps: Int?
        public var downlinkKbps: Int?
        public var queue: Duration
        public var uplinkLossPercent: Int
        public var downlinkLossPercent: Int
        public var uplinkElement: LinkModel.Settings
        public var downlinkElement: LinkModel.Settings

        public init(
            uplinkKbps: Int? = nil, downlinkKbps: Int? = nil, queue: Duration = .milliseconds(60),
            uplinkLossPercent: Int = 0, downlinkLossPercent: Int = 0, uplinkElement: LinkModel.Settings = .clean,
            downlinkElement: LinkModel.Settings = .clean
        ) {
            self.uplinkKbps = uplinkKbps
            self.downlinkKbps = downlinkKbps
            self.queue = queue
            self.uplinkLossPercent = uplinkLossPercent
            self.downlinkLossPercent = downlinkLossPercent
            self.uplinkElement = uplinkElement
            self.downlinkElement = downlinkElement
        }

        /// Whether the member's media goes through a user-space element.
        public var needsElement: Bool { uplinkElement != .clean || downlinkElement != .clean }

        /// No shaping either way.
        public static let clean = Link()
    }

    /// A member's place in the lab: its namespace and its address.
    public struct Member: Sendable, Equatable {
        public var name: String
        public var namespace: String
        public var address: String
        /// The relay's address on this member's link (where it connects).
        public var relayAddress: String
        /// What the member's link does.
        public var link: Link
    }

    /// Why the lab cannot run here, or nil when it can (root, `ip`, `tc` and `nft` present).
    public static var unavailableReason: String? {
        guard getuid() == 0 else { return "network namespaces need root (CI runs as root)" }
        for (tool, package) in [(ip, "iproute2"), (tc, "iproute2"), (nft, "nftables")]
        where !FileManager.default.isExecutableFile(atPath: tool) {
            return "\(tool) is missing (Debian's \(package); `make test` installs it)"
        }
        return nil
    }

    static let ip = "/usr/sbin/ip"
    static let tc = "/usr/sbin/tc"
    static let nft = "/usr/sbin/nft"

    /// The prefix of everything this lab names (namespaces, interfaces), unique per process and lab.
    public let tag: String
    /// The relay's namespace.
    public let relayNamespace: String
    public private(set) var members: [Member] = []
    private var namespaces: [String] = []
    private var tornDown = false

    /// A lab with its relay namespace made; `tag` (a few letters) keeps two labs apart.
    public init(tag: String) throws {
        self.tag = "pl\(tag.prefix(4))\(getpid() % 100_000)"
        relayNamespace = "\(self.tag)r"
        try makeNamespace(relayNamespace)
    }

    deinit { tearDown() }

    /// Adds a member on `link`; its namespace, its veth pair, addresses and shaping made.
    @discardableResult
    public func addMember(_ name: String, link: Link = .clean) throws -> Member {
        let index = members.count + 1
        guard index < 250 else { throw NetworkLabError(description: "a lab holds at most 249 members") }
        for percent in [link.uplinkLossPercent, link.downlinkLossPercent] where !(0...100).contains(percent) {
            throw NetworkLabError(description: "a link loses 0 to 100 % of its packets, not \(percent) %")
        }
        for settings in [link.uplinkElement, link.downlinkElement] {
            if let problem = settings.problem { throw NetworkLabError(description: problem) }
        }
        let namespace = "\(tag)m\(index)"
        try makeNamespace(namespace)
        let (memberSide, relaySide) = interfaces(ofMemberAt: index)
        try run(Self.ip, ["-n", namespace, "link", "add", memberSide, "type", "veth", "peer", "name", relaySide])
        do {
            let member = try connect(name, index: index, namespace: namespace, link: link)
            members.append(member)
            return member
        } catch {
            // The next member takes this index: its interface names must be free again (deleting one end of a
            // veth pair deletes both, wherever the other end is).
            _ = try? ChildProcess.run(
                Self.ip, ["-n", relayNamespace, "link", "delete", relaySide], timeout: .seconds(10))
            _ = try? ChildProcess.run(Self.ip, ["-n", namespace, "link", "delete", memberSide], timeout: .seconds(10))
            throw error
        }
    }

    /// Moves the relay's end of member `index`'s veth pair into the relay's namespace, gives both ends their
    /// addresses, and shapes and loses on them as `link` says.
    private func connect(_ name: String, index: Int, namespace: String, link: Link) throws -> Member {
        let (memberSide, relaySide) = interfaces(ofMemberAt: index)
        try run(Self.ip, ["-n", namespace, "link", "set", relaySide, "netns", relayNamespace])
        let member = Member(
            name: name, namespace: namespace, address: "198.18.\(index).2", relayAddress: "198.18.\(index).1",
            link: link)
        try run(Self.ip, ["-n", namespace, "addr", "add", "\(member.address)/29", "dev", memberSide])
        try run(Self.ip, ["-n", relayNamespace, "addr", "add", "\(member.relayAddress)/29", "dev", relaySide])
        try run(Self.ip, ["-n", namespace, "link", "set", memberSide, "up"])
        try run(Self.ip, ["-n", relayNamespace, "link", "set", relaySide, "up"])
        // Each side shapes what it sends: the member's end is its uplink, the relay's end its downlink.
        if let kbps = link.uplinkKbps { try shape(memberSide, in: namespace, kbps: kbps, queue: link.queue) }
        if let kbps = link.downlinkKbps { try shape(relaySide, in: relayNamespace, kbps: kbps, queue: link.queue) }
        // Loss by nftables where packets arrive (this kernel has no netem): a packet dropped on its way out would
        // fail the sender's `sendmsg` with EPERM instead of vanishing on the wire.
        try lose(link.uplinkLossPercent, arriving: relaySide, in: relayNamespace)
        try lose(link.downlinkLossPercent, arriving: memberSide, in: namespace)
        return member
    }

    /// Changes the capacity of `member`'s uplink to `kbps` (nil: unshaped) mid-call, keeping its queue length, as a
    /// link whose capacity drops does (another household member's download, a train leaving coverage).
    public func reshapeUplink(of member: Member, kbps: Int?, queue: Duration = .milliseconds(60)) throws {
        let (memberSide, _) = try interfaces(of: member)
        // Replacing the root qdisc keeps the link up; without shaping it goes back to the kernel's default.
        _ = try? ChildProcess.run(
            Self.tc, ["-n", member.namespace, "qdisc", "del", "dev", memberSide, "root"], timeout: .seconds(10))
        if let kbps { try shape(memberSide, in: member.namespace, kbps: kbps, queue: queue) }
    }

    /// Gives `member` a new address on its link, as a network does when a laptop moves or a lease is renewed: the
    /// old address is gone at once (what is on its way to it is lost, and its connections with it). Returns the
    /// member with its new address.
    @discardableResult
    public func moveAddress(of member: Member) throws -> Member {
        let (memberSide, _) = try interfaces(of: member)
        let position = try self.position(of: member)
        var moved = members[position]
        let prefix = moved.address.split(separator: ".").dropLast().joined(separator: ".")
        guard let host = Int(moved.address.split(separator: ".").last ?? ""), host < 6 else {
            throw NetworkLabError(description: "\(member.name) has moved as often as its /29 allows")
        }
        let next = "\(prefix).\(host + 1)"
        // The old one goes first: deleting a primary address deletes the secondaries of its subnet with it.
        try run(Self.ip, ["-n", member.namespace, "addr", "del", "\(moved.address)/29", "dev", memberSide])
        try run(Self.ip, ["-n", member.namespace, "addr", "add", "\(next)/29", "dev", memberSide])
        moved.address = next
        members[position] = moved
        return moved
    }

    /// Where a network refuses UDP.
    public enum UDPBlock: Sendable {
        /// A firewall on the path drops UDP both ways: what the member sends vanishes, nothing comes back.
        case onThePath
        /// The member's own firewall refuses UDP on its way out: the member's `sendmsg` fails with EPERM (and what
        /// the relay sends it is dropped on arrival).
        case atTheMember
    }

    /// Blocks UDP between `member` and the relay (TCP passes) until `unblockUDP`.
    public func blockUDP(of member: Member, _ block: UDPBlock = .onThePath) throws {
        let (memberSide, relaySide) = try interfaces(of: member)
        let table = "udp\(memberSide)"
        func nft(_ namespace: String, _ arguments: [String]) throws {
            try run(Self.ip, ["netns", "exec", namespace, Self.nft] + arguments)
        }
        func chain(_ namespace: String, hook: String) throws {
            try nft(namespace, ["add", "table", "inet", table])
            try nft(
                namespace,
                ["add", "chain", "inet", table, hook, "{", "type", "filter", "hook", hook, "priority", "0", ";", "}"])
        }
        try chain(member.namespace, hook: "prerouting")
        try nft(
            member.namespace,
            [
                "add", "rule", "inet", table, "prerouting", "iifname", memberSide, "meta", "l4proto", "udp", "counter",
                "drop",
            ])
        switch block {
        case .onThePath:
            try chain(relayNamespace, hook: "prerouting")
            try nft(
                relayNamespace,
                [
                    "add", "rule", "inet", table, "prerouting", "iifname", relaySide, "meta", "l4proto", "udp",
                    "counter",
                    "drop",
                ])
        case .atTheMember:
            try chain(member.namespace, hook: "output")
            try nft(
                member.namespace,
                [
                    "add", "rule", "inet", table, "output", "oifname", memberSide, "meta", "l4proto", "udp", "counter",
                    "drop",
                ])
        }
    }

    /// Lets UDP through `member`'s link again.
    public func unblockUDP(of member: Member) throws {
        let (memberSide, _) = try interfaces(of: member)
        for namespace in [member.namespace, relayNamespace] {
            // The relay's namespace has no table when the block was the member's own.
            _ = try? ChildProcess.run(
                Self.ip, ["netns", "exec", namespace, Self.nft, "delete", "table", "inet", "udp\(memberSide)"],
                timeout: .seconds(10))
        }
    }

    /// The UDP port, in the relay's namespace, of the user-space element on `member`'s media path.
    public func elementPort(of member: Member) throws -> Int {
        20_000 + (try position(of: member)) + 1
    }

    /// Sends what `member` sends to the relay's UDP `port` to `localPort` in the relay's namespace instead (its
    /// element's front), by an nftables redirect where it arrives; what that socket answers goes back to the member
    /// as from the relay's port (connection tracking undoes the redirect), so the member notices nothing.
    public func redirectMedia(of member: Member, port: Int, to localPort: Int) throws {
        let (_, relaySide) = try interfaces(of: member)
        let table = "el\(relaySide)"
        func nft(_ arguments: [String]) throws {
            try run(Self.ip, ["netns", "exec", relayNamespace, Self.nft] + arguments)
        }
        try nft(["add", "table", "ip", table])
        try nft([
            "add", "chain", "ip", table, "in", "{", "type", "nat", "hook", "prerouting", "priority", "-100", ";", "}",
        ])
        try nft([
            "add", "rule", "ip", table, "in", "iifname", relaySide, "udp", "dport", "\(port)", "redirect", "to",
            ":\(localPort)",
        ])
    }

    /// Does `change` to `member`'s link; returns the member as it is after (a move gives it a new address).
    @discardableResult
    public func apply(_ change: NetworkScenario.Change, to member: Member) throws -> Member {
        switch change {
        case .uplinkKbps(let kbps): try reshapeUplink(of: member, kbps: kbps, queue: member.link.queue)
        case .blockUDP: try blockUDP(of: member)
        case .unblockUDP: try unblockUDP(of: member)
        case .moveAddress: return try moveAddress(of: member)
        }
        return member
    }

    /// `path` with `arguments` as a command run inside `namespace`.
    public func command(in namespace: String, _ path: String, _ arguments: [String]) -> (String, [String]) {
        (Self.ip, ["netns", "exec", namespace, path] + arguments)
    }

    /// Packets the token bucket on `member`'s uplink dropped so far (nil when its uplink is not shaped).
    public func uplinkDrops(of member: Member) throws -> Int? {
        let memberSide = try interfaces(of: member).memberSide
        let result = try ChildProcess.run(
            Self.tc, ["-n", member.namespace, "-s", "qdisc", "show", "dev", memberSide], timeout: .seconds(10))
        guard result.status == 0, result.output.contains("tbf"),
            let range = result.output.range(of: #"dropped (\d+)"#, options: .regularExpression)
        else { return nil }
        return Int(result.output[range].split(separator: " ")[1])
    }

    /// Packets lost at random so far on `member`'s link, each way (zero where the link loses nothing).
    public func randomLosses(of member: Member) throws -> (uplink: Int, downlink: Int) {
        let (memberSide, relaySide) = try interfaces(of: member)
        func dropped(arriving interface: String, in namespace: String) throws -> Int {
            let result = try ChildProcess.run(
                Self.ip, ["netns", "exec", namespace, Self.nft, "list", "table", "inet", "lab"], timeout: .seconds(10))
            guard result.status == 0 else { return 0 }
            for line in result.output.split(separator: "\n") where line.contains("\"\(interface)\"") {
                guard let range = line.range(of: #"packets (\d+)"#, options: .regularExpression) else { continue }
                return Int(line[range].split(separator: " ")[1]) ?? 0
            }
            return 0
        }
        return (
            try dropped(arriving: relaySide, in: relayNamespace),
            try dropped(arriving: memberSide, in: member.namespace)
        )
    }

    /// The two ends of member `index`'s veth pair. Interface names are at most 15 bytes: the tag (at most 11) and a
    /// short suffix.
    private func interfaces(ofMemberAt index: Int) -> (memberSide: String, relaySide: String) {
        ("\(tag)a\(index)", "\(tag)b\(index)")
    }

    private func interfaces(of member: Member) throws -> (memberSide: String, relaySide: String) {
        interfaces(ofMemberAt: try position(of: member) + 1)
    }

    /// Where `member` is in `members` (its index is one more).
    private func position(of member: Member) throws -> Int {
        guard let position = members.firstIndex(where: { $0.namespace == member.namespace }) else {
            throw NetworkLabError(description: "\(member.name) is not a member of this lab")
        }
        return position
    }

    /// Removes every namespace the lab made (their interfaces and shaping go with them). Safe to call twice.
    public func tearDown() {
        guard !tornDown else { return }
        tornDown = true
        for namespace in namespaces.reversed() {
            _ = try? ChildProcess.run(Self.ip, ["netns", "delete", namespace], timeout: .seconds(10))
        }
    }

    private func makeNamespace(_ name: String) throws {
        // A namespace left by a killed run of the same process id would make `add` fail: it goes first.
        _ = try? ChildProcess.run(Self.ip, ["netns", "delete", name], timeout: .seconds(10))
        try run(Self.ip, ["netns", "add", name])
        namespaces.append(name)
        try run(Self.ip, ["-n", name, "link", "set", "lo", "up"])
    }

    /// A token bucket of `kbps` on `interface`, holding at most `queue` of it.
    private func shape(_ interface: String, in namespace: String, kbps: Int, queue: Duration) throws {
        let milliseconds = Int(queue / .milliseconds(1))
        // The burst must hold at least one full-size packet and a timer tick's worth of the rate.
        let burst = max(4_000, kbps * 1_000 / 8 / 100)
        try run(
            Self.tc,
            [
                "-n", namespace, "qdisc", "add", "dev", interface, "root", "tbf", "rate", "\(kbps)kbit", "burst",
                "\(burst)", "latency", "\(milliseconds)ms",
            ])
    }

    /// Drops `percent` of the packets arriving on `interface`, each drawn on its own (`numgen random`), counted.
    private func lose(_ percent: Int, arriving interface: String, in namespace: String) throws {
        guard percent > 0 else { return }  // 0...100: `addMember` checked
        func nft(_ arguments: [String]) throws { try run(Self.ip, ["netns", "exec", namespace, Self.nft] + arguments) }
        // `add` of a table or chain that exists is no error: the relay's namespace holds every member's rule.
        try nft(["add", "table", "inet", "lab"])
        try nft([
            "add", "chain", "inet", "lab", "in", "{", "type", "filter", "hook", "prerouting", "priority", "0", ";", "}",
        ])
        try nft([
            "add", "rule", "inet", "lab", "in", "iifname", interface, "numgen", "random", "mod", "100", "<",
            "\(percent)", "counter", "drop",
        ])
    }

    private func run(_ path: String, _ arguments: [String]) throws {
        let result = try ChildProcess.run(path, arguments, timeout: .seconds(10))
        guard result.status == 0 else {
            throw NetworkLabError(
                description: "\(([path] + arguments).joined(separator: " ")) failed (status \(result.status)): "
                    + result.output.trimmingCharacters(in: .whitespacesAndNewlines))
        }
    }
}
