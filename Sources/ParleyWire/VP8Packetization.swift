// Splitting VP8 frames into RTP payloads and putting them back together. The payloader only splits; the
// RTPPacketizer adds headers and sets the marker on the last packet of each frame.

/// Splits encoded VP8 frames into RTP payloads no larger than `maxPayloadSize`, each with a payload descriptor.
public struct VP8Payloader: Sendable {
    /// Largest payload, descriptor included.
    public let maxPayloadSize: Int
    /// Whether descriptors carry a 15-bit PictureID (receivers use it to spot lost frames).
    public let includesPictureID: Bool
    /// PictureID the next frame gets, 0...32767, +1 per frame and wrapping.
    public private(set) var nextPictureID: UInt16
    /// TL0PICIDX of the most recent base-layer frame, for frames sent with a temporal layer.
    public private(set) var tl0PictureIndex: UInt8

    /// The largest descriptor the payloader writes (X, I with 15-bit PictureID, L, T) plus one data byte.
    public static let minimumPayloadSize = 7

    /// A payloader; `initialPictureID` should be random per stream. Throws when `maxPayloadSize` is too small.
    public init(
        maxPayloadSize: Int = defaultMaxPayloadSize, includesPictureID: Bool = true, initialPictureID: UInt16 = 0
    ) throws(WireError) {
        guard maxPayloadSize >= Self.minimumPayloadSize else {
            throw .maxPayloadTooSmall(maxPayloadSize, minimum: Self.minimumPayloadSize)
        }
        self.maxPayloadSize = maxPayloadSize
        self.includesPictureID = includesPictureID
        nextPictureID = initialPictureID & 0x7FFF
        tl0PictureIndex = 0
    }

    /// The payloads for one frame, in send order, sized as evenly as the limit allows.
    /// With `temporalLayer` set, descriptors also carry TL0PICIDX and TID (for temporal scalability).
    public mutating func payloads(for frame: [UInt8], temporalLayer: UInt8? = nil) throws(WireError) -> [[UInt8]] {
        guard !frame.isEmpty else { throw .emptyFrame }
        if temporalLayer == 0 { tl0PictureIndex &+= 1 }
        var descriptor = VP8PayloadDescriptor(
            startOfPartition: true,
            pictureID: includesPictureID ? .fifteenBit(nextPictureID) : nil,
            tl0PictureIndex: temporalLayer != nil ? tl0PictureIndex : nil,
            temporalLayer: temporalLayer.map { $0 & 0x03 })
        if includesPictureID { nextPictureID = (nextPictureID &+ 1) & 0x7FFF }

        let capacity = maxPayloadSize - descriptor.length
        let packetCount = (frame.count + capacity - 1) / capacity
        let base = frame.count / packetCount
        let longer = frame.count % packetCount  // the first `longer` packets carry one byte more
        var payloads: [[UInt8]] = []
        payloads.reserveCapacity(packetCount)
        var offset = 0
        for index in 0..<packetCount {
            let size = base + (index < longer ? 1 : 0)
            var payload: [UInt8] = []
            payload.reserveCapacity(descriptor.length + size)
            descriptor.startOfPartition = index == 0
            descriptor.serialize(into: &payload)
            payload += frame[offset..<(offset + size)]
            payloads.append(payload)
            offset += size
        }
        return payloads
    }
}

/// One VP8 frame put back together from its RTP packets.
public struct VP8Frame: Sendable, Equatable {
    /// RTP timestamp shared by the frame's packets (90 kHz).
    public var timestamp: UInt32
    /// The VP8 bitstream of the frame, ready for the decoder.
    public var data: [UInt8]
    /// True when the frame is a keyframe (P bit of the first data byte is 0).
    public var isKeyframe: Bool
    /// PictureID from the first packet's descriptor, if any.
    public var pictureID: UInt16?
    /// TID from the first packet's descriptor, if any.
    public var temporalLayer: UInt8?
    /// Sequence number of the first packet.
    public var firstSequenceNumber: UInt16
    /// Number of RTP packets the frame came in.
    public var packetCount: Int

    /// A frame record.
    public init(
        timestamp: UInt32, data: [UInt8], isKeyframe: Bool, pictureID: UInt16? = nil, temporalLayer: UInt8? = nil,
        firstSequenceNumber: UInt16, packetCount: Int
    ) {
        self.timestamp = timestamp
        self.data = data
        self.isKeyframe = isKeyframe
        self.pictureID = pictureID
        self.temporalLayer = temporalLayer
        self.firstSequenceNumber = firstSequenceNumber
        self.packetCount = packetCount
    }
}

/// Reassembles VP8 frames from RTP packets given in sequence order.
public enum VP8Depacketizer {
    /// The frame carried by `packets`: consecutive sequence numbers, one timestamp, starting with S = 1 and
    /// PID = 0 and ending with the marker bit. Throws naming the first gap or inconsistency.
    public static func assemble(_ packets: [RTPPacket]) throws(WireError) -> VP8Frame {
        guard let first = packets.first else { throw .emptyFrame }
        let (descriptor, start) = try VP8PayloadDescriptor.parse(first.payload)
        guard descriptor.startsFrame else { throw .frameMissingStart(sequenceNumber: first.header.sequenceNumber) }
        var data = Array(first.payload[start...])
        let isKeyframe = data[0] & 0x01 == 0
        var previous = first.header
        for packet in packets.dropFirst() {
            let expected = previous.sequenceNumber &+ 1
            guard packet.header.sequenceNumber == expected else {
                throw .frameSequenceGap(expected: expected, found: packet.header.sequenceNumber)
            }
            guard packet.header.timestamp == first.header.timestamp else {
                throw .frameTimestampMismatch(
                    expected: first.header.timestamp, found: packet.header.timestamp,
                    sequenceNumber: packet.header.sequenceNumber)
            }
            let (_, offset) = try VP8PayloadDescriptor.parse(packet.payload)
            data += packet.payload[offset...]
            previous = packet.header
        }
        guard previous.marker else { throw .frameMissingMarker(lastSequenceNumber: previous.sequenceNumber) }
        return VP8Frame(
            timestamp: first.header.timestamp, data: data, isKeyframe: isKeyframe,
            pictureID: descriptor.pictureID?.value, temporalLayer: descriptor.temporalLayer,
            firstSequenceNumber: first.header.sequenceNumber, packetCount: packets.count)
    }
}
