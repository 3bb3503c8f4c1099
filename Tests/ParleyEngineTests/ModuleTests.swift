import Testing
@testable import ParleyEngine
