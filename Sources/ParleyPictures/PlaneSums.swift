import ParleyMedia

/// A summed-area table of a frame's red, green and blue: the exact sum over any box of source pixels in four
/// lookups. The block-cell renderer reads every part of a cell (its 2x2 or 2x3 pattern pixels, 8 bands, 8 strips)
/// as exact sums over one partition of the cell's source pixels, so the candidates' errors compare exactly.
///
/// Why RGB and not Y, U, V (a third of the work to build): colours clip in the conversion, so the RGB of a box's
/// mean YUV is not the mean of the box's RGB wherever a box holds saturated colours and an edge. Scored on YUV
/// means, eighth blocks won where they were really worse (2 dB lost on the renderer bench's moving colour bands);
/// on RGB sums they gain there too (`docs/terminal.md`). Reused between frames.
///
/// The three channels share one 64-bit word per entry (red in bits 0–20, green 21–41, blue 42–63) and the table
/// wraps: a box's sum comes out exact, lane by lane, as long as each channel's sum over the box stays below 2^21,
/// which holds for boxes of up to `maxBoxPixels` pixels. One word a pixel instead of three halves what building the
/// table writes and reads (the renderer's largest cost at 9 tiles), and a cell's sums take a third of the lookups.
struct PlaneSums: Sendable {
    /// The most pixels a box may hold for its sums to be exact (255 · pixels < 2^21).
    static let maxBoxPixels = ((1 << 21) - 1) / 255
    private(set) var table: [UInt64] = []
    private(set) var width = 0, height = 0
    private var chromaTerms: [Int] = []

    /// Builds the table of `frame`, every pixel converted to RGB (BT.601 limited range, clamped) on the way.
    mutating func build(_ frame: VideoFrame) {
        width = frame.width
        height = frame.height
        let stride = width + 1
        let size = stride * (height + 1)
        if table.count != size { table = [UInt64](repeating: 0, count: size) }
        let w = width
        let h = height
        let chromaWidth = frame.chromaWidth
        // The chroma terms of each chroma sample, shared by its two pixels on a row and by both rows.
        if chromaTerms.count != 3 * chromaWidth { chromaTerms = [Int](repeating: 0, count: 3 * chromaWidth) }
        frame.y.withUnsafeBufferPointer { lumaPlane in
            frame.u.withUnsafeBufferPointer { uPlane in
                frame.v.withUnsafeBufferPointer { vPlane in
                    chromaTerms.withUnsafeMutableBufferPointer { terms in
                        table.withUnsafeMutableBufferPointer { table in
                            Self.lanes.withUnsafeBufferPointer { lanes in
                                @inline(__always)
                                func packed(_ luma: UInt8, _ t: Int) -> UInt64 {
                                    let c = 76284 &* (Int(luma) &- 16)
                                    return lanes[(c &+ terms[t]) >> 16] | lanes[(c &+ terms[t &+ 1]) >> 16]
                                        | lanes[(c &+ terms[t &+ 2]) >> 16]
                                }
                                for y in 0..<h {
                                    if y & 1 == 0 {
                                        let chroma = (y >> 1) &* chromaWidth
                                        for x in 0..<chromaWidth {
                                            let d = Int(uPlane[chroma &+ x]) &- 128
                                            let e = Int(vPlane[chroma &+ x]) &- 128
                                            terms[3 &* x] = 104595 &* e &+ Self.redTerm
                                            terms[3 &* x &+ 1] = -25624 &* d &- 53281 &* e &+ Self.greenTerm
                                            terms[3 &* x &+ 2] = 132252 &* d &+ Self.blueTerm
                                        }
                                    }
                                    var running: UInt64 = 0
                                    let above = y &* stride &+ 1
                                    let here = above &+ stride
                                    let source = y &* w
                                    for x in 0..<w {
                                        running &+= packed(lumaPlane[source &+ x], 3 &* (x >> 1))
                                        table[here &+ x] = table[above &+ x] &+ running
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    // A channel's value is clamped and moved into its lane by a table lookup instead of compare-and-branch (the
    // branches mispredicted on saturated colours: the build took twice as long). The conversion's shifted sum
    // lies in -277…534 for any Y, U, V, so each channel's part of `lanes` is 1024 entries from -384.
    private static let laneOffset = 384, laneSize = 1024
    private static let redTerm = (laneOffset << 16) + 32768
    private static let greenTerm = ((laneOffset + laneSize) << 16) + 32768
    private static let blueTerm = ((laneOffset + 2 * laneSize) << 16) + 32768
    private static let lanes: [UInt64] = (0..<(3 * laneSize)).map { index in
        let value = UInt64(VideoCellRenderer.clamp(index % laneSize - laneOffset))
        return value << (21 * UInt64(index / laneSize))
    }
}

/// Reads box sums out of `PlaneSums`.
struct BoxReader {
    let table: UnsafeBufferPointer<UInt64>
    /// The frame's width + 1.
    let stride: Int

    /// The packed sums of the box [0, x) x [0, y): only differences of these mean anything.
    @inline(__always)
    func corner(_ x: Int, _ y: Int) -> UInt64 { table[y &* stride &+ x] }

    /// The red, green and blue sums of a packed box sum (a difference of corners spanning one box).
    @inline(__always)
    static func unpack(_ sum: UInt64) -> (r: Int, g: Int, b: Int) {
        (
            Int(truncatingIfNeeded: sum & 0x1F_FFFF), Int(truncatingIfNeeded: (sum >> 21) & 0x1F_FFFF),
            Int(truncatingIfNeeded: sum >> 42)
        )
    }

    /// The red, green and blue sums and the pixel count of the box [x0, x1) x [y0, y1).
    @inline(__always)
    func sum(_ x0: Int, _ y0: Int, _ x1: Int, _ y1: Int) -> (r: Int, g: Int, b: Int, n: Int) {
        let n = (x1 &- x0) &* (y1 &- y0)
        guard n > 0 else { return (0, 0, 0, 0) }
        let s = Self.unpack(corner(x1, y1) &- corner(x1, y0) &- corner(x0, y1) &+ corner(x0, y0))
        return (s.r, s.g, s.b, n)
    }
}
