import FuzzCommon
import SignCore

/// SPEC §6 on any document: a clear error, or keys that serialise and parse back to the same ids.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJWK(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    let input = UnsafeRawBufferPointer(start: start, count: count)
    if let key = try? JWK.parseKey(bytes: input) {
        guard let text = try? JWK.serialize(key, includePrivate: true), let again = try? JWK.parseKey(text), again.id == key.id,
              again.publicKey == key.publicKey else {
            Fuzz.broken("a parsed key does not round-trip")
        }
    }
    _ = try? KeySet(jwksBytes: input)
    _ = try? KeySet(jwksBytes: input, allowPrivateKeys: true)
    return 0
}
