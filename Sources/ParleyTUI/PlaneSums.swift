import ParleyMedia

/// Summed-area tables of a frame's red, green and blue: the exact sum over any box of source pixels in four
/// lookups a channel. The block-cell renderer reads every part of a cell (its 2x2 or 2x3 pattern pixels, 8 bands,
/// 8 strips) as exact sums over one partition of the cell's source pixels, so the candidates' errors compare
/// exactly.
///
/// Why RGB and not Y, U, V (a third of the work to build): colours clip in the conversion, so the RGB of a box's
/// mean YUV is not the mean of the box's RGB wherever a box holds saturated colours and an edge. Scored on YUV
/// means, eighth blocks won where they were really worse (2 dB lost on the renderer bench's moving colour bands);
/// on RGB sums they gain there too (`docs/terminal.md`). Reused between frames.
struct PlaneSums: Sendable {
    private(set) var red: [UInt32] = []
    private(set) var green: [UInt32] = []
    private(set) var blue: [UInt32] = []
    private(set) var width = 0, height = 0
    private var chromaTerms: [Int] = []

    /// Builds the tables of `frame`, every pixel converted to RGB (BT.601 limited range, clamped) on the way.
    mutating func build(_ frame: VideoFrame) {
        width = frame.width
        height = frame.height
        let stride = width + 1, size = stride * (height + 1)
        if red.count != size {
            red = [UInt32](repeating: 0, count: size)
            green = red
            blue = red
        }
        let w = width, h = height, chromaWidth = frame.chromaWidth
        // The chroma terms of each chroma sample, shared by its two pixels on a row and by both rows.
        if chromaTerms.count != 3 * chromaWidth { chromaTerms = [Int](repeating: 0, count: 3 * chromaWidth) }
        frame.y.withUnsafeBufferPointer { lumaPlane in
        frame.u.withUnsafeBufferPointer { uPlane in
        frame.v.withUnsafeBufferPointer { vPlane in
        chromaTerms.withUnsafeMutableBufferPointer { terms in
        red.withUnsafeMutableBufferPointer { red in
        green.withUnsafeMutableBufferPointer { green in
        blue.withUnsafeMutableBufferPointer { blue in
            for y in 0..<h {
                if y & 1 == 0 {
                    let chroma = (y >> 1) &* chromaWidth
                    for x in 0..<chromaWidth {
                        let d = Int(uPlane[chroma &+ x]) &- 128, e = Int(vPlane[chroma &+ x]) &- 128
                        terms[3 &* x] = 104595 &* e &+ 32768
                        terms[3 &* x &+ 1] = -25624 &* d &- 53281 &* e &+ 32768
                        terms[3 &* x &+ 2] = 132252 &* d &+ 32768
                    }
                }
                var rowR: UInt32 = 0, rowG: UInt32 = 0, rowB: UInt32 = 0
                let above = y &* stride, here = above &+ stride, source = y &* w
                for x in 0..<w {
                    let c = 76284 &* (Int(lumaPlane[source &+ x]) &- 16), t = 3 &* (x >> 1)
                    rowR &+= UInt32(truncatingIfNeeded: VideoCellRenderer.clamp((c &+ terms[t]) >> 16))
                    rowG &+= UInt32(truncatingIfNeeded: VideoCellRenderer.clamp((c &+ terms[t &+ 1]) >> 16))
                    rowB &+= UInt32(truncatingIfNeeded: VideoCellRenderer.clamp((c &+ terms[t &+ 2]) >> 16))
                    red[here &+ x &+ 1] = red[above &+ x &+ 1] &+ rowR
                    green[here &+ x &+ 1] = green[above &+ x &+ 1] &+ rowG
                    blue[here &+ x &+ 1] = blue[above &+ x &+ 1] &+ rowB
                }
            }
        }}}}}}}
    }
}

/// Reads box sums out of `PlaneSums`.
struct BoxReader {
    let red: UnsafeBufferPointer<UInt32>
    let green: UnsafeBufferPointer<UInt32>
    let blue: UnsafeBufferPointer<UInt32>
    /// The frame's width + 1.
    let stride: Int

    /// The red, green and blue sums and the pixel count of the box [x0, x1) x [y0, y1).
    @inline(__always)
    func sum(_ x0: Int, _ y0: Int, _ x1: Int, _ y1: Int) -> (r: Int, g: Int, b: Int, n: Int) {
        let n = (x1 &- x0) &* (y1 &- y0)
        guard n > 0 else { return (0, 0, 0, 0) }
        let a = y0 &* stride &+ x0, b = y0 &* stride &+ x1, c = y1 &* stride &+ x0, d = y1 &* stride &+ x1
        @inline(__always)
        func box(_ table: UnsafeBufferPointer<UInt32>) -> Int { Int(table[d] &- table[b] &- table[c] &+ table[a]) }
        return (box(red), box(green), box(blue), n)
    }
}
