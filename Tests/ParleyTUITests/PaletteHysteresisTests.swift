import Foundation
import ParleyMedia
import ParleyRoom
import Testing

@testable import ParleyPictures
@testable import ParleyTUI

@Suite("Palette hysteresis")
struct PaletteHysteresisTests {
    /// Luma of what each half-block pixel shows, row by row.
    static func luma(_ screen: Screen) -> [Double] {
        func luma(_ color: TerminalColor) -> Double {
            guard let (r, g, b) = Palette.rgb(of: color) else { return 0 }
            return 0.299 * Double(r) + 0.587 * Double(g) + 0.114 * Double(b)
        }
        var out: [Double] = []
        for row in 0..<screen.height {
            let halves = (0..<screen.width).map { screen[$0, row].visibleHalves }
            out += halves.map { $0.map { luma($0.top) } ?? 0 } + halves.map { $0.map { luma($0.bottom) } ?? 0 }
        }
        return out
    }

    static func psnr(_ a: [Double], _ b: [Double]) -> Double {
        var squared = 0.0
        for index in a.indices { squared += (a[index] - b[index]) * (a[index] - b[index]) }
        return 10 * log10(255 * 255 / max(1e-9, squared / Double(a.count)))
    }

    @Test("a moving camera drawn frame after frame stays within 0.25 dB of each frame drawn afresh, and cells settle")
    func sequenceQuality() {
        let camera = SyntheticCamera(name: "cam", participant: 1, width: 640, height: 480, framesPerSecond: 30)
        let rect = CellRect(x: 0, y: 0, width: 149, height: 56)  // 149x112 pixels: the picture fills it
        var renderer = VideoCellRenderer(mode: .palette256)
        var screen = Screen(width: rect.width, height: rect.height)
        var previous: [Cell] = []
        var loss = 0.0
        var changed = 0
        var frames = 0
        for index in 0..<120 {
            let frame = camera.nextFrame()
            renderer.draw(frame, into: &screen, in: rect)
            defer { previous = screen.cells }
            guard index >= 20 else { continue }
            var fresh = VideoCellRenderer(mode: .palette256)
            var ideal = Screen(width: rect.width, height: rect.height)
            fresh.draw(frame, into: &ideal, in: rect)
            let reference = frame.scaled(width: 149, height: 112).y.map { (Double($0) - 16) * 255 / 219 }
            loss += Self.psnr(Self.luma(ideal), reference) - Self.psnr(Self.luma(screen), reference)
            changed += zip(previous, screen.cells).filter { $0 != $1 }.count
            frames += 1
        }
        #expect(loss / Double(frames) < 0.25, "drawn \(loss / Double(frames)) dB under fresh renders")
        #expect(changed / frames < rect.width * rect.height / 4, "\(changed / frames) cells changed per frame")
    }
}
