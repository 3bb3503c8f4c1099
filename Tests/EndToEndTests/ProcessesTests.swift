import Foundation
import ParleyProcesses
import ParleyTestLanes
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite(.lane(.blocking))
struct ProcessesTests {
    @Test func childrenDoNotInheritOpenSockets() throws {
        // SwiftNIO's sockets are not close-on-exec; a child must still not inherit them (a listening socket held by
        // a long-lived child keeps the port busy after the server closed it).
        // `ls` lists the directory it opened itself too, on the lowest free number: when the socket also got 3,
        // only the count tells them apart. A copy far above the low numbers is checked by number.
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(descriptor) }
        try #require(descriptor > 2)
        let high = fcntl(descriptor, F_DUPFD, 200)
        defer { close(high) }
        try #require(high >= 200)
        let result = try ChildProcess.run("/bin/ls", ["/proc/self/fd"])
        let inherited = result.output.split(separator: "\n").compactMap { Int32($0) }
        #expect(!inherited.contains(high), "child saw descriptors \(inherited)")
        #expect(inherited.filter { $0 > 2 }.count == 1, "beyond 0, 1, 2 only ls's own directory: \(inherited)")
        #expect(inherited.contains(0) && inherited.contains(1) && inherited.contains(2))
    }
}
