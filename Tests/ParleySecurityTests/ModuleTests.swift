import Testing
@testable import ParleySecurity

@Suite struct ModuleTests {
    @Test func moduleBuilds() {}
}
