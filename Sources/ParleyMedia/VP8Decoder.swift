import CVPX
import CVPXShim

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A libvpx VP8 decoder producing I420 frames. Not thread-safe: one owner (an actor) calls it.
///
/// After a broken or missing frame it refuses inter frames until a keyframe arrives (`needsKeyframe`), so the caller
/// shows the last good picture and asks the sender for a keyframe instead of drawing garbage.
public final class VP8Decoder {
    /// True at the start and after a failed or corrupt frame, until a keyframe decodes; ask the sender for one.
    public private(set) var needsKeyframe = true
    /// Frames decoded successfully.
    public private(set) var framesDecoded = 0
    /// Frames rejected (errors, corruption, inter frames while waiting for a keyframe).
    public private(set) var framesRejected = 0

    private let context: UnsafeMutablePointer<vpx_codec_ctx_t>

    /// Opens a decoder; `threads` above 1 only helps pictures of 720p and more.
    public init(threads: Int = 1) throws {
        guard (1...64).contains(threads) else {
            throw CodecError.invalidSetting(name: "decoder threads", value: String(threads), allowed: "1...64")
        }
        context = .allocate(capacity: 1)
        context.initialize(to: vpx_codec_ctx_t())
        var cfg = vpx_codec_dec_cfg_t(threads: UInt32(threads), w: 0, h: 0)
        let status = parley_vpx_vp8_dec_init(context, &cfg, 0)
        guard status == VPX_CODEC_OK else {
            let error = CodecError.vpx("vpx_codec_dec_init", status, context)
            context.deinitialize(count: 1)
            context.deallocate()
            throw error
        }
    }

    deinit {
        vpx_codec_destroy(context)
        context.deinitialize(count: 1)
        context.deallocate()
    }

    /// Decodes one VP8 frame. Returns nil when the data held no picture to show (libvpx skipped it);
    /// throws on empty, broken or out-of-order input, which is always survivable: feed the next frame.
    public func decode(_ data: [UInt8], timestampMicros: Int64 = 0) throws -> VideoFrame? {
        guard !data.isEmpty else {
            framesRejected += 1
            throw CodecError.emptyInput(codec: "VP8")
        }
        guard let header = VP8FrameHeader(data) else {
            framesRejected += 1
            throw CodecError.malformedFrame(
                data.count < 3
                    ? "VP8 frame of \(data.count) bytes is shorter than the 3-byte frame tag"
                    : "VP8 keyframe lacks the 9D 01 2A start code and size (\(data.count) bytes)")
        }
        if needsKeyframe, !header.isKeyframe {
            framesRejected += 1
            throw CodecError.keyframeRequired(reason: framesDecoded == 0 ? "stream start" : "after a broken frame")
        }
        let status = data.withUnsafeBufferPointer { bytes in
            vpx_codec_decode(context, bytes.baseAddress, UInt32(bytes.count), nil, 0)
        }
        guard status == VPX_CODEC_OK else {
            needsKeyframe = true
            framesRejected += 1
            throw CodecError.vpx("vpx_codec_decode", status, context)
        }
        var corrupted: Int32 = 0
        let query = vpx_codec_control_VP8D_GET_FRAME_CORRUPTED(
            context, Int32(VP8D_GET_FRAME_CORRUPTED.rawValue), &corrupted)
        if query == VPX_CODEC_OK, corrupted != 0 {
            needsKeyframe = true
            framesRejected += 1
            // Drain whatever libvpx produced so the next call starts clean.
            var iterator: vpx_codec_iter_t? = nil
            while vpx_codec_get_frame(context, &iterator) != nil {}
            throw CodecError.corruptFrame
        }
        var iterator: vpx_codec_iter_t? = nil
        var picture: VideoFrame?
        while let image = vpx_codec_get_frame(context, &iterator) {
            picture = Self.copy(image.pointee, timestampMicros: timestampMicros)
        }
        if picture != nil {
            framesDecoded += 1
            if header.isKeyframe { needsKeyframe = false }
        }
        return picture
    }

    /// Copies a libvpx image (padded strides) into a tightly packed frame.
    private static func copy(_ image: vpx_image_t, timestampMicros: Int64) -> VideoFrame {
        let width = Int(image.d_w)
        let height = Int(image.d_h)
        let chromaWidth = (width + 1) / 2
        let chromaHeight = (height + 1) / 2
        func plane(_ source: UnsafeMutablePointer<UInt8>?, stride: Int32, width: Int, height: Int) -> [UInt8] {
            [UInt8](unsafeUninitializedCapacity: width * height) { buffer, count in
                let stride = Int(stride)
                if stride == width {
                    memcpy(buffer.baseAddress!, source!, width * height)
                } else {
                    for row in 0..<height {
                        memcpy(buffer.baseAddress! + row * width, source! + row * stride, width)
                    }
                }
                count = width * height
            }
        }
        return VideoFrame(
            width: width, height: height,
            y: plane(image.planes.0, stride: image.stride.0, width: width, height: height),
            u: plane(image.planes.1, stride: image.stride.1, width: chromaWidth, height: chromaHeight),
            v: plane(image.planes.2, stride: image.stride.2, width: chromaWidth, height: chromaHeight),
            timestampMicros: timestampMicros)
    }
}
