// The one place that knows RTP counters wrap: 16-bit sequence numbers and 32-bit timestamps (RFC 3550 §A.1).
// A value is newer than another when it is ahead by less than half the counter's range; exactly half is older,
// so that `isNewer(a, than: b)` and `isNewer(b, than: a)` are never both true.

/// Wrap-around comparisons and distances for RTP sequence numbers (UInt16) and timestamps (UInt32).
public enum SequenceNumber {
    /// True when `value` is ahead of `other` by 1 up to (half the range − 1), counting across the wrap.
    @inlinable
    public static func isNewer<Value: FixedWidthInteger & UnsignedInteger>(_ value: Value, than other: Value) -> Bool {
        let ahead = value &- other
        return ahead != 0 && ahead < (Value(1) << (Value.bitWidth - 1))
    }

    /// Signed steps from `from` to `to` across the wrap, in -(half range)...(half range − 1).
    @inlinable
    public static func distance<Value: FixedWidthInteger & UnsignedInteger>(from: Value, to: Value) -> Int64 {
        let ahead = Int64(to &- from)
        let half = Int64(1) << (Value.bitWidth - 1)
        return ahead >= half ? ahead - (half << 1) : ahead
    }
}

/// Turns wrapping 16- or 32-bit counters into a 64-bit count that keeps increasing across wraps.
public struct SequenceUnwrapper<Value: FixedWidthInteger & UnsignedInteger & Sendable>: Sendable, Equatable {
    @usableFromInline
    var storedHighest: Int64?

    /// The largest unwrapped value seen so far, nil before the first value.
    @inlinable
    public var highest: Int64? { storedHighest }

    /// An unwrapper that has seen nothing; the first value unwraps to itself.
    @inlinable
    public init() { storedHighest = nil }

    /// The unwrapped value of `value`, taken as the closest value to the highest seen (older values unwrap lower).
    @inlinable
    public mutating func unwrap(_ value: Value) -> Int64 {
        guard let highest = storedHighest else {
            storedHighest = Int64(value)
            return Int64(value)
        }
        let extended = highest + SequenceNumber.distance(from: Value(truncatingIfNeeded: highest), to: value)
        if extended > highest { storedHighest = extended }
        return extended
    }

    /// The unwrapped value of `value` without recording it.
    @inlinable
    public func peek(_ value: Value) -> Int64 {
        guard let highest = storedHighest else { return Int64(value) }
        return highest + SequenceNumber.distance(from: Value(truncatingIfNeeded: highest), to: value)
    }
}

/// Unwraps RTP sequence numbers.
public typealias RTPSequenceUnwrapper = SequenceUnwrapper<UInt16>
/// Unwraps RTP timestamps.
public typealias RTPTimestampUnwrapper = SequenceUnwrapper<UInt32>
