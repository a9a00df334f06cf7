#if canImport(CSignShim)
import CSignShim
#endif
import Testing
@testable import SignCore

/// Key constructors and decoders never trap, libcrypto's error queue stays clean,
/// and secret key text is read from bytes into wiped buffers.
@Suite struct KeyParsingTests {
    /// `p256(publicKey:)` without an id computed the thumbprint before checking the length and
    /// trapped on a short point. Every public constructor and decoder, on empty, short and long input.
    @Test func constructorsNeverTrapOnAnyLength() {
        for length in [0, 1, 2, 31, 32, 33, 63, 64, 65, 66, 200] {
            let bytes = [UInt8](repeating: 0x04, count: length)
            #expect((try? SigningKey.p256(publicKey: bytes)) == nil)
            #expect((try? SigningKey.p256(publicKey: bytes, id: "k")) == nil)
            _ = try? SigningKey.p256(privateKey: bytes)
            _ = try? SigningKey.ed25519(publicKey: bytes)
            _ = try? SigningKey.ed25519(seed: bytes)
            _ = try? SigningKey.hmac(secret: bytes)
            _ = Nonce(bytes: bytes)
            _ = SHA256Digest(bytes: bytes)
            _ = Base64URL.decode(bytes.withUnsafeBytes { Base64URL.encode($0) })
            _ = try? WToken(parsing: String(decoding: bytes, as: UTF8.self))
            _ = try? CanonicalURL.canonicalize(bytes: bytes)
            _ = try? JWK.parseKey(String(decoding: bytes, as: UTF8.self))
            _ = try? KeySet(jwks: String(decoding: bytes, as: UTF8.self))
            _ = SHA256Digest(base64url: String(repeating: "A", count: length))
        }
        #expect(throws: SignCoreError.self) { _ = try SigningKey.p256(publicKey: [0x04, 1, 2]) }
    }

    /// A failed libcrypto call leaves nothing on this thread's error queue, where a TLS library
    /// would read it as its own failure.
    @Test func openSSLErrorQueueStaysClean() throws {
        let key = try SigningKey.generate(.p256)
        let message: [UInt8] = Array("signing input".utf8)
        let n: [UInt8] = [0xFF, 0xFF, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
                          0xBC, 0xE6, 0xFA, 0xAD, 0xA7, 0x17, 0x9E, 0x84, 0xF3, 0xB9, 0xCA, 0xC2, 0xFC, 0x63, 0x25, 0x51]
        for signature in [[UInt8](repeating: 0, count: 64), n + n, [UInt8](repeating: 0xFF, count: 64), [UInt8](repeating: 1, count: 64)] {
            let valid = message.withUnsafeBytes { m in signature.withUnsafeBytes { key.isValidSignature($0, for: m) } }
            #expect(!valid)
            #expect(openSSLErrorPending() == false)
        }
        _ = try? SigningKey.p256(publicKey: [0x04] + [UInt8](repeating: 7, count: 64))  // not on the curve
        #expect(openSSLErrorPending() == false)
        _ = try? SigningKey.p256(privateKey: n)  // the group order
        #expect(openSSLErrorPending() == false)
        _ = try? SigningKey.p256(privateKey: [UInt8](repeating: 0, count: 32))
        #expect(openSSLErrorPending() == false)
    }

    /// Ed25519 public keys of small order or not canonical are refused at load (SPEC §6.1).
    @Test func ed25519PublicKeysAreValidPoints() throws {
        let identity = [1] + [UInt8](repeating: 0, count: 31)
        #expect(throws: SignCoreError.self) { _ = try SigningKey.ed25519(publicKey: identity) }
        #expect(throws: SignCoreError.self) { _ = try SigningKey.ed25519(publicKey: [UInt8](repeating: 0xFF, count: 32)) }
        _ = try SigningKey.ed25519(publicKey: try SigningKey.generate(.ed25519).publicKey)
    }

    /// Key documents read as bytes give the same keys as from Strings; the secret goes from the
    /// document's own (wiped) copy into the key's buffer.
    @Test func keysFromBytes() throws {
        for algorithm in SignatureAlgorithm.allCases {
            let key = try SigningKey.generate(algorithm)
            let text = try JWK.serialize(key, includePrivate: true)
            var bytes = Array(text.utf8)
            let parsed = try withBytes(of: bytes) { (raw) throws(SignCoreError) in try JWK.parseKey(bytes: raw) }
            wipe(&bytes)
            #expect(parsed.id == key.id && parsed.publicKey == key.publicKey)
            #expect(JWK.thumbprint(of: parsed) == JWK.thumbprint(of: key))
            let set = try withBytes(of: Array(text.utf8)) { (raw) throws(SignCoreError) in try KeySet(jwksBytes: raw, allowPrivateKeys: true) }
            #expect(set.ids == [key.id])
        }
    }

    /// SPEC §6.1's order: `alg` is checked before the secret is decoded.
    @Test func algorithmIsCheckedBeforeTheSecret() {
        let text = #"{"kty":"oct","k":"not base64url!","alg":"ES256"}"#
        let error = #expect(throws: SignCoreError.self) { _ = try JWK.parseKey(text) }
        #expect(error?.code == .algorithmMismatch)
    }
}

/// Whether OpenSSL's error queue of this thread holds an error (the default backend must leave
/// none behind); false where the build runs on swift-crypto.
private func openSSLErrorPending() -> Bool {
    #if canImport(CSignShim) && !SIGNCORE_SWIFT_CRYPTO
    sc_openssl_error_pending() != 0
    #else
    false
    #endif
}
