@_spi(Fuzzing) import SignCore
import FuzzCommon

/// SignCore's Ed25519 point check (the swift-crypto backend's, SPEC §6.1) against libsodium's
/// `crypto_core_ed25519_is_valid_point` (the default backend's, behind SigningKey here): the
/// same answer for any bytes. Inputs of other lengths than 32 are refused by both.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzEd25519Point(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    let input = UnsafeRawBufferPointer(start: start, count: count)
    let swift = Ed25519PointCheck.isValid(input)
    let libsodium = (try? SigningKey.ed25519(publicKey: Array(input))) != nil
    guard swift == libsodium else { Fuzz.broken("the Swift point check and libsodium disagree") }
    return 0
}
