/// The specification this build implements (docs/SPEC.md).
public enum SignCoreVersion {
    public static let spec = "SignCore/3"
    /// The crypto backend this build runs on (Crypto/CryptoBackend.swift), for reports.
    public static let cryptoBackend = CryptoBackend.name
}

/// One-time start of the crypto backend (libsodium's `sodium_init`, the nonce generator's fork
/// handler), run on first use.
enum SignCoreRuntime {
    static let started: Bool = CryptoBackend.start()

    static func start() throws(SignCoreError) {
        guard started else { throw SignCoreError(.cryptoFailure, "the crypto backend failed to start") }
    }
}
