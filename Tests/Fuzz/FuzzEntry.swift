// libFuzzer's entry point for `make fuzz`: compiled only into the instrumented fuzz binary, with the parsers'
// sources and Sources/ParleyFuzzTargets, never into the package. PARLEY_FUZZ_TARGET picks the target.
import Foundation

private let target: FuzzTarget = {
    let name = ProcessInfo.processInfo.environment["PARLEY_FUZZ_TARGET"] ?? ""
    guard let target = FuzzTarget.named(name) else {
        fatalError(
            "PARLEY_FUZZ_TARGET must be one of \(FuzzTarget.all.map(\.name).joined(separator: ", ")), got \"\(name)\"")
    }
    return target
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    target.run(data.map { Array(UnsafeBufferPointer(start: $0, count: count)) } ?? [])
    return 0
}
