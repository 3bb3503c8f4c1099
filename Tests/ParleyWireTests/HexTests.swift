import ParleyBytes
import ParleyWire
import Testing

/// The one hex pair: exact text for exact bytes, and one nil per kind of bad text.
struct HexTests {
    struct Row: CustomTestStringConvertible, Sendable {
        var name: String
        var bytes: [UInt8]
        var text: String
        var testDescription: String { name }
    }

    static let rows = [
        Row(name: "empty", bytes: [], text: ""),
        Row(name: "zero", bytes: [0x00], text: "00"),
        Row(name: "every nibble", bytes: [0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef], text: "0123456789abcdef"),
        Row(name: "top byte", bytes: [0xff], text: "ff"),
        Row(name: "leading zeros kept", bytes: [0x00, 0x0a, 0xa0], text: "000aa0"),
    ]

    @Test(arguments: rows)
    func encodesLowercaseAndDecodesBack(_ row: Row) {
        #expect(Hex.encode(row.bytes) == row.text)
        #expect(Hex.decode(row.text) == row.bytes)
    }

    @Test func decodesUppercase() {
        #expect(Hex.decode("ABCDEF") == [0xab, 0xcd, 0xef])
        #expect(Hex.decode("aBcD") == [0xab, 0xcd])
    }

    @Test func encodesASlice() {
        #expect(Hex.encode([0x10, 0x20, 0x30][1...]) == "2030")
    }

    @Test(
        "bad text is refused",
        arguments: [
            ("odd number of digits", "abc"),
            ("one digit", "a"),
            ("not a hex letter", "0g"),
            ("plus sign", "+f"),
            ("minus sign", "-0"),
            ("space", "0 1f"),
            ("0x prefix", "0x1f"),
            ("non-ASCII digit", "٠١"),
        ])
    func refuses(_ label: String, _ text: String) {
        #expect(Hex.decode(text) == nil, "\(label)")
    }
}
