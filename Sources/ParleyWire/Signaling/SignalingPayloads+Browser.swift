/// To a browser member: which peer each of its receive transceivers carries now (`slots`), by the mid its offer gave
/// the transceiver. The page shows the tracks of one slot pair (an audio and a video mid) as that member's tile; a
/// slot not listed carries nobody. Sent again whenever someone comes into or leaves a slot.
public struct BrowserSlots: Codable, Sendable, Equatable {
    /// One receive slot pair and the member in it.
    public struct Slot: Codable, Sendable, Equatable {
        /// The member whose media the slot carries.
        public var member: UInt32
        /// The mid of its audio transceiver, if the page offered one.
        public var audio: String?
        /// The mid of its video transceiver, if the page offered one.
        public var video: String?

        /// A slot pair.
        public init(member: UInt32, audio: String?, video: String?) {
            self.member = member
            self.audio = audio
            self.video = video
        }
    }

    /// The slots that carry somebody.
    public var slots: [Slot]
    /// Members in the room the page has no slot for (more peers than its offer had transceivers).
    public var unseen: [UInt32]

    /// An assignment.
    public init(slots: [Slot], unseen: [UInt32] = []) {
        self.slots = slots
        self.unseen = unseen
    }
}
