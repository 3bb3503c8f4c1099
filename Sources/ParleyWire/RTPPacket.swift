// RFC 3550 RTP packets as values, with RFC 8285 header extensions kept raw and parsed on demand.

/// One RFC 8285 header extension element: an id and its bytes.
public struct RTPHeaderExtensionElement: Sendable, Equatable {
    /// Extension id: 1...14 in the one-byte form, 1...255 in the two-byte form.
    public var id: UInt8
    /// The element's bytes: 1...16 in the one-byte form, 0...255 in the two-byte form.
    public var data: [UInt8]

    /// An element with its id and bytes.
    public init(id: UInt8, data: [UInt8]) {
        self.id = id
        self.data = data
    }
}

/// An RTP header extension as carried: the profile word and its data (a multiple of 4 bytes on the wire).
public struct RTPHeaderExtension: Sendable, Equatable {
    /// Profile-defined 16 bits: 0xBEDE for RFC 8285 one-byte elements, 0x100X for two-byte elements.
    public var profile: UInt16
    /// Extension data; serialization pads it with zeros to a multiple of 4 bytes.
    public var data: [UInt8]

    /// The RFC 8285 one-byte-header profile value.
    public static let oneByteProfile: UInt16 = 0xBEDE
    /// The RFC 8285 two-byte-header profile value (low 4 bits are application bits).
    public static let twoByteProfile: UInt16 = 0x1000

    /// A raw extension.
    public init(profile: UInt16, data: [UInt8]) {
        self.profile = profile
        self.data = data
    }

    /// Packs elements in the one-byte form when every id is 1...14 and length 1...16, otherwise two-byte.
    public init(elements: [RTPHeaderExtensionElement]) throws(WireError) {
        let oneByte = elements.allSatisfy { (1...14).contains($0.id) && (1...16).contains($0.data.count) }
        var data: [UInt8] = []
        for element in elements {
            guard element.id != 0, element.data.count <= 255 else {
                throw .extensionElementOverflow(id: Int(element.id), length: element.data.count, available: 255)
            }
            if oneByte {
                data.append(element.id << 4 | UInt8(element.data.count - 1))
            } else {
                data.append(element.id)
                data.append(UInt8(element.data.count))
            }
            data += element.data
        }
        data.padToWord()
        self.init(profile: oneByte ? Self.oneByteProfile : Self.twoByteProfile, data: data)
    }

    /// True for the RFC 8285 one-byte or two-byte forms, whose elements `elements()` can read.
    public var hasElements: Bool {
        profile == Self.oneByteProfile || profile & 0xFFF0 == Self.twoByteProfile
    }

    /// The RFC 8285 elements, skipping padding; empty for other profiles. Throws when an element overruns.
    public func elements() throws(WireError) -> [RTPHeaderExtensionElement] {
        var result: [RTPHeaderExtensionElement] = []
        var offset = 0
        if profile == Self.oneByteProfile {
            while offset < data.count {
                let id = data[offset] >> 4
                let length = Int(data[offset] & 0x0F) + 1
                if id == 0 {  // padding byte
                    offset += 1
                    continue
                }
                if id == 15 { break }  // reserved: stop parsing (RFC 8285 §4.2)
                let available = data.count - offset - 1
                guard length <= available else {
                    throw .extensionElementOverflow(id: Int(id), length: length, available: available)
                }
                result.append(.init(id: id, data: Array(data[(offset + 1)..<(offset + 1 + length)])))
                offset += 1 + length
            }
        } else if profile & 0xFFF0 == Self.twoByteProfile {
            while offset < data.count {
                let id = data[offset]
                if id == 0 {
                    offset += 1
                    continue
                }
                guard offset + 1 < data.count else {
                    throw .truncated(.headerExtensionElement, needed: 2, available: data.count - offset)
                }
                let length = Int(data[offset + 1])
                let available = data.count - offset - 2
                guard length <= available else {
                    throw .extensionElementOverflow(id: Int(id), length: length, available: available)
                }
                result.append(.init(id: id, data: Array(data[(offset + 2)..<(offset + 2 + length)])))
                offset += 2 + length
            }
        }
        return result
    }
}

/// The RTP header fields a sender chooses (version is always 2; padding lives on the packet).
public struct RTPHeader: Sendable, Equatable {
    /// Marker bit: set on the last packet of a video frame.
    public var marker: Bool
    /// Payload type, 0...127 (96 = VP8, 111 = Opus).
    public var payloadType: UInt8
    /// Sequence number, +1 per packet, wrapping.
    public var sequenceNumber: UInt16
    /// Media timestamp in the payload format's clock.
    public var timestamp: UInt32
    /// Synchronization source, assigned to each member by the relay.
    public var ssrc: UInt32
    /// Contributing sources, at most 15 (extra ones are dropped when serializing).
    public var csrcs: [UInt32]
    /// The header extension, if any.
    public var headerExtension: RTPHeaderExtension?

    /// A header; payload type is masked to 7 bits when serialized.
    public init(
        marker: Bool = false, payloadType: UInt8, sequenceNumber: UInt16, timestamp: UInt32, ssrc: UInt32,
        csrcs: [UInt32] = [], headerExtension: RTPHeaderExtension? = nil
    ) {
        self.marker = marker
        self.payloadType = payloadType
        self.sequenceNumber = sequenceNumber
        self.timestamp = timestamp
        self.ssrc = ssrc
        self.csrcs = csrcs
        self.headerExtension = headerExtension
    }
}

/// An RTP packet: header, opaque payload and optional padding.
public struct RTPPacket: Sendable, Equatable {
    /// The header.
    public var header: RTPHeader
    /// The payload, opaque to the relay (VP8 descriptor + data, or one Opus packet).
    public var payload: [UInt8]
    /// Padding bytes to append, count byte included (0 = no padding bit), at most 255.
    public var paddingLength: UInt8

    /// A packet from its parts.
    public init(header: RTPHeader, payload: [UInt8], paddingLength: UInt8 = 0) {
        self.header = header
        self.payload = payload
        self.paddingLength = paddingLength
    }

    /// Parses a whole packet, copying the payload out; throws naming the first bad field.
    public init(parsing bytes: UnsafeRawBufferPointer) throws(WireError) {
        let view = try RTPHeaderView(parsing: bytes)
        var csrcs: [UInt32] = []
        if view.csrcCount > 0 {
            csrcs.reserveCapacity(view.csrcCount)
            for index in 0..<view.csrcCount { csrcs.append(bytes.u32(at: 12 + 4 * index)) }
        }
        var headerExtension: RTPHeaderExtension?
        if view.hasExtension {
            let start = 12 + 4 * view.csrcCount
            headerExtension = RTPHeaderExtension(
                profile: bytes.u16(at: start), data: bytes.array((start + 4)..<view.headerLength))
        }
        header = RTPHeader(
            marker: view.marker, payloadType: view.payloadType, sequenceNumber: view.sequenceNumber,
            timestamp: view.timestamp, ssrc: view.ssrc, csrcs: csrcs, headerExtension: headerExtension)
        payload = bytes.array(view.payloadRange)
        paddingLength = UInt8(view.paddingLength)
    }

    /// Parses a whole packet from an array.
    public init(parsing bytes: [UInt8]) throws(WireError) {
        self = try withBytes(bytes) { raw throws(WireError) in try RTPPacket(parsing: raw) }
    }

    /// Parses a whole packet from a slice.
    public init(parsing bytes: ArraySlice<UInt8>) throws(WireError) {
        self = try withBytes(bytes) { raw throws(WireError) in try RTPPacket(parsing: raw) }
    }

    /// Bytes on the wire for this packet.
    public var serializedLength: Int {
        let csrcs = min(header.csrcs.count, 15)
        let ext = header.headerExtension.map { 4 + ($0.data.count + 3) / 4 * 4 } ?? 0
        return 12 + 4 * csrcs + ext + payload.count + Int(paddingLength)
    }

    /// Appends the packet's wire bytes to `out`.
    public func serialize(into out: inout [UInt8]) {
        let csrcs = header.csrcs.prefix(15)
        out.append(
            2 << 6 | (paddingLength > 0 ? 0x20 : 0) | (header.headerExtension != nil ? 0x10 : 0)
                | UInt8(csrcs.count))
        out.append((header.marker ? 0x80 : 0) | header.payloadType & 0x7F)
        out.appendU16(header.sequenceNumber)
        out.appendU32(header.timestamp)
        out.appendU32(header.ssrc)
        for csrc in csrcs { out.appendU32(csrc) }
        if let ext = header.headerExtension {
            out.appendU16(ext.profile)
            out.appendU16(UInt16(truncatingIfNeeded: (ext.data.count + 3) / 4))
            out += ext.data
            out.append(contentsOf: repeatElement(0, count: (4 - ext.data.count % 4) % 4))
        }
        out += payload
        if paddingLength > 0 {
            out.append(contentsOf: repeatElement(0, count: Int(paddingLength) - 1))
            out.append(paddingLength)
        }
    }

    /// The packet's wire bytes.
    public func serialized() -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(serializedLength)
        serialize(into: &out)
        return out
    }
}
