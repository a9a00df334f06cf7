import CSignShim

/// The specification this build implements (docs/SPEC.md).
public enum SignCoreVersion {
    public static let spec = "SignCore/3"
}

/// One-time library start (libsodium's `sodium_init`, the nonce generator's fork handler),
/// run on first use.
enum SignCoreRuntime {
    static let started: Bool = sc_init() == 0

    static func start() throws(SignCoreError) {
        guard started else { throw SignCoreError(.cryptoFailure, "libsodium failed to initialise") }
    }
}
