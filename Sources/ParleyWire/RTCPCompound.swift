// Parsing and serializing compound RTCP datagrams. Reduced-size RTCP (RFC 5506) is accepted: a datagram may be a
// single feedback or APP packet, as Parley clients send for NACK, PLI and bind.

extension RTCPPacket {
    /// Parses every packet of a compound datagram; throws on the first length, version or padding that is wrong.
    public static func parseCompound(_ bytes: UnsafeRawBufferPointer) throws(WireError) -> [RTCPPacket] {
        guard !bytes.isEmpty else { throw .emptyCompound }
        var packets: [RTCPPacket] = []
        var offset = 0
        while offset < bytes.count {
            let remaining = bytes.count - offset
            guard remaining >= 4 else { throw .truncated(.rtcpHeader, needed: 4, available: remaining) }
            let first = bytes[offset]
            let version = Int(first >> 6)
            guard version == 2 else { throw .unsupportedVersion(.rtcpHeader, version: version) }
            let count = first & 0x1F
            let packetType = bytes[offset + 1]
            let lengthField = Int(bytes.u16(at: offset + 2))
            let packetLength = (lengthField + 1) * 4
            guard packetLength <= remaining else {
                throw .rtcpLengthExceedsData(lengthField: lengthField, remaining: remaining)
            }
            var bodyEnd = offset + packetLength
            if first & 0x20 != 0 {
                let padding = Int(bytes[bodyEnd - 1])
                guard padding >= 1, padding <= packetLength - 4 else {
                    throw .invalidPadding(.rtcpHeader, count: padding, available: packetLength - 4)
                }
                bodyEnd -= padding
            }
            let body = UnsafeRawBufferPointer(rebasing: bytes[(offset + 4)..<bodyEnd])
            packets.append(try parseBody(body, packetType: packetType, count: count))
            offset += packetLength
        }
        return packets
    }

    /// Parses a compound datagram held in an array.
    public static func parseCompound(_ bytes: [UInt8]) throws(WireError) -> [RTCPPacket] {
        try withBytes(bytes) { raw throws(WireError) in try parseCompound(raw) }
    }

    /// Parses a compound datagram held in a slice.
    public static func parseCompound(_ bytes: ArraySlice<UInt8>) throws(WireError) -> [RTCPPacket] {
        try withBytes(bytes) { raw throws(WireError) in try parseCompound(raw) }
    }

    /// Serializes packets back to back into one datagram.
    public static func serializeCompound(_ packets: [RTCPPacket]) -> [UInt8] {
        var out: [UInt8] = []
        for packet in packets { packet.serialize(into: &out) }
        return out
    }

    /// This packet's wire bytes (more than one RTCP packet when a count exceeds 31).
    public func serialized() -> [UInt8] {
        var out: [UInt8] = []
        serialize(into: &out)
        return out
    }

    // MARK: Parsing bodies

    private static func parseBody(
        _ body: UnsafeRawBufferPointer, packetType: UInt8, count: UInt8
    ) throws(WireError) -> RTCPPacket {
        switch packetType {
        case RTCPPacketType.senderReport:
            guard body.count >= 24 else { throw .truncated(.senderReport, needed: 24, available: body.count) }
            let reports = try parseReportBlocks(body, from: 24, count: Int(count))
            return .senderReport(
                SenderReport(
                    ssrc: body.u32(at: 0), ntpTimestamp: body.u64(at: 4), rtpTimestamp: body.u32(at: 12),
                    packetCount: body.u32(at: 16), octetCount: body.u32(at: 20), reports: reports))
        case RTCPPacketType.receiverReport:
            guard body.count >= 4 else { throw .truncated(.receiverReport, needed: 4, available: body.count) }
            let reports = try parseReportBlocks(body, from: 4, count: Int(count))
            return .receiverReport(ReceiverReport(ssrc: body.u32(at: 0), reports: reports))
        case RTCPPacketType.sourceDescription:
            return .sourceDescription(try parseSourceDescription(body, count: Int(count)))
        case RTCPPacketType.goodbye:
            return .goodbye(try parseGoodbye(body, count: Int(count)))
        case RTCPPacketType.application:
            guard body.count >= 8 else { throw .truncated(.application, needed: 8, available: body.count) }
            return .application(
                ApplicationPacket(
                    subtype: count, ssrc: body.u32(at: 0), name: RTCPAppName(rawValue: body.u32(at: 4)),
                    data: body.array(8..<body.count)))
        case RTCPPacketType.transportFeedback, RTCPPacketType.payloadFeedback:
            guard body.count >= 8 else { throw .truncated(.feedback, needed: 8, available: body.count) }
            let sender = body.u32(at: 0)
            let media = body.u32(at: 4)
            if packetType == RTCPPacketType.transportFeedback && count == 1 {
                let fci = body.count - 8
                guard fci % 4 == 0 else {
                    throw .truncated(.genericNACK, needed: (fci / 4 + 1) * 4, available: fci)
                }
                var items: [GenericNACK.Item] = []
                items.reserveCapacity(fci / 4)
                for index in 0..<(fci / 4) {
                    let offset = 8 + 4 * index
                    items.append(.init(packetID: body.u16(at: offset), lostBitmask: body.u16(at: offset + 2)))
                }
                return .nack(GenericNACK(senderSSRC: sender, mediaSSRC: media, items: items))
            }
            if packetType == RTCPPacketType.payloadFeedback && count == 1 {
                return .pictureLossIndication(PictureLossIndication(senderSSRC: sender, mediaSSRC: media))
            }
            return .other(RTCPRawPacket(packetType: packetType, count: count, body: body.array(0..<body.count)))
        default:
            return .other(RTCPRawPacket(packetType: packetType, count: count, body: body.array(0..<body.count)))
        }
    }

    private static func parseReportBlocks(
        _ body: UnsafeRawBufferPointer, from start: Int, count: Int
    ) throws(WireError) -> [ReportBlock] {
        let needed = 24 * count
        guard body.count - start >= needed else {
            throw .truncated(.reportBlock, needed: needed, available: body.count - start)
        }
        var reports: [ReportBlock] = []
        reports.reserveCapacity(count)
        for index in 0..<count { reports.append(ReportBlock.parse(body, at: start + 24 * index)) }
        return reports
    }

    private static func parseSourceDescription(
        _ body: UnsafeRawBufferPointer, count: Int
    ) throws(WireError) -> SourceDescription {
        var chunks: [SourceDescription.Chunk] = []
        var offset = 0
        for _ in 0..<count {
            guard body.count - offset >= 4 else {
                throw .truncated(.sourceDescription, needed: 4, available: body.count - offset)
            }
            let ssrc = body.u32(at: offset)
            offset += 4
            var items: [SourceDescription.Item] = []
            while true {
                // A chunk's item list ends with a zero type byte; running out of data instead is an error.
                guard offset < body.count else { throw .truncated(.sdesItem, needed: 1, available: 0) }
                let type = body[offset]
                if type == 0 {
                    offset = min((offset + 4) & ~3, body.count)  // the null byte plus padding to the next word
                    break
                }
                guard body.count - offset >= 2 else {
                    throw .truncated(.sdesItem, needed: 2, available: body.count - offset)
                }
                let length = Int(body[offset + 1])
                guard body.count - offset - 2 >= length else {
                    throw .truncated(.sdesItem, needed: 2 + length, available: body.count - offset)
                }
                let text = String(decoding: body[(offset + 2)..<(offset + 2 + length)], as: UTF8.self)
                items.append(.init(type: type, text: text))
                offset += 2 + length
            }
            chunks.append(.init(ssrc: ssrc, items: items))
        }
        return SourceDescription(chunks: chunks)
    }

    private static func parseGoodbye(_ body: UnsafeRawBufferPointer, count: Int) throws(WireError) -> Goodbye {
        guard body.count >= 4 * count else {
            throw .truncated(.goodbye, needed: 4 * count, available: body.count)
        }
        let ssrcs = (0..<count).map { body.u32(at: 4 * $0) }
        var reason: String?
        let rest = body.count - 4 * count
        if rest > 0 {
            let length = Int(body[4 * count])
            guard rest - 1 >= length else { throw .truncated(.byeReason, needed: 1 + length, available: rest) }
            let start = 4 * count + 1
            reason = String(decoding: body[start..<(start + length)], as: UTF8.self)
        }
        return Goodbye(ssrcs: ssrcs, reason: reason)
    }

    // MARK: Serializing

    /// Appends this packet's wire bytes (several RTCP packets when a count exceeds 31).
    public func serialize(into out: inout [UInt8]) {
        switch self {
        case .senderReport(let report):
            let first = Array(report.reports.prefix(31))
            Self.appendHeader(
                &out, count: first.count, packetType: RTCPPacketType.senderReport, bodyLength: 24 + 24 * first.count
            )
            out.appendU32(report.ssrc)
            out.appendU64(report.ntpTimestamp)
            out.appendU32(report.rtpTimestamp)
            out.appendU32(report.packetCount)
            out.appendU32(report.octetCount)
            for block in first { block.serialize(into: &out) }
            if report.reports.count > 31 {
                Self.appendReceiverReports(&out, ssrc: report.ssrc, blocks: report.reports.dropFirst(31))
            }
        case .receiverReport(let report):
            Self.appendReceiverReports(&out, ssrc: report.ssrc, blocks: report.reports[...])
        case .sourceDescription(let description):
            var start = 0
            repeat {
                let chunks = description.chunks[start..<min(start + 31, description.chunks.count)]
                var body: [UInt8] = []
                for chunk in chunks {
                    body.appendU32(chunk.ssrc)
                    for item in chunk.items {
                        let text = Array(item.text.utf8.prefix(255))
                        body.append(item.type)
                        body.append(UInt8(text.count))
                        body += text
                    }
                    body.append(0)  // end of items; then pad the chunk to a word boundary
                    body.padToWord()
                }
                Self.appendHeader(
                    &out, count: chunks.count, packetType: RTCPPacketType.sourceDescription, bodyLength: body.count
                )
                out += body
                start += 31
            } while start < description.chunks.count
        case .goodbye(let bye):
            var body: [UInt8] = []
            let ssrcs = bye.ssrcs.prefix(31)
            for ssrc in ssrcs { body.appendU32(ssrc) }
            if let reason = bye.reason {
                let text = Array(reason.utf8.prefix(255))
                body.append(UInt8(text.count))
                body += text
                body.padToWord()
            }
            Self.appendHeader(&out, count: ssrcs.count, packetType: RTCPPacketType.goodbye, bodyLength: body.count)
            out += body
        case .application(let app):
            let padded = (app.data.count + 3) / 4 * 4
            Self.appendHeader(
                &out, count: Int(app.subtype & 0x1F), packetType: RTCPPacketType.application, bodyLength: 8 + padded
            )
            out.appendU32(app.ssrc)
            out.appendU32(app.name.rawValue)
            out += app.data
            out.append(contentsOf: repeatElement(0, count: padded - app.data.count))
        case .nack(let nack):
            Self.appendHeader(
                &out, count: 1, packetType: RTCPPacketType.transportFeedback, bodyLength: 8 + 4 * nack.items.count
            )
            out.appendU32(nack.senderSSRC)
            out.appendU32(nack.mediaSSRC)
            for item in nack.items {
                out.appendU16(item.packetID)
                out.appendU16(item.lostBitmask)
            }
        case .pictureLossIndication(let pli):
            Self.appendHeader(&out, count: 1, packetType: RTCPPacketType.payloadFeedback, bodyLength: 8)
            out.appendU32(pli.senderSSRC)
            out.appendU32(pli.mediaSSRC)
        case .other(let raw):
            let padded = (raw.body.count + 3) / 4 * 4
            Self.appendHeader(&out, count: Int(raw.count & 0x1F), packetType: raw.packetType, bodyLength: padded)
            out += raw.body
            out.append(contentsOf: repeatElement(0, count: padded - raw.body.count))
        }
    }

    private static func appendHeader(_ out: inout [UInt8], count: Int, packetType: UInt8, bodyLength: Int) {
        out.append(2 << 6 | UInt8(count))
        out.append(packetType)
        out.appendU16(UInt16(truncatingIfNeeded: bodyLength / 4))  // (4 + body) / 4 - 1
    }

    private static func appendReceiverReports(_ out: inout [UInt8], ssrc: UInt32, blocks: ArraySlice<ReportBlock>) {
        var rest = blocks
        repeat {
            let part = rest.prefix(31)
            rest = rest.dropFirst(part.count)
            appendHeader(
                &out, count: part.count, packetType: RTCPPacketType.receiverReport, bodyLength: 4 + 24 * part.count
            )
            out.appendU32(ssrc)
            for block in part { block.serialize(into: &out) }
        } while !rest.isEmpty
    }
}
