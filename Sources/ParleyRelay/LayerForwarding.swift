import ParleyWire

/// Which simulcast layer of each sender every receiver gets: pure state, changed by tile reports and by the
/// keyframes that go by, so the rules are tested without sockets.
///
/// A receiver gets, per sender, the smallest layer that covers the size it draws that sender at (the full layer
/// until it reports, none while the sender is off its screen). A change of layer waits for a keyframe of the new
/// layer (which is asked for at once); until it arrives the old layer keeps flowing, so a picture never freezes or
/// breaks on a switch. A layer nobody gets or waits for is not needed, and its sender is told to pause it.
///
/// A receiver whose report gives its downlink (`TileReport.downlinkKbps`: losses showed a limit) gets, within it,
/// what `DownlinkAllocation` leaves each sender: the dominant speaker first, then the other tiles by size, each at the
/// largest layer that fits (never above the one its tile asks for), a tile that does not fit paused. A layer's cost
/// is its rate as measured on the way through (`setRates`), or a guess from its size until one was measured.
///
/// A sender whose uplink cannot carry every layer says which it sends (`setSending`): a receiver of a layer left out
/// gets the next smaller layer that is sent (switching at its keyframe, as any switch does), and moves back when the
/// layer is sent again.
///
/// In a room that spans nodes, another node's members are here too: as senders, their layers are chosen for the
/// receivers here like anyone's, and their demand (what the receivers here need of them) goes to their node; as
/// receivers they get nothing here (`receivesHere` false). What other nodes need of a sender here (`setNeeds`) adds
/// to its demand and decides which of its layers cross each trunk (`needs`).
public struct LayerForwarding: Sendable {
    /// What one receiver gets of one sender.
    public struct Choice: Sendable, Equatable {
        /// The layer forwarded now, nil for none.
        public var current: Int?
        /// The layer to switch to at its next keyframe, nil when no switch is pending.
        public var target: Int?
    }

    /// Something the relay must do after a change.
    public enum Effect: Sendable, Equatable {
        /// Ask `sender` for a keyframe of layer `layer` (a receiver waits to switch to it).
        case requestKeyframe(sender: UInt32, layer: Int)
        /// Tell `sender` which of its layers anybody needs now.
        case demand(sender: UInt32, active: [Bool])
        /// Tell `receiver` which senders its downlink holds back (an empty list: none any more).
        case held(receiver: UInt32, VideoHeld)
    }

    private struct Member: Sendable {
        var room: String
        /// The sender's layers, largest first; one of unknown size for a sender that declared none.
        var layers: [VideoLayerSize?]
        /// What this member, as a receiver, reported drawing: nil until its first report.
        var tiles: [UInt32: VideoLayerSize?]?
        /// What this member, as a receiver, gets of each sender.
        var choices: [UInt32: Choice] = [:]
        /// The demand this member, as a sender, was last told.
        var announced: [Bool]?
        /// Whether it receives media here (false for another node's member).
        var receivesHere = true
        /// What each other node's receivers need of this sender's layers, as that node last said.
        var needsElsewhere: [String: [Bool]] = [:]
        /// What this member, as a receiver, said its downlink carries (bits a second); nil for no limit.
        var downlink: Double?
        /// What each of this sender's layers was measured to cost (bits a second), nil for one not measured yet.
        var rates: [Double?] = []
        /// The senders this member, as a receiver, was last told its downlink holds back.
        var announcedHeld: [VideoHeld.Entry] = []
        /// Which of this sender's layers its uplink carries (`VideoSending`); nil: all of them.
        var sending: [Bool]?
    }

    private var members: [UInt32: Member] = [:]
    private var rooms: [String: Set<UInt32>] = [:]
    /// Each room's dominant speaker: its video is the last a full downlink gives up.
    private var dominant: [String: UInt32] = [:]

    /// What a receiver's sound takes of its downlink, per sender it hears (Opus at the call's rate with headers).
    public static let audioRate = 48_000.0

    /// Nobody yet.
    public init() {}

    /// The smallest layer covering `tile` (largest first in `layers`); the largest when none covers it or a size
    /// is unknown; nil when the tile is not drawn.
    public static func layer(for tile: VideoLayerSize?, among layers: [VideoLayerSize?]) -> Int? {
        guard let tile else { return nil }
        guard !layers.isEmpty else { return 0 }
        for index in layers.indices.reversed() {
            guard let size = layers[index] else { return 0 }
            if size.covers(tile) { return index }
        }
        return 0
    }

    /// A member joined `room` sending `layers` (nil: one layer of unknown size). Everyone in the room gets the
    /// newcomer's full layer and the newcomer everyone's, until tile reports say otherwise: forwarded from the
    /// start, as without simulcast (the relay asks for a receiver's first keyframes once its media is bound).
    public mutating func add(member id: UInt32, room: String, layers: [VideoLayerSize]?, receivesHere: Bool = true)
        -> [Effect]
    {
        if members[id] != nil { _ = remove(member: id) }
        members[id] = Member(
            room: room, layers: layers.map { $0.map(Optional.some) } ?? [nil], receivesHere: receivesHere)
        rooms[room, default: []].insert(id)
        var effects: [Effect] = []
        for other in roomMembers(room) where other != id {
            effects += chooseAll(receiver: other)
        }
        effects += chooseAll(receiver: id)
        return effects + demands(in: room)
    }

    /// A member left: nobody gets its layers, and what it got no longer counts.
    public mutating func remove(member id: UInt32) -> [Effect] {
        guard let member = members.removeValue(forKey: id) else { return [] }
        if member.downlink != nil { limitedReceivers -= 1 }
        rooms[member.room]?.remove(id)
        if rooms[member.room]?.isEmpty == true { rooms[member.room] = nil }
        counted[id] = nil
        if dominant[member.room] == id { dominant[member.room] = nil }
        var effects: [Effect] = []
        for other in roomMembers(member.room) {
            members[other]?.choices[id] = nil
            members[other]?.tiles?[id] = nil
            // What the sender that left took of a limited downlink is free for the others.
            if members[other]?.downlink != nil { effects += chooseAll(receiver: other) }
        }
        return effects + demands(in: member.room)
    }

    /// A receiver's tile report: every sender it lists gets the layer covering its tile; senders it leaves out
    /// keep the full layer.
    public mutating func report(_ report: TileReport, from receiver: UInt32) -> [Effect] {
        guard let room = members[receiver]?.room else { return [] }
        var tiles: [UInt32: VideoLayerSize?] = [:]
        for tile in report.tiles where tile.id != receiver && members[tile.id]?.room == room {
            tiles[tile.id] = tile.size
        }
        members[receiver]?.tiles = tiles
        let downlink = report.downlinkKbps.map { Double($0) * 1_000 }
        if (members[receiver]?.downlink == nil) != (downlink == nil) { limitedReceivers += downlink == nil ? -1 : 1 }
        members[receiver]?.downlink = downlink
        return chooseAll(receiver: receiver) + demands(in: room)
    }

    /// `sender`'s layers were measured to cost `rates` (bits a second, largest first; nil for a layer not seen
    /// lately, which keeps its last figure). Takes effect at the next `reallocate()`.
    public mutating func setRates(of sender: UInt32, _ rates: [Double?]) {
        guard var member = members[sender] else { return }
        var kept = member.rates + [Double?](repeating: nil, count: max(0, member.layers.count - member.rates.count))
        for (layer, rate) in rates.prefix(member.layers.count).enumerated() where rate != nil { kept[layer] = rate }
        member.rates = kept
        members[sender] = member
    }

    /// `sender`'s uplink carries the layers flagged in `active` (largest first; the smallest is always sent): every
    /// receiver of it chooses again among those.
    public mutating func setSending(of sender: UInt32, _ active: [Bool]) -> [Effect] {
        guard let member = members[sender] else { return [] }
        var flags = Array(active.prefix(member.layers.count))
        flags += [Bool](repeating: true, count: member.layers.count - flags.count)
        flags[flags.count - 1] = true
        let sending: [Bool]? = flags.allSatisfy { $0 } ? nil : flags
        guard sending != member.sending else { return [] }
        members[sender]?.sending = sending
        var effects: [Effect] = []
        for receiver in roomMembers(member.room) where receiver != sender {
            effects += chooseAll(receiver: receiver)
        }
        return effects + demands(in: member.room)
    }

    /// Which of `sender`'s layers its uplink carries, nil when all of them.
    public func sending(of sender: UInt32) -> [Bool]? { members[sender]?.sending }

    /// The layer `receiver` gets for wanting `layer` of `sender`: the layer itself when it is sent, else the next
    /// smaller one that is.
    private func sent(_ layer: Int?, of sender: Member) -> Int? {
        guard let layer, let sending = sender.sending else { return layer }
        return (layer..<sending.count).first { sending[$0] } ?? sending.count - 1
    }

    /// `speaker` is the dominant speaker of `room` now. Takes effect at the next `reallocate()`.
    public mutating func setDominant(_ speaker: UInt32?, in room: String) { dominant[room] = speaker }

    /// Counts a packet of `sender`'s layer `layer` on its way through, for the layer's measured rate.
    public mutating func count(bytes: Int, layer: Int, from sender: UInt32) {
        // Rates matter only to a limited downlink: with none (the usual call) the packet path does no more work.
        guard limitedReceivers > 0, let layers = members[sender]?.layers.count, layer < layers else { return }
        counted[sender, default: [Int](repeating: 0, count: layers)][layer] += bytes
    }

    /// Bytes of each sender's layers counted since the last `reallocate(after:)`.
    private var counted: [UInt32: [Int]] = [:]
    /// Receivers here that reported a downlink limit (kept by `report` and `remove`).
    private var limitedReceivers = 0

    /// Turns what was counted over the last `seconds` into layer rates (smoothed with the figure before; a layer
    /// that sent nothing keeps its last), then every receiver with a limited downlink chooses again with the rates
    /// and speakers known now.
    public mutating func reallocate(after seconds: Double) -> [Effect] {
        for (sender, bytes) in counted where seconds > 0 {
            let measured = bytes.map { $0 > 0 ? Double($0 * 8) / seconds : nil }
            let before = members[sender]?.rates ?? []
            setRates(
                of: sender,
                measured.enumerated().map { layer, rate in
                    guard let rate else { return nil }
                    guard layer < before.count, let old = before[layer] else { return rate }
                    return (old + rate) / 2
                })
        }
        counted.removeAll(keepingCapacity: true)
        return reallocate()
    }

    /// Every receiver with a limited downlink chooses again with the rates and speakers known now.
    public mutating func reallocate() -> [Effect] {
        var effects: [Effect] = []
        var changedRooms: Set<String> = []
        for (id, member) in members.filter({ $0.value.downlink != nil }).sorted(by: { $0.key < $1.key }) {
            let chosen = chooseAll(receiver: id)
            if !chosen.isEmpty { changedRooms.insert(member.room) }
            effects += chosen
        }
        return effects + changedRooms.sorted().flatMap { demands(in: $0) }
    }

    /// What `receiver` said its downlink carries (bits a second), nil for no limit.
    public func downlink(of receiver: UInt32) -> Double? { members[receiver]?.downlink }

    /// Whether a packet of `sender`'s layer `layer` goes to `receiver`; a keyframe starting on a layer the
    /// receiver waits for completes its switch (and may free the old layer: `takeDemandChanges`).
    public mutating func forwards(layer: Int, startsKeyframe: Bool, from sender: UInt32, to receiver: UInt32) -> Bool {
        guard var choice = members[receiver]?.choices[sender] else { return layer == 0 }
        if startsKeyframe, choice.target == layer {
            choice.current = layer
            choice.target = nil
            members[receiver]?.choices[sender] = choice
            switched.insert(sender)
        }
        return choice.current == layer
    }

    /// Senders whose receivers switched layers since the last call: their demand may have changed.
    private var switched: Set<UInt32> = []

    /// Whether any switch completed since the last `takeDemandChanges()`.
    public var hasSwitches: Bool { !switched.isEmpty }

    /// Demand changes caused by completed switches.
    public mutating func takeDemandChanges() -> [Effect] {
        let senders = switched
        switched.removeAll()
        return senders.sorted().compactMap { demand(of: $0) }
    }

    /// The layer a keyframe request from `receiver` about `sender` should be for: the one it waits for, else the
    /// one it gets; nil when it gets nothing.
    public func keyframeLayer(of sender: UInt32, for receiver: UInt32) -> Int? {
        guard let choice = members[receiver]?.choices[sender] else { return 0 }
        return choice.target ?? choice.current
    }

    /// The layer `receiver` gets (or waits for) of each sender that sends it one, in sender order; none for a
    /// receiver on another node.
    public func layersReceived(by receiver: UInt32) -> [(sender: UInt32, layer: Int)] {
        guard let member = members[receiver], member.receivesHere else { return [] }
        return member.choices.keys.sorted().compactMap { sender in
            guard let choice = member.choices[sender], let layer = choice.target ?? choice.current else { return nil }
            return (sender, layer)
        }
    }

    /// What `receiver` gets of `sender`.
    public func choice(of sender: UInt32, for receiver: UInt32) -> Choice? { members[receiver]?.choices[sender] }

    /// The number of layers `member` declared.
    public func layerCount(of member: UInt32) -> Int { members[member]?.layers.count ?? 1 }

    /// Keyframe requests for every switch still waiting, to repeat when the first request or keyframe was lost.
    public func pendingSwitches() -> [Effect] {
        var effects: [Effect] = []
        for (_, member) in members {
            for (sender, choice) in member.choices {
                if let target = choice.target { effects.append(.requestKeyframe(sender: sender, layer: target)) }
            }
        }
        return effects
    }

    // MARK: - Other nodes

    /// What the receivers here need of `sender`'s layers, as it was last announced (nil before the first).
    public func announcedDemand(of sender: UInt32) -> [Bool]? { members[sender]?.announced }

    /// Whether a packet of `sender`'s layer `layer` goes to `node`: what that node said it needs; the full layer
    /// only until it said anything (a new receiver there starts on the full layer, as here).
    public func needs(layer: Int, of sender: UInt32, node: String) -> Bool {
        guard let needs = members[sender]?.needsElsewhere[node] else { return layer == 0 }
        return layer < needs.count && needs[layer]
    }

    /// `node` said what its receivers need of `sender` (a member here): the trunk to it carries those layers, and
    /// the sender's demand includes them.
    public mutating func setNeeds(of sender: UInt32, node: String, active: [Bool]) -> [Effect] {
        guard let member = members[sender], member.receivesHere else { return [] }
        let needs = Array(active.prefix(member.layers.count))
        guard member.needsElsewhere[node] != needs else { return [] }
        members[sender]?.needsElsewhere[node] = needs
        return demand(of: sender).map { [$0] } ?? []
    }

    /// `node` has no members left in `room`: what it needed there no longer counts.
    public mutating func forget(node: String, in room: String) -> [Effect] {
        var effects: [Effect] = []
        for id in roomMembers(room) where members[id]?.needsElsewhere[node] != nil {
            members[id]?.needsElsewhere[node] = nil
            if let effect = demand(of: id) { effects.append(effect) }
        }
        return effects
    }

    // MARK: - Rules

    private func roomMembers(_ room: String) -> [UInt32] {
        (rooms[room] ?? []).sorted()
    }

    /// The layer `receiver`'s tile asks of `sender`: the full one until it reported, nil while not drawn; a layer
    /// the sender's uplink does not carry gives way to the next smaller one it does.
    private func wanted(by receiver: Member, of sender: UInt32, layers: [VideoLayerSize?]) -> Int? {
        let asked: Int?
        if let tiles = receiver.tiles, let tile = tiles[sender] {
            asked = Self.layer(for: tile, among: layers)
        } else {
            asked = 0
        }
        guard let member = members[sender] else { return asked }
        return sent(asked, of: member)
    }

    /// A layer's cost: as measured, else a guess from its pixels (600 kbit/s for 640x360, at least 30 kbit/s); a
    /// layer the sender does not send costs more than any downlink holds, so it is never chosen.
    private static func rate(of layer: Int, in member: Member) -> Double {
        if let sending = member.sending, layer < sending.count, !sending[layer] { return .infinity }
        if layer < member.rates.count, let measured = member.rates[layer] { return measured }
        guard let size = member.layers[layer] else { return 600_000 }
        return max(30_000, 600_000 * Double(size.width * size.height) / (640 * 360))
    }

    /// The pixels `receiver` draws `sender` at: the largest while it has not reported it (drawn full size until
    /// then), 0 when not drawn.
    private static func area(of sender: UInt32, in receiver: Member) -> Int {
        guard let tile = receiver.tiles?[sender] else { return Int.max }
        return tile.map { $0.width * $0.height } ?? 0
    }

    /// `receiver` chooses again of every sender in its room: by its tiles, and within its downlink when it gave one.
    private mutating func chooseAll(receiver: UInt32) -> [Effect] {
        guard let receiverState = members[receiver], receiverState.receivesHere else { return [] }
        let senders = roomMembers(receiverState.room).filter { $0 != receiver }
        var allocated: [UInt32: DownlinkAllocation.Choice]?
        if let budget = receiverState.downlink {
            // The speaker's picture is the last to go. When the receiver itself is the speaker (a 1:1 call's other
            // side, say) or nobody is yet, its largest tile stands in, so a full downlink never leaves it no picture.
            let speaker =
                dominant[receiverState.room].flatMap { senders.contains($0) ? $0 : nil }
                ?? senders.max { first, second in
                    let areas = (Self.area(of: first, in: receiverState), Self.area(of: second, in: receiverState))
                    return areas.0 != areas.1 ? areas.0 < areas.1 : first > second
                }
            let streams = senders.compactMap { id -> DownlinkAllocation.Stream? in
                guard let sender = members[id] else { return nil }
                return DownlinkAllocation.Stream(
                    sender: id, dominant: speaker == id, tileArea: Self.area(of: id, in: receiverState),
                    wanted: wanted(by: receiverState, of: id, layers: sender.layers),
                    layerRates: sender.layers.indices.map { Self.rate(of: $0, in: sender) })
            }
            // What each sender gets now (or is switching to): a step up from it needs room to spare.
            var current: [UInt32: Int?] = [:]
            for (sender, choice) in receiverState.choices {
                let layer: Int? = choice.target ?? choice.current
                current[sender] = .some(layer)
            }
            allocated = DownlinkAllocation.allocate(
                budget: budget, audio: Self.audioRate * Double(senders.count), streams: streams, current: current)
        }
        var effects = senders.flatMap { choose(receiver: receiver, sender: $0, allocated: allocated?[$0]) }
        // Who is held back, and at what size, told when it changes (and once it is nobody).
        var held: [VideoHeld.Entry] = []
        for sender in senders {
            guard let choice = allocated?[sender], case .downlink = choice.reason, let layers = members[sender]?.layers
            else { continue }
            held.append(VideoHeld.Entry(id: sender, size: choice.layer.flatMap { layers[$0] }))
        }
        held = Array(held.prefix(maxReportedTiles))
        if held != receiverState.announcedHeld {
            members[receiver]?.announcedHeld = held
            let kbps = receiverState.downlink.map { Int(($0 / 1_000).rounded()) }
            effects.append(.held(receiver: receiver, VideoHeld(downlinkKbps: kbps, held: held)))
        }
        return effects
    }

    private mutating func choose(receiver: UInt32, sender: UInt32, allocated: DownlinkAllocation.Choice?) -> [Effect] {
        guard let layers = members[sender]?.layers, let receiverState = members[receiver], receiverState.receivesHere
        else { return [] }
        let wanted = allocated.map(\.layer) ?? wanted(by: receiverState, of: sender, layers: layers)
        var choice = receiverState.choices[sender] ?? Choice(current: 0, target: nil)
        var effects: [Effect] = []
        if wanted == nil {
            choice = Choice(current: nil, target: nil)
        } else if wanted == choice.current {
            choice.target = nil
        } else if wanted != choice.target {
            choice.target = wanted
            effects.append(.requestKeyframe(sender: sender, layer: wanted!))
        }
        members[receiver]?.choices[sender] = choice
        return effects
    }

    private mutating func demands(in room: String) -> [Effect] {
        roomMembers(room).compactMap { demand(of: $0) }
    }

    /// The sender's demand when it differs from what it was last told.
    private mutating func demand(of sender: UInt32) -> Effect? {
        guard let member = members[sender] else { return nil }
        var active = [Bool](repeating: false, count: member.layers.count)
        for id in rooms[member.room] ?? [] where id != sender {
            guard let choice = members[id]?.choices[sender] else { continue }
            for layer in [choice.current, choice.target].compactMap({ $0 }) where layer < active.count {
                active[layer] = true
            }
        }
        for needs in member.needsElsewhere.values {
            for (layer, needed) in needs.enumerated() where needed && layer < active.count { active[layer] = true }
        }
        guard active != member.announced else { return nil }
        members[sender]?.announced = active
        return .demand(sender: sender, active: active)
    }
}
