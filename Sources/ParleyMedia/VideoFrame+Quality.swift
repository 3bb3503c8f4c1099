#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Peak signal-to-noise ratio between two pictures, in dB (higher is closer; identical pictures give 100).
public struct PSNR: Sendable, Equatable {
    /// Luma plane only.
    public var y: Double
    /// All three planes together, weighted by sample count (libvpx's "overall" figure).
    public var overall: Double

    /// The cap for identical planes, as libvpx reports it.
    public static let maximum = 100.0

    /// dB for a sum of squared errors over `count` 8-bit samples.
    static func decibels(squaredError: UInt64, count: Int) -> Double {
        guard squaredError > 0, count > 0 else { return maximum }
        let meanSquaredError = Double(squaredError) / Double(count)
        return min(maximum, 10 * log10(255.0 * 255.0 / meanSquaredError))
    }
}

extension VideoFrame {
    /// PSNR of this picture against a reference of the same size; nil when the sizes differ.
    public func psnr(against reference: VideoFrame) -> PSNR? {
        guard width == reference.width, height == reference.height else { return nil }
        let ySSE = Self.squaredError(y, reference.y)
        let chromaSSE = Self.squaredError(u, reference.u) + Self.squaredError(v, reference.v)
        return PSNR(
            y: PSNR.decibels(squaredError: ySSE, count: y.count),
            overall: PSNR.decibels(squaredError: ySSE + chromaSSE, count: y.count + u.count + v.count))
    }

    private static func squaredError(_ a: [UInt8], _ b: [UInt8]) -> UInt64 {
        a.withUnsafeBufferPointer { a in
            b.withUnsafeBufferPointer { b in
                var total: UInt64 = 0
                var index = 0
                while index < a.count {
                    // Rows of up to 4096 samples fit a 32-bit sum (255² * 4096 < 2³²), which vectorises well.
                    let end = min(a.count, index + 4096)
                    var partial: UInt32 = 0
                    for i in index..<end {
                        let d = Int32(a[i]) &- Int32(b[i])
                        partial &+= UInt32(bitPattern: d &* d)
                    }
                    total += UInt64(partial)
                    index = end
                }
                return total
            }
        }
    }
}
