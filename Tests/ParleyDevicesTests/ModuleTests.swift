import Testing
@testable import ParleyDevices
