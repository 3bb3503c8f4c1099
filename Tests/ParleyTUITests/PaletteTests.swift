import Testing

@testable import ParleyPictures
@testable import ParleyTUI

@Suite("Palette and colour depth")
struct PaletteTests {
    struct IndexCase: CustomTestStringConvertible, Sendable {
        var index: UInt8
        var r: UInt8, g: UInt8, b: UInt8
        var testDescription: String { "index \(index)" }
    }

    @Test(
        "xterm palette values",
        arguments: [
            IndexCase(index: 1, r: 205, g: 0, b: 0),
            IndexCase(index: 16, r: 0, g: 0, b: 0),
            IndexCase(index: 21, r: 0, g: 0, b: 255),
            IndexCase(index: 196, r: 255, g: 0, b: 0),
            IndexCase(index: 231, r: 255, g: 255, b: 255),
            IndexCase(index: 110, r: 135, g: 175, b: 215),
            IndexCase(index: 232, r: 8, g: 8, b: 8),
            IndexCase(index: 255, r: 238, g: 238, b: 238),
        ])
    func paletteValues(_ c: IndexCase) {
        let rgb = Palette.rgb(ofIndex: c.index)
        #expect(rgb.r == c.r && rgb.g == c.g && rgb.b == c.b)
    }

    @Test("every cube and grey colour maps back to itself")
    func roundTrip() {
        for index in UInt8(16)...UInt8(255) {
            let rgb = Palette.rgb(ofIndex: index)
            let back = Palette.nearestIndex(r: rgb.r, g: rgb.g, b: rgb.b)
            #expect(back == index, "index \(index) \(rgb) came back as \(back)")
        }
    }

    struct NearestCase: CustomTestStringConvertible, Sendable {
        var name: String
        var r: UInt8, g: UInt8, b: UInt8
        var index: UInt8
        var testDescription: String { name }
    }

    @Test(
        "nearest palette colour",
        arguments: [
            NearestCase(name: "almost red", r: 250, g: 10, b: 5, index: 196),
            NearestCase(name: "mid grey goes to the grey ramp", r: 128, g: 128, b: 128, index: 244),
            NearestCase(name: "dark grey", r: 30, g: 30, b: 30, index: 234),
            NearestCase(name: "orange", r: 255, g: 135, b: 0, index: 208),
            NearestCase(name: "black", r: 0, g: 0, b: 0, index: 16),
            NearestCase(name: "white", r: 255, g: 255, b: 255, index: 231),
        ])
    func nearest(_ c: NearestCase) {
        #expect(Palette.nearestIndex(r: c.r, g: c.g, b: c.b) == c.index)
    }

    @Test("nearest system colour among 8 and 16")
    func nearestSystem() {
        #expect(Palette.nearestSystemIndex(r: 255, g: 0, b: 0, count: 16) == 9)
        #expect(Palette.nearestSystemIndex(r: 255, g: 0, b: 0, count: 8) == 1)
        #expect(Palette.nearestSystemIndex(r: 10, g: 10, b: 10, count: 8) == 0)
    }

    struct DepthCase: CustomTestStringConvertible, Sendable {
        var name: String
        var colors: Int
        var environment: [String: String]
        var depth: ColorDepth
        var testDescription: String { name }
    }

    @Test(
        "colour depth detection",
        arguments: [
            DepthCase(name: "tmux-256color", colors: 256, environment: ["TERM": "tmux-256color"], depth: .palette256),
            DepthCase(name: "xterm-direct", colors: 1 << 24, environment: [:], depth: .direct),
            DepthCase(
                name: "COLORTERM alone does not give direct colour", colors: 256,
                environment: ["COLORTERM": "truecolor"], depth: .palette256),
            DepthCase(name: "linux console", colors: 8, environment: [:], depth: .ansi8),
            DepthCase(name: "rxvt 16", colors: 16, environment: [:], depth: .ansi16),
            DepthCase(name: "vt100 has no colour", colors: 0, environment: [:], depth: .monochrome),
            DepthCase(name: "NO_COLOR wins", colors: 256, environment: ["NO_COLOR": "1"], depth: .monochrome),
            DepthCase(
                name: "empty NO_COLOR is ignored", colors: 256, environment: ["NO_COLOR": ""], depth: .palette256),
        ])
    func detect(_ c: DepthCase) {
        #expect(ColorDepth.detect(colors: c.colors, environment: c.environment) == c.depth)
    }
}
