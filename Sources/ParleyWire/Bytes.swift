// Big-endian reads and writes. Callers check lengths first; these never check again.

extension UnsafeRawBufferPointer {
    @inlinable
    func u16(at offset: Int) -> UInt16 {
        UInt16(bigEndian: loadUnaligned(fromByteOffset: offset, as: UInt16.self))
    }

    @inlinable
    func u24(at offset: Int) -> UInt32 {
        UInt32(self[offset]) << 16 | UInt32(self[offset + 1]) << 8 | UInt32(self[offset + 2])
    }

    @inlinable
    func u32(at offset: Int) -> UInt32 {
        UInt32(bigEndian: loadUnaligned(fromByteOffset: offset, as: UInt32.self))
    }

    @inlinable
    func u64(at offset: Int) -> UInt64 {
        UInt64(bigEndian: loadUnaligned(fromByteOffset: offset, as: UInt64.self))
    }

    /// Copies a range out as an array (the only allocation a full parse makes per field).
    func array(_ range: Range<Int>) -> [UInt8] {
        Array(UnsafeRawBufferPointer(rebasing: self[range]))
    }
}

extension Array where Element == UInt8 {
    @inlinable
    mutating func appendU16(_ value: UInt16) {
        append(UInt8(truncatingIfNeeded: value >> 8))
        append(UInt8(truncatingIfNeeded: value))
    }

    @inlinable
    mutating func appendU24(_ value: UInt32) {
        append(UInt8(truncatingIfNeeded: value >> 16))
        append(UInt8(truncatingIfNeeded: value >> 8))
        append(UInt8(truncatingIfNeeded: value))
    }

    @inlinable
    mutating func appendU32(_ value: UInt32) {
        append(UInt8(truncatingIfNeeded: value >> 24))
        append(UInt8(truncatingIfNeeded: value >> 16))
        append(UInt8(truncatingIfNeeded: value >> 8))
        append(UInt8(truncatingIfNeeded: value))
    }

    @inlinable
    mutating func appendU64(_ value: UInt64) {
        appendU32(UInt32(truncatingIfNeeded: value >> 32))
        appendU32(UInt32(truncatingIfNeeded: value))
    }

    /// Appends zero bytes until the count is a multiple of four.
    @inlinable
    mutating func padToWord() {
        while count % 4 != 0 { append(0) }
    }
}

/// Runs a typed-throwing parser over the bytes of an array or slice without copying them.
@inlinable
func withBytes<T>(
    _ bytes: [UInt8], _ body: (UnsafeRawBufferPointer) throws(WireError) -> T
) throws(WireError) -> T {
    try bytes.withUnsafeBytes { raw in Result { () throws(WireError) in try body(raw) } }.get()
}

/// Runs a typed-throwing parser over the bytes of a slice without copying them.
@inlinable
func withBytes<T>(
    _ bytes: ArraySlice<UInt8>, _ body: (UnsafeRawBufferPointer) throws(WireError) -> T
) throws(WireError) -> T {
    try bytes.withUnsafeBytes { raw in Result { () throws(WireError) in try body(raw) } }.get()
}
