#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A stand-in webcam: a moving, participant-coloured pattern with the participant's name, a frame counter, a little
/// sensor noise (so the encoder works as hard as with a real camera) and a machine-readable `FrameStamp`.
public final class SyntheticCamera: VideoSource {
    /// Name drawn in the middle of the picture.
    public let name: String
    /// Id embedded in the stamp (its low 16 bits) and used to pick colours.
    public let participant: UInt32
    /// Picture width.
    public let width: Int
    /// Picture height.
    public let height: Int
    /// Nominal frame rate.
    public let framesPerSecond: Int
    /// Whether sensor-like noise is added to the luma plane.
    public let addsNoise: Bool
    /// Number of the next frame `nextFrame()` returns; it is also the stamped counter (mod 2^24).
    public private(set) var frameNumber: UInt32 = 0

    /// A camera for one participant; `participant` also picks the colours.
    public init(
        name: String, participant: UInt32, width: Int = 640, height: Int = 360, framesPerSecond: Int = 30,
        addsNoise: Bool = true
    ) {
        precondition(width >= 16 && height >= 16, "synthetic camera needs at least 16x16 pixels")
        precondition(framesPerSecond > 0, "frame rate must be positive")
        self.name = name
        self.participant = participant
        self.width = width
        self.height = height
        self.framesPerSecond = framesPerSecond
        self.addsNoise = addsNoise
    }

    /// Microseconds between frames (rounded; frame timestamps themselves do not accumulate rounding).
    public var frameIntervalMicros: Int64 { 1_000_000 / Int64(framesPerSecond) }

    /// The next picture in sequence.
    public func nextFrame() -> VideoFrame {
        let frame = render(frameNumber: frameNumber)
        frameNumber &+= 1
        return frame
    }

    /// Recovers (participant, frame counter) from a picture this camera drew, after any codec or scaling.
    public static func readStamp(from frame: VideoFrame) -> (participant: UInt32, frame: UInt32)? {
        FrameStamp.read(from: frame)
    }

    /// The chroma tint (U, V) of a participant: hues spread by the golden ratio so neighbours differ.
    public static func tint(forParticipant participant: UInt32) -> (u: UInt8, v: UInt8) {
        let hue = (Double(participant) * 0.618_033_988_75).truncatingRemainder(dividingBy: 1) * 2 * Double.pi
        return (UInt8(128 + 48 * cos(hue)), UInt8(128 + 48 * sin(hue)))
    }

    /// Draws frame `frameNumber` (pure: the same number always gives the same picture).
    public func render(frameNumber: UInt32) -> VideoFrame {
        let t = Double(frameNumber)
        let timestamp = Int64(frameNumber) * 1_000_000 / Int64(framesPerSecond)
        let width = self.width
        let height = self.height

        // Background: two slow waves drifting in different directions plus fine moving stripes (texture).
        let rowTerm = (0..<height).map { row in
            40 + Int(30 + 30 * sin(2 * Double.pi * (Double(row) + 2 * t) / 240))
        }
        let columnTerm = (0..<width).map { column in
            Int(
                30 + 30 * sin(2 * Double.pi * (Double(column) + 3 * t) / 320)
                    + 12 * sin(2 * Double.pi * (Double(column) - t) / 24))
        }
        let noiseStart = addsNoise ? Int((frameNumber &* 2_654_435_761) >> 16) : 0
        // Textured "wallpaper" panning 1.5 px right and 0.5 px down per frame: half-pixel steps make the encoder
        // interpolate and code real detail, as a handheld webcam does.
        let panX = Int(frameNumber) * 3 / 2
        let halfStep = frameNumber % 2 == 1
        let panY = Int(frameNumber) / 2
        let luma = [UInt8](unsafeUninitializedCapacity: width * height) { out, count in
            Self.noise.withUnsafeBufferPointer { noise in
                Self.texture.withUnsafeBufferPointer { texture in
                    for row in 0..<height {
                        let base = rowTerm[row]
                        let offset = row * width
                        let textureRow = ((row + panY) & 255) * 256
                        let noiseBase = noiseStart + offset
                        for column in 0..<width {
                            let x = (column + panX) & 255
                            var detail = Int(texture[textureRow + x])
                            if halfStep { detail = (detail + Int(texture[textureRow + ((x + 1) & 255)]) + 1) >> 1 }
                            var value = base + columnTerm[column] + detail
                            if addsNoise { value += Int(noise[(noiseBase + column) & 0xFFFF]) }
                            out[offset + column] = UInt8(clamping: value)
                        }
                    }
                }
            }
            count = width * height
        }
        let tint = Self.tint(forParticipant: participant)
        let chromaWidth = (width + 1) / 2
        let chromaHeight = (height + 1) / 2
        var frame = VideoFrame(
            width: width, height: height, y: luma,
            u: [UInt8](repeating: tint.u, count: chromaWidth * chromaHeight),
            v: [UInt8](repeating: tint.v, count: chromaWidth * chromaHeight), timestampMicros: timestamp)

        // A ball on a Lissajous path in the complementary colour: motion the encoder must track.
        let band = FrameStamp.bandHeight(pictureHeight: height)
        let radius = max(4, height / 8)
        let centreX = Double(width) / 2 + Double(width) / 3 * sin(t * 0.05)
        let centreY = Double(band + height) / 2 + Double(height - band) / 4 * cos(t * 0.07)
        fillDisc(
            &frame, centreX: centreX, centreY: centreY, radius: Double(radius), luma: 200,
            u: 255 - tint.u, v: 255 - tint.v)

        // Name in the middle, frame counter under it.
        let nameScale = max(1, min(width * 7 / 10 / max(1, PixelFont.advance(of: name)), height / 7 / PixelFont.height))
        let counter = "#\(frameNumber)"
        let counterScale = max(1, nameScale * 2 / 3)
        let nameTop = band + (height - band) / 2 - nameScale * PixelFont.height
        drawText(name, into: &frame, centreX: width / 2, top: nameTop, scale: nameScale)
        drawText(
            counter, into: &frame, centreX: width / 2, top: nameTop + (PixelFont.height + 3) * nameScale,
            scale: counterScale)

        FrameStamp.draw(participant: participant, frame: frameNumber & 0xFF_FFFF, into: &frame)
        return frame
    }

    private func fillDisc(
        _ frame: inout VideoFrame, centreX: Double, centreY: Double, radius: Double, luma: UInt8, u: UInt8, v: UInt8
    ) {
        let width = frame.width
        let height = frame.height
        let chromaWidth = frame.chromaWidth
        let top = max(0, Int(centreY - radius))
        let bottom = min(height - 1, Int(centreY + radius))
        guard top <= bottom else { return }
        for row in top...bottom {
            let dy = Double(row) + 0.5 - centreY
            let half = (radius * radius - dy * dy).squareRoot()
            guard half.isFinite, half > 0 else { continue }
            let left = max(0, Int(centreX - half))
            let right = min(width - 1, Int(centreX + half))
            guard left <= right else { continue }
            for x in left...right { frame.y[row * width + x] = luma }
            if row % 2 == 0 {
                for x in stride(from: left / 2, through: right / 2, by: 1) {
                    frame.u[(row / 2) * chromaWidth + x] = u
                    frame.v[(row / 2) * chromaWidth + x] = v
                }
            }
        }
    }

    /// Draws white text with a dark drop shadow, centred on `centreX`; clipped to the picture.
    private func drawText(_ text: String, into frame: inout VideoFrame, centreX: Int, top: Int, scale: Int) {
        let left = centreX - PixelFont.advance(of: text) * scale / 2
        for (pass, value) in [(scale > 1 ? max(1, scale / 2) : 1, UInt8(16)), (0, UInt8(235))] {
            for (index, character) in text.enumerated() {
                let glyph = PixelFont.rows(for: character)
                let glyphLeft = left + index * (PixelFont.width + 1) * scale + pass
                for (rowIndex, mask) in glyph.enumerated() {
                    for column in 0..<PixelFont.width where mask & (0x10 >> UInt8(column)) != 0 {
                        fillRect(
                            &frame, x: glyphLeft + column * scale, y: top + pass + rowIndex * scale,
                            size: scale, luma: value)
                    }
                }
            }
        }
    }

    private func fillRect(_ frame: inout VideoFrame, x: Int, y: Int, size: Int, luma: UInt8) {
        let width = frame.width
        let band = FrameStamp.bandHeight(pictureHeight: frame.height)
        let top = max(band, y)
        let bottom = min(frame.height, y + size)
        let left = max(0, x)
        let right = min(width, x + size)
        guard top < bottom, left < right else { return }
        for row in top..<bottom {
            for column in left..<right { frame.y[row * width + column] = luma }
        }
    }

    /// A 256x256 tile of soft random blobs (4-pixel cells, box-blurred) between about -28 and +28.
    private static let texture: [Int16] = {
        var state: UInt32 = 0x2545_F491
        func next() -> Int {
            state ^= state << 13
            state ^= state >> 17
            state ^= state << 5
            return Int(state % 81) - 40
        }
        let cells = (0..<(64 * 64)).map { _ in next() }
        let blocky: [Int] = (0..<(256 * 256)).map { (index: Int) -> Int in
            let cellRow = index / 1024
            let cellColumn = (index % 256) / 4
            return cells[cellRow * 64 + cellColumn]
        }
        return (0..<(256 * 256)).map { index in
            let (row, column) = (index / 256, index % 256)
            var sum = 0
            for dy in -1...1 {
                for dx in -1...1 { sum += blocky[((row + dy) & 255) * 256 + ((column + dx) & 255)] }
            }
            return Int16(sum / 9 * 3 / 10)
        }
    }()

    /// 64 Ki noise samples, roughly Gaussian with a standard deviation near 2 (a decent webcam in good light).
    private static let noise: [Int8] = {
        var state: UInt32 = 0x1234_5678
        func next() -> Int {
            state ^= state << 13
            state ^= state >> 17
            state ^= state << 5
            return Int(state % 5) - 2
        }
        return (0..<65536).map { _ in Int8(next() + next() + next()) }
    }()
}
