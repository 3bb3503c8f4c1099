import ParleyWire
import Testing

struct SequenceNumberTests {
    struct Comparison: CustomTestStringConvertible, Sendable {
        let name: String
        let value: UInt16
        let other: UInt16
        let isNewer: Bool
        let distance: Int64
        var testDescription: String { name }
    }

    static let comparisons: [Comparison] = [
        .init(name: "equal at 0", value: 0, other: 0, isNewer: false, distance: 0),
        .init(name: "one ahead", value: 1, other: 0, isNewer: true, distance: 1),
        .init(name: "0 follows 65535", value: 0, other: 65535, isNewer: true, distance: 1),
        .init(name: "65535 precedes 0", value: 65535, other: 0, isNewer: false, distance: -1),
        .init(name: "32767 ahead of 0", value: 32767, other: 0, isNewer: true, distance: 32767),
        .init(name: "32768 from 0 is half: older", value: 32768, other: 0, isNewer: false, distance: -32768),
        .init(name: "0 from 32768 is half: older", value: 0, other: 32768, isNewer: false, distance: -32768),
        .init(name: "32769 behind 0 across wrap", value: 32769, other: 0, isNewer: false, distance: -32767),
        .init(name: "32768 follows 32767", value: 32768, other: 32767, isNewer: true, distance: 1),
        .init(name: "65535 ahead of 32768", value: 65535, other: 32768, isNewer: true, distance: 32767),
        .init(name: "10 ahead of 65530 across wrap", value: 10, other: 65530, isNewer: true, distance: 16),
    ]

    @Test(arguments: comparisons)
    func sequenceNumbers(_ row: Comparison) {
        #expect(SequenceNumber.isNewer(row.value, than: row.other) == row.isNewer)
        #expect(SequenceNumber.distance(from: row.other, to: row.value) == row.distance)
    }

    @Test func timestampsWrapAt32Bits() {
        #expect(SequenceNumber.isNewer(UInt32(0), than: UInt32.max))
        #expect(SequenceNumber.distance(from: UInt32.max, to: UInt32(959)) == 960)
        #expect(SequenceNumber.distance(from: UInt32(0), to: UInt32(1) << 31) == -2_147_483_648)
        #expect(!SequenceNumber.isNewer(UInt32(1) << 31, than: 0))
        #expect(SequenceNumber.distance(from: UInt32(0), to: UInt32(0x7FFF_FFFF)) == 2_147_483_647)
    }

    struct Unwrapping: CustomTestStringConvertible, Sendable {
        let name: String
        let input: [UInt16]
        let expected: [Int64]
        var testDescription: String { name }
    }

    static let unwrappings: [Unwrapping] = [
        .init(name: "wraps forward at 65535", input: [65534, 65535, 0, 1], expected: [65534, 65535, 65536, 65537]),
        .init(name: "older than the first goes negative", input: [0, 65535], expected: [0, -1]),
        .init(name: "half-range ambiguity resolves older", input: [32768, 0, 65535], expected: [32768, 0, 65535]),
        .init(
            name: "reordered across wrap", input: [65535, 1, 65534, 0, 2],
            expected: [65535, 65537, 65534, 65536, 65538]),
        .init(name: "big forward steps", input: [0, 30000, 60000, 24464], expected: [0, 30000, 60000, 90000]),
        .init(
            name: "many wraps", input: [0, 20000, 40000, 60000, 14464, 34464, 54464, 8928],
            expected: [0, 20000, 40000, 60000, 80000, 100000, 120000, 140000]),
    ]

    @Test(arguments: unwrappings)
    func unwrapsSequenceNumbers(_ row: Unwrapping) {
        var unwrapper = RTPSequenceUnwrapper()
        #expect(row.input.map { unwrapper.unwrap($0) } == row.expected)
        #expect(unwrapper.highest == row.expected.max())
    }

    @Test func unwrapsTimestampsAndPeeksWithoutRecording() {
        var unwrapper = RTPTimestampUnwrapper()
        #expect(unwrapper.unwrap(4_294_967_000) == 4_294_967_000)
        #expect(unwrapper.peek(200) == 4_294_967_496)
        #expect(unwrapper.highest == 4_294_967_000)
        #expect(unwrapper.unwrap(200) == 4_294_967_496)
        #expect(unwrapper.unwrap(4_294_967_100) == 4_294_967_100)
    }
}
