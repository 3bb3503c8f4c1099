import ParleyMedia
import ParleyPictures
import ParleyRelay
import ParleyRoom
import ParleyTUI
import ParleyWire

#if canImport(Glibc)
import Glibc
#endif

/// Is the small layer a tile gets as good, at the size the tile shows it, as the full layer scaled down? The call
/// bench's camera (640x480 synthetic picture, 30 fps) is encoded in every simulcast layer at the call's rates, each
/// layer decoded, and each decoded picture scaled to the tile's pixel size (as the relay's choice assumes); the
/// PSNR against the camera picture scaled to the same size says what the viewer loses by getting the small layer.
public enum SimulcastQualityBench {
    /// The picture size a peer's tile shows in a 1:1 call in a terminal of `columns`x`rows` (half-block pixels),
    /// with the video's size `video`.
    public static func tileSize(columns: Int, rows: Int, video: VideoSize) -> (width: Int, height: Int) {
        var state = RoomState(roomName: "bench", localName: "me", role: .broadcaster)
        _ = reduce(&state, .event(.joined(localID: ParticipantID(1))))
        _ = reduce(&state, .event(.userJoined(ParticipantID(2), name: "peer", role: .broadcaster)))
        _ = reduce(&state, .event(.firstRemoteFrame(ParticipantID(2), size: video)))
        let size = TerminalSize(columns: columns, rows: rows)
        _ = reduce(&state, .container(RoomScreenLayout(size: size, state: state).video))
        let tile = RoomScreen.drawnSizes(state: state, layout: state.currentLayout).first { $0.id == 2 }
        return (tile?.width ?? 0, tile?.height ?? 0)
    }

    /// One layer's figures.
    public struct LayerQuality: Sendable {
        public var width: Int
        public var height: Int
        public var kbps: Int
        public var bytes: Int
        /// Mean luma PSNR at the tile's size against the camera picture at that size.
        public var psnrAtTile: Double
    }

    /// Encodes `frames` camera frames in every layer of a `width`x`height` `kbps` plan and measures each at `tile`.
    public static func measure(
        width: Int, height: Int, kbps: Int, fps: Int, frames: Int,
        tile: (width: Int, height: Int), mode: VideoColorMode = .trueColor
    )
        throws -> [LayerQuality]
    {
        let plan = SimulcastPlan(width: width, height: height, kbps: kbps, framesPerSecond: fps)
        let encoder = try SimulcastEncoder(plan)
        encoder.setActive(plan.layers.map { _ in true })
        let decoders = try plan.layers.map { _ in try VP8Decoder() }
        let camera = SyntheticCamera(name: "Bench", participant: 1, width: width, height: height, framesPerSecond: fps)
        var sums = [Double](repeating: 0, count: plan.layers.count)
        var counts = [Int](repeating: 0, count: plan.layers.count)
        var bytes = [Int](repeating: 0, count: plan.layers.count)
        for _ in 0..<frames {
            let picture = camera.nextFrame()
            let reference = lumaAtTile(picture, tile).map { ($0 - 16) * 255 / 219 }
            for (layer, encoded) in try encoder.encode(picture).enumerated() {
                for frame in encoded {
                    bytes[layer] += frame.bytes.count
                    guard let decoded = try decoders[layer].decode(frame.bytes),
                        let shown = drawnLuma(decoded, tile: tile, mode: mode)
                    else { continue }
                    sums[layer] += psnr(shown, reference)
                    counts[layer] += 1
                }
            }
        }
        return plan.layers.indices.map { index in
            LayerQuality(
                width: plan.layers[index].width, height: plan.layers[index].height,
                kbps: plan.layers[index].targetBitrateKbps, bytes: bytes[index],
                psnrAtTile: counts[index] > 0 ? sums[index] / Double(counts[index]) : 0)
        }
    }

    /// The luma plane scaled to the tile by exact area weighting: every source pixel counts by the share of it an
    /// output pixel covers. (The call's own box scaler rounds each output's edges to whole source pixels, which is
    /// cheap but shifts fine detail by up to a pixel differently from each starting size: comparing layers through
    /// it would measure that shift rather than what each layer carries.)
    static func lumaAtTile(_ frame: VideoFrame, _ tile: (width: Int, height: Int)) -> [Double] {
        func weights(from source: Int, to target: Int) -> [[(index: Int, weight: Double)]] {
            let step = Double(source) / Double(target)
            return (0..<target).map { output in
                let start = Double(output) * step
                let end = start + step
                var taps: [(Int, Double)] = []
                var index = Int(start)
                while Double(index) < end, index < source {
                    let covered = min(end, Double(index + 1)) - max(start, Double(index))
                    if covered > 0 { taps.append((index, covered / step)) }
                    index += 1
                }
                return taps
            }
        }
        let columns = weights(from: frame.width, to: tile.width)
        let rows = weights(from: frame.height, to: tile.height)
        var horizontal = [Double](repeating: 0, count: tile.width * frame.height)
        for row in 0..<frame.height {
            for (column, taps) in columns.enumerated() {
                var sum = 0.0
                for tap in taps { sum += Double(frame.y[row * frame.width + tap.index]) * tap.weight }
                horizontal[row * tile.width + column] = sum
            }
        }
        var out = [Double](repeating: 0, count: tile.width * tile.height)
        for (row, taps) in rows.enumerated() {
            for column in 0..<tile.width {
                var sum = 0.0
                for tap in taps { sum += horizontal[tap.index * tile.width + column] * tap.weight }
                out[row * tile.width + column] = sum
            }
        }
        return out
    }

    /// What a terminal shows of `frame` in a tile whose picture is `tile` pixels: the half-block renderer draws it
    /// into cells (a fresh renderer, so no colour hysteresis carries over), and each cell's two colours are read
    /// back as the luma of their RGB (BT.601). Nil when the picture does not land exactly on the tile.
    static func drawnLuma(_ frame: VideoFrame, tile: (width: Int, height: Int), mode: VideoColorMode) -> [Double]? {
        let columns = tile.width
        let rows = (tile.height + 1) / 2
        var screen = Screen(width: columns, height: rows)
        var renderer = VideoCellRenderer(mode: mode)
        renderer.draw(frame, into: &screen, in: CellRect(x: 0, y: 0, width: columns, height: rows))
        let area = VideoCellRenderer.pictureArea(
            frameWidth: frame.width, frameHeight: frame.height,
            columns: columns, rows: rows)
        guard area.width == tile.width, area.height == tile.height, area.x == 0, area.y == 0 else { return nil }
        func luma(_ color: TerminalColor) -> Double {
            guard let (r, g, b) = Palette.rgb(of: color) else { return 0 }
            return 0.299 * Double(r) + 0.587 * Double(g) + 0.114 * Double(b)
        }
        var out = [Double](repeating: 0, count: tile.width * tile.height)
        for row in 0..<rows {
            for column in 0..<columns {
                let cell = screen[column, row]
                let (top, bottom) =
                    cell.character == "▄"
                    ? (cell.style.background, cell.style.foreground)
                    : (cell.style.foreground, cell.style.background)
                out[2 * row * tile.width + column] = luma(top)
                if 2 * row + 1 < tile.height { out[(2 * row + 1) * tile.width + column] = luma(bottom) }
            }
        }
        return out
    }

    static func psnr(_ a: [Double], _ b: [Double]) -> Double {
        var squared = 0.0
        for index in a.indices { squared += (a[index] - b[index]) * (a[index] - b[index]) }
        let mean = squared / Double(max(1, a.count))
        return mean > 0 ? min(100, 10 * log10(255 * 255 / mean)) : 100
    }

    /// The table: every layer's PSNR as drawn in the tile of a 1:1 call in a 200x60 pane (24-bit colour and the
    /// 256-colour palette), and the layer the relay picks.
    public static func run(log: (String) -> Void) throws -> BenchTable {
        let (width, height, kbps, fps, frames) = (640, 480, CallBench.baresipVideoBitrateSetting, 30, 300)
        let tile = tileSize(columns: 200, rows: 60, video: VideoSize(width: width, height: height))
        log(
            "simulcast quality: \(frames) frames of \(width)x\(height) in every layer, shown at \(tile.width)x\(tile.height)"
        )
        let layers = try measure(width: width, height: height, kbps: kbps, fps: fps, frames: frames, tile: tile)
        let palette = try measure(
            width: width, height: height, kbps: kbps, fps: fps, frames: frames, tile: tile,
            mode: .palette256)
        // What the client asks the relay for: the drawn size times the cell modes' supersampling.
        let factor = RoomScreen.cellSupersampling
        let chosen =
            LayerForwarding.layer(
                for: VideoLayerSize(width: tile.width * factor, height: tile.height * factor),
                among: layers.map { VideoLayerSize(width: $0.width, height: $0.height) }) ?? 0
        var table = BenchTable(
            title:
                "Simulcast: the picture a 1:1 tile shows, from each layer (\(tile.width)x\(tile.height) pixels, a 200x60 pane)",
            columns: [
                "layer", "size", "target kbit/s", "sent kbit/s", "drawn PSNR, 24-bit (dB)", "vs full layer",
                "drawn PSNR, 256 colours (dB)", "vs full layer", "relay's pick",
            ])
        for (index, layer) in layers.enumerated() {
            table.add([
                "\(index)", "\(layer.width)x\(layer.height)", "\(layer.kbps)",
                formatted(Double(layer.bytes) * 8 / 1000 / (Double(frames) / Double(fps)), decimals: 0),
                formatted(layer.psnrAtTile, decimals: 2),
                formatted(layer.psnrAtTile - layers[0].psnrAtTile, decimals: 2),
                formatted(palette[index].psnrAtTile, decimals: 2),
                formatted(palette[index].psnrAtTile - palette[0].psnrAtTile, decimals: 2),
                index == chosen ? "yes" : "",
            ])
        }
        let lossTrue = layers[0].psnrAtTile - layers[chosen].psnrAtTile
        let lossPalette = palette[0].psnrAtTile - palette[chosen].psnrAtTile
        table.notes = [
            "Camera: the call bench's synthetic 640x480 picture, \(frames) frames at \(fps) fps, VP8 at the call speed; "
                + "each decoded layer drawn by the half-block renderer into the tile's cells and read back as luma, against "
                + "the camera picture scaled to the tile's size by exact area weighting; luma PSNR averaged "
                + "over frames. The relay's pick: the smallest layer covering the client's request, \(factor)x the drawn "
                + "size across and down (`RoomScreen.layerRequests`).",
            goalNote(
                "the relay's pick within 2 dB of the full layer in 24-bit colour and within 1 dB in 256 colours",
                met: lossTrue <= 2 && lossPalette <= 1,
                "\(formatted(lossTrue, decimals: 2)) dB under in 24-bit, \(formatted(lossPalette, decimals: 2)) in 256 "
                    + "colours"),
        ]
        return table
    }
}
