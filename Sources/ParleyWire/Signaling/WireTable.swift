// The case tables of the four message enums (`ClientMessage`, `ServerMessage`, `MessagingRequest`,
// `MessagingEvent`). Each enum lists every case once, as one `WireCase`: its wire `type` and the enum case that
// carries its payload. Decoding looks the received `type` up in the table. Encoding needs the other direction, from a
// value to its entry, without a `switch` that would list the cases a second time: `Mirror` reads a value's case name
// and associated value, and the entry whose constructor builds a value of that case is the one.

/// A payload with bounds beyond its JSON shape (a chat line's length, a page's limit, a tile's size); the table
/// checks them after every decode, before the case is built.
protocol ValidatedPayload {
    /// The payload itself, or the error that says which bound it breaks.
    func validated() throws(SignalingError) -> Self
}

/// A message's case as `Mirror` reads it: the case's Swift name and its associated value, both nil for a case
/// without payload.
struct ReflectedCase {
    /// The case's name in Swift (`memberJoined`), not its wire name.
    let label: String?
    /// The associated value.
    let payload: Any?

    init(_ message: Any) {
        let child = Mirror(reflecting: message).children.first
        label = child?.label
        payload = child?.value
    }
}

/// One case of a message enum: its wire `type`, how to build it from a received message, how to recognise it.
struct WireCase<Message: Sendable & Equatable>: Sendable {
    /// The wire name: the message's `"type"`.
    let type: String
    /// Builds the case from a received message whose `type` is this one.
    let decode: @Sendable (SignalingMessage) throws(SignalingError) -> Message
    /// Whether `message`, read as `reflected`, is this case.
    let matches: @Sendable (_ message: Message, _ reflected: ReflectedCase) -> Bool

    /// A case without payload (`leave`): nothing but `v` and `type` on the wire.
    static func bare(_ type: String, _ message: Message) -> WireCase {
        WireCase(type: type, decode: { _ in message }, matches: { candidate, _ in candidate == message })
    }

    /// A case whose payload's fields travel beside `v` and `type`.
    static func payload<Payload: Codable & Sendable>(
        _ type: String, _ make: @escaping @Sendable (Payload) -> Message
    ) -> WireCase {
        carrying(type, make) { message throws(SignalingError) in try message.payload(Payload.self) }
    }

    /// A case whose payload has bounds, checked after decoding. Overload resolution picks this one for every
    /// `ValidatedPayload`, so no entry can forget the check.
    static func payload<Payload: Codable & Sendable & ValidatedPayload>(
        _ type: String, _ make: @escaping @Sendable (Payload) -> Message
    ) -> WireCase {
        carrying(type, make) { message throws(SignalingError) in try message.payload(Payload.self).validated() }
    }

    /// A value is this case when building this case from its associated value gives the value back: two cases may
    /// carry the same payload type (`allow` and `remove` both carry a `MemberRef`), so the type alone does not tell.
    /// Only a value unequal to itself (a NaN in stats) needs the slower comparison of case names.
    private static func carrying<Payload>(
        _ type: String, _ make: @escaping @Sendable (Payload) -> Message,
        read: @escaping @Sendable (SignalingMessage) throws(SignalingError) -> Payload
    ) -> WireCase {
        WireCase(
            type: type,
            decode: { message throws(SignalingError) in make(try read(message)) },
            matches: { message, reflected in
                guard let payload = reflected.payload as? Payload else { return false }
                let built = make(payload)
                if built == message { return true }
                return message != message && ReflectedCase(built).label == reflected.label
            })
    }
}

/// Every case of one message enum, each listed once; the enum's `type`, `encoded()` and `decode(_:)` all read it.
struct WireTable<Message: Sendable & Equatable>: Sendable {
    /// The cases, in the order an unknown-type error lists them.
    let cases: [WireCase<Message>]
    private let byType: [String: WireCase<Message>]
    private let unknownType: @Sendable (_ type: String, _ known: [String]) -> String

    /// A table; `unknownType` words the error for a `type` not in it, given the known ones in order.
    init(
        _ cases: [WireCase<Message>],
        unknownType: @escaping @Sendable (_ type: String, _ known: [String]) -> String
    ) {
        self.cases = cases
        byType = Dictionary(cases.map { ($0.type, $0) }) { first, _ in
            preconditionFailure("\(Message.self) lists the wire type \"\(first.type)\" twice")
        }
        self.unknownType = unknownType
    }

    /// The entry of `message`'s case, and its payload (nil for a case without one).
    func entry(of message: Message) -> (wireCase: WireCase<Message>, payload: (any Encodable)?) {
        let reflected = ReflectedCase(message)
        guard let wireCase = cases.first(where: { $0.matches(message, reflected) }) else {
            preconditionFailure("\(Message.self).\(reflected.label ?? "\(message)") has no entry in its wire table")
        }
        return (wireCase, reflected.payload as? any Encodable)
    }

    /// The wire `type` of `message`.
    func type(of message: Message) -> String { entry(of: message).wireCase.type }

    /// `message` as compact JSON text.
    func encode(_ message: Message) -> String {
        let (wireCase, payload) = entry(of: message)
        return encodeSignaling(type: wireCase.type, payload: payload)
    }

    /// Parses one message from JSON text, with an error that says exactly what was wrong.
    func decode(_ text: String) throws(SignalingError) -> Message {
        let message = try SignalingMessage(text)
        guard let wireCase = byType[message.type] else {
            throw SignalingError(.unknownType, unknownType(message.type, cases.map(\.type)))
        }
        return try wireCase.decode(message)
    }
}
