import CVPX
import CVPXShim

/// A libvpx VP8 encoder for I420 frames. Not thread-safe: one owner (an actor) calls it.
public final class VP8Encoder {
    /// The settings in force (size and bitrate change with `reconfigure` and `setBitrate`).
    public private(set) var config: VP8EncoderConfig
    /// Frames handed to `encode` so far.
    public private(set) var framesIn = 0
    /// Frames libvpx dropped to hold the rate (only with a non-zero `frameDropThreshold`).
    public private(set) var framesDropped = 0

    // libvpx keeps pointers to both the context and the configuration: they live on the heap, never move.
    private let context: UnsafeMutablePointer<vpx_codec_ctx_t>
    private let settings: UnsafeMutablePointer<vpx_codec_enc_cfg_t>
    private var initialised = false
    /// The largest size this context was created for; libvpx can shrink in place but not grow.
    private var createdWidth = 0
    private var createdHeight = 0
    private var lastPts: Int64 = -1
    private var layerPosition = 0

    /// Creates and configures the encoder; throws `CodecError` naming the setting or libvpx call that failed.
    public init(_ config: VP8EncoderConfig) throws {
        try config.validate()
        self.config = config
        context = .allocate(capacity: 1)
        context.initialize(to: vpx_codec_ctx_t())
        settings = .allocate(capacity: 1)
        settings.initialize(to: vpx_codec_enc_cfg_t())
        try open()
    }

    deinit {
        if initialised { vpx_codec_destroy(context) }
        context.deinitialize(count: 1)
        context.deallocate()
        settings.deinitialize(count: 1)
        settings.deallocate()
    }

    /// Encodes one frame; returns the compressed frame, or nothing when rate control dropped it.
    public func encode(_ frame: VideoFrame, forceKeyframe: Bool = false) throws -> [EncodedVideoFrame] {
        guard frame.width == config.width, frame.height == config.height else {
            throw CodecError.frameMismatch(
                "VP8 encoder is set up for \(config.width)x\(config.height) but the frame is "
                    + "\(frame.width)x\(frame.height); call reconfigure(width:height:) first")
        }
        framesIn += 1
        var flags: vpx_enc_frame_flags_t = forceKeyframe ? vpx_enc_frame_flags_t(VPX_EFLAG_FORCE_KF) : 0
        var layer = 0
        if config.temporalLayers == 2 {
            if forceKeyframe { layerPosition = 0 }
            layer = layerPosition % 2
            flags |= Self.temporalFlags(layer: layer)
            try control(VP8E_SET_TEMPORAL_LAYER_ID, "VP8E_SET_TEMPORAL_LAYER_ID", layer)
            layerPosition += 1
        }
        // Timestamps must rise strictly or rate control misjudges the frame rate.
        let pts = max(frame.timestampMicros, lastPts + 1)
        let duration = UInt(max(1, 1_000_000 / config.framesPerSecond))
        lastPts = pts

        var image = vpx_image_t()
        let status: vpx_codec_err_t = frame.y.withUnsafeBufferPointer { y in
            frame.u.withUnsafeBufferPointer { u in
                frame.v.withUnsafeBufferPointer { v in
                    // libvpx only reads the source image; the mutable pointers are what its struct wants.
                    let luma = UnsafeMutablePointer(mutating: y.baseAddress!)
                    vpx_img_wrap(&image, VPX_IMG_FMT_I420, UInt32(frame.width), UInt32(frame.height), 1, luma)
                    image.planes.1 = UnsafeMutablePointer(mutating: u.baseAddress!)
                    image.planes.2 = UnsafeMutablePointer(mutating: v.baseAddress!)
                    image.stride.0 = Int32(frame.width)
                    image.stride.1 = Int32(frame.chromaWidth)
                    image.stride.2 = Int32(frame.chromaWidth)
                    return vpx_codec_encode(context, &image, pts, duration, flags, UInt(VPX_DL_REALTIME))
                }
            }
        }
        guard status == VPX_CODEC_OK else { throw CodecError.vpx("vpx_codec_encode", status, context) }

        var output: [EncodedVideoFrame] = []
        var iterator: vpx_codec_iter_t? = nil
        while let packet = vpx_codec_get_cx_data(context, &iterator) {
            guard packet.pointee.kind == VPX_CODEC_CX_FRAME_PKT else { continue }
            let data = packet.pointee.data.frame
            let bytes = [UInt8](UnsafeRawBufferPointer(start: data.buf, count: data.sz))
            output.append(
                EncodedVideoFrame(
                    bytes: bytes, isKeyframe: data.flags & vpx_codec_frame_flags_t(VPX_FRAME_IS_KEY) != 0,
                    timestampMicros: frame.timestampMicros, width: config.width, height: config.height,
                    temporalLayer: layer))
        }
        if output.isEmpty { framesDropped += 1 }
        return output
    }

    /// Changes the target bitrate (kbit/s) from the next frame on, keeping the encoder's state.
    public func setBitrate(kbps: Int) throws {
        var next = config
        next.targetBitrateKbps = kbps
        try next.validate()
        config = next
        applyRate(to: settings)
        let status = vpx_codec_enc_config_set(context, settings)
        guard status == VPX_CODEC_OK else {
            throw CodecError.vpx("vpx_codec_enc_config_set (bitrate)", status, context)
        }
    }

    /// Changes the picture size; the next frame is a keyframe. Optionally changes the bitrate too.
    public func reconfigure(width: Int, height: Int, bitrateKbps: Int? = nil) throws {
        var next = config
        next.width = width
        next.height = height
        if let bitrateKbps { next.targetBitrateKbps = bitrateKbps }
        try next.validate()
        guard next != config else { return }
        config = next
        if width <= createdWidth, height <= createdHeight {
            settings.pointee.g_w = UInt32(width)
            settings.pointee.g_h = UInt32(height)
            applyRate(to: settings)
            let status = vpx_codec_enc_config_set(context, settings)
            guard status == VPX_CODEC_OK else {
                throw CodecError.vpx("vpx_codec_enc_config_set (\(width)x\(height))", status, context)
            }
        } else {
            // Growing past the size the context was made for needs a new context.
            vpx_codec_destroy(context)
            initialised = false
            try open()
        }
        layerPosition = 0
    }

    // MARK: - libvpx setup

    private func open() throws {
        var status = parley_vpx_vp8_enc_config_default(settings)
        guard status == VPX_CODEC_OK else { throw CodecError.vpx("vpx_codec_enc_config_default", status, nil) }
        let cfg = settings
        cfg.pointee.g_profile = UInt32(config.bitstreamProfile)
        cfg.pointee.g_w = UInt32(config.width)
        cfg.pointee.g_h = UInt32(config.height)
        cfg.pointee.g_threads = UInt32(config.threads)
        cfg.pointee.g_timebase = vpx_rational(num: 1, den: 1_000_000)
        cfg.pointee.g_lag_in_frames = 0
        cfg.pointee.g_pass = VPX_RC_ONE_PASS
        cfg.pointee.g_error_resilient = config.errorResilient ? vpx_codec_er_flags_t(VPX_ERROR_RESILIENT_DEFAULT) : 0
        cfg.pointee.rc_end_usage = VPX_CBR
        cfg.pointee.rc_dropframe_thresh = UInt32(config.frameDropThreshold)
        cfg.pointee.rc_resize_allowed = 0
        cfg.pointee.rc_min_quantizer = UInt32(config.minQuantizer)
        cfg.pointee.rc_max_quantizer = UInt32(config.maxQuantizer)
        cfg.pointee.rc_undershoot_pct = 100
        cfg.pointee.rc_overshoot_pct = 15
        cfg.pointee.rc_buf_initial_sz = 500
        cfg.pointee.rc_buf_optimal_sz = 600
        cfg.pointee.rc_buf_sz = 1000
        cfg.pointee.kf_mode = VPX_KF_AUTO
        cfg.pointee.kf_min_dist = 0
        cfg.pointee.kf_max_dist = UInt32(config.maxKeyframeInterval)
        applyRate(to: cfg)

        status = parley_vpx_vp8_enc_init(context, cfg, 0)
        guard status == VPX_CODEC_OK else { throw CodecError.vpx("vpx_codec_enc_init", status, context) }
        initialised = true
        createdWidth = config.width
        createdHeight = config.height

        try control(VP8E_SET_CPUUSED, "VP8E_SET_CPUUSED", config.cpuUsed)
        try control(VP8E_SET_STATIC_THRESHOLD, "VP8E_SET_STATIC_THRESHOLD", 1)
        try control(VP8E_SET_NOISE_SENSITIVITY, "VP8E_SET_NOISE_SENSITIVITY", config.noiseSensitivity)
        try control(VP8E_SET_TOKEN_PARTITIONS, "VP8E_SET_TOKEN_PARTITIONS", 0)
        // Cap keyframe size relative to an average frame so a keyframe does not stall the link
        // (half the optimal buffer, as WebRTC does: 600 ms * 0.5 * fps / 10 percent).
        try control(
            VP8E_SET_MAX_INTRA_BITRATE_PCT, "VP8E_SET_MAX_INTRA_BITRATE_PCT",
            max(300, 600 / 2 * config.framesPerSecond / 10))
    }

    /// Sets one integer encoder control (all the VP8E_SET_* used here take an int or unsigned int).
    private func control(_ id: vp8e_enc_control_id, _ name: String, _ value: Int) throws {
        let status = parley_vpx_control_int(context, Int32(id.rawValue), Int32(value))
        guard status == VPX_CODEC_OK else { throw CodecError.vpx(name, status, context) }
    }

    /// Writes the target rate (and the per-layer split) into a libvpx configuration.
    private func applyRate(to cfg: UnsafeMutablePointer<vpx_codec_enc_cfg_t>) {
        cfg.pointee.rc_target_bitrate = UInt32(config.targetBitrateKbps)
        if config.temporalLayers == 2 {
            // Base layer gets 60 % of the rate (WebRTC's split); rates are cumulative per layer.
            let base = UInt32(config.targetBitrateKbps * 6 / 10)
            cfg.pointee.ts_number_layers = 2
            cfg.pointee.ts_periodicity = 2
            cfg.pointee.ts_layer_id.0 = 0
            cfg.pointee.ts_layer_id.1 = 1
            cfg.pointee.ts_rate_decimator.0 = 2
            cfg.pointee.ts_rate_decimator.1 = 1
            cfg.pointee.ts_target_bitrate.0 = base
            cfg.pointee.ts_target_bitrate.1 = UInt32(config.targetBitrateKbps)
        } else {
            cfg.pointee.ts_number_layers = 1
            cfg.pointee.ts_periodicity = 0
        }
    }

    /// Reference flags for two temporal layers: layer 0 chains on itself, layer 1 reads layer 0 and updates nothing,
    /// so a receiver that drops every layer-1 frame still decodes the rest.
    private static func temporalFlags(layer: Int) -> vpx_enc_frame_flags_t {
        let base = VP8_EFLAG_NO_REF_GF | VP8_EFLAG_NO_REF_ARF | VP8_EFLAG_NO_UPD_GF | VP8_EFLAG_NO_UPD_ARF
        let flags = layer == 0 ? base : base | VP8_EFLAG_NO_UPD_LAST | VP8_EFLAG_NO_UPD_ENTROPY
        return vpx_enc_frame_flags_t(flags)
    }
}
