import Testing

@testable import ParleyEngine

/// An unmuted microphone that delivers digital silence for 5 s gets a notice, once a call; times are inputs.
struct MicrophoneSilenceWatchTests {
    /// What happens at one moment: a block from the microphone, or another microphone opened.
    enum Event {
        /// An all-zero block from an unmuted microphone.
        case silent
        /// A block with sound in it.
        case sound
        /// An all-zero block while the microphone is muted.
        case mutedSilent
        /// Another microphone was opened.
        case newMicrophone
    }

    /// One moment: (seconds, what happens, whether the user is told then).
    typealias Step = (at: Double, event: Event, told: Bool)

    static let cases: [(name: String, steps: [Step])] = [
        ("4.9 s of silence says nothing", [(0, .silent, false), (2, .silent, false), (4.9, .silent, false)]),
        ("5 s of silence says it", [(0, .silent, false), (4.9, .silent, false), (5, .silent, true)]),
        ("a block arriving late past 5 s says it", [(0, .silent, false), (6.5, .silent, true)]),
        (
            "said once, however long it lasts",
            [
                (0, .silent, false), (5, .silent, true), (5.02, .silent, false), (10, .silent, false),
                (60, .silent, false),
            ]
        ),
        (
            "said once a call, even after sound and a new run of silence",
            [(0, .silent, false), (5, .silent, true), (6, .sound, false), (7, .silent, false), (12, .silent, false)]
        ),
        (
            "a block of sound starts the count over",
            [
                (0, .silent, false), (4.9, .sound, false), (5, .silent, false), (9.98, .silent, false),
                (10, .silent, true),
            ]
        ),
        (
            "the count starts at the first silent block, not at the start of the call",
            [
                (0, .sound, false), (3, .sound, false), (3.02, .silent, false), (8, .silent, false),
                (8.02, .silent, true),
            ]
        ),
        (
            "muted silence never counts",
            [(0, .mutedSilent, false), (10, .mutedSilent, false), (60, .mutedSilent, false)]
        ),
        (
            "unmuting starts the count at the first unmuted block",
            [
                (0, .mutedSilent, false), (10, .mutedSilent, false), (10.02, .silent, false), (15, .silent, false),
                (15.02, .silent, true),
            ]
        ),
        (
            "muting mid-run starts the count over",
            [
                (0, .silent, false), (4, .mutedSilent, false), (4.02, .silent, false), (9, .silent, false),
                (9.02, .silent, true),
            ]
        ),
        (
            "another microphone starts the count over",
            [
                (0, .silent, false), (4, .silent, false), (4.01, .newMicrophone, false), (4.02, .silent, false),
                (9, .silent, false), (9.02, .silent, true),
            ]
        ),
        (
            "another microphone after the notice is not told again",
            [
                (0, .silent, false), (5, .silent, true), (6, .newMicrophone, false), (6.02, .silent, false),
                (20, .silent, false),
            ]
        ),
    ]

    @Test(arguments: cases.indices)
    func noticeFollowsTheBlocks(_ index: Int) {
        let (name, steps) = Self.cases[index]
        var watch = MicrophoneSilenceWatch()
        for step in steps {
            let now = Duration.milliseconds(Int64((step.at * 1000).rounded()))
            let told: Bool
            switch step.event {
            case .silent: told = watch.block(at: now, silent: true, muted: false)
            case .sound: told = watch.block(at: now, silent: false, muted: false)
            case .mutedSilent: told = watch.block(at: now, silent: true, muted: true)
            case .newMicrophone:
                watch.microphoneChanged()
                told = false
            }
            #expect(told == step.told, "\(name): at \(step.at) s")
        }
    }

    @Test("a silent microphone's 20 ms blocks over a minute: told at the block 5 s after the first, and only then")
    func paced() {
        var watch = MicrophoneSilenceWatch()
        // Block n arrives n × 20 ms after the first: 3000 blocks are a minute.
        let told = (0..<3000).filter { watch.block(at: .milliseconds(20 * $0), silent: true, muted: false) }
        #expect(told == [250])
    }
}
