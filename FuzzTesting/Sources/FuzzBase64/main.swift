@_spi(Fuzzing) import SignCore
import FuzzCommon

/// base64url on any bytes: the shim's block decoder (SSSE3, padded tails) and the constant-time
/// decoder accept exactly the same texts with the same bytes; whatever decodes is the one
/// canonical spelling of its bytes; any bytes encode to a text both decode back; and the
/// constant-time encoder of key material writes the same text as the shim's.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzBase64(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    let input = UnsafeRawBufferPointer(start: start, count: count)
    let viaBlocks = Base64URL.decodePublic(input), viaArithmetic = Base64URL.decode(input)
    guard viaBlocks == viaArithmetic else { Fuzz.broken("the block and constant-time decoders disagree") }
    if let bytes = viaBlocks, Array(Base64URL.encode(bytes).utf8) != Array(input) {
        Fuzz.broken("a decoded text is not the canonical spelling of its bytes")
    }
    let encoded = Base64URL.encode(input)
    guard Base64URL.encodeSecret(Array(input)) == encoded else { Fuzz.broken("the constant-time and table encoders disagree") }
    let text = Array(encoded.utf8)
    let back = text.withUnsafeBytes { (Base64URL.decodePublic($0), Base64URL.decode($0)) }
    guard back.0 == Array(input), back.1 == Array(input) else { Fuzz.broken("encoded bytes do not decode back") }
    return 0
}
