import FuzzCommon
import SignCore
import SignDevice

/// Play Integrity's token reader (docs/ATTEST.md §9.8 steps 1-2) on any bytes, under fixed
/// Play Console keys: a refusal with its code, never a trap, never a verdict (no one holds the
/// verification key's private half).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzPlayIntegrity(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    let bytes = Array(UnsafeRawBufferPointer(start: start, count: count))
    do {
        _ = try verifier.verdict(bytes)
        Fuzz.broken("a verdict was read that no one could have signed")
    } catch {
        if ![.platformTokenMalformed, .certificateUntrusted].contains(error.code) { Fuzz.broken("an unexpected refusal: \(error.code.name)") }
    }
    return 0
}

/// Fixed keys: a decryption key of 32 bytes of 7, and a P-256 verification key whose private half
/// was thrown away.
let verifier: PlayIntegrityVerifier = {
    // SubjectPublicKeyInfo of a P-256 point (the generator G): header, then the point.
    let header: [UInt8] = [0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01, 0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE,
                           0x3D, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00]
    let point: [UInt8] = [0x04,
        0x6B, 0x17, 0xD1, 0xF2, 0xE1, 0x2C, 0x42, 0x47, 0xF8, 0xBC, 0xE6, 0xE5, 0x63, 0xA4, 0x40, 0xF2, 0x77, 0x03, 0x7D, 0x81, 0x2D, 0xEB, 0x33, 0xA0,
        0xF4, 0xA1, 0x39, 0x45, 0xD8, 0x98, 0xC2, 0x96,
        0x4F, 0xE3, 0x42, 0xE2, 0xFE, 0x1A, 0x7F, 0x9B, 0x8E, 0xE7, 0xEB, 0x4A, 0x7C, 0x0F, 0x9E, 0x16, 0x2B, 0xCE, 0x33, 0x57, 0x6B, 0x31, 0x5E, 0xCE,
        0xCB, 0xB6, 0x40, 0x68, 0x37, 0xBF, 0x51, 0xF5]
    do { return try PlayIntegrityVerifier(decryptionKey: Array(repeating: 7, count: 32), verificationKey: header + point) } catch {
        fatalError("fixed Play Integrity keys: \(error)")
    }
}()
