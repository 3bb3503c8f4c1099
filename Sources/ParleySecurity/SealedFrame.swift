// Camera video and sound are sealed a whole encoded frame at a time, so a browser's RTCRtpScriptTransform (which sees
// frames, never packets) seals and opens exactly what a terminal client does (Resources/web/sframe.js is the same
// rule in JavaScript). What stays clear of a VP8 frame is what a receiver's RTP depacketizer and the relay read
// before anything is opened:
//
//   keyframe   bytes 0-2   frame tag (the keyframe bit)                          clear
//              bytes 3-5   start code 9d 01 2a                                   sent as 00 00 00, put back on opening
//              bytes 6-9   width and height (Chromium's depacketizer reads them) clear
//              the rest    SFrame header || ciphertext || tag, the 10 bytes as they travel its metadata
//   other      byte 0      frame tag's first byte (the keyframe bit)              clear
//              the rest    SFrame, that byte its metadata
//
// The start code goes out zeroed so that an eavesdropper's decoder (the capture test's GStreamer) finds no frame to
// decode at all: with it intact, a keyframe's garbage partitions could still "decode" into a garbage picture.
// An Opus frame is sealed whole, with no metadata.

/// The bytes of a VP8 keyframe kept clear, and where its start code sits.
enum SealedVP8 {
    static let keyframeClearBytes = 10
    static let startCode: [UInt8] = [0x9D, 0x01, 0x2A]
    static let startCodeRange = 3..<6
}

extension MediaSealer {
    /// A VP8 frame sealed as it travels (above); `frame` is the encoder's output.
    public func sealVideoFrame(_ frame: [UInt8]) throws(SFrameError) -> [UInt8] {
        guard let first = frame.first else { throw .frameTooShort(bytes: 0, needed: 1) }
        var clear: [UInt8]
        if first & 0x01 == 0 {
            guard frame.count >= SealedVP8.keyframeClearBytes else {
                throw .frameTooShort(bytes: frame.count, needed: SealedVP8.keyframeClearBytes)
            }
            clear = Array(frame[..<SealedVP8.keyframeClearBytes])
            clear.replaceSubrange(SealedVP8.startCodeRange, with: [0, 0, 0])
        } else {
            clear = [first]
        }
        return clear + (try seal(Array(frame[clear.count...]), stream: .video, metadata: clear))
    }

    /// An Opus frame sealed whole.
    public func sealAudioFrame(_ frame: [UInt8]) throws(SFrameError) -> [UInt8] {
        try seal(frame, stream: .audio, metadata: [])
    }
}

extension MediaOpener {
    /// The VP8 frame `sealVideoFrame` made of `wire`.
    public mutating func openVideoFrame(_ wire: [UInt8]) throws(SFrameError) -> [UInt8] {
        guard let first = wire.first else { throw .frameTooShort(bytes: 0, needed: 2) }
        let clearBytes = first & 0x01 == 0 ? SealedVP8.keyframeClearBytes : 1
        guard wire.count > clearBytes else { throw .frameTooShort(bytes: wire.count, needed: clearBytes + 1) }
        var clear = Array(wire[..<clearBytes])
        let plaintext = try open(Array(wire[clearBytes...]), metadata: clear).plaintext
        if clearBytes == SealedVP8.keyframeClearBytes {
            clear.replaceSubrange(SealedVP8.startCodeRange, with: SealedVP8.startCode)
        }
        return clear + plaintext
    }

    /// An Opus frame `sealAudioFrame` made.
    public mutating func openAudioFrame(_ wire: [UInt8]) throws(SFrameError) -> [UInt8] {
        try open(wire, metadata: []).plaintext
    }
}
