@_spi(Fuzzing) import SignCore
import FuzzCommon

/// SignCore's Ed25519 point check (the swift-crypto backend's, SPEC §6.1) against libsodium's
/// `crypto_core_ed25519_is_valid_point` (the default backend's, behind SigningKey here): the
/// same answer for the input as given (refused by both unless 32 bytes) and for its first 32
/// bytes, zero-padded, so that every run reaches the curve arithmetic.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzEd25519Point(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    let input = Array(UnsafeRawBufferPointer(start: start, count: count))
    for bytes in [input, Array((input + [UInt8](repeating: 0, count: 32)).prefix(32))] {
        let swift = bytes.withUnsafeBytes { Ed25519PointCheck.isValid($0) }
        let libsodium = (try? SigningKey.ed25519(publicKey: bytes)) != nil
        guard swift == libsodium else { Fuzz.broken("the Swift point check and libsodium disagree") }
    }
    return 0
}
