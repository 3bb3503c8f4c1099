import Foundation
import ParleyBytes
import ParleySecurity
import ParleyWire

/// A rooms file that could not be read, with the line and what was wrong.
public struct RoomsFileError: Error, Equatable, CustomStringConvertible {
    /// The sentence for the operator.
    public var message: String

    /// An error.
    public init(_ message: String) { self.message = message }

    public var description: String { message }
}

/// The relay operator's rooms file: rooms that exist before anyone joins them, each with an optional password and
/// stage rule. One room a line: `NAME [password=TEXT | verifier=HEX] [stage=open|host] [record=yes|no]`; `#` starts
/// a comment.
/// A password is stored in the relay's memory only as its verifier (`RoomPassword.verifier`).
public enum RoomsFile {
    /// Largest rooms file read, in bytes.
    public static let maximumBytes = 1 << 20
    /// Most rooms a file may list.
    public static let maximumRooms = 10_000

    /// Reads and parses the file at `path`.
    public static func load(path: String) throws(RoomsFileError) -> [String: ConfiguredRoom] {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path) else {
            throw RoomsFileError("rooms file \(path) cannot be read: no such file, or no permission")
        }
        if let size = attributes[.size] as? Int, size > maximumBytes {
            throw RoomsFileError("rooms file \(path) is \(size) bytes; the limit is \(maximumBytes)")
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw RoomsFileError("rooms file \(path) cannot be read")
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw RoomsFileError("rooms file \(path) is not UTF-8 text")
        }
        return try parse(text, source: path)
    }

    /// Parses the text of a rooms file; errors name `source` and the line.
    public static func parse(_ text: String, source: String = "rooms file") throws(RoomsFileError)
        -> [String: ConfiguredRoom]
    {
        var rooms: [String: ConfiguredRoom] = [:]
        for (index, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = rawLine.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\r" }).map(String.init)
            guard let first = words.first else { continue }
            let at = "\(source) line \(index + 1)"
            let name: String
            do {
                name = try RoomName.validate(first)
            } catch {
                throw RoomsFileError("\(at): \(error)")
            }
            guard rooms[name] == nil else { throw RoomsFileError("\(at): room \(name) is listed twice") }
            guard rooms.count < maximumRooms else {
                throw RoomsFileError("\(at): more than \(maximumRooms) rooms; that is the limit")
            }
            var room = ConfiguredRoom()
            for setting in words.dropFirst() {
                let parts = setting.split(separator: "=", maxSplits: 1).map(String.init)
                guard parts.count == 2, !parts[1].isEmpty else {
                    throw RoomsFileError(
                        "\(at): \"\(setting)\" is not a setting; write password=TEXT, "
                            + "verifier=HEX, stage=open|host or record=yes|no")
                }
                switch parts[0] {
                case "password":
                    guard room.verifier == nil else {
                        throw RoomsFileError("\(at): give a password or a verifier, once")
                    }
                    room.verifier = RoomPassword.verifier(password: parts[1], room: name)
                case "verifier":
                    guard room.verifier == nil else {
                        throw RoomsFileError("\(at): give a password or a verifier, once")
                    }
                    guard let verifier = Hex.decode(parts[1]), verifier.count == 32 else {
                        throw RoomsFileError("\(at): verifier must be 64 hex digits")
                    }
                    room.verifier = verifier
                case "stage":
                    switch parts[1] {
                    case "open": room.openStage = true
                    case "host": room.openStage = false
                    default: throw RoomsFileError("\(at): stage is \"open\" or \"host\", not \"\(parts[1])\"")
                    }
                case "record":
                    switch parts[1] {
                    case "yes": room.recording = true
                    case "no": room.recording = false
                    default: throw RoomsFileError("\(at): record is \"yes\" or \"no\", not \"\(parts[1])\"")
                    }
                default:
                    throw RoomsFileError(
                        "\(at): unknown setting \"\(parts[0])\"; expected password, verifier, stage or record")
                }
            }
            rooms[name] = room
        }
        return rooms
    }
}

extension RoomsFile {
    /// One room as a rooms file line, with its password as the verifier (never the password itself): what a
    /// cluster keeps in its database.
    public static func line(room name: String, _ room: ConfiguredRoom) -> String {
        var words = [name]
        if let verifier = room.verifier { words.append("verifier=" + Hex.encode(verifier)) }
        words.append("stage=" + (room.openStage ? "open" : "host"))
        return words.joined(separator: " ")
    }
}
