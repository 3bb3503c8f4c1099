import ParleyMedia

#if canImport(Glibc)
import Glibc
#endif

extension CallBench {
    /// What the VP8 speed and bitstream version of call video buy: encoding and decoding CPU per frame and picture
    /// quality, at full size and scaled to what a terminal shows, for the call's content and settings. Backs the
    /// engine's choice of speed -16 and of version 0, and says what the equal-work rows' version 2 (baresip's)
    /// changes.
    static func encoderSpeedTable(media: BenchMedia, frames: Int = 300) throws -> BenchTable {
        var table = BenchTable(
            title: "VP8 speed and bitstream version for call video: \(width)x\(height), \(videoKbps) kbit/s, "
                + "\(frames) frames of the call's camera file",
            columns: [
                "Speed", "Version", "Who", "Encode ms/frame (CPU)", "Decode ms/frame (CPU)", "kbit/s",
                "PSNR Y full size", "PSNR Y at \(width / 4)x\(height / 4)", "PSNR Y at \(width / 8)x\(height / 8)",
            ])
        let source = try Y4MFileSource(path: media.video)
        var pictures: [VideoFrame] = []
        for _ in 0..<frames { pictures.append(try source.nextFrame()) }
        for (speed, version, who) in [
            (-6, VP8EncoderConfig.sharpProfile, "WebRTC's desktop default; Parley before"),
            (-16, VP8EncoderConfig.sharpProfile, "Parley's default (baresip's +16 ends at this speed too)"),
            (-16, VP8EncoderConfig.lightProfile, "`--vp8-profile 2`: baresip's version; the equal-work rows"),
        ] {
            let encoder = try VP8Encoder(
                VP8EncoderConfig(
                    width: width, height: height, targetBitrateKbps: videoKbps, framesPerSecond: fps, cpuUsed: speed,
                    threads: 1, bitstreamProfile: version))
            let decoder = try VP8Decoder()
            var encodeCPU = 0.0
            var decodeCPU = 0.0
            var bytes = 0
            // PSNR samples at full size, 1/4 and 1/8 of each side.
            let divisors = [1, 4, 8]
            var psnr: [[Double]] = divisors.map { _ in [] }
            for (index, picture) in pictures.enumerated() {
                let started = threadCPUSeconds()
                let encoded = try encoder.encode(picture)
                encodeCPU += threadCPUSeconds() - started
                for frame in encoded {
                    bytes += frame.bytes.count
                    let decodeStarted = threadCPUSeconds()
                    let decoded = try decoder.decode(frame.bytes)
                    decodeCPU += threadCPUSeconds() - decodeStarted
                    guard let decoded, index % 5 == 0 else { continue }
                    for (slot, divisor) in divisors.enumerated() {
                        let small = decoded.scaled(width: width / divisor, height: height / divisor)
                        let reference = picture.scaled(width: width / divisor, height: height / divisor)
                        psnr[slot].append(small.psnr(against: reference)?.y ?? .nan)
                    }
                }
            }
            table.add(
                [
                    "\(speed)", "\(version)", who, formatted(1000 * encodeCPU / Double(frames), decimals: 2),
                    formatted(1000 * decodeCPU / Double(frames), decimals: 2),
                    formatted(Double(bytes) * 8 / 1000 / (Double(frames) / Double(fps)), decimals: 0),
                ] + psnr.map { formatted(mean($0) ?? .nan, decimals: 2) + " dB" })
        }
        table.notes = [
            "Parley's VP8Encoder (CBR, 1 thread, error resilient) then VP8Decoder; CPU time of the encode and decode "
                + "calls (CLOCK_THREAD_CPUTIME_ID); PSNR of every 5th frame, luma, averaged in dB. The scaled columns "
                + "compare both pictures after the same area-averaging downscale: a 120x40 terminal shows a tile of "
                + "about 58x72 pixels, a full 200x60 screen 200x120. Version: VP8's bitstream version (RFC 6386 "
                + "section 9.1), `--vp8-profile`; 0 predicts motion with a six-tap filter and smooths block edges "
                + "with the normal loop filter, 2 uses a bilinear filter and no loop filter (baresip's vp8 module "
                + "always sends 2)."
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
