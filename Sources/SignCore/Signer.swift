/// The default header names (SPEC §4.4).
public enum HeaderName {
    public static let whash = "whash"
    public static let wtoken = "wtoken"
}

/// The two headers a signed request carries.
public struct SignedHeaders: Sendable, Equatable {
    /// base64url whash (43 characters), for the `whash` header.
    public let whash: String
    /// The wtoken, for the `wtoken` header.
    public let wtoken: String
}

/// Signs outgoing requests with one key (the client side; SPEC §4.3).
///
/// A value type: configure it once (key, lifetime, account), then call `sign` per request.
public struct Signer: Sendable {
    public let key: SigningKey
    /// Seconds a token stays valid after its creation (1–86400).
    public let lifetime: Int64
    /// The end-user account bound into every token (`setAccount`); empty for none.
    public let account: String
    /// Seconds since the Unix epoch; injected so tests and vectors pin time.
    public let clock: @Sendable () -> Int64

    public init(key: SigningKey, lifetime: Int64 = 60, account: String = "",
                clock: @escaping @Sendable () -> Int64 = SystemClock.seconds) throws(SignCoreError) {
        try SignCoreRuntime.start()  // nonces come from libsodium
        guard key.canSign else { throw SignCoreError(.invalidKey, "a public key cannot sign") }
        guard (1...WToken.maxLifetime).contains(lifetime) else {
            throw SignCoreError(.lifetimeTooLong, "the lifetime must be 1 to 86400 seconds")
        }
        guard account.utf8.count <= WToken.maxAccountBytes else {
            throw SignCoreError(.invalidInput, "the account is longer than 256 bytes")
        }
        self.key = key
        self.lifetime = lifetime
        self.account = account
        self.clock = clock
    }

    /// The same signer bound to another account (after a log-in, say).
    public func withAccount(_ account: String) throws(SignCoreError) -> Signer {
        try Signer(key: key, lifetime: lifetime, account: account, clock: clock)
    }

    /// Signs a request whose body is in memory (ignored for GET, HEAD, OPTIONS and DELETE).
    public func sign(method: HTTPMethod, url: String, body: [UInt8] = []) throws(SignCoreError) -> SignedHeaders {
        try sign(method: method, url: url, whash: try WHash.compute(method: method, url: url, body: body))
    }

    /// Signs a request whose body was hashed separately (`WHash.BodyHasher`, for streamed bodies).
    public func sign(method: HTTPMethod, url: String, bodyWHash: SHA256Digest) throws(SignCoreError) -> SignedHeaders {
        let whash = method.contentClass == .body ? bodyWHash : try WHash.compute(method: method, url: url)
        return try sign(method: method, url: url, whash: whash)
    }

    /// Signs with a given creation time and nonce. Only for known-answer vectors and tests:
    /// real tokens need a fresh random nonce, which `sign(method:url:body:)` draws.
    public func sign(method: HTTPMethod, url: String, body: [UInt8] = [], created: Int64, nonce: Nonce) throws(SignCoreError) -> SignedHeaders {
        let whash = try WHash.compute(method: method, url: url, body: body)
        return try sign(method: method, url: url, whash: whash, created: created, nonce: nonce)
    }

    private func sign(method: HTTPMethod, url: String, whash: SHA256Digest) throws(SignCoreError) -> SignedHeaders {
        try sign(method: method, url: url, whash: whash, created: clock(), nonce: .random())
    }

    private func sign(method: HTTPMethod, url: String, whash: SHA256Digest, created: Int64, nonce: Nonce) throws(SignCoreError) -> SignedHeaders {
        guard (0...WToken.maxCreated).contains(created) else {
            throw SignCoreError(.invalidInput, "the creation time is outside 0...99999999999")
        }
        var canonical = [UInt8]()
        try withBytes(of: Array(url.utf8)) { (raw) throws(SignCoreError) in try CanonicalURL.write(raw, into: &canonical) }
        let target = canonical.withUnsafeBytes { SigningInput.targetDigest(method: method, canonicalURL: $0) }
        var input = [UInt8]()
        SigningInput.write(algorithm: key.algorithm, keyID: key.id, target: target, whash: whash, created: created,
                           lifetime: lifetime, nonce: nonce, account: account, into: &input)
        let signature = try withBytes(of: input) { (message) throws(SignCoreError) in try key.sign(message) }
        let token = WToken(keyID: key.id, created: created, lifetime: lifetime, nonce: nonce,
                           targetHint: target.bytes.prefix(WToken.targetHintBytes).map { $0 },
                           account: account, signature: signature)
        return SignedHeaders(whash: whash.description, wtoken: token.encoded)
    }
}
