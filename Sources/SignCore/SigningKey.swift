import CSignShim

/// A key: an HMAC secret, or an Ed25519 / P-256 key pair or public key.
///
/// Secret material lives in one buffer of its own, zeroed when the key is released. Keys are
/// immutable and safe to share between threads.
public final class SigningKey: @unchecked Sendable {
    /// The key id (`kid`): 1–64 base64url characters; by default the RFC 7638 thumbprint.
    public let id: String
    public let algorithm: SignatureAlgorithm
    /// Ed25519: the 32-byte public key; P-256: the 65-byte uncompressed point; HMAC: empty.
    public let publicKey: [UInt8]

    /// HMAC: sc_hmac_key, the inner state after the signing-input prefix, then the raw secret;
    /// Ed25519: libsodium's 64-byte secret key (seed || public key); P-256: the 32-byte scalar.
    /// Nil for a public key.
    private let secret: UnsafeMutableRawBufferPointer?
    private let p256: OpaquePointer?

    /// The start of every signing input under this key (SPEC §4.2: the fixed prefix, the
    /// algorithm, the key id), prepared once as raw bytes the hot path reads without reference
    /// counting; the key id's bytes are its end.
    let signingInputPrefix: UnsafeRawBufferPointer
    /// The key id as bytes.
    let idBytes: UnsafeRawBufferPointer
    /// The key id as the in-memory replay guard keys it (`ReplayKey`), computed once.
    let replayTag: UInt64

    private static let hmacStateSize = MemoryLayout<sc_hmac_key>.size + MemoryLayout<sc_sha256_state>.size

    public static let minHMACSecretBytes = 32
    public static let maxHMACSecretBytes = 1024
    public static let maxKeyIDLength = 64

    /// The prepared HMAC key schedule at the start of `secret` (HMAC keys only).
    private var hmacKey: UnsafePointer<sc_hmac_key>? {
        guard algorithm == .hmacSHA256 else { return nil }
        return UnsafePointer(secret?.baseAddress?.assumingMemoryBound(to: sc_hmac_key.self))
    }

    /// Whether this key can sign (HMAC secrets and private keys can; public keys only verify).
    public var canSign: Bool { secret != nil }

    /// Starts loading the key's secret states into the cache. The verifier calls it as soon as
    /// the token names the key, so that in a large key set the states arrive while the URL is
    /// canonicalised and hashed, not when the MAC needs them.
    func prefetchSecret() {
        guard let secret, let base = secret.baseAddress else { return }
        var offset = 0
        while offset < secret.count {
            sc_prefetch_for_read(base + offset)
            offset += 64
        }
    }

    /// The HMAC inner state after absorbing `signingInputPrefix` (HMAC keys only).
    private var prefixedInnerState: UnsafePointer<sc_sha256_state>? {
        guard algorithm == .hmacSHA256, let base = secret?.baseAddress else { return nil }
        return UnsafePointer((base + MemoryLayout<sc_hmac_key>.size).assumingMemoryBound(to: sc_sha256_state.self))
    }

    private init(id: String, algorithm: SignatureAlgorithm, publicKey: [UInt8],
                 secret: UnsafeMutableRawBufferPointer?, p256: OpaquePointer?) {
        self.id = id
        self.algorithm = algorithm
        self.publicKey = publicKey
        self.secret = secret
        self.p256 = p256
        let prefix = UnsafeMutableRawBufferPointer.allocate(byteCount: SigningInput.maxPrefixByteCount, alignment: 8)
        var writer = ByteWriter(prefix)
        var id = id
        id.withUTF8 { SigningInput.writePrefix(algorithm: algorithm, keyID: UnsafeRawBufferPointer($0), into: &writer) }
        signingInputPrefix = UnsafeRawBufferPointer(rebasing: prefix[..<writer.count])
        idBytes = UnsafeRawBufferPointer(rebasing: prefix[(writer.count - id.utf8.count)..<writer.count])
        replayTag = ReplayKey(idBytes).tag
        if let key = hmacKey, let state = prefixedInnerState {
            let mutableState = UnsafeMutablePointer(mutating: state)
            mutableState.pointee = key.pointee.inner
            sc_sha256_update(mutableState, signingInputPrefix.baseAddress, signingInputPrefix.count)
        }
    }

    /// Refuses a given key id that is not 1-64 base64url characters (header-safe).
    private static func checkID(_ id: String?) throws(SignCoreError) {
        if let id, !isValidKeyID(id) {
            throw SignCoreError(.invalidKey, "a key id must be 1-64 characters from A-Z a-z 0-9 - _")
        }
    }

    /// The given key id, or the RFC 7638 thumbprint when none is given.
    private static func resolveID(_ id: String?, _ algorithm: SignatureAlgorithm, publicKey: [UInt8],
                                  hmacSecret: UnsafeRawBufferPointer = UnsafeRawBufferPointer(start: nil, count: 0)) -> String {
        id ?? JWK.thumbprint(algorithm: algorithm, publicKey: publicKey, hmacSecret: hmacSecret)
    }

    deinit {
        signingInputPrefix.deallocate()
        if let secret {
            sc_memzero(secret.baseAddress, secret.count)
            secret.deallocate()
        }
        if let p256 { sc_p256_key_free(p256) }
    }

    static func isValidKeyID(_ id: String) -> Bool {
        let utf8 = Array(id.utf8)
        return (1...maxKeyIDLength).contains(utf8.count) && utf8.withUnsafeBytes { Base64URL.isAlphabet($0) }
    }

    private static func allocateSecret(_ count: Int) -> UnsafeMutableRawBufferPointer {
        .allocate(byteCount: count, alignment: 16)
    }

    // MARK: Constructors

    /// An HMAC-SHA256 key from a shared secret (32–1024 bytes).
    public static func hmac(secret: [UInt8], id: String? = nil) throws(SignCoreError) -> SigningKey {
        try withBytes(of: secret) { (raw) throws(SignCoreError) in try hmac(secretBytes: raw, id: id) }
    }

    /// An HMAC-SHA256 key from a secret held in a buffer the caller wipes (no copy is left behind).
    static func hmac(secretBytes secret: UnsafeRawBufferPointer, id: String? = nil) throws(SignCoreError) -> SigningKey {
        try checkID(id)
        guard (minHMACSecretBytes...maxHMACSecretBytes).contains(secret.count) else {
            throw SignCoreError(.invalidKey, "an HMAC secret must be 32 to 1024 bytes")
        }
        let id = resolveID(id, .hmacSHA256, publicKey: [], hmacSecret: secret)
        let stateSize = hmacStateSize
        let buffer = allocateSecret(stateSize + secret.count)
        sc_hmac_key_init(buffer.baseAddress?.assumingMemoryBound(to: sc_hmac_key.self), secret.baseAddress, secret.count)
        UnsafeMutableRawBufferPointer(rebasing: buffer[stateSize...]).copyMemory(from: secret)
        return SigningKey(id: id, algorithm: .hmacSHA256, publicKey: [], secret: buffer, p256: nil)
    }

    /// An Ed25519 key pair from its 32-byte seed (the JWK `d`).
    public static func ed25519(seed: [UInt8], id: String? = nil) throws(SignCoreError) -> SigningKey {
        try withBytes(of: seed) { (raw) throws(SignCoreError) in try ed25519(seedBytes: raw, id: id) }
    }

    /// An Ed25519 key pair from a seed held in a buffer the caller wipes.
    static func ed25519(seedBytes seed: UnsafeRawBufferPointer, id: String? = nil) throws(SignCoreError) -> SigningKey {
        try checkID(id)
        guard seed.count == Int(SC_ED25519_SEED_BYTES) else { throw SignCoreError(.invalidKey, "an Ed25519 seed must be 32 bytes") }
        try SignCoreRuntime.start()
        let buffer = allocateSecret(Int(SC_ED25519_SECRET_BYTES))
        var publicKey = [UInt8](repeating: 0, count: Int(SC_ED25519_PUBLIC_BYTES))
        let rc = publicKey.withUnsafeMutableBytes { p in sc_ed25519_keypair_from_seed(seed.baseAddress, p.baseAddress, buffer.baseAddress) }
        guard rc == 0 else {
            sc_memzero(buffer.baseAddress, buffer.count)
            buffer.deallocate()
            throw SignCoreError(.cryptoFailure, "libsodium could not derive the Ed25519 key pair")
        }
        return SigningKey(id: resolveID(id, .ed25519, publicKey: publicKey), algorithm: .ed25519, publicKey: publicKey, secret: buffer, p256: nil)
    }

    /// An Ed25519 public key (verify only): a canonical encoding of a point of the prime-order
    /// subgroup, not of small order (SPEC §6.1; libsodium's `crypto_core_ed25519_is_valid_point`).
    public static func ed25519(publicKey: [UInt8], id: String? = nil) throws(SignCoreError) -> SigningKey {
        try checkID(id)
        guard publicKey.count == Int(SC_ED25519_PUBLIC_BYTES) else {
            throw SignCoreError(.invalidKey, "an Ed25519 public key must be 32 bytes")
        }
        try SignCoreRuntime.start()
        guard publicKey.withUnsafeBytes({ sc_ed25519_is_valid_point($0.baseAddress) }) == 1 else {
            throw SignCoreError(.invalidKey, "the Ed25519 public key is not a valid, canonical point of the main subgroup")
        }
        let id = resolveID(id, .ed25519, publicKey: publicKey)
        return SigningKey(id: id, algorithm: .ed25519, publicKey: publicKey, secret: nil, p256: nil)
    }

    /// A P-256 key pair from its 32-byte private scalar (the JWK `d`).
    public static func p256(privateKey: [UInt8], id: String? = nil) throws(SignCoreError) -> SigningKey {
        try withBytes(of: privateKey) { (raw) throws(SignCoreError) in try p256(privateKeyBytes: raw, id: id) }
    }

    /// A P-256 key pair from a scalar held in a buffer the caller wipes.
    static func p256(privateKeyBytes privateKey: UnsafeRawBufferPointer, id: String? = nil) throws(SignCoreError) -> SigningKey {
        try checkID(id)
        guard privateKey.count == Int(SC_P256_PRIVATE_BYTES) else {
            throw SignCoreError(.invalidKey, "a P-256 private key must be 32 bytes")
        }
        var point = [UInt8](repeating: 0, count: Int(SC_P256_PUBLIC_BYTES))
        let rc = point.withUnsafeMutableBytes { p in sc_p256_public_from_private(privateKey.baseAddress, p.baseAddress) }
        guard rc == 0 else { throw SignCoreError(.invalidKey, "the P-256 private key is not in [1, n-1]") }
        let id = resolveID(id, .p256, publicKey: point)
        let buffer = allocateSecret(privateKey.count)
        buffer.copyMemory(from: privateKey)
        let handle = point.withUnsafeBytes { p in sc_p256_key_new(p.baseAddress, buffer.baseAddress) }
        guard let handle else {
            sc_memzero(buffer.baseAddress, buffer.count)
            buffer.deallocate()
            throw SignCoreError(.invalidKey, "OpenSSL refused the P-256 key")
        }
        return SigningKey(id: id, algorithm: .p256, publicKey: point, secret: buffer, p256: handle)
    }

    /// A P-256 public key from its uncompressed point 0x04 || x || y (verify only); the point
    /// must lie on the curve.
    public static func p256(publicKey point: [UInt8], id: String? = nil) throws(SignCoreError) -> SigningKey {
        try checkID(id)
        // The length first: the thumbprint reads both coordinates (issue 10: a short point trapped).
        guard point.count == Int(SC_P256_PUBLIC_BYTES), point.first == 0x04,
              let handle = point.withUnsafeBytes({ sc_p256_key_new($0.baseAddress, nil) }) else {
            throw SignCoreError(.invalidKey, "the P-256 public key is not a point on the curve")
        }
        return SigningKey(id: resolveID(id, .p256, publicKey: point), algorithm: .p256, publicKey: point, secret: nil, p256: handle)
    }

    /// A new random key from the system CSPRNG.
    public static func generate(_ algorithm: SignatureAlgorithm, id: String? = nil) throws(SignCoreError) -> SigningKey {
        try SignCoreRuntime.start()
        var material = [UInt8](repeating: 0, count: 32)
        defer { material.withUnsafeMutableBytes { sc_memzero($0.baseAddress, $0.count) } }
        switch algorithm {
        case .hmacSHA256:
            material.withUnsafeMutableBytes { sc_random_bytes($0.baseAddress, $0.count) }
            return try hmac(secret: material, id: id)
        case .ed25519:
            material.withUnsafeMutableBytes { sc_random_bytes($0.baseAddress, $0.count) }
            return try ed25519(seed: material, id: id)
        case .p256:
            let rc = material.withUnsafeMutableBytes { sc_p256_generate($0.baseAddress) }
            guard rc == 0 else { throw SignCoreError(.cryptoFailure, "OpenSSL could not generate a P-256 key") }
            return try p256(privateKey: material, id: id)
        }
    }

    /// The same key without its private part (HMAC keys have none and are returned as is).
    public func publicOnly() throws(SignCoreError) -> SigningKey {
        switch algorithm {
        case .hmacSHA256: self
        case .ed25519: try .ed25519(publicKey: publicKey, id: id)
        case .p256: try .p256(publicKey: publicKey, id: id)
        }
    }

    // MARK: Secret export (for JWK)

    /// HMAC: the secret; Ed25519: the seed; P-256: the scalar. Nil for public keys.
    func exportSecret() -> [UInt8]? {
        guard let secret else { return nil }
        switch algorithm {
        case .hmacSHA256: return Array(UnsafeRawBufferPointer(rebasing: secret[Self.hmacStateSize...]))
        case .ed25519: return Array(UnsafeRawBufferPointer(rebasing: secret[0..<32]))
        case .p256: return Array(secret)
        }
    }

    // MARK: Sign and verify (SPEC §4.3)

    /// Signs `message` into `signature`, which has room for `algorithm.signatureByteCount` bytes.
    /// `startsWithPrefix`: the caller wrote `signingInputPrefix` at the start of `message`.
    func sign(_ message: UnsafeRawBufferPointer, into signature: UnsafeMutableRawBufferPointer,
              startsWithPrefix: Bool = false) throws(SignCoreError) {
        guard let secret else { throw SignCoreError(.invalidKey, "a public key cannot sign") }
        precondition(signature.count >= algorithm.signatureByteCount)
        let rc: Int32
        switch algorithm {
        case .hmacSHA256:
            hmac(message, into: signature.baseAddress, startsWithPrefix: startsWithPrefix)
            rc = 0
        case .ed25519:
            rc = sc_ed25519_sign(secret.baseAddress, message.baseAddress, message.count, signature.baseAddress)
        case .p256:
            rc = sc_p256_sign(p256, message.baseAddress, message.count, signature.baseAddress)
        }
        guard rc == 0 else { throw SignCoreError(.cryptoFailure, "the signature could not be computed") }
    }

    /// Whether `signature` is valid for `message`; HMAC tags are compared in constant time.
    func isValidSignature(_ signature: UnsafeRawBufferPointer, for message: UnsafeRawBufferPointer,
                          startsWithPrefix: Bool = false) -> Bool {
        guard signature.count == algorithm.signatureByteCount else { return false }
        switch algorithm {
        case .hmacSHA256:
            guard hmacKey != nil else { return false }
            return withUnsafeTemporaryAllocation(byteCount: 32, alignment: 16) { expected in
                hmac(message, into: expected.baseAddress, startsWithPrefix: startsWithPrefix)
                defer { sc_memzero(expected.baseAddress, 32) }
                return sc_memcmp(expected.baseAddress, signature.baseAddress, 32) == 0
            }
        case .ed25519:
            return publicKey.withUnsafeBytes { sc_ed25519_verify($0.baseAddress, message.baseAddress, message.count, signature.baseAddress) == 0 }
        case .p256:
            return sc_p256_verify(p256, message.baseAddress, message.count, signature.baseAddress) == 0
        }
    }

    /// HMAC-SHA256 of `message`. A message that starts with this key's signing-input prefix
    /// (every signing input does) continues from the inner state that already absorbed it;
    /// the prefix is compared unless the caller wrote it.
    private func hmac(_ message: UnsafeRawBufferPointer, into out: UnsafeMutableRawPointer?, startsWithPrefix: Bool) {
        guard let key = hmacKey, let prefixed = prefixedInnerState else { return }
        let prefix = signingInputPrefix
        if startsWithPrefix || (message.count >= prefix.count
                                && bytesEqual(UnsafeRawBufferPointer(rebasing: message[..<prefix.count]), prefix)) {
            precondition(message.count >= prefix.count)
            sc_hmac_sha256_continue(key, prefixed, message.baseAddress.map { $0 + prefix.count }, message.count - prefix.count, out)
        } else {
            sc_hmac_sha256(key, message.baseAddress, message.count, out)
        }
    }
}
