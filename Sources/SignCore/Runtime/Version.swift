/// The specification this build implements (docs/SPEC.md).
public enum SignCoreVersion {
    public static let spec = "SignCore/3"
    /// The crypto backend this build runs on (Crypto/CryptoBackend.swift), for reports.
    public static let cryptoBackend = CryptoBackend.name
    /// Whether an Ed25519 signature depends only on key and message (RFC 8032): true except under
    /// CryptoKit, which hedges it with randomness (the EdDSA sign vectors then verify-only).
    public static let ed25519SignaturesAreDeterministic = CryptoBackend.ed25519IsDeterministic
}

/// One-time start of the crypto backend (libsodium's `sodium_init`, the nonce generator's fork
/// handler), run on first use.
enum SignCoreRuntime {
    static let started: Bool = CryptoBackend.start()

    static func start() throws(SignCoreError) {
        guard started else { throw SignCoreError(.cryptoFailure, "the crypto backend failed to start") }
    }
}
