import FuzzCommon
import SignCore

/// SPEC §4.1 on any header value: a clear error, or a token whose encoding is exactly the input
/// (every field has one spelling).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzToken(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    let text = Fuzz.string(Array(UnsafeRawBufferPointer(start: start, count: count)))
    guard let token = try? WToken(parsing: text) else { return 0 }
    guard token.encoded == text else { Fuzz.broken("a token parsed from a non-canonical spelling") }
    return 0
}
