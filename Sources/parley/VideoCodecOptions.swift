import ArgumentParser
import ParleyMedia

/// `--vp8-profile`, shared by `join`, the lobby and `bot`.
struct VideoCodecOptions: ParsableArguments {
    @Option(
        name: .customLong("vp8-profile"), parsing: .unconditional,
        help: ArgumentHelp(
            "VP8 bitstream version your camera is sent in, 0…3: 0 (default) is the sharpest; 2 (baresip's) takes "
                + "every receiver a fifth less decoding and you a tenth less encoding, about 1 dB less sharp.",
            valueName: "n"))
    var vp8Profile = VP8EncoderConfig.sharpProfile

    func validate() throws {
        guard VP8EncoderConfig.bitstreamProfiles.contains(vp8Profile) else {
            throw ValidationError(
                "--vp8-profile must be 0, 1, 2 or 3 (VP8's bitstream versions; 0 the sharpest), got \(vp8Profile)")
        }
    }
}
