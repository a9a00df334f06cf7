/// The private half of an EdDSA or ES256 key held outside this process: the Secure Enclave or
/// Keychain on Apple platforms, the Android Keystore through a bridge, an HSM, a cloud KMS. The
/// app implements it; `SigningKey.external(_:)` wraps it into a key that `Signer.signAsync`
/// uses like any other (SPEC §4.5), and that verifies locally with its public key.
///
/// Nothing secret crosses this interface: SignCore hands over the signing input (SPEC §4.2,
/// public bytes that will travel in the request anyway) and takes back the signature, which it
/// verifies under `publicKey` before putting it in a token, so a wrong key, a DER-encoded ECDSA
/// signature or a truncated answer fails at once (`cryptoFailure`) instead of at the server.
public protocol ExternalSigner: Sendable {
    /// `.ed25519` or `.p256` (HMAC secrets have no private half to hold elsewhere).
    var algorithm: SignatureAlgorithm { get }
    /// Ed25519: the 32-byte public key; ES256: the 65-byte uncompressed point 0x04 || x || y
    /// (CryptoKit: `publicKey.x963Representation`).
    var publicKey: [UInt8] { get }
    /// The signature of `signingInput`: Ed25519 (RFC 8032) over it, 64 bytes; ES256: ECDSA over
    /// SHA-256(signingInput) as r || s, 64 bytes (CryptoKit: `signature(for:).rawRepresentation`,
    /// which hashes with SHA-256 itself). May suspend (a user-presence prompt, a network KMS).
    func signature(for signingInput: [UInt8]) async throws -> [UInt8]
}
