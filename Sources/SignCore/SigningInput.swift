/// The bytes a wtoken signature covers (SPEC §4.2). Every variable-length field is
/// length-prefixed and every other field has a fixed size, so two different requests or
/// tokens can never produce the same signing input.
///
///     "SignCore/1 wtoken\n"
///     u8 len(alg)  || alg            ("HS256", "EdDSA", "ES256")
///     u8 len(kid)  || kid
///     target digest (32)             SHA-256("SignCore/1 target\n" || method || " " || canonical URL)
///     whash (32)
///     created  (u64, big-endian)
///     lifetime (u32, big-endian)
///     nonce (16)
///     u16 len(account) || account    (UTF-8, big-endian length)
public enum SigningInput {
    static let prefix: [UInt8] = Array("SignCore/1 wtoken\n".utf8)
    static let targetPrefix: [UInt8] = Array("SignCore/1 target\n".utf8)
    static let space: [UInt8] = [0x20]

    /// SHA-256 over the method and the canonical URL (SPEC §4.2.1).
    public static func targetDigest(method: HTTPMethod, canonicalURL: UnsafeRawBufferPointer) -> SHA256Digest {
        var hasher = SHA256Hasher()
        targetPrefix.withUnsafeBytes { hasher.update($0) }
        hasher.update(method.rawValue.utf8)
        space.withUnsafeBytes { hasher.update($0) }
        hasher.update(canonicalURL)
        return hasher.finalize()
    }

    /// The signing input as bytes (for interoperability checks; signing writes it directly).
    public static func bytes(algorithm: SignatureAlgorithm, keyID: String, target: SHA256Digest, whash: SHA256Digest,
                             created: Int64, lifetime: Int64, nonce: Nonce, account: String) -> [UInt8] {
        var out = [UInt8]()
        write(algorithm: algorithm, keyID: keyID, target: target, whash: whash, created: created, lifetime: lifetime,
              nonce: nonce, account: account, into: &out)
        return out
    }

    /// Appends the signing input to `out`.
    static func write(algorithm: SignatureAlgorithm, keyID: String, target: SHA256Digest, whash: SHA256Digest,
                      created: Int64, lifetime: Int64, nonce: Nonce, account: String, into out: inout [UInt8]) {
        out.append(contentsOf: prefix)
        out.append(UInt8(algorithm.rawValue.utf8.count))
        out.append(contentsOf: algorithm.rawValue.utf8)
        out.append(UInt8(keyID.utf8.count))
        out.append(contentsOf: keyID.utf8)
        target.withUnsafeBytes { out.append(contentsOf: $0) }
        whash.withUnsafeBytes { out.append(contentsOf: $0) }
        appendBigEndian(UInt64(created), byteCount: 8, to: &out)
        appendBigEndian(UInt64(lifetime), byteCount: 4, to: &out)
        withUnsafeBytes(of: nonce.words) { out.append(contentsOf: $0) }
        appendBigEndian(UInt64(account.utf8.count), byteCount: 2, to: &out)
        out.append(contentsOf: account.utf8)
    }

    private static func appendBigEndian(_ value: UInt64, byteCount: Int, to out: inout [UInt8]) {
        for shift in stride(from: (byteCount - 1) * 8, through: 0, by: -8) {
            out.append(UInt8(truncatingIfNeeded: value >> UInt64(shift)))
        }
    }
}
