import FuzzCommon
import SignAttest
import SignCore

/// ATTEST.md §5.4 on any header value: a clear error, or a token whose encoding is exactly the
/// input and whose signature check runs to an answer.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzAttestToken(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    let text = Fuzz.string(Array(UnsafeRawBufferPointer(start: start, count: count)))
    guard let token = try? AttestationToken(parsing: text) else { return 0 }
    guard token.text == text else { Fuzz.broken("a token parsed from a non-canonical spelling") }
    guard token.expiresAt >= token.issuedAt else { Fuzz.broken("a token expires before it is issued") }
    _ = try? Fuzz.key.verifyMessage(Array(token.body), signature: Array(token.signature), context: AttestationToken.signatureContext)
    return 0
}
