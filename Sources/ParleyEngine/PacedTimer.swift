import NIOCore

/// Runs a body every `interval` on an event loop against absolute deadlines (start + n × interval), so a 20 ms
/// audio clock does not drift the way "sleep 20 ms after each run" does. A run that falls more than `maxCatchUp`
/// intervals behind skips ahead instead of bursting.
final class PacedTimer {
    private let loop: any EventLoop
    private let interval: TimeAmount
    private let maxCatchUp: Int64
    private let body: () -> Void
    private var start = NIODeadline.now()
    private var tick: Int64 = 0
    private var scheduled: Scheduled<Void>?
    private var running = false

    init(loop: any EventLoop, interval: TimeAmount, maxCatchUp: Int64 = 5, body: @escaping () -> Void) {
        self.loop = loop
        self.interval = interval
        self.maxCatchUp = maxCatchUp
        self.body = body
    }

    /// Starts ticking; the first run is one interval from now.
    func start(bound: NIOLoopBound<PacedTimer>) {
        running = true
        start = .now()
        tick = 0
        scheduleNext(bound)
    }

    /// Stops; a run already under way finishes.
    func stop() {
        running = false
        scheduled?.cancel()
        scheduled = nil
    }

    private func scheduleNext(_ bound: NIOLoopBound<PacedTimer>) {
        tick += 1
        var deadline = start + interval * tick
        let now = NIODeadline.now()
        if now - deadline > interval * maxCatchUp {
            // Far behind (a stalled machine): resume from now rather than running a burst of stale ticks.
            start = now
            tick = 1
            deadline = now + interval
        }
        scheduled = loop.scheduleTask(deadline: deadline) {
            let timer = bound.value
            guard timer.running else { return }
            timer.body()
            if timer.running { timer.scheduleNext(bound) }
        }
    }
}
