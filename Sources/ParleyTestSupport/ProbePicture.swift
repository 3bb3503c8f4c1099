import ParleyMedia

/// Pictures with every pixel different, for checking what a terminal shows against what was sent (the tmux and
/// xterm probes, the pixel-mode tests).
public enum ProbePicture {
    /// Hue across (U rising, V falling), brightness down, in I420.
    public static func gradient(width: Int, height: Int, timestamp: Int64 = 0) -> VideoFrame {
        var y = [UInt8](repeating: 0, count: width * height)
        let chromaWidth = (width + 1) / 2
        let chromaHeight = (height + 1) / 2
        var u = [UInt8](repeating: 0, count: chromaWidth * chromaHeight)
        var v = u
        for row in 0..<height {
            for column in 0..<width { y[row * width + column] = UInt8(16 + (219 * row) / max(1, height - 1)) }
        }
        for row in 0..<chromaHeight {
            for column in 0..<chromaWidth {
                u[row * chromaWidth + column] = UInt8(16 + (224 * column) / max(1, chromaWidth - 1))
                v[row * chromaWidth + column] = UInt8(240 - (224 * column) / max(1, chromaWidth - 1))
            }
        }
        return VideoFrame(width: width, height: height, y: y, u: u, v: v, timestampMicros: timestamp)
    }
}
