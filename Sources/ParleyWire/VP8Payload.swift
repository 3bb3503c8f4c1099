// VP8 RTP payload format (RFC 7741). Every RTP payload starts with a payload descriptor:
//
//       0 1 2 3 4 5 6 7
//      +-+-+-+-+-+-+-+-+
//      |X|R|N|S|R| PID | (required)
//      +-+-+-+-+-+-+-+-+
// X:   |I|L|T|K| RSV   | (present when X = 1)
//      +-+-+-+-+-+-+-+-+
// I:   |M| PictureID   | (present when I = 1; M = 1 means a second byte follows: 15-bit PictureID)
//      +-+-+-+-+-+-+-+-+
//      |   PictureID   |
//      +-+-+-+-+-+-+-+-+
// L:   |   TL0PICIDX   | (present when L = 1)
//      +-+-+-+-+-+-+-+-+
// T/K: |TID|Y| KEYIDX  | (present when T = 1 or K = 1)
//      +-+-+-+-+-+-+-+-+
//
// When S = 1 and PID = 0 the VP8 data begins with the frame's payload header (RFC 7741 §4.3), whose first byte
// ends in the inverse keyframe bit P: |Size0|H| VER |P|.

/// A VP8 picture id, 7 or 15 bits on the wire.
public enum VP8PictureID: Sendable, Equatable {
    /// One-byte form, 0...127.
    case sevenBit(UInt8)
    /// Two-byte form, 0...32767.
    case fifteenBit(UInt16)

    /// The id's value.
    public var value: UInt16 {
        switch self {
        case .sevenBit(let id): return UInt16(id)
        case .fifteenBit(let id): return id
        }
    }
}

/// The RFC 7741 payload descriptor at the start of every VP8 RTP payload.
public struct VP8PayloadDescriptor: Sendable, Equatable {
    /// N: the frame can be discarded without affecting any other frame.
    public var nonReference: Bool
    /// S: this packet starts a VP8 partition.
    public var startOfPartition: Bool
    /// PID: the partition index, 0...7.
    public var partitionIndex: UInt8
    /// PictureID, when I = 1.
    public var pictureID: VP8PictureID?
    /// TL0PICIDX: running index of base-layer frames, when L = 1.
    public var tl0PictureIndex: UInt8?
    /// TID: temporal layer index 0...3, when T = 1.
    public var temporalLayer: UInt8?
    /// Y: layer sync, meaningful only when T = 1.
    public var layerSync: Bool
    /// KEYIDX: running index of keyframes 0...31, when K = 1.
    public var keyIndex: UInt8?

    /// A descriptor; optional fields left nil are omitted on the wire.
    public init(
        nonReference: Bool = false, startOfPartition: Bool, partitionIndex: UInt8 = 0,
        pictureID: VP8PictureID? = nil, tl0PictureIndex: UInt8? = nil, temporalLayer: UInt8? = nil,
        layerSync: Bool = false, keyIndex: UInt8? = nil
    ) {
        self.nonReference = nonReference
        self.startOfPartition = startOfPartition
        self.partitionIndex = partitionIndex
        self.pictureID = pictureID
        self.tl0PictureIndex = tl0PictureIndex
        self.temporalLayer = temporalLayer
        self.layerSync = layerSync
        self.keyIndex = keyIndex
    }

    /// True when this packet begins a frame: S = 1 and PID = 0.
    public var startsFrame: Bool { startOfPartition && partitionIndex == 0 }

    /// Bytes this descriptor takes on the wire.
    public var length: Int {
        let hasExtension = pictureID != nil || tl0PictureIndex != nil || temporalLayer != nil || keyIndex != nil
        guard hasExtension else { return 1 }
        var length = 2
        switch pictureID {
        case .sevenBit: length += 1
        case .fifteenBit: length += 2
        case nil: break
        }
        if tl0PictureIndex != nil { length += 1 }
        if temporalLayer != nil || keyIndex != nil { length += 1 }
        return length
    }

    /// Reads the descriptor at the start of an RTP payload; returns it and where the VP8 data begins.
    /// Throws when the descriptor is cut short or no VP8 data follows it.
    public static func parse(_ payload: UnsafeRawBufferPointer) throws(WireError) -> (VP8PayloadDescriptor, Int) {
        let count = payload.count
        guard count >= 1 else { throw .truncated(.vp8Descriptor, needed: 1, available: 0) }
        let first = payload[0]
        var descriptor = VP8PayloadDescriptor(
            nonReference: first & 0x20 != 0, startOfPartition: first & 0x10 != 0, partitionIndex: first & 0x07)
        var offset = 1
        if first & 0x80 != 0 {
            guard count >= 2 else { throw .truncated(.vp8Descriptor, needed: 2, available: count) }
            let flags = payload[1]
            offset = 2
            // Work out the full length from the flags first so a short payload gets one precise error.
            var needed = 2
            if flags & 0x80 != 0 {
                guard count > needed else { throw .truncated(.vp8Descriptor, needed: needed + 1, available: count) }
                needed += payload[needed] & 0x80 != 0 ? 2 : 1
            }
            if flags & 0x40 != 0 { needed += 1 }
            if flags & 0x30 != 0 { needed += 1 }
            guard count >= needed else { throw .truncated(.vp8Descriptor, needed: needed, available: count) }
            if flags & 0x80 != 0 {
                if payload[offset] & 0x80 != 0 {
                    descriptor.pictureID = .fifteenBit(payload.u16(at: offset) & 0x7FFF)
                    offset += 2
                } else {
                    descriptor.pictureID = .sevenBit(payload[offset])
                    offset += 1
                }
            }
            if flags & 0x40 != 0 {
                descriptor.tl0PictureIndex = payload[offset]
                offset += 1
            }
            if flags & 0x30 != 0 {
                let byte = payload[offset]
                if flags & 0x20 != 0 {
                    descriptor.temporalLayer = byte >> 6
                    descriptor.layerSync = byte & 0x20 != 0
                }
                if flags & 0x10 != 0 { descriptor.keyIndex = byte & 0x1F }
                offset += 1
            }
        }
        guard count > offset else { throw .truncated(.vp8Descriptor, needed: offset + 1, available: count) }
        return (descriptor, offset)
    }

    /// Reads the descriptor at the start of an RTP payload held in an array.
    public static func parse(_ payload: [UInt8]) throws(WireError) -> (VP8PayloadDescriptor, Int) {
        try withBytes(payload) { raw throws(WireError) in try parse(raw) }
    }

    /// Appends the descriptor's wire bytes.
    public func serialize(into out: inout [UInt8]) {
        let hasExtension = length > 1
        out.append(
            (hasExtension ? 0x80 : 0) | (nonReference ? 0x20 : 0) | (startOfPartition ? 0x10 : 0)
                | partitionIndex & 0x07)
        guard hasExtension else { return }
        out.append(
            (pictureID != nil ? 0x80 : 0) | (tl0PictureIndex != nil ? 0x40 : 0) | (temporalLayer != nil ? 0x20 : 0)
                | (keyIndex != nil ? 0x10 : 0))
        switch pictureID {
        case .sevenBit(let id): out.append(id & 0x7F)
        case .fifteenBit(let id): out.appendU16(0x8000 | id & 0x7FFF)
        case nil: break
        }
        if let tl0PictureIndex { out.append(tl0PictureIndex) }
        if temporalLayer != nil || keyIndex != nil {
            out.append((temporalLayer ?? 0) << 6 | (layerSync ? 0x20 : 0) | (keyIndex ?? 0) & 0x1F)
        }
    }

    /// True when an RTP payload starts a VP8 keyframe: S = 1, PID = 0 and the P bit of the first data byte is 0.
    public static func startsKeyframe(_ payload: [UInt8]) -> Bool {
        guard let (descriptor, offset) = try? parse(payload) else { return false }
        return descriptor.startsFrame && offset < payload.count && payload[offset] & 0x01 == 0
    }

    /// The same test on raw payload bytes, without copying (the relay's forwarding path).
    public static func startsKeyframe(_ payload: UnsafeRawBufferPointer) -> Bool {
        guard let (descriptor, offset) = try? parse(payload) else { return false }
        return descriptor.startsFrame && offset < payload.count && payload[offset] & 0x01 == 0
    }

    /// The picture size a keyframe's first packet declares, nil when the packet does not start a keyframe or its
    /// start code is not there (an end-to-end encrypted payload, whose size only its receivers can read).
    public static func keyframeSize(_ payload: UnsafeRawBufferPointer) -> (width: Int, height: Int)? {
        guard let (descriptor, offset) = try? parse(payload), descriptor.startsFrame, payload.count >= offset + 10
        else { return nil }
        let bytes = UnsafeRawBufferPointer(rebasing: payload[offset...])
        guard bytes[0] & 0x01 == 0, bytes[3] == 0x9D, bytes[4] == 0x01, bytes[5] == 0x2A else { return nil }
        return (Int(bytes[6]) | Int(bytes[7] & 0x3F) << 8, Int(bytes[8]) | Int(bytes[9] & 0x3F) << 8)
    }
}

/// Bounds on what a VP8 stream may declare, checked before anything allocates for it.
public enum VP8Limits {
    /// The largest picture any Parley profile sends (1280x720). A keyframe may declare up to 16383x16383, which a
    /// decoder would allocate (about a gigabyte) and spend seconds on: such keyframes are dropped and counted by the
    /// relay and by every client before a decoder sees them.
    public static let largestPicture = (width: 1280, height: 720)

    /// True when a declared size is within `largestPicture`.
    public static func allows(_ size: (width: Int, height: Int)) -> Bool {
        size.width <= largestPicture.width && size.height <= largestPicture.height
    }
}

/// The VP8 payload header at the start of a frame's data (RFC 7741 §4.3): frame type, version, first partition size.
public struct VP8PayloadHeader: Sendable, Equatable {
    /// P = 0: a keyframe.
    public var isKeyframe: Bool
    /// VER: the bitstream version/profile, 0...3.
    public var version: UInt8
    /// H: the frame is meant to be shown.
    public var showFrame: Bool
    /// Size of the first partition in bytes (19 bits).
    public var firstPartitionSize: Int
    /// Width and height in pixels (14 bits each), keyframes only.
    public var size: (width: Int, height: Int)?

    /// Reads the 3-byte header, plus start code and size (10 bytes in all) for a keyframe.
    public init(parsing data: [UInt8]) throws(WireError) {
        guard data.count >= 3 else { throw .truncated(.vp8PayloadHeader, needed: 3, available: data.count) }
        isKeyframe = data[0] & 0x01 == 0
        version = (data[0] >> 1) & 0x07
        showFrame = data[0] & 0x10 != 0
        firstPartitionSize = Int(data[0] >> 5) | Int(data[1]) << 3 | Int(data[2]) << 11
        size = nil
        if isKeyframe {
            guard data.count >= 10 else { throw .truncated(.vp8PayloadHeader, needed: 10, available: data.count) }
            let width = (Int(data[6]) | Int(data[7]) << 8) & 0x3FFF
            let height = (Int(data[8]) | Int(data[9]) << 8) & 0x3FFF
            size = (width, height)
        }
    }

    /// Field-by-field equality (tuples cannot synthesize it).
    public static func == (lhs: VP8PayloadHeader, rhs: VP8PayloadHeader) -> Bool {
        lhs.isKeyframe == rhs.isKeyframe && lhs.version == rhs.version && lhs.showFrame == rhs.showFrame
            && lhs.firstPartitionSize == rhs.firstPartitionSize && lhs.size?.width == rhs.size?.width
            && lhs.size?.height == rhs.size?.height
    }
}
