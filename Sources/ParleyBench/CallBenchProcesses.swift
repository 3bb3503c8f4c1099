import Foundation
import ParleyProcesses

#if canImport(Glibc)
import Glibc
#endif

/// Why the call benchmark could not run or finish.
public enum CallBenchError: Error, CustomStringConvertible {
    /// A program the benchmark needs is not installed.
    case missingTool(String, package: String)
    /// A program exited or printed something unexpected.
    case unexpected(String)
    /// A call did not get going in time.
    case timedOut(String)

    public var description: String {
        switch self {
        case .missingTool(let tool, let package):
            return "\(tool) is not installed; run `make bench-deps` (Debian package \(package))"
        case .unexpected(let text):
            return text
        case .timedOut(let text):
            return "timed out: \(text)"
        }
    }
}

/// Runs a program to completion; its exit status and combined output.
func runToCompletion(_ path: String, _ arguments: [String], in directory: String) throws
    -> (status: Int32, output: String)
{
    let outputPath = directory + "/command-\(UUID().uuidString.prefix(8)).log"
    defer { unlink(outputPath) }
    let child = try BackgroundProcess(path, arguments, outputPath: outputPath)
    guard let status = child.waitForExit(seconds: 30) else {
        throw CallBenchError.timedOut("\(child.command) did not finish in 30 s")
    }
    return (status, child.output)
}

/// The first executable called `name` on the usual paths.
func findTool(_ name: String, package: String) throws -> String {
    let folders =
        (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init)
        + ["/usr/bin", "/usr/sbin", "/usr/local/bin", "/bin"]
    guard let path = folders.map({ $0 + "/" + name }).first(where: { FileManager.default.isExecutableFile(atPath: $0) })
    else { throw CallBenchError.missingTool(name, package: package) }
    return path
}

/// What the kernel says about a running process: CPU time of all its threads, peak memory, UDP sockets.
enum ProcessProbe {
    private static let ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))

    /// User + system CPU seconds of every thread of `pid` so far (utime and stime of /proc/PID/stat).
    static func cpuSeconds(_ pid: pid_t) -> Double? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = text.lastIndex(of: ")")
        else { return nil }
        // After "pid (comm) " come state (field 3) ... utime (14) and stime (15).
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (user + system) / ticksPerSecond
    }

    /// Peak resident set size (VmHWM) in KiB.
    static func peakResidentKiB(_ pid: pid_t) -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
            let line = text.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") })
        else { return nil }
        return Int(line.split(separator: " ").dropFirst().first ?? "")
    }

    /// Local ports of the UDP sockets `pid` holds (its descriptors matched with /proc/net/udp by inode).
    static func udpPorts(_ pid: pid_t) -> Set<UInt16> {
        var inodes = Set<Substring>()
        let folder = "/proc/\(pid)/fd"
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [] {
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: folder + "/" + entry),
                target.hasPrefix("socket:[")
            else { continue }
            inodes.insert(Substring(target.dropFirst(8).dropLast()))
        }
        var ports = Set<UInt16>()
        for table in ["/proc/net/udp", "/proc/net/udp6"] {
            guard let text = try? String(contentsOfFile: table, encoding: .utf8) else { continue }
            for line in text.split(separator: "\n").dropFirst() {
                let columns = line.split(separator: " ")
                // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode ...
                guard columns.count > 9, inodes.contains(columns[9]),
                    let port = columns[1].split(separator: ":").last.flatMap({ UInt16($0, radix: 16) })
                else { continue }
                ports.insert(port)
            }
        }
        return ports
    }
}

/// A tmux server on a private socket running one command in a pane of a fixed size; killed by `close()`.
final class BenchPane {
    let socket: String
    /// The tmux server (the terminal the command draws into).
    let serverPID: pid_t
    /// The command running in the pane (started with `exec`, so it is the pane's process itself).
    let panePID: pid_t
    private let tmux: String
    private let directory: String
    private var socketPath = ""

    init(command: String, columns: Int, rows: Int, tmux: String, directory: String) throws {
        self.tmux = tmux
        self.directory = directory
        socket = "parley-call-bench-\(getpid())-\(UUID().uuidString.prefix(8))"
        let started = try runToCompletion(
            tmux,
            [
                "-u", "-L", socket, "-f", "/dev/null", "new-session", "-d", "-x", "\(columns)", "-y", "\(rows)",
                "-e", "TERM=tmux-256color", "exec " + command,
            ], in: directory)
        guard started.status == 0 else {
            throw CallBenchError.unexpected("tmux new-session failed (\(started.status)): \(started.output)")
        }
        let info = try runToCompletion(
            tmux, ["-L", socket, "display", "-p", "#{pid} #{pane_pid} #{socket_path}"],
            in: directory)
        let fields = info.output.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: " ")
        guard fields.count >= 3, let server = pid_t(fields[0]), let pane = pid_t(fields[1]) else {
            throw CallBenchError.unexpected("cannot read tmux's process ids: \(info.output)")
        }
        serverPID = server
        panePID = pane
        socketPath = String(fields[2])
    }

    /// Types `keys` into the pane (`tmux send-keys`, each a key name tmux knows).
    func send(keys: [String]) throws {
        let sent = try runToCompletion(tmux, ["-L", socket, "send-keys"] + keys, in: directory)
        guard sent.status == 0 else { throw CallBenchError.unexpected("tmux send-keys failed: \(sent.output)") }
    }

    /// The pane's text now.
    func text() -> String {
        (try? runToCompletion(tmux, ["-L", socket, "capture-pane", "-p"], in: directory).output) ?? ""
    }

    /// Stops the pane's command with SIGTERM (the TUI restores the terminal and leaves), then the server.
    func close() {
        kill(panePID, SIGTERM)
        let deadline = Date().addingTimeInterval(3)
        while kill(panePID, 0) == 0 && Date() < deadline { usleep(50_000) }
        _ = try? runToCompletion(tmux, ["-L", socket, "kill-server"], in: directory)
        if socketPath.hasSuffix("/" + socket) { unlink(socketPath) }
    }
}

/// Two UDP/TCP port numbers nobody on 127.0.0.1 is using right now (ask the kernel, then let go).
func freePorts(_ count: Int) -> [UInt16] {
    var ports: [UInt16] = []
    var holders: [Int32] = []
    defer { holders.forEach { close($0) } }
    while ports.count < count {
        let descriptor = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) }
        }
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        holders.append(descriptor)
        ports.append(UInt16(bigEndian: address.sin_port))
    }
    return ports
}

/// True if `count` consecutive UDP ports from `first` can all be bound on 127.0.0.1 now.
func udpPortsFree(from first: UInt16, count: Int) -> Bool {
    var holders: [Int32] = []
    defer { holders.forEach { close($0) } }
    for port in first..<(first + UInt16(count)) {
        let descriptor = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        holders.append(descriptor)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = INADDR_ANY
        address.sin_port = port.bigEndian
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        if bound != 0 { return false }
    }
    return true
}

/// Sends one command line to a baresip `cons` console (UDP) and returns its answer (empty if none came).
func baresipConsole(port: UInt16, command: String, timeout: Double = 1.5) -> String {
    let descriptor = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
    guard descriptor >= 0 else { return "" }
    defer { close(descriptor) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = port.bigEndian
    let bytes = Array((command + "\n").utf8)
    _ = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            sendto(descriptor, bytes, bytes.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }
    var answer: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    let deadline = Date().addingTimeInterval(timeout)
    // The console answers in several datagrams; collect until 300 ms pass without one.
    while Date() < deadline {
        var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        let quiet = answer.isEmpty ? Int32(max(1, deadline.timeIntervalSinceNow * 1000)) : 300
        guard poll(&poller, 1, quiet) > 0 else { break }
        let count = recv(descriptor, &buffer, buffer.count, 0)
        if count <= 0 { break }
        answer += buffer[0..<count]
    }
    return String(decoding: answer, as: UTF8.self)
}
