import Foundation
import ParleyWire
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}

/// Pins the calling thread to one CPU; false when the kernel refuses.
@discardableResult
func pinCurrentThread(to cpu: Int) -> Bool {
    // cpu_set_t is 1024 bits.
    var set = [UInt8](repeating: 0, count: 128)
    guard cpu < 1024 else { return false }
    set[cpu / 8] |= UInt8(1 << (cpu % 8))
    return BatchIO.setAffinity(0, set.count, set) == 0
}

/// CPU seconds (user + sys) of this process so far, exited threads included.
func ownCPUSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
        + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
}

/// (run, wait) seconds of every thread of a process so far, from the scheduler: time on a CPU (user + sys) and time
/// runnable but waiting for one.
func processSchedulerSeconds(pid: Int32) -> (run: Double, wait: Double) {
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
    var total = (run: 0.0, wait: 0.0)
    for task in tasks {
        let times = threadSchedulerSeconds(path: "/proc/\(pid)/task/\(task)/schedstat")
        total.run += times.run
        total.wait += times.wait
    }
    return total
}

/// (run, wait) seconds of one thread from its schedstat file.
func threadSchedulerSeconds(path: String) -> (run: Double, wait: Double) {
    guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return (0, 0) }
    let fields = text.split(separator: " ").prefix(2).compactMap { UInt64($0) }
    guard fields.count == 2 else { return (0, 0) }
    return (Double(fields[0]) / 1e9, Double(fields[1]) / 1e9)
}
