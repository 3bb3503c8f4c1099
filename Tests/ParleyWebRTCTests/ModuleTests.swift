import Testing

@testable import ParleyWebRTC

@Suite struct ModuleTests {
    @Test func builds() {}
}
