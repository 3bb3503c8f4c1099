import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// kitty's graphics protocol, the parts a video tile needs: transmit-and-show an RGB picture in place of the last
/// one, delete it, and ask whether the terminal speaks the protocol.
///
/// Every command is an APC string: `ESC _ G key=value,… ; base64 payload ESC \`. A picture goes as raw 24-bit RGB
/// (`f=24`), base64 in chunks of at most 4096 characters (`m=1` on all but the last). `a=T` transmits and places it
/// at the cursor, `i` names the image (one per tile) and `p` its placement, so the next frame with the same ids
/// takes the place of the last one; `c`/`r` pin it to the tile's cells, `C=1` leaves the cursor where it was, and
/// `q=2` turns off the terminal's answers, which would otherwise arrive on standard input as keys.
public enum KittyGraphics {
    /// Base64 characters a chunk carries at most (the protocol's limit).
    public static let chunkLimit = 4096
    /// The image id the start-up query uses.
    public static let queryID = 31

    /// The commands that show `raster` at the cursor as image `id` over `columns`×`rows` cells, stacked at `z`
    /// (a later tile over an earlier one it overlaps).
    public static func show(_ raster: PixelRaster, id: Int, columns: Int, rows: Int, z: Int = 0) -> [UInt8] {
        let payload = Data(raster.rgb).base64EncodedData()
        var bytes: [UInt8] = []
        bytes.reserveCapacity(payload.count + payload.count / chunkLimit * 16 + 96)
        let head =
            "a=T,f=24,s=\(raster.width),v=\(raster.height),i=\(id),p=1,c=\(columns),r=\(rows),C=1,q=2"
            + (z != 0 ? ",z=\(z)" : "")
        payload.withUnsafeBytes { (base64: UnsafeRawBufferPointer) in
            var offset = 0
            var first = true
            repeat {
                let end = min(base64.count, offset + chunkLimit)
                let more = end < base64.count
                bytes += [0x1B, 0x5F, 0x47]  // ESC _ G
                if first {
                    bytes += Array(head.utf8)
                    if more { bytes += Array(",m=1".utf8) }
                } else {
                    bytes += Array((more ? "m=1" : "m=0").utf8)
                }
                bytes.append(0x3B)  // ;
                bytes += base64[offset..<end]
                bytes += [0x1B, 0x5C]  // ESC \
                offset = end
                first = false
            } while offset < base64.count
        }
        return bytes
    }

    /// The command that shows an RGB picture the terminal reads from the POSIX shared memory object `name`
    /// (`t=s`; the terminal unlinks it once read): a few dozen bytes through the terminal instead of the picture.
    public static func showShared(
        name: String, width: Int, height: Int, id: Int, columns: Int, rows: Int,
        z: Int = 0
    ) -> [UInt8] {
        let head =
            "a=T,t=s,f=24,s=\(width),v=\(height),S=\(width * height * 3),i=\(id),p=1,c=\(columns),r=\(rows),"
            + "C=1,q=2" + (z != 0 ? ",z=\(z)" : "")
        return Array("\u{1B}_G\(head);\(Data(name.utf8).base64EncodedString())\u{1B}\\".utf8)
    }

    /// Removes image `id`'s placements and frees its data.
    public static func delete(id: Int) -> [UInt8] {
        Array("\u{1B}_Ga=d,d=I,i=\(id),q=2\u{1B}\\".utf8)
    }

    /// Removes every image Parley placed (on leaving the screen).
    public static let deleteAll: [UInt8] = Array("\u{1B}_Ga=d,d=A,q=2\u{1B}\\".utf8)

    /// A 1x1 query (`a=q`): a terminal with the protocol answers `ESC _ G i=31;OK ESC \`, others stay silent.
    public static let query: [UInt8] = Array("\u{1B}_Gi=\(queryID),s=1,v=1,a=q,t=d,f=24;AAAA\u{1B}\\".utf8)

    /// One graphics command read back from terminal output.
    public struct Command: Equatable, Sendable {
        /// The keys before ';'.
        public var keys: [String: String]
        /// The payload after ';' (still base64).
        public var payload: [UInt8]
    }

    /// Why output could not be read back as kitty graphics.
    public struct Unreadable: Error, CustomStringConvertible, Equatable {
        /// What was wrong.
        public var reason: String
        public var description: String { "not kitty graphics: \(reason)" }
    }

    /// The graphics commands in `bytes` (other bytes skipped), for tests and the picture bench.
    public static func commands(in bytes: [UInt8]) throws(Unreadable) -> [Command] {
        var commands: [Command] = []
        var index = 0
        while index + 2 < bytes.count {
            guard bytes[index] == 0x1B, bytes[index + 1] == 0x5F, bytes[index + 2] == 0x47 else {
                index += 1
                continue
            }
            var end = index + 3
            while end + 1 < bytes.count, !(bytes[end] == 0x1B && bytes[end + 1] == 0x5C) { end += 1 }
            guard end + 1 < bytes.count else { throw Unreadable(reason: "a command at byte \(index) has no ESC \\") }
            let body = bytes[(index + 3)..<end]
            let split = body.firstIndex(of: 0x3B) ?? body.endIndex
            var keys: [String: String] = [:]
            for pair in String(decoding: body[body.startIndex..<split], as: UTF8.self).split(separator: ",") {
                let parts = pair.split(separator: "=", maxSplits: 1)
                guard parts.count == 2 else { throw Unreadable(reason: "key '\(pair)' has no value") }
                keys[String(parts[0])] = String(parts[1])
            }
            let payload = split < body.endIndex ? Array(body[(split + 1)...]) : []
            commands.append(Command(keys: keys, payload: payload))
            index = end + 2
        }
        return commands
    }

    /// The image id the shared-memory query uses.
    public static let sharedQueryID = 32

    /// A query asking whether the terminal reads pictures from shared memory: a 1x1 picture in `name`.
    public static func sharedQuery(name: String) -> [UInt8] {
        Array("\u{1B}_Gi=\(sharedQueryID),s=1,v=1,a=q,t=s,f=24;\(Data(name.utf8).base64EncodedString())\u{1B}\\".utf8)
    }

    /// The pictures `bytes` transmit, by image id, each with the cells it is pinned to: chunks joined, base64
    /// decoded, checked against the declared size.
    public static func pictures(in bytes: [UInt8]) throws(Unreadable)
        -> [(id: Int, columns: Int, rows: Int, raster: PixelRaster)]
    {
        var result: [(id: Int, columns: Int, rows: Int, raster: PixelRaster)] = []
        var open: (keys: [String: String], payload: [UInt8])?
        for command in try commands(in: bytes) {
            if var current = open {
                current.payload += command.payload
                open = current
            } else {
                guard command.keys["a"] == "T" else { continue }
                open = (command.keys, command.payload)
            }
            guard (command.keys["m"] ?? "0") == "0", let done = open else { continue }
            open = nil
            guard done.keys["f"] == "24", let width = done.keys["s"].flatMap({ Int($0) }),
                let height = done.keys["v"].flatMap({ Int($0) }), let id = done.keys["i"].flatMap({ Int($0) })
            else { throw Unreadable(reason: "a transmission lacks f=24, s, v or i") }
            guard let data = Data(base64Encoded: Data(done.payload)) else {
                throw Unreadable(reason: "image \(id)'s payload is not base64")
            }
            guard data.count == width * height * 3 else {
                throw Unreadable(reason: "image \(id) carries \(data.count) bytes for \(width)x\(height) RGB")
            }
            result.append(
                (
                    id, Int(done.keys["c"] ?? "") ?? 0, Int(done.keys["r"] ?? "") ?? 0,
                    PixelRaster(width: width, height: height, rgb: [UInt8](data))
                ))
        }
        if open != nil { throw Unreadable(reason: "the last transmission never ends (m=1 on its last chunk)") }
        return result
    }
}
