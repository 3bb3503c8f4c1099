import ParleyMedia

#if canImport(Glibc)
import Glibc
#endif

extension CallBench {
    /// What the VP8 speed of call video buys: encoding CPU per frame and picture quality, at full size and scaled to
    /// what a terminal shows, for the call's content and settings. Backs the engine's choice of speed -16.
    static func encoderSpeedTable(media: BenchMedia, frames: Int = 300) throws -> BenchTable {
        var table = BenchTable(
            title: "VP8 speed for call video: \(width)x\(height), \(videoKbps) kbit/s, \(frames) frames of the call's "
                + "camera file",
            columns: [
                "Speed", "Who", "Encode ms/frame (CPU)", "kbit/s", "PSNR Y full size",
                "PSNR Y at \(width / 4)x\(height / 4)", "PSNR Y at \(width / 8)x\(height / 8)",
            ])
        let source = try Y4MFileSource(path: media.video)
        var pictures: [VideoFrame] = []
        for _ in 0..<frames { pictures.append(try source.nextFrame()) }
        for (speed, who) in [
            (-6, "WebRTC's desktop default; Parley before"), (-16, "Parley now; baresip's +16 ends here too"),
        ] {
            let encoder = try VP8Encoder(
                VP8EncoderConfig(
                    width: width, height: height, targetBitrateKbps: videoKbps, framesPerSecond: fps, cpuUsed: speed,
                    threads: 1))
            let decoder = try VP8Decoder()
            var cpu = 0.0
            var bytes = 0
            // PSNR samples at full size, 1/4 and 1/8 of each side.
            let divisors = [1, 4, 8]
            var psnr: [[Double]] = divisors.map { _ in [] }
            for (index, picture) in pictures.enumerated() {
                let started = threadCPUSeconds()
                let encoded = try encoder.encode(picture)
                cpu += threadCPUSeconds() - started
                for frame in encoded {
                    bytes += frame.bytes.count
                    guard let decoded = try decoder.decode(frame.bytes), index % 5 == 0 else { continue }
                    for (slot, divisor) in divisors.enumerated() {
                        let small = decoded.scaled(width: width / divisor, height: height / divisor)
                        let reference = picture.scaled(width: width / divisor, height: height / divisor)
                        psnr[slot].append(small.psnr(against: reference)?.y ?? .nan)
                    }
                }
            }
            table.add(
                [
                    "\(speed)", who, formatted(1000 * cpu / Double(frames), decimals: 2),
                    formatted(Double(bytes) * 8 / 1000 / (Double(frames) / Double(fps)), decimals: 0),
                ] + psnr.map { formatted(mean($0) ?? .nan, decimals: 2) + " dB" })
        }
        table.notes = [
            "Parley's VP8Encoder (CBR, 1 thread, error resilient) then VP8Decoder; CPU time of the encode calls "
                + "(CLOCK_THREAD_CPUTIME_ID); PSNR of every 5th frame, luma, averaged in dB. The scaled columns "
                + "compare both pictures after the same area-averaging downscale: a 120x40 terminal shows a tile of "
                + "about 58x72 pixels, a full 200x60 screen 200x120."
        ]
        return table
    }

    /// CPU seconds this thread has used.
    static func threadCPUSeconds() -> Double {
        var spec = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &spec)
        return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
    }
}
