import CSpeexDSP

/// A failure of speexdsp audio processing (echo canceller, preprocessor, resampler); the description names the
/// setting or block that was wrong.
public enum AudioProcessingError: Error, Equatable, CustomStringConvertible {
    /// A configuration value is out of range.
    case invalidSetting(name: String, value: String, allowed: String)
    /// A block handed to the processor does not have the configured length.
    case blockSize(what: String, expected: Int, got: Int)
    /// A speexdsp call failed; `message` is speexdsp's own text where it has one.
    case speex(call: String, code: Int32, message: String)

    public var description: String {
        switch self {
        case .invalidSetting(let name, let value, let allowed):
            return "invalid \(name) \(value): allowed \(allowed)"
        case .blockSize(let what, let expected, let got):
            return "\(what) must be \(expected) samples, got \(got)"
        case .speex(let call, let code, let message):
            return "\(call) failed (speexdsp error \(code)): \(message)"
        }
    }
}

/// Acoustic echo cancellation and noise suppression for one microphone (speexdsp's MDF echo canceller followed by its
/// preprocessor, which also removes the residual echo the linear filter leaves). 48 kHz (or 8–48 kHz) mono 16-bit.
///
/// Feed every block sent to the speaker to `playback(_:)` and every microphone block to `capture(_:)`, which returns
/// the cleaned block. The far end waits in a bounded FIFO; each capture consumes one block of it, so the echo path the
/// filter has to model is the acoustic delay plus whatever the FIFO holds beyond one block: keep playback and capture
/// in step (the engine calls both every frame) and the filter covers echo delays up to about `tailMilliseconds` minus
/// one frame. One owner calls it (not thread-safe).
public final class EchoCanceller {
    /// Samples per second.
    public let sampleRate: Int
    /// Samples in every block given to `capture(_:)`.
    public let frameSamples: Int
    /// Length of the echo the adaptive filter models.
    public let tailMilliseconds: Int
    /// Whether the adaptive echo filter runs.
    public let echoCancellation: Bool
    /// Whether the preprocessor's noise suppression (and, with echo cancellation, residual echo suppression) runs.
    public let noiseSuppression: Bool
    /// Far-end samples held at most; beyond it the oldest are dropped (`farEndSamplesDropped`).
    public let farEndCapacity: Int
    /// Far-end samples dropped because the FIFO was full (playback running ahead of capture).
    public private(set) var farEndSamplesDropped = 0
    /// Captures that found less than a block of far end (zeros were used for the rest).
    public private(set) var farEndUnderruns = 0
    /// Microphone blocks processed.
    public private(set) var blocksProcessed = 0

    private let echo: OpaquePointer?
    private let preprocess: OpaquePointer?
    private var farEnd: [Int16] = []
    private var farEndStart = 0
    private var reference: [Int16]
    private var output: [Int16]

    /// Sample rates speexdsp's preprocessor and canceller are used at here.
    public static let sampleRates: Set<Int> = [8_000, 16_000, 24_000, 32_000, 48_000]

    /// Opens the canceller; `frameSamples` must be 10 or 20 ms at `sampleRate`, the tail 20–1000 ms. The far-end FIFO
    /// holds `tailMilliseconds` plus four blocks by default.
    public init(
        sampleRate: Int = 48_000, frameSamples: Int = 960, tailMilliseconds: Int = 250, noiseSuppression: Bool = true,
        echoCancellation: Bool = true, farEndCapacity: Int? = nil
    ) throws {
        guard Self.sampleRates.contains(sampleRate) else {
            throw AudioProcessingError.invalidSetting(
                name: "echo canceller sample rate", value: String(sampleRate),
                allowed: Self.sampleRates.sorted().map(String.init).joined(separator: ", "))
        }
        let allowedFrames = [sampleRate / 100, sampleRate / 50]
        guard allowedFrames.contains(frameSamples) else {
            throw AudioProcessingError.invalidSetting(
                name: "echo canceller block", value: "\(frameSamples) samples",
                allowed: "\(allowedFrames[0]) or \(allowedFrames[1]) (10 or 20 ms at \(sampleRate) Hz)")
        }
        guard (20...1000).contains(tailMilliseconds) else {
            throw AudioProcessingError.invalidSetting(
                name: "echo tail", value: "\(tailMilliseconds) ms", allowed: "20...1000 ms")
        }
        let tailSamples = sampleRate / 1000 * tailMilliseconds
        let capacity = farEndCapacity ?? tailSamples + 4 * frameSamples
        guard capacity >= frameSamples, capacity <= sampleRate * 10 else {
            throw AudioProcessingError.invalidSetting(
                name: "far-end capacity", value: "\(capacity) samples",
                allowed: "\(frameSamples)...\(sampleRate * 10) (one block to 10 s)")
        }
        self.sampleRate = sampleRate
        self.frameSamples = frameSamples
        self.tailMilliseconds = tailMilliseconds
        self.echoCancellation = echoCancellation
        self.noiseSuppression = noiseSuppression
        self.farEndCapacity = capacity
        reference = [Int16](repeating: 0, count: frameSamples)
        output = [Int16](repeating: 0, count: frameSamples)

        var echo: OpaquePointer?
        if echoCancellation {
            guard let state = speex_echo_state_init(Int32(frameSamples), Int32(tailSamples)) else {
                throw AudioProcessingError.speex(call: "speex_echo_state_init", code: -1, message: "out of memory")
            }
            var rate = Int32(sampleRate)
            speex_echo_ctl(state, SPEEX_ECHO_SET_SAMPLING_RATE, &rate)
            echo = state
        }
        var preprocess: OpaquePointer?
        if noiseSuppression {
            guard let state = speex_preprocess_state_init(Int32(frameSamples), Int32(sampleRate)) else {
                if let echo { speex_echo_state_destroy(echo) }
                throw AudioProcessingError.speex(
                    call: "speex_preprocess_state_init", code: -1, message: "out of memory")
            }
            var on: Int32 = 1
            speex_preprocess_ctl(state, SPEEX_PREPROCESS_SET_DENOISE, &on)
            if let echo {
                // The preprocessor reads the canceller's residual-echo estimate and suppresses it with the noise.
                speex_preprocess_ctl(state, SPEEX_PREPROCESS_SET_ECHO_STATE, UnsafeMutableRawPointer(echo))
            }
            preprocess = state
        }
        self.echo = echo
        self.preprocess = preprocess
    }

    deinit {
        if let preprocess { speex_preprocess_state_destroy(preprocess) }
        if let echo { speex_echo_state_destroy(echo) }
    }

    /// Samples the output lags the microphone: one block with noise suppression (the preprocessor's overlap-add),
    /// none without.
    public var latencySamples: Int { preprocess == nil ? 0 : frameSamples }

    /// Far-end samples waiting to be matched with microphone blocks.
    public var farEndBuffered: Int { farEnd.count - farEndStart }

    /// Notes audio sent to the speaker (any length); the oldest is dropped past `farEndCapacity`.
    public func playback(_ samples: [Int16]) {
        guard echo != nil, !samples.isEmpty else { return }
        farEnd.append(contentsOf: samples)
        let excess = farEndBuffered - farEndCapacity
        if excess > 0 {
            farEndStart += excess
            farEndSamplesDropped += excess
        }
        compact()
    }

    /// Cleans one microphone block of `frameSamples`: echo of the far end removed, noise suppressed.
    public func capture(_ nearEnd: [Int16]) throws -> [Int16] {
        guard nearEnd.count == frameSamples else {
            throw AudioProcessingError.blockSize(
                what: "microphone block for the echo canceller", expected: frameSamples, got: nearEnd.count)
        }
        blocksProcessed += 1
        var cleaned = nearEnd
        if let echo {
            let available = min(frameSamples, farEndBuffered)
            if available < frameSamples { farEndUnderruns += 1 }
            for index in 0..<frameSamples {
                reference[index] = index < available ? farEnd[farEndStart + index] : 0
            }
            farEndStart += available
            compact()
            nearEnd.withUnsafeBufferPointer { mic in
                reference.withUnsafeBufferPointer { far in
                    output.withUnsafeMutableBufferPointer { out in
                        speex_echo_cancellation(echo, mic.baseAddress, far.baseAddress, out.baseAddress)
                    }
                }
            }
            cleaned = output
        }
        if let preprocess {
            cleaned.withUnsafeMutableBufferPointer { block in
                _ = speex_preprocess_run(preprocess, block.baseAddress)
            }
        }
        return cleaned
    }

    /// Forgets the learnt echo path and the far end (e.g. after changing the speaker or microphone).
    public func reset() {
        if let echo { speex_echo_state_reset(echo) }
        farEnd = []
        farEndStart = 0
    }

    /// Moves the FIFO's live part to the front once the consumed part is large, so it never grows without bound.
    private func compact() {
        if farEndStart >= farEndCapacity || farEndStart == farEnd.count {
            farEnd.removeFirst(farEndStart)
            farEndStart = 0
        }
    }
}
