import Foundation

/// The whole machine's processor time from /proc/stat: what every process of a call costs together (the relay,
/// the clients, a browser's helper processes), the benchmark's own idle waiting included.
struct MachineCPU {
    var busy: Double
    var total: Double

    /// Now; zeros where /proc/stat cannot be read.
    static func now() -> MachineCPU {
        guard let text = try? String(contentsOfFile: "/proc/stat", encoding: .utf8),
            let line = text.split(separator: "\n").first, line.hasPrefix("cpu ")
        else { return MachineCPU(busy: 0, total: 0) }
        let fields = line.split(separator: " ").dropFirst().compactMap { Double($0) }
        guard fields.count >= 5 else { return MachineCPU(busy: 0, total: 0) }
        // user nice system idle iowait irq softirq steal …: idle and iowait are the idle ones.
        let total = fields.prefix(8).reduce(0, +)
        return MachineCPU(busy: total - fields[3] - fields[4], total: total)
    }

    /// The busy share of every core between `start` and this, as a percentage of the machine.
    func busyPercent(since start: MachineCPU) -> Double {
        let total = self.total - start.total
        return total > 0 ? (busy - start.busy) / total * 100 : 0
    }
}
