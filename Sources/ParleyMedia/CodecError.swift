import COpus
import CVPX

/// A codec failure; the description names the library call or setting that failed and why.
public enum CodecError: Error, Equatable, CustomStringConvertible {
    /// A libvpx call returned an error; `message` is libvpx's text plus its detail string when it has one.
    case vpx(call: String, code: Int32, message: String)
    /// A libopus call returned an error; `message` is `opus_strerror` for the code.
    case opus(call: String, code: Int32, message: String)
    /// A configuration value is out of range.
    case invalidSetting(name: String, value: String, allowed: String)
    /// A frame handed to an encoder does not match its configuration.
    case frameMismatch(String)
    /// A decoder was handed zero bytes.
    case emptyInput(codec: String)
    /// The bytes cannot be a frame of this codec (too short, bad start code); says what was wrong.
    case malformedFrame(String)
    /// The VP8 decoder has no usable reference (start of stream or after a broken frame) and needs a keyframe.
    case keyframeRequired(reason: String)
    /// libvpx decoded the frame but flagged it as corrupt (references lost or data damaged).
    case corruptFrame

    public var description: String {
        switch self {
        case .vpx(let call, let code, let message):
            return "\(call) failed (vpx error \(code)): \(message)"
        case .opus(let call, let code, let message):
            return "\(call) failed (opus error \(code)): \(message)"
        case .invalidSetting(let name, let value, let allowed):
            return "invalid \(name) \(value): allowed \(allowed)"
        case .frameMismatch(let text):
            return text
        case .emptyInput(let codec):
            return "\(codec) decoder was given an empty packet"
        case .malformedFrame(let text):
            return text
        case .keyframeRequired(let reason):
            return "VP8 decoder needs a keyframe (\(reason))"
        case .corruptFrame:
            return "VP8 decoder reported the frame as corrupt; waiting for a keyframe"
        }
    }

    /// The error for a failed libvpx call on `context` (which may be nil before initialisation).
    static func vpx(
        _ call: String, _ code: vpx_codec_err_t, _ context: UnsafeMutablePointer<vpx_codec_ctx_t>?
    )
        -> CodecError
    {
        var message = String(cString: vpx_codec_err_to_string(code))
        if let context, let detail = vpx_codec_error_detail(context) {
            message += ": " + String(cString: detail)
        }
        return .vpx(call: call, code: Int32(code.rawValue), message: message)
    }

    /// The error for a failed libopus call.
    static func opus(_ call: String, _ code: Int32) -> CodecError {
        .opus(call: call, code: code, message: String(cString: opus_strerror(code)))
    }
}
