import Testing

@testable import ParleyMedia

@Suite struct PSNRTests {
    @Test func identicalPicturesReportTheCap() {
        let frame = VideoFrame(width: 8, height: 8, fillY: 90)
        #expect(frame.psnr(against: frame) == PSNR(y: 100, overall: 100))
    }

    @Test func errorOfOneEverywhereIs48Decibels() throws {
        let a = VideoFrame(width: 16, height: 16, fillY: 100, fillU: 50, fillV: 60)
        let b = VideoFrame(width: 16, height: 16, fillY: 101, fillU: 50, fillV: 60)
        let psnr = try #require(b.psnr(against: a))
        // 10 log10(255² / 1) = 48.13 dB on luma; chroma is exact, so the overall MSE is 256/384.
        #expect(abs(psnr.y - 48.1308) < 0.001)
        #expect(abs(psnr.overall - 49.8917) < 0.001)
    }

    @Test func differentSizesHaveNoPSNR() {
        #expect(
            VideoFrame(width: 4, height: 4, fillY: 0).psnr(against: VideoFrame(width: 8, height: 4, fillY: 0)) == nil)
    }
}

@Suite struct ScalingTests {
    @Test func halvingAveragesEachTwoByTwoBlock() {
        let frame = VideoFrame(
            width: 4, height: 2, y: [0, 2, 10, 20, 4, 6, 30, 41], u: [10, 30], v: [200, 100])
        let half = frame.scaled(width: 2, height: 1)
        #expect(half.y == [3, 25])  // (0+2+4+6)/4 = 3, (10+20+30+41)/4 = 25.25.
        #expect(half.u == [20] && half.v == [150])
    }

    /// Halved plane widths: whole 16-sample blocks, blocks and a tail, a tail only, a camera frame.
    @Test("halving matches the naive mean of each 2x2 block", arguments: [(64, 48), (40, 6), (12, 4), (640, 480)])
    func halvingMatchesTheNaiveMean(size: (width: Int, height: Int)) {
        var seed: UInt32 = 12345
        func noise(_ count: Int) -> [UInt8] {
            (0..<count).map { _ in
                seed = seed &* 1_664_525 &+ 1_013_904_223
                return UInt8(truncatingIfNeeded: seed >> 24)
            }
        }
        let chroma = ((size.width + 1) / 2) * ((size.height + 1) / 2)
        var frame = VideoFrame(
            width: size.width, height: size.height, y: noise(size.width * size.height),
            u: noise(chroma), v: noise(chroma))
        // Extremes too: four 255s must not overflow, four 0s stay 0.
        frame.y[0] = 255
        frame.y[1] = 255
        frame.y[size.width] = 255
        frame.y[size.width + 1] = 255
        frame.y[2] = 0
        frame.y[3] = 0
        frame.y[size.width + 2] = 0
        frame.y[size.width + 3] = 0
        let half = frame.scaled(width: size.width / 2, height: size.height / 2)
        func naive(_ plane: [UInt8], _ width: Int, _ height: Int) -> [UInt8] {
            (0..<(width / 2 * (height / 2))).map { index in
                let (row, column) = (index / (width / 2) * 2, index % (width / 2) * 2)
                let sum = [0, 1, width, width + 1].reduce(0) { $0 + Int(plane[row * width + column + $1]) }
                return UInt8((sum + 2) / 4)
            }
        }
        #expect(half.y == naive(frame.y, size.width, size.height))
        #expect(half.y[0] == 255 && half.y[1] == 0)
        if frame.chromaWidth % 2 == 0, frame.chromaHeight % 2 == 0 {  // else chroma goes through the box path
            #expect(half.u == naive(frame.u, frame.chromaWidth, frame.chromaHeight))
            #expect(half.v == naive(frame.v, frame.chromaWidth, frame.chromaHeight))
        }
    }

    @Test func oddRatiosCoverEverySourcePixel() {
        let frame = VideoFrame(width: 3, height: 1, y: [10, 20, 30], u: [0, 0], v: [0, 0])
        // 3 -> 2: columns [0, 1) and [1, 3).
        #expect(frame.scaled(width: 2, height: 1).y == [10, 25])
    }

    @Test func enlargingInterpolatesBilinearly() {
        let frame = VideoFrame(width: 2, height: 1, y: [0, 200], u: [128], v: [128])
        let wide = frame.scaled(width: 4, height: 1)
        #expect(wide.y == [0, 50, 150, 200])
        #expect(wide.u == [128, 128] && wide.chromaHeight == 1)
    }

    @Test func sameSizeIsUnchanged() {
        let frame = SyntheticCamera(name: "S", participant: 1, width: 64, height: 48).render(frameNumber: 0)
        #expect(frame.scaled(width: 64, height: 48) == frame)
    }

    @Test func rampShrinksToTheMeansOfItsPairs() {
        let ramp = (0..<200).map { UInt8($0) }
        let frame = VideoFrame(
            width: 200, height: 2, y: ramp + ramp, u: [UInt8](repeating: 128, count: 100),
            v: [UInt8](repeating: 128, count: 100))
        // Means of (0,1), (2,3)... are 0.5, 2.5...: rounded half up.
        #expect(frame.scaled(width: 100, height: 1).y == (0..<100).map { UInt8(2 * $0 + 1) })
    }

    @Test func downscaledCameraKeepsStampAndTime() {
        let full = SyntheticCamera(name: "Scale", participant: 9, width: 1280, height: 720).render(frameNumber: 3)
        let scaled = full.scaled(width: 160, height: 90)
        #expect(scaled.width == 160 && scaled.height == 90 && scaled.chromaWidth == 80)
        #expect(scaled.timestampMicros == full.timestampMicros)
        #expect(SyntheticCamera.readStamp(from: scaled)?.frame == 3)
    }
}
