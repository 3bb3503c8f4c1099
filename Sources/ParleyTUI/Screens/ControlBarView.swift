import ParleyPictures
import ParleyRoom

/// Draws the control bar from `ControlBar.items`: each button's key, label and, for toggles, its state.
///
/// The bar never wraps (that would move the video container). It tries, in order: state words on every toggle
/// with wide gaps; the same with narrow gaps; state words only where a toggle differs from how a call starts
/// ("Mic off", "Filter on"); then it drops the least used buttons until the rest fit. Every command stays in
/// the help overlay.
enum ControlBarView {
    /// How a toggle stands when a call starts; its state word is shown on narrow bars only when it differs.
    static func usualState(_ command: RoomCommand) -> Bool? {
        switch command {
        case .microphone, .camera, .speaker, .broadcast: return true
        case .filter, .record: return false
        default: return nil
        }
    }

    /// Buttons dropped first when even the compact bar does not fit.
    static let dropOrder: [RoomCommand] = [
        .record, .switchCamera, .filter, .broadcast, .stats, .speaker, .chat, .help, .camera, .microphone, .leave,
    ]

    static func stateWord(_ item: ControlItem, always: Bool) -> String? {
        guard let isOn = item.isOn, let usual = usualState(item.command) else { return nil }
        guard always || isOn != usual else { return nil }
        return isOn ? "on" : "off"
    }

    /// The buttons as styled runs, the first arrangement that fits `width` columns.
    static func runs(items: [ControlItem], width: Int, theme: Theme) -> [StyledRun] {
        for (words, gap) in [(true, 2), (true, 1), (false, 1)] {
            let runs = arrange(items, words: words, gap: gap, theme: theme)
            if totalWidth(runs) <= width { return runs }
        }
        var kept = items
        for command in dropOrder {
            guard kept.count > 1 else { break }
            kept.removeAll { $0.command == command }
            let runs = arrange(kept, words: false, gap: 1, theme: theme)
            if totalWidth(runs) <= width { return runs }
        }
        return arrange(kept, words: false, gap: 1, theme: theme)
    }

    static func totalWidth(_ runs: [StyledRun]) -> Int {
        runs.reduce(0) { $0 + $1.width }
    }

    static func arrange(_ items: [ControlItem], words: Bool, gap: Int, theme: Theme) -> [StyledRun] {
        let bar = theme.style(.controlBar)
        let key = bar.overlaid(with: theme.style(.controlBarKey))
        let active = bar.overlaid(with: theme.style(.controlBarActive))
        let inactive = bar.overlaid(with: theme.style(.controlBarInactive))
        let spacing = String(repeating: " ", count: gap)
        var runs: [StyledRun] = [StyledRun(" ", bar)]
        for (index, item) in items.enumerated() {
            if index > 0 { runs.append(StyledRun(spacing, bar)) }
            let style: CellStyle
            if !item.isEnabled {
                style = inactive
            } else if let isOn = item.isOn {
                style = isOn ? active : inactive
            } else {
                style = bar
            }
            // The key in its own style reads as a key cap without padding, which 80 columns cannot spare.
            runs.append(StyledRun(item.key, key))
            var label = " " + item.label
            if let word = stateWord(item, always: words) { label += " " + word }
            runs.append(StyledRun(label, style))
        }
        return runs
    }

    /// Draws the bar for `state` into `rect` (one row).
    static func draw(state: RoomState, into screen: inout Screen, in rect: CellRect, theme: Theme) {
        guard !rect.isEmpty else { return }
        screen.fill(rect, style: theme.style(.controlBar))
        let runs = runs(items: ControlBar.items(for: state), width: rect.width, theme: theme)
        screen.write(runs, column: rect.x, row: rect.y, width: rect.width)
    }
}
