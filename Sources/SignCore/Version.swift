import CSignShim

/// The specification this build implements (docs/SPEC.md).
public enum SignCoreVersion {
    public static let spec = "SignCore/1"
}

/// One-time library start (libsodium's `sodium_init`), run on first use.
enum SignCoreRuntime {
    private static let started: Bool = sc_init() == 0

    static func start() throws(SignCoreError) {
        guard started else { throw SignCoreError(.cryptoFailure, "libsodium failed to initialise") }
    }
}
