#if !SIGNCORE_SWIFT_CRYPTO
internal import CSignBytes
internal import CSignShim

/// The default backend on Linux: libsodium (Ed25519, randomness) and OpenSSL libcrypto
/// (SHA-256 with SHA-NI, HMAC states, ECDSA P-256) through the C shim, CSignShim. Keys live in
/// raw memory of their own, wiped by `destroy`; the hot path takes no reference count.
enum LibsodiumOpenSSL: CryptoBackendProtocol {
    static var name: String { "libsodium + OpenSSL libcrypto (CSignShim)" }

    static var ed25519IsDeterministic: Bool { true }

    static func start() -> Bool { sc_init() == 0 }

    static func randomBytes(into buffer: UnsafeMutableRawBufferPointer) { sc_random_bytes(buffer.baseAddress, buffer.count) }

    /// This thread's ChaCha20 generator, seeded from getrandom and reseeded after fork: no
    /// system call or lock per nonce.
    static func nonceBytes(into buffer: UnsafeMutableRawBufferPointer) {
        precondition(buffer.count == 16)
        sc_nonce_bytes(buffer.baseAddress)
    }

    static func ed25519Verify(publicKey: UnsafeRawBufferPointer, message: UnsafeRawBufferPointer,
                              signature: UnsafeRawBufferPointer) -> Bool {
        sc_ed25519_verify(publicKey.baseAddress, message.baseAddress, message.count, signature.baseAddress) == 0
    }

    /// libsodium's check and SignCore's must both accept: libsodium before 1.0.21 (unless
    /// patched, as Debian's 1.0.18-1+deb12u1 is) takes points with a component of order 2 for
    /// valid (CVE-2025-69277), and which libsodium a system has is not ours to choose.
    static func isValidEd25519PublicKey(_ publicKey: UnsafeRawBufferPointer) -> Bool {
        publicKey.count == 32 && sc_ed25519_is_valid_point(publicKey.baseAddress) == 1 && Ed25519PointCheck.isValid(publicKey)
    }

    struct SHA512: SHA512Backend {
        private var state = sc_sha512_state()

        init() { sc_sha512_init(&state) }

        mutating func update(_ bytes: UnsafeRawBufferPointer) { sc_sha512_update(&state, bytes.baseAddress, bytes.count) }

        mutating func finalize(into digest: UnsafeMutableRawBufferPointer) { sc_sha512_final(&state, digest.baseAddress) }
    }

    static func hmacSHA256(key: UnsafeRawBufferPointer, message: UnsafeRawBufferPointer, into tag: UnsafeMutableRawBufferPointer) {
        var prepared = sc_hmac_key()
        sc_hmac_key_init(&prepared, key.baseAddress, key.count)
        sc_hmac_sha256(&prepared, message.baseAddress, message.count, tag.baseAddress)
        sc_memzero(&prepared, MemoryLayout<sc_hmac_key>.size)
    }

    static func hmacSHA512(key: UnsafeRawBufferPointer, message: UnsafeRawBufferPointer, into tag: UnsafeMutableRawBufferPointer) {
        sc_hmac_sha512(key.baseAddress, key.count, message.baseAddress, message.count, tag.baseAddress)
    }

    static func firstCounter(head: UnsafeRawBufferPointer, in counters: Range<UInt64>, leadingZeroBits: Int) -> UInt64? {
        var found: UInt64 = 0
        let count = counters.upperBound - counters.lowerBound
        guard sc_sha256_counter_search(head.baseAddress, head.count, counters.lowerBound, count, UInt32(leadingZeroBits), &found) == 1
        else { return nil }
        return found
    }

    struct SHA256: SHA256Backend {
        private var state = sc_sha256_state()

        init() { sc_sha256_init(&state) }

        mutating func update(_ bytes: UnsafeRawBufferPointer) { sc_sha256_update(&state, bytes.baseAddress, bytes.count) }

        mutating func finalize(into digest: UnsafeMutableRawBufferPointer) { sc_sha256_final(&state, digest.baseAddress) }

        static func hash(prefix: UnsafeRawBufferPointer, _ data: UnsafeRawBufferPointer, into digest: UnsafeMutableRawBufferPointer) {
            sc_sha256_prefixed(prefix.baseAddress, prefix.count, data.baseAddress, data.count, digest.baseAddress)
        }
    }

    /// One buffer: `sc_hmac_key` (inner and outer states after the padded key), the inner state
    /// after the signing-input prefix, then the raw secret.
    struct HMACKey: HMACKeyBackend, @unchecked Sendable {
        private let base: UnsafeMutableRawPointer
        private let byteCount: Int
        private static let statesSize = MemoryLayout<sc_hmac_key>.size + MemoryLayout<sc_sha256_state>.size

        init(secret: UnsafeRawBufferPointer, signingInputPrefix prefix: UnsafeRawBufferPointer) {
            byteCount = Self.statesSize + secret.count
            base = .allocate(byteCount: byteCount, alignment: 64)  // each state starts a cache line
            let key = base.bindMemory(to: sc_hmac_key.self, capacity: 1)
            sc_hmac_key_init(key, secret.baseAddress, secret.count)
            let prefixed = (base + MemoryLayout<sc_hmac_key>.size).bindMemory(to: sc_sha256_state.self, capacity: 1)
            prefixed.initialize(to: key.pointee.inner)
            sc_sha256_update(prefixed, prefix.baseAddress, prefix.count)
            (base + Self.statesSize).copyMemory(from: secret.baseAddress ?? UnsafeRawPointer(base), byteCount: secret.count)
        }

        fileprivate var key: UnsafePointer<sc_hmac_key> { UnsafePointer(base.assumingMemoryBound(to: sc_hmac_key.self)) }
        fileprivate var prefixedInner: UnsafePointer<sc_sha256_state> {
            UnsafePointer((base + MemoryLayout<sc_hmac_key>.size).assumingMemoryBound(to: sc_sha256_state.self))
        }

        func authenticate(_ message: UnsafeRawBufferPointer, into tag: UnsafeMutableRawBufferPointer) {
            sc_hmac_sha256(key, message.baseAddress, message.count, tag.baseAddress)
        }

        func authenticate(afterPrefix rest: UnsafeRawBufferPointer, into tag: UnsafeMutableRawBufferPointer) {
            sc_hmac_sha256_continue(key, prefixedInner, rest.baseAddress, rest.count, tag.baseAddress)
        }

        func authenticate(signingInputRest rest: UnsafePointer<sc_signing_input_rest>, into tag: UnsafeMutableRawBufferPointer) {
            sc_hmac_sha256_signing_input(key, prefixedInner, rest, tag.baseAddress)
        }

        func isTag(_ tag: UnsafeRawBufferPointer, ofSigningInputRest rest: UnsafePointer<sc_signing_input_rest>) -> Bool {
            tag.count == 32 && sc_hmac_sha256_signing_input_matches(key, prefixedInner, rest, tag.baseAddress) == 1
        }

        var secret: [UInt8] { Array(UnsafeRawBufferPointer(start: base + Self.statesSize, count: byteCount - Self.statesSize)) }

        /// The outer state and the prefixed inner one: a MAC over a signing input reads only
        /// those (four cache lines, not the unprefixed inner state's two more).
        var preparedStates: UnsafeRawBufferPointer {
            let outer = MemoryLayout<sc_hmac_key>.offset(of: \sc_hmac_key.outer) ?? 0
            return UnsafeRawBufferPointer(start: base + outer, count: Self.statesSize - outer)
        }

        func destroy() {
            sc_memzero(base, byteCount)
            base.deallocate()
        }
    }

    /// libsodium's 64-byte secret key (seed || public key).
    struct Ed25519PrivateKey: Ed25519PrivateKeyBackend, @unchecked Sendable {
        private let secretKey: UnsafeMutableRawBufferPointer
        let publicKey: [UInt8]

        init(seed: UnsafeRawBufferPointer) throws(SignCoreError) {
            guard seed.count == 32 else { throw SignCoreError(.invalidKey, "an Ed25519 seed must be 32 bytes") }
            let secretKey = UnsafeMutableRawBufferPointer.allocate(byteCount: 64, alignment: 16)
            var publicKey = [UInt8](repeating: 0, count: 32)
            let rc = publicKey.withUnsafeMutableBytes { sc_ed25519_keypair_from_seed(seed.baseAddress, $0.baseAddress, secretKey.baseAddress) }
            guard rc == 0 else {
                sc_memzero(secretKey.baseAddress, secretKey.count)
                secretKey.deallocate()
                throw SignCoreError(.cryptoFailure, "libsodium could not derive the Ed25519 key pair")
            }
            self.secretKey = secretKey
            self.publicKey = publicKey
        }

        var seed: [UInt8] { Array(UnsafeRawBufferPointer(rebasing: secretKey[0..<32])) }

        func sign(_ message: UnsafeRawBufferPointer, into signature: UnsafeMutableRawBufferPointer) -> Bool {
            sc_ed25519_sign(secretKey.baseAddress, message.baseAddress, message.count, signature.baseAddress) == 0
        }

        func destroy() {
            sc_memzero(secretKey.baseAddress, secretKey.count)
            secretKey.deallocate()
        }
    }

    /// An OpenSSL EC_KEY made once and shared read-only, and the scalar for export.
    struct P256Key: P256KeyBackend, @unchecked Sendable {
        private let handle: OpaquePointer
        private let scalar: UnsafeMutableRawBufferPointer?
        let publicKey: [UInt8]

        init(privateKey: UnsafeRawBufferPointer) throws(SignCoreError) {
            guard privateKey.count == 32 else { throw SignCoreError(.invalidKey, "a P-256 private key must be 32 bytes") }
            var point = [UInt8](repeating: 0, count: 65)
            let rc = point.withUnsafeMutableBytes { sc_p256_public_from_private(privateKey.baseAddress, $0.baseAddress) }
            guard rc == 0 else { throw SignCoreError(.invalidKey, "the P-256 private key is not in [1, n-1]") }
            let scalar = UnsafeMutableRawBufferPointer.allocate(byteCount: 32, alignment: 16)
            scalar.copyMemory(from: privateKey)
            guard let handle = point.withUnsafeBytes({ sc_p256_key_new($0.baseAddress, scalar.baseAddress) }) else {
                sc_memzero(scalar.baseAddress, scalar.count)
                scalar.deallocate()
                throw SignCoreError(.invalidKey, "OpenSSL refused the P-256 key")
            }
            self.handle = handle
            self.scalar = scalar
            publicKey = point
        }

        init(publicKey point: UnsafeRawBufferPointer) throws(SignCoreError) {
            guard point.count == 65, point.first == 0x04, let handle = sc_p256_key_new(point.baseAddress, nil) else {
                throw SignCoreError(.invalidKey, "the P-256 public key is not a point on the curve")
            }
            self.handle = handle
            scalar = nil
            publicKey = Array(point)
        }

        static func generatePrivateKey(into scalar: UnsafeMutableRawBufferPointer) -> Bool {
            scalar.count == 32 && sc_p256_generate(scalar.baseAddress) == 0
        }

        var isPrivate: Bool { scalar != nil }
        var privateKey: [UInt8]? { scalar.map { Array($0) } }

        func sign(_ message: UnsafeRawBufferPointer, into signature: UnsafeMutableRawBufferPointer) -> Bool {
            sc_p256_sign(handle, message.baseAddress, message.count, signature.baseAddress) == 0
        }

        func verify(_ signature: UnsafeRawBufferPointer, for message: UnsafeRawBufferPointer) -> Bool {
            sc_p256_verify(handle, message.baseAddress, message.count, signature.baseAddress) == 0
        }

        func destroy() {
            sc_p256_key_free(handle)
            if let scalar {
                sc_memzero(scalar.baseAddress, scalar.count)
                scalar.deallocate()
            }
        }
    }
}

/// The shim's one-pass paths (FusedFastPaths): the canonical form hashed where it is written.
extension LibsodiumOpenSSL: FusedFastPaths {
    /// `sc_sha256_common_url`.
    @inline(__always)
    static func hashCommonURL(prefix: UnsafeRawBufferPointer, url: UnsafeRawBufferPointer,
                              into digest: UnsafeMutableRawBufferPointer) -> Bool {
        withCommonURLScratch(url) { scratch in
            sc_sha256_common_url(prefix.baseAddress, prefix.count, url.baseAddress, url.count, scratch, digest.baseAddress) == 0
        } ?? false
    }

    /// `sc_hs256_sign_common`.
    @inline(__always)
    static func signCommonURL(key: HMACKey, prefix: UnsafeRawBufferPointer, urlClass: Bool, url: UnsafeRawBufferPointer,
                              rest: inout sc_signing_input_rest, parts: inout sc_token_parts,
                              whash: UnsafeMutableRawPointer, token: UnsafeMutableRawPointer) -> Int? {
        let count = withCommonURLScratch(url) { scratch in
            sc_hs256_sign_common(key.key, key.prefixedInner, prefix.baseAddress, prefix.count, urlClass ? 1 : 0, url.baseAddress, url.count,
                                 scratch, &rest, &parts, whash, token)
        }
        guard let count, count >= 0 else { return nil }
        return count
    }
}

/// The scratch memory of the shim's one-pass URL digest (`sc_common_url_scratch`): on the stack
/// up to 1 KiB (every typical URL), as `withScratch` gives; nil for a URL longer than any URL
/// SignCore accepts (the general path then reports it). Not `withScratch` itself: its closure
/// throws `SignCoreError`, and a form generic over the error cost a sign 51 instructions (not
/// specialised there).
@inline(__always)
private func withCommonURLScratch<R>(_ url: UnsafeRawBufferPointer, _ body: (UnsafeMutableRawPointer?) -> R) -> R? {
    guard url.count <= CanonicalURL.maxInputBytes else { return nil }
    let byteCount = sc_common_url_scratch(url.count)
    if byteCount <= 1024 { return withUnsafeTemporaryAllocation(byteCount: byteCount, alignment: 16) { body($0.baseAddress) } }
    let heap = UnsafeMutableRawPointer.allocate(byteCount: byteCount, alignment: 16)
    defer { heap.deallocate() }
    return body(heap)
}
#endif
