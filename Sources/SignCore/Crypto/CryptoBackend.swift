internal import CSignBytes

/// The cryptography SignCore runs on, one backend per build, chosen when the package is built:
///
/// - `LibsodiumOpenSSL` (Backends/LibsodiumOpenSSL.swift, C in CSignShim): the default on Linux;
///   every bench target is measured on it.
/// - `SwiftCrypto` (Backends/SwiftCrypto.swift): apple/swift-crypto, which is CryptoKit on Apple
///   platforms and BoringSSL elsewhere. Always used on Apple platforms; on Linux with the
///   package trait `SwiftCryptoBackend` (`swift build --traits SwiftCryptoBackend`).
///
/// The engine names only the capabilities below (one neutral protocol each, after the shape of
/// swift-crypto itself); a backend is one file implementing all of them. Both give the same
/// bytes for every known-answer vector (SPEC §4.5), except Ed25519 signing under CryptoKit,
/// which is randomised (verify-only there).
#if SIGNCORE_SWIFT_CRYPTO
typealias CryptoBackend = SwiftCrypto
#else
typealias CryptoBackend = LibsodiumOpenSSL
#endif

protocol CryptoBackendProtocol {
    associatedtype SHA256: SHA256Backend
    associatedtype SHA512: SHA512Backend
    associatedtype HMACKey: HMACKeyBackend
    associatedtype Ed25519PrivateKey: Ed25519PrivateKeyBackend
    associatedtype P256Key: P256KeyBackend

    /// The libraries and versions, for reports ("libsodium 1.0.18, OpenSSL 3.0.x").
    static var name: String { get }
    /// Whether Ed25519 signatures are the deterministic ones of RFC 8032 (CryptoKit hedges them).
    static var ed25519IsDeterministic: Bool { get }
    /// One-time library start-up; false when a library cannot start (every key then refuses).
    static func start() -> Bool

    /// Bytes from the operating system's CSPRNG (keys).
    static func randomBytes(into buffer: UnsafeMutableRawBufferPointer)
    /// 16 bytes for a token nonce (SPEC §4.1): unpredictable, never repeated across threads or
    /// a fork; may come from a per-thread generator seeded by the CSPRNG.
    static func nonceBytes(into buffer: UnsafeMutableRawBufferPointer)

    /// Ed25519 (RFC 8032 §5.1.7) under a 32-byte public key; the signature is 64 bytes.
    static func ed25519Verify(publicKey: UnsafeRawBufferPointer, message: UnsafeRawBufferPointer,
                              signature: UnsafeRawBufferPointer) -> Bool
    /// A canonical encoding of a point of the prime-order subgroup, not of small order (SPEC §6.1).
    static func isValidEd25519PublicKey(_ publicKey: UnsafeRawBufferPointer) -> Bool

    /// HMAC-SHA256 and HMAC-SHA512 (RFC 2104) under a key of any length, for other modules
    /// (`HMACSHA256`, `HMACSHA512`); whatever the key leaves in memory is wiped.
    static func hmacSHA256(key: UnsafeRawBufferPointer, message: UnsafeRawBufferPointer, into tag: UnsafeMutableRawBufferPointer)
    static func hmacSHA512(key: UnsafeRawBufferPointer, message: UnsafeRawBufferPointer, into tag: UnsafeMutableRawBufferPointer)

    /// The first counter of `counters` for which SHA-256(head || u64(counter)) has at least
    /// `leadingZeroBits` (1-32) leading zero bits; `head` is at most 47 bytes, so each try is one
    /// compression block (`SHA256CounterSearch`, ATTEST.md §3.2).
    static func firstCounter(head: UnsafeRawBufferPointer, in counters: Range<UInt64>, leadingZeroBits: Int) -> UInt64?
}

/// SHA-512 (FIPS 180-4) as a copyable value, for other modules (`SHA512Hasher`).
protocol SHA512Backend: Sendable {
    init()
    mutating func update(_ bytes: UnsafeRawBufferPointer)
    /// Writes the 64-byte digest; the state is spent.
    mutating func finalize(into digest: UnsafeMutableRawBufferPointer)
}

/// SHA-256 (FIPS 180-4) as a copyable value: a copy continues from where the original was, so a
/// prefix shared by many messages is hashed once.
protocol SHA256Backend: Sendable {
    init()
    mutating func update(_ bytes: UnsafeRawBufferPointer)
    /// Writes the 32-byte digest; the state is spent.
    mutating func finalize(into digest: UnsafeMutableRawBufferPointer)
    /// SHA-256(prefix || data) in one call (SPEC §3.2, §4.2: the digests over a canonical URL).
    static func hash(prefix: UnsafeRawBufferPointer, _ data: UnsafeRawBufferPointer, into digest: UnsafeMutableRawBufferPointer)
}

/// An HMAC-SHA256 key (RFC 2104) with its key schedule prepared once, and the inner state after
/// the fixed start of every signing input under the key (SPEC §4.2), so a MAC hashes only what
/// follows it. Shared read-only by every thread; `destroy` wipes and frees what it holds.
protocol HMACKeyBackend: Sendable {
    init(secret: UnsafeRawBufferPointer, signingInputPrefix: UnsafeRawBufferPointer)
    /// HMAC(secret, message) for any message.
    func authenticate(_ message: UnsafeRawBufferPointer, into tag: UnsafeMutableRawBufferPointer)
    /// HMAC(secret, signingInputPrefix || rest).
    func authenticate(afterPrefix rest: UnsafeRawBufferPointer, into tag: UnsafeMutableRawBufferPointer)
    /// HMAC(secret, signingInputPrefix || the bytes `sc_signing_input_rest_write` makes of `rest`).
    func authenticate(signingInputRest rest: UnsafePointer<sc_signing_input_rest>, into tag: UnsafeMutableRawBufferPointer)
    /// Whether `tag` (32 bytes) is `authenticate(signingInputRest:)` of `rest`, compared in
    /// constant time; the computed tag is wiped.
    func isTag(_ tag: UnsafeRawBufferPointer, ofSigningInputRest rest: UnsafePointer<sc_signing_input_rest>) -> Bool
    /// The secret as given, for export (JWK `k`).
    var secret: [UInt8] { get }
    /// Where the prepared states a MAC over a signing input reads are, for a key set to
    /// prefetch (`SigningKey.preparedSecret`); empty when the backend keeps them out of reach.
    var preparedStates: UnsafeRawBufferPointer { get }
    func destroy()
}

extension HMACKeyBackend {
    /// `tagMatches` (a backend may do it in one call).
    func isTag(_ tag: UnsafeRawBufferPointer, ofSigningInputRest rest: UnsafePointer<sc_signing_input_rest>) -> Bool {
        tagMatches(tag) { authenticate(signingInputRest: rest, into: $0) }
    }
}

/// Whether the 32-byte HMAC tag `compute` writes equals `tag`, compared in constant time; the
/// computed tag is wiped.
func tagMatches(_ tag: UnsafeRawBufferPointer, _ compute: (UnsafeMutableRawBufferPointer) -> Void) -> Bool {
    withUnsafeTemporaryAllocation(byteCount: 32, alignment: 16) { expected in
        compute(expected)
        defer { sc_memzero(expected.baseAddress, 32) }
        return tag.count == 32 && sc_memcmp(expected.baseAddress, tag.baseAddress, 32) == 0
    }
}

/// The fused fast paths, optional: canonical URL, digests, MAC and token in one pass of C for a
/// common URL (CSignShim's `sc_url_common` family), with no canonical copy. A backend adopts
/// this protocol or not; one that does not is given the defaults below, which decline every
/// URL, so the engine canonicalises first (SPEC §2) and hashes what it wrote. Both give the same
/// bytes for every vector. Chosen when the engine is compiled: no cost where absent.
protocol FusedFastPaths: CryptoBackendProtocol {
    /// SHA-256(prefix || canonical URL) of a common URL in one pass: true with the digest
    /// written, false when the URL is not common (the caller then canonicalises it by the
    /// general path alone: the common one has just declined it).
    static func hashCommonURL(prefix: UnsafeRawBufferPointer, url: UnsafeRawBufferPointer,
                              into digest: UnsafeMutableRawBufferPointer) -> Bool
    /// SPEC §4 in one pass for a common URL under an HMAC key: the token's length, with the
    /// whash's 43 characters at `whash` (48 bytes of room) and the token at `token`; nil when
    /// the URL is not common (the signer's general path).
    static func signCommonURL(key: HMACKey, prefix: UnsafeRawBufferPointer, urlClass: Bool, url: UnsafeRawBufferPointer,
                              rest: inout sc_signing_input_rest, parts: inout sc_token_parts,
                              whash: UnsafeMutableRawPointer, token: UnsafeMutableRawPointer) -> Int?
}

/// A backend without the fused paths: every URL declined, the general path taken.
extension CryptoBackendProtocol {
    static var hasFusedFastPaths: Bool { false }

    static func hashCommonURL(prefix: UnsafeRawBufferPointer, url: UnsafeRawBufferPointer,
                              into digest: UnsafeMutableRawBufferPointer) -> Bool { false }

    static func signCommonURL(key: HMACKey, prefix: UnsafeRawBufferPointer, urlClass: Bool, url: UnsafeRawBufferPointer,
                              rest: inout sc_signing_input_rest, parts: inout sc_token_parts,
                              whash: UnsafeMutableRawPointer, token: UnsafeMutableRawPointer) -> Int? { nil }
}

extension FusedFastPaths {
    static var hasFusedFastPaths: Bool { true }
}

/// An Ed25519 private key (RFC 8032 §5.1.5) from its 32-byte seed.
protocol Ed25519PrivateKeyBackend: Sendable {
    init(seed: UnsafeRawBufferPointer) throws(SignCoreError)
    var publicKey: [UInt8] { get }
    /// The seed, for export (JWK `d`).
    var seed: [UInt8] { get }
    /// The 64-byte signature of `message` (deterministic except under CryptoKit).
    func sign(_ message: UnsafeRawBufferPointer, into signature: UnsafeMutableRawBufferPointer) -> Bool
    func destroy()
}

/// An ECDSA P-256 key (verify-only without its scalar); ES256 signs SHA-256(message) and
/// writes r || s, 32 bytes each, big-endian (RFC 7518 §3.4).
protocol P256KeyBackend: Sendable {
    /// A private scalar in [1, n-1], big-endian; its public point is derived.
    init(privateKey: UnsafeRawBufferPointer) throws(SignCoreError)
    /// An uncompressed point 0x04 || x || y that lies on the curve.
    init(publicKey: UnsafeRawBufferPointer) throws(SignCoreError)
    /// A fresh private scalar from the CSPRNG.
    static func generatePrivateKey(into scalar: UnsafeMutableRawBufferPointer) -> Bool
    /// The uncompressed point (65 bytes).
    var publicKey: [UInt8] { get }
    /// Whether the scalar is held (the key can sign).
    var isPrivate: Bool { get }
    /// The scalar, for export (JWK `d`); nil for a public key.
    var privateKey: [UInt8]? { get }
    func sign(_ message: UnsafeRawBufferPointer, into signature: UnsafeMutableRawBufferPointer) -> Bool
    func verify(_ signature: UnsafeRawBufferPointer, for message: UnsafeRawBufferPointer) -> Bool
    func destroy()
}
