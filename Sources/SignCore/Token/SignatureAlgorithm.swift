/// The signature algorithms (SPEC §6). A key has exactly one; a token never names it, so a
/// verifier cannot be talked into checking a signature with another algorithm.
public enum SignatureAlgorithm: String, Sendable, CaseIterable {
    /// HMAC-SHA256 under a shared secret of at least 32 bytes (JWK `oct`, `alg` HS256).
    case hmacSHA256 = "HS256"
    /// Ed25519, RFC 8032 (JWK `OKP`/`Ed25519`, `alg` EdDSA).
    case ed25519 = "EdDSA"
    /// ECDSA P-256 with SHA-256, signature r || s (JWK `EC`/`P-256`, `alg` ES256).
    case p256 = "ES256"

    /// The name as signed (SPEC §4.2), without building a String.
    var name: StaticString {
        switch self {
        case .hmacSHA256: "HS256"
        case .ed25519: "EdDSA"
        case .p256: "ES256"
        }
    }

    /// Bytes of a signature.
    public var signatureByteCount: Int { self == .hmacSHA256 ? 32 : 64 }
}
