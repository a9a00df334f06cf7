import SignCore

/// What binds a challenge and a token to a client (ATTEST.md §1): the thumbprint of the key that
/// signs its requests, and the origin it attested at.
public enum AttestationScope {
    /// The key thumbprint: the 32 raw bytes of the RFC 7638 thumbprint (SPEC §6.2), whatever the
    /// key's `kid`.
    public static func keyThumbprint(of key: SigningKey) -> [UInt8] { key.thumbprint.bytes }

    /// The origin of a canonical URL (SPEC §2): the scheme, `://`, the host and any port, without
    /// the path. Nil for a text that is not a canonical `http` or `https` URL.
    public static func origin(ofCanonicalURL url: String) -> String? {
        let bytes = Array(url.utf8)
        let schemeEnd: Int
        if bytes.starts(with: "https://".utf8) { schemeEnd = 8 } else if bytes.starts(with: "http://".utf8) { schemeEnd = 7 } else { return nil }
        let end = bytes[schemeEnd...].firstIndex(of: UInt8(ascii: "/")) ?? bytes.count
        guard end > schemeEnd else { return nil }
        return String(decoding: bytes[..<end], as: UTF8.self)
    }

    /// The origin digest: SHA-256("SignCore/3 attest origin\n" || origin).
    public static func originDigest(_ origin: String) -> [UInt8] {
        var hasher = SHA256Hasher()
        hasher.update("SignCore/3 attest origin\n".utf8)
        hasher.update(origin.utf8)
        return hasher.finalize().bytes
    }
}
