import ParleyBytes
import ParleyWire
import Testing

/// Bytes from hex digits; spaces and line breaks are ignored ("80 60 12 34").
func bytes(_ hex: String) -> [UInt8] {
    let digits = String(String.UnicodeScalarView(hex.unicodeScalars.filter { !$0.properties.isWhitespace }))
    guard let bytes = Hex.decode(digits) else { preconditionFailure("not an even number of hex digits: \(hex)") }
    return bytes
}

/// A small seeded generator (SplitMix64) so "random" tests replay the same bytes every run.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Milliseconds as a Duration, for scripted arrival times.
func ms(_ value: Int) -> Duration { .milliseconds(value) }

/// Runs a typed-throwing parser and returns its error, or nil when it succeeded.
func wireError<T>(_ body: () throws(WireError) -> T) -> WireError? {
    do {
        _ = try body()
        return nil
    } catch {
        return error
    }
}
