import Foundation
import ParleyProcesses
import Testing

#if canImport(Glibc)
import Glibc
#endif

struct ProcessesTests {
    @Test func childrenDoNotInheritOpenSockets() throws {
        // SwiftNIO's sockets are not close-on-exec; a child must still not inherit them (a listening socket held by
        // a long-lived child keeps the port busy after the server closed it).
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(descriptor) }
        try #require(descriptor > 2)
        let result = try ChildProcess.run("/bin/ls", ["/proc/self/fd"])
        let inherited = result.output.split(separator: "\n").compactMap { Int32($0) }
        #expect(!inherited.contains(descriptor), "child saw descriptors \(inherited)")
        #expect(inherited.contains(0) && inherited.contains(1) && inherited.contains(2))
    }
}
