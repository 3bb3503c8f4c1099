/// The stream header of a YUV4MPEG2 (Y4M) file: raw I420 frames with a one-line text header.
public struct Y4MHeader: Sendable, Equatable {
    /// Picture width.
    public var width: Int
    /// Picture height.
    public var height: Int
    /// Frame rate as a fraction (30000:1001 for NTSC rates).
    public var frameRate: (numerator: Int, denominator: Int)
    /// Chroma layout tag written as `C...` (all accepted ones are 8-bit 4:2:0).
    public var colourSpace: String
    /// Bytes of the header line including its newline.
    public var length: Int

    /// Header for writing; `length` is filled in from the encoded text.
    public init(width: Int, height: Int, frameRate: (numerator: Int, denominator: Int), colourSpace: String = "420jpeg")
    {
        self.width = width
        self.height = height
        self.frameRate = frameRate
        self.colourSpace = colourSpace
        length = 0
        length = encoded().count
    }

    /// The longest header line accepted.
    public static let maximumLength = 1024
    /// Chroma layouts read as I420.
    public static let supportedColourSpaces = ["420", "420jpeg", "420paldv", "420mpeg2"]

    /// Bytes of one frame's pixel data.
    public var frameDataSize: Int { width * height + 2 * ((width + 1) / 2) * ((height + 1) / 2) }

    /// Microsecond timestamp of frame `index`, without accumulated rounding.
    public func timestampMicros(ofFrame index: Int) -> Int64 {
        Int64(index) * 1_000_000 * Int64(frameRate.denominator) / Int64(frameRate.numerator)
    }

    /// The header line as written to a file.
    public func encoded() -> [UInt8] {
        Array(
            "YUV4MPEG2 W\(width) H\(height) F\(frameRate.numerator):\(frameRate.denominator) Ip A1:1 C\(colourSpace)\n"
                .utf8)
    }

    /// Parses the header at the start of `bytes` (which may continue with frames); throws `MediaFileError.y4m`
    /// saying what is wrong.
    public static func parse(_ bytes: [UInt8]) throws -> Y4MHeader {
        let signature = Array("YUV4MPEG2 ".utf8)
        guard !bytes.isEmpty else { throw MediaFileError.y4m("file is empty") }
        guard bytes.starts(with: signature) else {
            throw MediaFileError.y4m("file does not start with \"YUV4MPEG2 \" (found \(quoted(bytes.prefix(10))))")
        }
        guard let newline = bytes.prefix(maximumLength).firstIndex(of: 0x0A) else {
            throw MediaFileError.y4m("header line has no newline in its first \(maximumLength) bytes")
        }
        let fields = bytes[signature.count..<newline].split(separator: 0x20)
        var width: Int?
        var height: Int?
        var rate = (numerator: 30, denominator: 1)
        var colourSpace = "420jpeg"
        for field in fields {
            let value = String(decoding: field.dropFirst(), as: UTF8.self)
            switch field.first {
            case UInt8(ascii: "W"): width = try dimension("width", value)
            case UInt8(ascii: "H"): height = try dimension("height", value)
            case UInt8(ascii: "F"): rate = try ratio(value)
            case UInt8(ascii: "C"):
                guard supportedColourSpaces.contains(value) else {
                    throw MediaFileError.y4m(
                        "colour space C\(value) is not supported; Parley reads 8-bit 4:2:0 "
                            + "(C420, C420jpeg, C420paldv, C420mpeg2)")
                }
                colourSpace = value
            case UInt8(ascii: "I"), UInt8(ascii: "A"), UInt8(ascii: "X"):
                continue  // Interlacing, pixel aspect and comments do not change how frames are read.
            default:
                throw MediaFileError.y4m("unknown header field \(quoted(field))")
            }
        }
        guard let width else { throw MediaFileError.y4m("header has no width (W field)") }
        guard let height else { throw MediaFileError.y4m("header has no height (H field)") }
        var header = Y4MHeader(width: width, height: height, frameRate: rate, colourSpace: colourSpace)
        header.length = newline + 1
        return header
    }

    public static func == (lhs: Y4MHeader, rhs: Y4MHeader) -> Bool {
        lhs.width == rhs.width && lhs.height == rhs.height && lhs.frameRate == rhs.frameRate
            && lhs.colourSpace == rhs.colourSpace && lhs.length == rhs.length
    }

    private static func dimension(_ name: String, _ text: String) throws -> Int {
        guard let value = Int(text), value > 0 else {
            throw MediaFileError.y4m("\(name) \"\(text)\" is not a positive whole number")
        }
        guard value <= 16384 else { throw MediaFileError.y4m("\(name) \(value) exceeds the limit of 16384") }
        return value
    }

    private static func ratio(_ text: String) throws -> (numerator: Int, denominator: Int) {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, let numerator = Int(parts[0]), let denominator = Int(parts[1]) else {
            throw MediaFileError.y4m("frame rate \"\(text)\" is not of the form N:D (e.g. F30:1)")
        }
        guard numerator > 0, denominator > 0 else {
            throw MediaFileError.y4m("frame rate \(text) must have a positive numerator and denominator")
        }
        // Bounded before any arithmetic: a denominator near Int.max overflowed `denominator * 1000` (found by
        // `make fuzz`, Tests/Fuzz/Crashes/y4m).
        guard numerator <= 1_000_000, denominator <= 1_000_000 else {
            throw MediaFileError.y4m("frame rate \(text) has a number above 1000000")
        }
        guard numerator <= denominator * 1000 else { throw MediaFileError.y4m("frame rate \(text) is above 1000/s") }
        return (numerator, denominator)
    }
}

/// Printable rendering of bytes for error messages: ASCII as is, the rest as \xNN.
func quoted<Bytes: Sequence>(_ bytes: Bytes) -> String where Bytes.Element == UInt8 {
    var text = "\""
    for byte in bytes {
        if (0x20..<0x7F).contains(byte), byte != UInt8(ascii: "\""), byte != UInt8(ascii: "\\") {
            text.append(Character(UnicodeScalar(byte)))
        } else {
            text += "\\x" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
        }
    }
    return text + "\""
}

extension String {
    fileprivate func leftPadded(to length: Int) -> String {
        count >= length ? self : String(repeating: "0", count: length - count) + self
    }
}

/// Plays a Y4M file as a video source, looping back to the first frame at the end.
public final class Y4MFileSource: VideoSource {
    /// The parsed stream header.
    public let header: Y4MHeader
    /// Frames returned so far (across loops).
    public private(set) var framesRead = 0
    private let input: ByteInput
    private var offset: Int
    private var frameInFile = 0

    /// Opens a file; throws `MediaFileError` if it is not a readable 4:2:0 Y4M file with at least one frame.
    public convenience init(path: String) throws {
        try self.init(input: FileInput(path: path))
    }

    /// Reads Y4M from any byte input; checks the header and the first frame at once.
    public init(input: ByteInput) throws {
        self.input = input
        header = try Y4MHeader.parse(try input.read(at: 0, count: Y4MHeader.maximumLength))
        offset = header.length
        guard input.size > offset else { throw MediaFileError.y4m("file holds no frames after the header") }
        // Reading the first frame now turns a broken file into an error at open time, not mid-call.
        _ = try readFrame()
        offset = header.length
        frameInFile = 0
    }

    public var width: Int { header.width }
    public var height: Int { header.height }
    public var frameIntervalMicros: Int64 { header.timestampMicros(ofFrame: 1) }

    /// The next frame, wrapping to the first at the end of the file.
    public func nextFrame() throws -> VideoFrame {
        if offset >= input.size {
            offset = header.length
            frameInFile = 0
        }
        var frame = try readFrame()
        frame.timestampMicros = header.timestampMicros(ofFrame: framesRead)
        framesRead += 1
        return frame
    }

    private func readFrame() throws -> VideoFrame {
        let marker = Array("FRAME".utf8)
        let start = try input.read(at: offset, count: 256)
        guard start.starts(with: marker) else {
            throw MediaFileError.y4m(
                "frame \(frameInFile) (byte \(offset)) does not start with \"FRAME\" (found \(quoted(start.prefix(8))))"
            )
        }
        guard let newline = start.firstIndex(of: 0x0A) else {
            throw MediaFileError.y4m("frame \(frameInFile) header has no newline in its first 256 bytes")
        }
        let dataStart = offset + newline + 1
        let lumaSize = header.width * header.height
        let chromaSize = (header.frameDataSize - lumaSize) / 2
        // Each plane is read straight into its own array: one copy per frame instead of two.
        let y = try input.read(at: dataStart, count: lumaSize)
        let u = try input.read(at: dataStart + lumaSize, count: chromaSize)
        let v = try input.read(at: dataStart + lumaSize + chromaSize, count: chromaSize)
        let got = y.count + u.count + v.count
        guard got == header.frameDataSize else {
            throw MediaFileError.y4m("frame \(frameInFile) is truncated: \(got) of \(header.frameDataSize) bytes")
        }
        offset = dataStart + header.frameDataSize
        frameInFile += 1
        return VideoFrame(width: header.width, height: header.height, y: y, u: u, v: v)
    }
}

/// Writes frames to a Y4M file (playable with ffplay/mpv, readable by vpxenc); the size is fixed by the first frame.
public final class Y4MFileWriter: VideoSink {
    /// Where the frames go.
    public let path: String
    /// Frames written so far.
    public private(set) var framesWritten = 0
    private let output: FileOutput
    private let frameRate: (numerator: Int, denominator: Int)
    private var header: Y4MHeader?

    /// Creates (or truncates) the file; the header is written with the first frame.
    public init(path: String, frameRate: (numerator: Int, denominator: Int) = (30, 1)) throws {
        self.path = path
        self.frameRate = frameRate
        output = try FileOutput(path: path)
    }

    public func write(_ frame: VideoFrame) throws {
        if let header {
            guard header.width == frame.width, header.height == frame.height else {
                throw MediaFileError.unsupportedFrame(
                    "Y4M file \(path) is \(header.width)x\(header.height); cannot append a "
                        + "\(frame.width)x\(frame.height) frame (Y4M cannot change size)")
            }
        } else {
            let header = Y4MHeader(width: frame.width, height: frame.height, frameRate: frameRate)
            try output.append(header.encoded())
            self.header = header
        }
        var bytes = Array("FRAME\n".utf8)
        bytes.reserveCapacity(6 + frame.y.count + 2 * frame.u.count)
        bytes += frame.y
        bytes += frame.u
        bytes += frame.v
        try output.append(bytes)
        framesWritten += 1
    }
}
