import FuzzCommon
import SignCore

/// SPEC §2 on any bytes: a clear error or a canonical form that is its own canonical form
/// (§2.9: when it is itself within the 8192-byte input limit; the escapes of §2.8 can triple
/// an input's length, which this fuzzer found).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCanonicalURL(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    let input = Array(UnsafeRawBufferPointer(start: start, count: count))
    guard let canonical = try? CanonicalURL.canonicalBytes(input), canonical.count <= CanonicalURL.maxInputBytes else { return 0 }
    guard (try? CanonicalURL.canonicalBytes(canonical)) == canonical else { Fuzz.broken("canonical form not idempotent") }
    return 0
}
