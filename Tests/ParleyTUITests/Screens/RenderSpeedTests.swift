import Foundation
import ParleyMedia
import ParleyRoom
import Testing

@testable import ParleyTUI

/// How long one room frame takes to render at 200x60 with 9 live 640x360 tiles. Off by default (no timed
/// assertions in unit tests); run with `PARLEY_MEASURE_RENDER=1` on a release build to print the figure.
@Suite("Render speed")
struct RenderSpeedTests {
    static let enabled = ProcessInfo.processInfo.environment["PARLEY_MEASURE_RENDER"] == "1"

    @Test(
        "room render at 200x60, 9 tiles of 640x360", .enabled(if: enabled),
        arguments: [ColorDepth.palette256, .direct, .monochrome])
    func roomRender(depth: ColorDepth) {
        var room = RoomFixture.withPeers(["bob", "carol", "dave", "erin", "frank", "grace", "heidi", "ivan"])
        for id in room.frames.keys {
            room.frames[id] = ScreenFrames.gradient(tint: Int(id.rawValue), width: 640, height: 360)
        }
        room.send(.event(.alert(.reconnecting)))
        let size = TerminalSize(columns: 200, rows: 60)
        room.fit(size)
        #expect(room.state.layout(in: room.state.container!).tiles.count == 9)
        var screen = RoomScreen(theme: Theme(depth: depth))
        _ = screen.render(state: room.state, frames: room.frames, size: size)
        let clock = ContinuousClock()
        var samples: [Duration] = []
        var checksum = 0
        for _ in 0..<60 {
            let start = clock.now
            let rendered = screen.render(state: room.state, frames: room.frames, size: size)
            samples.append(clock.now - start)
            checksum &+= rendered.cells.count
        }
        #expect(checksum == 60 * 200 * 60)
        samples.sort()
        let median = samples[samples.count / 2]
        let milliseconds = Double(median.components.attoseconds) / 1e15 + Double(median.components.seconds) * 1000
        print("render 200x60, 9 tiles 640x360, \(depth): median \(String(format: "%.2f", milliseconds)) ms/frame")
    }
}
