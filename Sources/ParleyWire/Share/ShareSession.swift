/// The sharer's side of a shared terminal, without its edges: the emulator's screens in, numbered updates out, at
/// most `maxUpdatesPerSecond`, a full screen when one is asked for (a member joined, an update was lost). Time is
/// an input (ms on the caller's clock).
public struct ShareSession: Sendable {
    /// Updates a second at most (the 30).
    public static let maxUpdatesPerSecond = 30.0

    /// The screen the last update left viewers with.
    public private(set) var sent: TerminalScreen?
    /// The last update's number.
    public private(set) var sequence: UInt32 = 0
    private var lastSentAt = -Double.infinity
    private var fullScreenWanted = true

    public init() {}

    /// Whether the next update is to be a full screen.
    public var wantsFullScreen: Bool { fullScreenWanted }

    /// Asks for a full screen in the next update.
    public mutating func requestFullScreen() { fullScreenWanted = true }

    /// The update to send at `now` for `screen`, or nil: nothing changed, or too soon after the last (the caller
    /// asks again; the changes wait, none is lost).
    public mutating func update(for screen: TerminalScreen, at now: Double) -> ShareUpdate? {
        guard now - lastSentAt >= 1_000 / Self.maxUpdatesPerSecond else { return nil }
        guard fullScreenWanted || screen != sent else { return nil }
        sequence &+= 1
        let update = ShareUpdate.between(fullScreenWanted ? nil : sent, screen, sequence: sequence)
        fullScreenWanted = false
        sent = screen
        lastSentAt = now
        return update
    }
}
