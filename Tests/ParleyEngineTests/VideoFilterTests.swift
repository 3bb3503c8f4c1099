import ParleyMedia
import Testing

@testable import ParleyEngine

/// The `f` key's filter must be something a person sees: the picture in sepia, for the self view and for everyone.
@Suite struct VideoFilterTests {
    /// BT.601 limited range, as the terminal's renderer converts: (r, g, b).
    static func rgb(_ frame: VideoFrame, x: Int, y: Int) -> (Int, Int, Int) {
        let luma = Double(frame.y[y * frame.width + x]) - 16
        let chroma = (y / 2) * (frame.width / 2) + x / 2
        let cb = Double(frame.u[chroma]) - 128
        let cr = Double(frame.v[chroma]) - 128
        func clamp(_ value: Double) -> Int { Int(min(255, max(0, value.rounded()))) }
        return (
            clamp(1.164 * luma + 1.596 * cr), clamp(1.164 * luma - 0.392 * cb - 0.813 * cr),
            clamp(1.164 * luma + 2.017 * cb)
        )
    }

    @Test("sepia turns every colour of the picture warm brown and cream, keeping its brightness")
    func sepiaIsVisible() {
        let camera = SyntheticCamera(name: "test", participant: 3, width: 320, height: 180, addsNoise: false)
        let original = camera.nextFrame()
        var filtered = original
        filtered.sepia()
        #expect(filtered.y == original.y, "brightness is kept")
        var difference = 0
        var samples = 0
        for y in stride(from: 0, to: original.height, by: 6) {
            for x in stride(from: 0, to: original.width, by: 6) {
                let (r, g, b) = Self.rgb(filtered, x: x, y: y)
                #expect(r >= g && g >= b, "pixel (\(x), \(y)) is \((r, g, b)), not a warm tone")
                let (r0, g0, b0) = Self.rgb(original, x: x, y: y)
                difference += abs(r - r0) + abs(g - g0) + abs(b - b0)
                samples += 1
            }
        }
        // The synthetic camera's coloured picture: the filter moves each pixel by tens of levels, not a few.
        #expect(difference / samples >= 30, "mean change \(difference / samples) levels: too subtle to see")
    }
}
