import Foundation
import ParleyProcesses
import ParleyTestLanes
import Synchronization
import Testing

@testable import ParleyTUI

#if canImport(Glibc)
import Glibc
#endif

@Suite("Terminal writer", .lane(.blocking))
struct TerminalWriterTests {
    /// A pipe: (read end, write end).
    static func pipe() -> (Int32, Int32) {
        var ends: [Int32] = [0, 0]
        #expect(Glibc.pipe(&ends) == 0)
        return (ends[0], ends[1])
    }

    /// Reads from `descriptor` until `count` bytes came or it closes.
    static func read(_ descriptor: Int32, count: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while bytes.count < count {
            let got = buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress!, $0.count) }
            if got <= 0 { break }
            bytes += buffer[0..<got]
        }
        return bytes
    }

    @Test("bursts arrive whole and in order, and send returns while the terminal has not taken them yet")
    func orderAndOverlap() async throws {
        let (readEnd, writeEnd) = Self.pipe()
        defer { close(readEnd) }
        let writer = TerminalWriter(descriptor: writeEnd)
        // Each burst is bigger than a pipe's buffer (64 KiB), so nothing is written until the reader below reads.
        let bursts = (0..<5).map { index in [UInt8](repeating: UInt8(index + 1), count: 100_000) }
        let started = ContinuousClock.now
        writer.send(bursts[0])
        #expect(writer.isBusy)  // the pipe is full: the writer thread waits for the reader, the caller does not
        #expect(writer.hasThread)
        let sendTime = ContinuousClock.now - started
        #expect(sendTime < .seconds(1))
        // The reader is a thread of its own: this test blocks its own thread in the writer's wait below (what is
        // tested), and a task would need one of the test process's two worker threads, which the suite's other tests
        // may all hold. Its bytes are awaited without holding a thread.
        async let received = onOwnThread { Self.read(readEnd, count: 500_000) }
        for burst in bursts.dropFirst() { writer.send(burst) }
        writer.wait()
        #expect(!writer.isBusy)
        writer.stop()
        close(writeEnd)
        #expect(await received == bursts.flatMap { $0 })
    }

    @Test("a burst the terminal takes at once is written on the caller's thread; its descriptor stays blocking")
    func writesAtOnceWhenItFits() {
        let (readEnd, writeEnd) = Self.pipe()
        defer {
            close(readEnd)
            close(writeEnd)
        }
        let writer = TerminalWriter(descriptor: writeEnd)
        let bursts = (0..<3).map { index in [UInt8](repeating: UInt8(index + 1), count: 6_000) }
        for burst in bursts { writer.send(burst) }
        #expect(!writer.isBusy)
        #expect(!writer.hasThread, "no burst waited, so no thread was started")
        #expect(fcntl(writeEnd, F_GETFL) & O_NONBLOCK == 0, "the caller's own descriptor is left blocking")
        #expect(Self.read(readEnd, count: 18_000) == bursts.flatMap { $0 })
        writer.stop()
    }

    @Test("a regular file is not reopened: its bursts go through the thread, from where the descriptor stands")
    func regularFileKeepsItsOffset() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("parley-writer-\(getpid()).txt").path
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        #expect(descriptor >= 0)
        defer {
            close(descriptor)
            unlink(path)
        }
        #expect(TerminalWriter.reopenNonBlocking(descriptor) == nil)
        _ = Glibc.write(descriptor, "head ", 5)
        let writer = TerminalWriter(descriptor: descriptor)
        writer.send(Array("tail".utf8))
        writer.stop()
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "head tail")
    }

    @Test("after stop, send writes at once on the caller's thread; an empty burst starts nothing")
    func afterStop() {
        let (readEnd, writeEnd) = Self.pipe()
        defer {
            close(readEnd)
            close(writeEnd)
        }
        let writer = TerminalWriter(descriptor: writeEnd)
        writer.send([])
        #expect(!writer.isBusy)
        writer.stop()
        writer.send(Array("done".utf8))
        #expect(!writer.isBusy)
        #expect(Self.read(readEnd, count: 4) == Array("done".utf8))
    }
}
