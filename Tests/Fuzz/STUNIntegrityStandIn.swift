// A stand-in for Sources/ParleyWebRTC/ICE/STUNIntegrity.swift, compiled only into the fuzz binary and the seed
// writer (`make fuzz`, `make fuzz-seeds`), never into the package: their one-module swiftc build cannot import
// swift-crypto. It is deterministic and NOT cryptographic (no HMAC-SHA1, no secrecy): the STUN parser around it, and
// the offsets and lengths it hands over, are what is fuzzed. Seeds signed with it verify only under it.

/// MESSAGE-INTEGRITY's code, as the fuzz build computes it: 20 bytes that depend on every byte and the key.
enum STUNIntegrity {
    /// 20 bytes mixed from `key` and `bytes` (FNV-1a style, five lanes); the same input always gives the same code.
    static func code(of bytes: [UInt8], key: [UInt8]) -> [UInt8] {
        var lanes: [UInt32] = [0x811C_9DC5, 0x0100_0193, 0x5354_554E, 0x2112_A442, 0x9E37_79B9]
        for (index, byte) in (key + [0] + bytes).enumerated() {
            let lane = index % lanes.count
            lanes[lane] = (lanes[lane] ^ UInt32(byte)) &* 0x0100_0193
        }
        var code: [UInt8] = []
        for lane in lanes {
            let mixed = lane ^ (lane >> 15)
            code += [
                UInt8(truncatingIfNeeded: mixed >> 24), UInt8(truncatingIfNeeded: mixed >> 16),
                UInt8(truncatingIfNeeded: mixed >> 8), UInt8(truncatingIfNeeded: mixed),
            ]
        }
        return code
    }

    /// Whether `code` is the stand-in code of `bytes` under `key`.
    static func isValid(_ code: [UInt8], of bytes: [UInt8], key: [UInt8]) -> Bool {
        code == self.code(of: bytes, key: key)
    }
}
