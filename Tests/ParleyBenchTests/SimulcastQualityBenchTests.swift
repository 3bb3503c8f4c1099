import ParleyRoom
import Testing

@testable import ParleyBench

@Suite("Simulcast quality bench")
struct SimulcastQualityBenchTests {
    @Test("a 1:1 tile in a 200x60 pane shows a 640x480 camera at about 106x80 pixels: the 160x120 layer covers it")
    func tileOfA200x60Pane() {
        let tile = SimulcastQualityBench.tileSize(columns: 200, rows: 60, video: VideoSize(width: 640, height: 480))
        #expect(tile.width > 80 && tile.width <= 160 && tile.height <= 120, "\(tile)")
        #expect(abs(Double(tile.width) / Double(tile.height) - 4.0 / 3.0) < 0.05)
    }

    @Test("every layer is measured at the tile's size")
    func measures() throws {
        let layers = try SimulcastQualityBench.measure(
            width: 320, height: 240, kbps: 400, fps: 30, frames: 10,
            tile: (width: 100, height: 75))
        #expect(layers.map(\.width) == [320, 160])
        #expect(layers.allSatisfy { $0.psnrAtTile > 20 && $0.bytes > 0 })
    }
}
