import Foundation
import ParleyEngine
import ParleyMedia
import ParleyPictures
import ParleyRoom
import ParleyWire
import Synchronization

/// The newest decoded picture of each participant, written by the engine's thread and read by the draw loop.
///
/// Only pictures of participants on screen count as something new to draw and wake the loop: the picture of
/// someone on another page, or of a hidden self view, is kept for later but does not make the screen redraw.
public final class FrameStore: VideoFrameSink {
    private struct Pictures {
        var latest: [ParticipantID: VideoFrame] = [:]
        /// The newest screen of each shared terminal.
        var screens: [ParticipantID: TerminalScreen] = [:]
        /// Who is on screen (nil: everyone counts, until the first draw says).
        var shown: Set<ParticipantID>?
        /// Pictures that arrived since the last `take` from participants off screen.
        var unshownSinceTake: Set<ParticipantID> = []
    }

    private let pictures = Mutex(Pictures())
    private let dirty = Atomic<Bool>(false)
    private let wake: LoopWake?

    /// An empty store; `wake`, if given, is signalled when a picture to show arrives.
    public init(wake: LoopWake? = nil) { self.wake = wake }

    public func deliver(_ frame: VideoFrame, from participant: ParticipantID) {
        keep(from: participant) { $0.latest[participant] = frame }
    }

    public func deliver(_ screen: TerminalScreen, from participant: ParticipantID) {
        keep(from: participant) { $0.screens[participant] = screen }
    }

    /// Stores what `participant` sent; wakes the loop when they are on screen.
    private func keep(from participant: ParticipantID, _ store: (inout Pictures) -> Void) {
        let shown = pictures.withLock { pictures in
            store(&pictures)
            let shown = pictures.shown?.contains(participant) ?? true
            if !shown { pictures.unshownSinceTake.insert(participant) }
            return shown
        }
        guard shown else { return }
        dirty.store(true, ordering: .sequentiallyConsistent)
        wake?.signal()
    }

    /// The newest screen of each shared terminal.
    public var screens: [ParticipantID: TerminalScreen] { pictures.withLock { $0.screens } }

    /// The current pictures; clears the "something new arrived" flag.
    public func take() -> (frames: [ParticipantID: VideoFrame], changed: Bool) {
        let changed = dirty.exchange(false, ordering: .sequentiallyConsistent)
        let latest = pictures.withLock { pictures in
            pictures.unshownSinceTake.removeAll(keepingCapacity: true)
            return pictures.latest
        }
        return (latest, changed)
    }

    /// True when a picture of someone on screen arrived since the last `take`.
    public var hasNewFrames: Bool { dirty.load(ordering: .sequentiallyConsistent) }

    /// Says who is on screen now, and forgets the pictures of those no longer in the call (`present`). A
    /// participant who came on screen after the last `take` with a picture since counts as new.
    public func show(_ shown: Set<ParticipantID>, present: Set<ParticipantID>) {
        let cameOnScreen = pictures.withLock { pictures in
            pictures.shown = shown
            if pictures.latest.keys.contains(where: { !present.contains($0) }) {
                pictures.latest = pictures.latest.filter { present.contains($0.key) }
            }
            if pictures.screens.keys.contains(where: { !present.contains($0) }) {
                pictures.screens = pictures.screens.filter { present.contains($0.key) }
            }
            return !pictures.unshownSinceTake.isDisjoint(with: shown)
        }
        guard cameOnScreen else { return }
        dirty.store(true, ordering: .sequentiallyConsistent)
        wake?.signal()
    }
}

/// A flag one side claims and later releases, so a slow background job is not started twice.
final class BusyFlag: Sendable {
    private let busy = Atomic<Bool>(false)

    /// True if the flag was free and is now claimed.
    func claim() -> Bool { !busy.exchange(true, ordering: .acquiring) }

    /// Frees the flag.
    func release() { busy.store(false, ordering: .releasing) }
}

/// Engine events queued by a background task for the synchronous draw loop.
final class EventInbox: Sendable {
    private let queue = Mutex<[RoomEvent]>([])
    private let finished = Atomic<Bool>(false)
    private let wake: LoopWake?

    /// An empty inbox; `wake`, if given, is signalled when an event arrives.
    init(wake: LoopWake? = nil) { self.wake = wake }

    func consume(_ events: AsyncStream<RoomEvent>) -> Task<Void, Never> {
        Task.detached { [self] in
            for await event in events {
                queue.withLock { $0.append(event) }
                wake?.signal()
            }
            finished.store(true, ordering: .releasing)
            wake?.signal()
        }
    }

    func drain() -> [RoomEvent] {
        queue.withLock { events in
            defer { events.removeAll(keepingCapacity: true) }
            return events
        }
    }

    var isFinished: Bool { finished.load(ordering: .acquiring) }
}

/// One call on screen: the room reducer fed by keys, ticks and engine events; the engine fed by the reducer's
/// effects; the screen redrawn when something changed, at most at the video frame rate.
final class CallSession {
    /// How a call ended.
    enum Outcome {
        /// Still running.
        case running
        /// The user left (after confirming); `note` summarises the call.
        case left(note: String)
        /// The join failed before the room opened.
        case failed(reason: String)
        /// The host removed us: the call is over; `reason` says who did (the call screen closes).
        case removed(reason: String)
        /// The user asked for the messages screen (the call goes on under it).
        case openMessages
    }

    let engine: CallEngine
    private(set) var state: RoomState
    /// Wakes the loop's wait for keys when a picture or an engine event arrives (nil: the loop looks on a timer).
    let wake = LoopWake()
    private let frames: FrameStore
    private let inbox: EventInbox
    private var consumer: Task<Void, Never>?
    private var screen: RoomScreen
    private let clock = ContinuousClock()
    private let epoch: ContinuousClock.Instant
    private let frameInterval: Duration
    private let tickInterval = Duration.milliseconds(100)
    /// How late a tick may run when the loop has a wake (`idleTimeoutMilliseconds`).
    private let tickSlack = Duration.milliseconds(50)
    private var lastTick: Duration = .zero
    private var lastContainer: CellRect?
    private var lastSize: TerminalSize?
    private var mustDraw = true
    /// The room changed while a draw was not yet due: draw when it is.
    private var changesToShow = false
    /// Paces draws for new pictures and changes at the draw rate.
    private var pacer: DrawPacer
    private var lastDraw: Duration = .seconds(-1)
    /// True once the relay accepted the join.
    private(set) var hasJoined = false
    /// Screens drawn so far (reported in the statistics file).
    private(set) var screenDraws = 0
    /// The user was told that the grapheme table is full (see `GraphemeTable`).
    private var graphemeLimitTold = false
    private let statisticsFile: CallStatisticsFile?
    private var lastStatisticsWrite: Duration = .zero
    private let statisticsWriting = BusyFlag()
    /// The account's messages, for direct conversations in the chat pane; nil when nobody is logged in.
    private let messages: MessagesSession?
    private let account: String?
    /// Ids of direct messages sent from the chat pane (their echoes are already shown).
    private var sentDirect: Set<String> = []

    init(
        configuration: CallConfiguration, settings: RoomSettings, theme: Theme, videoMode: VideoColorMode,
        cells: PictureCells = .halfBlocks, pixels: Bool = false,
        drawRate: Int = 30, statisticsPath: String? = nil, devices: MediaDevices = .system,
        notices: [String] = [], greeting: String? = nil, messaging: MessagingAccount? = nil
    ) throws {
        messages = messaging.map { MessagesSession(account: $0) }
        account = messaging?.identity.name
        statisticsFile = statisticsPath.map(CallStatisticsFile.init(path:))
        frames = FrameStore(wake: wake)
        inbox = EventInbox(wake: wake)
        engine = try CallEngine(configuration, videoSink: frames, devices: devices)
        state = RoomState(
            roomName: configuration.room, localName: configuration.name, role: configuration.role,
            microphoneMuted: configuration.microphoneMuted, cameraEnabled: !configuration.cameraOff,
            settings: settings)
        for notice in notices { _ = reduce(&state, .event(.alert(.message(notice)))) }
        state.greeting = greeting
        let meetingLink = MeetingLink(
            server: configuration.server, room: configuration.room, insecure: configuration.insecureTransport)
        state.inviteLink = meetingLink.description
        state.webLink = meetingLink.webAddress
        state.shareCommand = state.inviteLink.map {
            "parley share \($0)" + (configuration.insecureTransport ? " --insecure" : "")
        }
        screen = RoomScreen(theme: theme, videoMode: videoMode, cells: cells, pixels: pixels)
        epoch = clock.now
        frameInterval = .milliseconds(1000 / max(1, min(60, drawRate)))
        pacer = DrawPacer(interval: frameInterval)
        consumer = inbox.consume(engine.events)
        engine.start()
    }

    private var now: Duration { clock.now - epoch }

    /// Handles what happened since the last step (a key, engine events, the clock) and redraws if needed.
    func step(key: Key?, terminal: Terminal, draws: Bool) -> Outcome {
        step(keys: key.map { [$0] } ?? [], terminal: terminal, draws: draws)
    }

    /// Handles the keys that arrived together (a paste, a held key), then engine events and the clock, and draws
    /// once for all of them.
    func step(keys: [Key], terminal: Terminal, draws: Bool) -> Outcome {
        let at = now
        var effects: [RoomEffect] = []
        for key in keys {
            if key == .resize { terminal.invalidate() }
            effects += reduce(&state, .key(key, at: at))
            mustDraw = true
        }
        for event in directEvents() {
            effects += reduce(&state, .event(event))
        }
        for event in inbox.drain() {
            switch event {
            case .joined: hasJoined = true
            case .joinFailed(let reason) where !hasJoined:
                return .failed(reason: reason)
            case .removedFromRoom(let reason):
                _ = reduce(&state, .event(event))
                return .removed(reason: reason)
            case .userOffline:
                mustDraw = true
            default: break
            }
            effects += reduce(&state, .event(event))
        }
        if at - lastTick >= tickInterval {
            lastTick = at
            effects += reduce(&state, .tick(at))
        }
        let size = terminal.size
        let layout = RoomScreenLayout(size: size, state: state)
        if layout.video != lastContainer || size != lastSize {
            lastContainer = layout.video
            lastSize = size
            effects += reduce(&state, .container(layout.video))
            effects += reduce(&state, .screen(columns: size.columns, rows: size.rows))
            mustDraw = true
        }
        var messagesAsked = false
        for effect in effects {
            switch effect {
            case .leave: return .left(note: leaveNote())
            case .openMessages: messagesAsked = true
            case .openDirect(let peer): openDirect(peer)
            case .sendDirect(let peer, let text): sendDirect(text, to: peer)
            case .copyToClipboard(let text): terminal.copyToClipboard(text)
            default: engine.perform(effect)
            }
        }
        if statisticsFile != nil, at - lastStatisticsWrite >= .seconds(1) {
            lastStatisticsWrite = at
            writeStatistics()
        }
        if messagesAsked {
            guard messages != nil else {
                _ = reduce(
                    &state, .event(.notice("Messages need an account: run parley login NAME --server HOST:PORT")))
                return .running
            }
            mustDraw = true
            return .openMessages
        }
        let changes = state.takeChanges()
        if changes.contains(.tiles) {
            // The engine sends only a changed report, at most four a second.
            engine.reportTiles(
                RoomScreen.layerRequests(
                    state: state, layout: state.currentLayout,
                    cells: screen.pictureCells, pixels: terminal.pixelCanvas))
        }
        guard draws else { return .running }
        if !changes.isEmpty { changesToShow = true }
        pacer.advance(to: at)
        if mustDraw {
            draw(terminal: terminal, size: size, at: at)
        } else if pacer.mayDraw && (frames.hasNewFrames || (changesToShow && at - lastDraw >= frameInterval)) {
            // A change without a new picture waits out an interval since the last draw: while video plays, the
            // next picture comes by then and is drawn with it.
            pacer.drew()
            draw(terminal: terminal, size: size, at: at)
        }
        return .running
    }

    /// Milliseconds until the loop should look again without a key: when the next draw is due if something waits
    /// to be shown, else the next tick; without a wake, at least once a draw interval as well, since nothing else
    /// would tell the loop that a picture arrived.
    var idleTimeoutMilliseconds: Int {
        let untilTick = tickInterval - (now - lastTick)
        let somethingToShow = mustDraw || changesToShow || frames.hasNewFrames
        var pacer = self.pacer
        pacer.advance(to: now)
        let untilDraw =
            mustDraw || frames.hasNewFrames
            ? pacer.untilDue
            : changesToShow ? max(pacer.untilDue, frameInterval - (now - lastDraw)) : frameInterval
        // With a wake the tick may wait for the next picture a while: drawn at 30 a second, pictures wake the loop
        // every 33 ms anyway, and a tick of its own between two of them cost a wake-up 10 times a second.
        let tickDue = wake == nil ? untilTick : untilTick + tickSlack
        let wait = wake == nil || somethingToShow ? min(untilDraw, tickDue) : tickDue
        // Rounded up: a wait cut short by the rounding would only wake the loop to wait again.
        let milliseconds = Int((wait / .milliseconds(1)).rounded(.up))
        return max(1, min(100, milliseconds))
    }

    private func draw(terminal: Terminal, size: TerminalSize, at: Duration) {
        // Inside tmux a re-attach from another terminal can change the picture's colours.
        screen.followPicture(mode: terminal.videoColorMode, cells: terminal.pictureCells)
        let (pictures, _) = frames.take()
        let rendered = screen.render(state: state, frames: pictures, screens: frames.screens, size: size)
        frames.show(Set(screen.drawnLayout.tiles.map(\.id)), present: Set(state.sessions.map(\.id)))
        if !graphemeLimitTold, GraphemeTable.shared.overflows > 0 {
            graphemeLimitTold = true
            let limit = GraphemeTable.shared.limit
            _ = reduce(
                &state,
                .event(
                    .notice(
                        "Screen: the grapheme table's limit of \(limit) clusters is reached; new ones show as \u{FFFD}")
                ))
        }
        terminal.draw(rendered, cursor: RoomScreen.cursor(state: state, size: size)?.tuple)
        lastDraw = at
        mustDraw = false
        changesToShow = false
        screenDraws += 1
    }

    /// Writes the statistics file from a background task (the engine answers on its own loop); skipped while the
    /// previous write is still under way.
    private func writeStatistics() {
        guard let file = statisticsFile, statisticsWriting.claim() else { return }
        let engine = self.engine
        let draws = screenDraws
        let writing = statisticsWriting
        Task.detached {
            let stats = await engine.statistics()
            try? file.write(stats, extra: ["screenDraws": draws])
            writing.release()
        }
    }

    /// The screen will be drawn again in full (after the messages screen covered it).
    func redrawAll() { mustDraw = true }

    private func openDirect(_ peer: String) {
        guard let messages else {
            _ = reduce(
                &state,
                .event(
                    .directProblem(
                        "Direct messages need an account: run parley login NAME --server HOST:PORT (then join again)")))
            return
        }
        messages.perform(.open(ConversationKey(.direct, peer)))
    }

    private func sendDirect(_ text: String, to peer: String) {
        guard let messages else { return openDirect(peer) }
        let id = UUID().uuidString.lowercased()
        if sentDirect.count >= 10_000 { sentDirect.removeAll() }
        sentDirect.insert(id)
        messages.perform(.sendDirect(id: id, to: peer, text: text))
    }

    /// What the messages connection reported, as room events for the chat pane's direct conversation.
    private func directEvents() -> [RoomEvent] {
        guard let messages, let account else { return [] }
        var events: [RoomEvent] = []
        for update in messages.takeUpdates() {
            switch update {
            case .history(let key, let lines, older: false) where key.kind == .direct:
                events.append(
                    .directConversation(
                        peer: key.name,
                        lines.reversed().map { line in
                            ChatEntry(
                                sender: line.from, text: line.text, time: .zero,
                                kind: line.from == account ? .own : .chat)
                        }))
            case .arrived(let key, let line) where key.kind == .direct:
                guard !sentDirect.contains(line.id) else { continue }
                events.append(.directMessage(peer: key.name, sender: line.from, text: line.text))
                if key.name == state.directPeer, let sequence = line.sequence, line.from != account {
                    messages.perform(.markRead(key, through: sequence))
                }
            case .failed(_, let reason):
                events.append(.directProblem("Not sent: \(reason)"))
            case .notice(let text):
                events.append(.directProblem(text))
            default:
                break
            }
        }
        return events
    }

    /// Says goodbye to the relay and stops the engine (blocks briefly; called from the draw loop's thread).
    func close() {
        messages?.close()
        let engine = self.engine
        let done = DispatchSemaphore(value: 0)
        Task.detached {
            await engine.leave()
            done.signal()
        }
        _ = done.wait(timeout: .now() + 3)
        consumer?.cancel()
    }

    private func leaveNote() -> String {
        guard let duration = state.callDuration else { return "You left \(state.roomName)." }
        return "You left \(state.roomName) after \(RoomScreen.callTime(duration))."
    }
}
