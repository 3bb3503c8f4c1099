/// The network issue's named conditions, one table reused by the lab's tests and the network benchmark: what the
/// first member's link does (the member the scenario is about; the others are on clean links), how many are in the
/// call, and what changes while it runs. Delay, jitter and bursts of loss are a user-space element's
/// (`Link.uplinkElement`, `downlinkElement`), capacity and queue `tc`'s, blocking and moving the lab's.
public struct NetworkScenario: Sendable, Equatable {
    /// Something the lab does to the first member's link mid-call.
    public enum Change: Sendable, Equatable {
        /// Its uplink's capacity becomes `kbps` (nil: unshaped).
        case uplinkKbps(Int?)
        /// UDP between it and the relay is dropped on the path (TCP passes).
        case blockUDP
        /// UDP passes again.
        case unblockUDP
        /// It gets a new address (its old one gone at once).
        case moveAddress
    }

    /// A change and when it happens, counted from the moment the call is bound (zero: before anyone joins).
    public struct Step: Sendable, Equatable {
        public var after: Duration
        public var change: Change

        public init(after: Duration, _ change: Change) {
            self.after = after
            self.change = change
        }
    }

    /// The name tests, benchmarks and docs use.
    public var name: String
    /// One line on what it is, for tables.
    public var summary: String
    /// How many are in the call (the benchmark's size; a test may run it smaller and says so).
    public var members: Int
    /// The first member's link.
    public var link: NetworkLab.Link
    /// What happens to that link while the call runs, in order.
    public var steps: [Step]

    public init(name: String, summary: String, members: Int = 2, link: NetworkLab.Link, steps: [Step] = []) {
        self.name = name
        self.summary = summary
        self.members = members
        self.link = link
        self.steps = steps
    }

    /// Every scenario, in the order tables list them.
    public static let all: [NetworkScenario] = [
        NetworkScenario(name: "clean", summary: "no shaping", link: .clean),
        NetworkScenario(
            name: "dsl", summary: "8 Mbit/s down, 1 Mbit/s up, 20 ms each way",
            link: NetworkLab.Link(
                uplinkKbps: 1_000, downlinkKbps: 8_000, uplinkElement: .init(delay: .milliseconds(20)),
                downlinkElement: .init(delay: .milliseconds(20)))),
        NetworkScenario(
            name: "congested-downlink", summary: "one member of four on 1 Mbit/s down", members: 4,
            link: NetworkLab.Link(downlinkKbps: 1_000)),
        NetworkScenario(
            name: "mobile", summary: "1.5 Mbit/s down, 600 kbit/s up, 80 ms ± 30 ms each way, 1 % loss",
            link: NetworkLab.Link(
                uplinkKbps: 600, downlinkKbps: 1_500, uplinkElement: mobileElement, downlinkElement: mobileElement)),
        NetworkScenario(
            name: "lossy-wifi", summary: "5 % loss in bursts of 3, 20 ms ± 15 ms each way",
            link: NetworkLab.Link(uplinkElement: wifiElement, downlinkElement: wifiElement)),
        NetworkScenario(
            name: "capacity-drop", summary: "uplink 4 Mbit/s, 500 kbit/s for 20 s, then 4 Mbit/s again",
            link: NetworkLab.Link(uplinkKbps: 4_000),
            steps: [Step(after: .seconds(3), .uplinkKbps(500)), Step(after: .seconds(23), .uplinkKbps(4_000))]),
        NetworkScenario(
            name: "udp-blocked", summary: "UDP dropped on the path from the start (TCP passes)", link: .clean,
            steps: [Step(after: .zero, .blockUDP)]),
        NetworkScenario(
            name: "rebind", summary: "the member's address changes mid-call", link: .clean,
            steps: [Step(after: .seconds(3), .moveAddress)]),
    ]

    static let mobileElement = LinkModel.Settings(
        delay: .milliseconds(80), delayDeviation: .milliseconds(30), lossPercent: 1)
    static let wifiElement = LinkModel.Settings(
        delay: .milliseconds(20), delayDeviation: .milliseconds(15), lossPercent: 5, meanBurstLength: 3)

    /// The scenario called `name`; an unknown name is an error listing the known ones.
    public static func named(_ name: String) throws(NetworkLabError) -> NetworkScenario {
        guard let scenario = all.first(where: { $0.name == name }) else {
            throw NetworkLabError(
                description: "no network scenario named \"\(name)\"; known: "
                    + all.map(\.name).joined(separator: ", "))
        }
        return scenario
    }
}
