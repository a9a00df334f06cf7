/// The 128-bit random value that makes every token unique (SPEC §4.1); a fixed-size value.
public struct Nonce: Hashable, Sendable, CustomStringConvertible {
    public static let byteCount = 16
    var words: (UInt64, UInt64)

    /// A fresh nonce from the crypto backend: with libsodium this thread's ChaCha20 generator,
    /// seeded from the system CSPRNG and reseeded after fork (no system call or lock per nonce);
    /// with swift-crypto the system CSPRNG itself.
    public static func random() -> Nonce {
        precondition(SignCoreRuntime.started, "the crypto backend failed to start")
        var nonce = Nonce(words: (0, 0))
        withUnsafeMutableBytes(of: &nonce.words) { CryptoBackend.nonceBytes(into: $0) }
        return nonce
    }

    /// Exactly 16 bytes, or nil.
    public init?(bytes: [UInt8]) {
        guard bytes.count == Self.byteCount else { return nil }
        words = (0, 0)
        withUnsafeMutableBytes(of: &words) { $0.copyBytes(from: bytes) }
    }

    init(words: (UInt64, UInt64)) { self.words = words }

    public var bytes: [UInt8] { withUnsafeBytes(of: words) { Array($0) } }

    public static func == (a: Nonce, b: Nonce) -> Bool { a.words == b.words }
    public func hash(into hasher: inout Hasher) { hasher.combine(words.0); hasher.combine(words.1) }

    /// Base64url, 22 characters.
    public var description: String { Base64URL.encode(bytes) }
}
