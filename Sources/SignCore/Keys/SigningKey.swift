/// A key: an HMAC secret, an Ed25519 / P-256 key pair or public key, or a public key whose
/// private half is held elsewhere (`ExternalSigner`: a Secure Enclave, a keystore, an HSM, a KMS).
///
/// Secret material lives in memory of its own in the crypto backend (Crypto/CryptoBackend.swift),
/// wiped when the key is released. Keys are immutable and safe to share between threads.
public final class SigningKey: @unchecked Sendable {
    // What a verify reads comes first, in the object's first three cache lines, which a key
    // set's lookup prefetches (`KeySet.unretainedKey`).
    public let algorithm: SignatureAlgorithm
    /// The private part as the backend holds it: at most one is set, none for a public key.
    private let hmacKey: CryptoBackend.HMACKey?
    /// The key id as the in-memory replay guard keys it (`ReplayKey`), computed once.
    let replayTag: UInt64
    /// The key id in fixed storage, as each `VerifiedRequest` holds it: copied, not rebuilt.
    let keyID: KeyID

    /// The key id (`kid`): 1–64 base64url characters; by default the RFC 7638 thumbprint.
    public let id: String
    /// Ed25519: the 32-byte public key; P-256: the 65-byte uncompressed point; HMAC: empty.
    public let publicKey: [UInt8]
    private let ed25519Key: CryptoBackend.Ed25519PrivateKey?
    /// P-256 keys, private or public (OpenSSL verifies through a prepared key object).
    private let p256Key: CryptoBackend.P256Key?
    /// The holder of the private half of an external key (`SigningKey.external`).
    public let externalSigner: (any ExternalSigner)?

    /// The start of every signing input under this key (SPEC §4.2: the fixed prefix, the
    /// algorithm, the key id), prepared once as raw bytes the hot path reads without reference
    /// counting; the key id's bytes are its end.
    let signingInputPrefix: UnsafeRawBufferPointer
    /// The key id as bytes.
    let idBytes: UnsafeRawBufferPointer
    /// The RFC 7638 thumbprint, whatever the key id: SHA-256 of the key's required JWK members
    /// (SPEC §6.2), what an attestation is bound to (docs/ATTEST.md §1). Computed once.
    public let thumbprint: SHA256Digest

    public static let minHMACSecretBytes = 32
    public static let maxHMACSecretBytes = 1024
    public static let maxKeyIDLength = 64

    /// Whether this key can sign (HMAC secrets, private keys and external keys can; public keys
    /// only verify). An external key signs only through `Signer.signAsync`.
    public var canSign: Bool { hmacKey != nil || ed25519Key != nil || p256Key?.isPrivate == true || externalSigner != nil }

    /// The memory of the key's prepared secret states (HMAC), for a key set's lookup to start
    /// loading as soon as a token names the key, so that in a large set the states arrive while
    /// the URL is canonicalised and hashed, not when the MAC needs them; empty otherwise.
    var preparedSecret: UnsafeRawBufferPointer { hmacKey?.preparedStates ?? UnsafeRawBufferPointer(start: nil, count: 0) }

    /// Whether `signCommonURL` can sign with this key: an HMAC key, on a backend with the
    /// fused paths.
    var signsInOnePass: Bool { hmacKey != nil && CryptoBackend.hasFusedFastPaths }

    /// SPEC §4 in one pass for a common URL (`FusedFastPaths.signCommonURL`), when
    /// `signsInOnePass`: nil when the URL is not common.
    @inline(__always)
    func signCommonURL(prefix: UnsafeRawBufferPointer, urlClass: Bool, url: UnsafeRawBufferPointer, rest: inout SigningInputRest,
                       parts: inout TokenParts, whash: UnsafeMutableRawPointer, token: UnsafeMutableRawPointer) -> Int? {
        guard let hmacKey else { return nil }
        return CryptoBackend.signCommonURL(key: hmacKey, prefix: prefix, urlClass: urlClass, url: url, rest: &rest, parts: &parts,
                                           whash: whash, token: token)
    }

    /// `id`: the given key id (checked by the constructor), or nil for the RFC 7638 thumbprint.
    private init(id: String?, algorithm: SignatureAlgorithm, publicKey: [UInt8], hmacSecret: UnsafeRawBufferPointer? = nil,
                 ed25519Key: CryptoBackend.Ed25519PrivateKey? = nil, p256Key: CryptoBackend.P256Key? = nil,
                 externalSigner: (any ExternalSigner)? = nil) {
        let thumbprint = JWK.thumbprintDigest(algorithm: algorithm, publicKey: publicKey,
                                              hmacSecret: hmacSecret ?? UnsafeRawBufferPointer(start: nil, count: 0))
        self.thumbprint = thumbprint
        var id = id ?? thumbprint.description
        self.id = id
        self.algorithm = algorithm
        self.publicKey = publicKey
        self.ed25519Key = ed25519Key
        self.p256Key = p256Key
        self.externalSigner = externalSigner
        let prefix = UnsafeMutableRawBufferPointer.allocate(byteCount: SigningInput.maxPrefixByteCount, alignment: 8)
        var writer = ByteWriter(prefix)
        id.withUTF8 { SigningInput.writePrefix(algorithm: algorithm, keyID: UnsafeRawBufferPointer($0), into: &writer) }
        let signingInputPrefix = UnsafeRawBufferPointer(rebasing: prefix[..<writer.count])
        self.signingInputPrefix = signingInputPrefix
        idBytes = UnsafeRawBufferPointer(rebasing: prefix[(writer.count - id.utf8.count)..<writer.count])
        replayTag = ReplayKey(idBytes).tag
        keyID = KeyID(of: idBytes)
        hmacKey = hmacSecret.map { CryptoBackend.HMACKey(secret: $0, signingInputPrefix: signingInputPrefix) }
    }

    /// Refuses a given key id that is not 1-64 base64url characters (header-safe).
    private static func checkID(_ id: String?) throws(SignCoreError) {
        if let id, !isValidKeyID(id) {
            throw SignCoreError(.invalidKey, "a key id must be 1-64 characters from A-Z a-z 0-9 - _")
        }
    }

    deinit {
        signingInputPrefix.deallocate()
        hmacKey?.destroy()
        ed25519Key?.destroy()
        p256Key?.destroy()
    }

    static func isValidKeyID(_ id: String) -> Bool {
        let utf8 = Array(id.utf8)
        return (1...maxKeyIDLength).contains(utf8.count) && utf8.withUnsafeBytes { Base64URL.isAlphabet($0) }
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
        return SigningKey(id: id, algorithm: .hmacSHA256, publicKey: [], hmacSecret: secret)
    }

    /// An Ed25519 key pair from its 32-byte seed (the JWK `d`).
    public static func ed25519(seed: [UInt8], id: String? = nil) throws(SignCoreError) -> SigningKey {
        try withBytes(of: seed) { (raw) throws(SignCoreError) in try ed25519(seedBytes: raw, id: id) }
    }

    /// An Ed25519 key pair from a seed held in a buffer the caller wipes.
    static func ed25519(seedBytes seed: UnsafeRawBufferPointer, id: String? = nil) throws(SignCoreError) -> SigningKey {
        try checkID(id)
        guard seed.count == 32 else { throw SignCoreError(.invalidKey, "an Ed25519 seed must be 32 bytes") }
        try SignCoreRuntime.start()
        let key = try CryptoBackend.Ed25519PrivateKey(seed: seed)
        return SigningKey(id: id, algorithm: .ed25519, publicKey: key.publicKey, ed25519Key: key)
    }

    /// An Ed25519 public key (verify only): a canonical encoding of a point of the prime-order
    /// subgroup, not of small order (SPEC §6.1; libsodium's `crypto_core_ed25519_is_valid_point`).
    public static func ed25519(publicKey: [UInt8], id: String? = nil) throws(SignCoreError) -> SigningKey {
        try checkID(id)
        try checkEd25519(publicKey: publicKey)
        return SigningKey(id: id, algorithm: .ed25519, publicKey: publicKey)
    }

    private static func checkEd25519(publicKey: [UInt8]) throws(SignCoreError) {
        guard publicKey.count == 32 else {
            throw SignCoreError(.invalidKey, "an Ed25519 public key must be 32 bytes")
        }
        try SignCoreRuntime.start()
        guard publicKey.withUnsafeBytes({ CryptoBackend.isValidEd25519PublicKey($0) }) else {
            throw SignCoreError(.invalidKey, "the Ed25519 public key is not a valid, canonical point of the main subgroup")
        }
    }

    /// A P-256 key pair from its 32-byte private scalar (the JWK `d`).
    public static func p256(privateKey: [UInt8], id: String? = nil) throws(SignCoreError) -> SigningKey {
        try withBytes(of: privateKey) { (raw) throws(SignCoreError) in try p256(privateKeyBytes: raw, id: id) }
    }

    /// A P-256 key pair from a scalar held in a buffer the caller wipes.
    static func p256(privateKeyBytes privateKey: UnsafeRawBufferPointer, id: String? = nil) throws(SignCoreError) -> SigningKey {
        try checkID(id)
        try SignCoreRuntime.start()
        let key = try CryptoBackend.P256Key(privateKey: privateKey)
        return SigningKey(id: id, algorithm: .p256, publicKey: key.publicKey, p256Key: key)
    }

    /// A P-256 public key from its uncompressed point 0x04 || x || y (verify only); the point
    /// must lie on the curve.
    public static func p256(publicKey point: [UInt8], id: String? = nil) throws(SignCoreError) -> SigningKey {
        try checkID(id)
        try SignCoreRuntime.start()
        // The backend checks the length first: the thumbprint reads both coordinates (a short coordinate never reaches it).
        let key = try withBytes(of: point) { (raw) throws(SignCoreError) in try CryptoBackend.P256Key(publicKey: raw) }
        return SigningKey(id: id, algorithm: .p256, publicKey: point, p256Key: key)
    }

    /// A new random key from the system CSPRNG.
    public static func generate(_ algorithm: SignatureAlgorithm, id: String? = nil) throws(SignCoreError) -> SigningKey {
        try SignCoreRuntime.start()
        var material = [UInt8](repeating: 0, count: 32)
        defer { wipe(&material) }
        switch algorithm {
        case .hmacSHA256:
            material.withUnsafeMutableBytes { CryptoBackend.randomBytes(into: $0) }
            return try hmac(secret: material, id: id)
        case .ed25519:
            material.withUnsafeMutableBytes { CryptoBackend.randomBytes(into: $0) }
            return try ed25519(seed: material, id: id)
        case .p256:
            guard material.withUnsafeMutableBytes({ CryptoBackend.P256Key.generatePrivateKey(into: $0) }) else {
                throw SignCoreError(.cryptoFailure, "the crypto backend could not generate a P-256 key")
            }
            return try p256(privateKey: material, id: id)
        }
    }

    /// A key whose private half `signer` holds (SPEC §6: EdDSA or ES256). Its public key is
    /// checked like any other; every signature it returns is verified under it before use.
    public static func external(_ signer: any ExternalSigner, id: String? = nil) throws(SignCoreError) -> SigningKey {
        try checkID(id)
        let publicKey = signer.publicKey
        switch signer.algorithm {
        case .hmacSHA256:
            throw SignCoreError(.invalidKey, "an external signer holds the private half of an EdDSA or ES256 key")
        case .ed25519:
            try checkEd25519(publicKey: publicKey)
            return SigningKey(id: id, algorithm: .ed25519, publicKey: publicKey,
                              externalSigner: signer)
        case .p256:
            try SignCoreRuntime.start()
            let key = try withBytes(of: publicKey) { (raw) throws(SignCoreError) in try CryptoBackend.P256Key(publicKey: raw) }
            return SigningKey(id: id, algorithm: .p256, publicKey: publicKey, p256Key: key,
                              externalSigner: signer)
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
        hmacKey?.secret ?? ed25519Key?.seed ?? p256Key?.privateKey
    }

    // MARK: Sign and verify (SPEC §4.3)

    /// Signs `message` into `signature`, which has room for `algorithm.signatureByteCount` bytes.
    func sign(_ message: UnsafeRawBufferPointer, into signature: UnsafeMutableRawBufferPointer) throws(SignCoreError) {
        precondition(signature.count >= algorithm.signatureByteCount)
        let signed: Bool
        if let hmacKey {
            hmac(hmacKey, message, into: signature)
            signed = true
        } else if let ed25519Key {
            signed = ed25519Key.sign(message, into: signature)
        } else if let p256Key, p256Key.isPrivate {
            signed = p256Key.sign(message, into: signature)
        } else if externalSigner != nil {
            throw SignCoreError(.invalidKey, "an external key signs asynchronously (Signer.signAsync)")
        } else {
            throw SignCoreError(.invalidKey, "a public key cannot sign")
        }
        guard signed else { throw SignCoreError(.cryptoFailure, "the signature could not be computed") }
    }

    /// Whether `signature` is valid for `message`; HMAC tags are compared in constant time.
    func isValidSignature(_ signature: UnsafeRawBufferPointer, for message: UnsafeRawBufferPointer) -> Bool {
        guard signature.count == algorithm.signatureByteCount else { return false }
        switch algorithm {
        case .hmacSHA256:
            guard let hmacKey else { return false }
            return tagMatches(signature) { hmac(hmacKey, message, into: $0) }
        case .ed25519:
            return publicKey.withUnsafeBytes { CryptoBackend.ed25519Verify(publicKey: $0, message: message, signature: signature) }
        case .p256:
            return p256Key?.verify(signature, for: message) ?? false
        }
    }

    /// Signs the signing input made of this key's prefix and `rest` (SPEC §4.2). An HMAC key
    /// hashes the rest from the values themselves; any other key signs the whole input, written
    /// out in stack memory.
    @inline(__always)
    func sign(rest: inout SigningInputRest, into signature: UnsafeMutableRawBufferPointer) throws(SignCoreError) {
        guard let hmacKey else {
            return try withSigningInput(rest) { (input) throws(SignCoreError) in try sign(input, into: signature) }
        }
        precondition(signature.count >= algorithm.signatureByteCount)
        hmacKey.authenticate(signingInputRest: &rest, into: signature)
    }

    /// `isValidSignature` for the signing input made of this key's prefix and `rest`.
    func isValidSignature(_ signature: UnsafeRawBufferPointer, forRest rest: inout SigningInputRest) -> Bool {
        guard let hmacKey else {
            return withSigningInput(rest) { isValidSignature(signature, for: $0) }
        }
        guard signature.count == algorithm.signatureByteCount else { return false }
        return hmacKey.isTag(signature, ofSigningInputRest: &rest)
    }

    /// The whole signing input, this key's prefix then `rest`, in stack memory.
    func withSigningInput<R, E: Error>(_ rest: SigningInputRest, _ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        let result: Result<R, E> = withUnsafeTemporaryAllocation(byteCount: SigningInput.maxByteCount, alignment: 16) { scratch in
            var input = ByteWriter(scratch)
            input.append(signingInputPrefix)
            SigningInput.write(rest, into: &input)
            do throws(E) { return .success(try body(input.written)) } catch { return .failure(error) }
        }
        return try result.get()
    }

    /// HMAC-SHA256 of `message`. A message that starts with this key's signing-input prefix
    /// (a signing input given whole) continues from the inner state that already absorbed it.
    /// (Signers and verifiers give the rest alone: `sign(rest:into:)`.)
    private func hmac(_ key: CryptoBackend.HMACKey, _ message: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) {
        let prefix = signingInputPrefix
        if message.count >= prefix.count, bytesEqual(UnsafeRawBufferPointer(rebasing: message[..<prefix.count]), prefix) {
            key.authenticate(afterPrefix: UnsafeRawBufferPointer(rebasing: message[prefix.count...]), into: out)
        } else {
            key.authenticate(message, into: out)
        }
    }
}
