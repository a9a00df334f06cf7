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
        try sign(method: method, url: url, body: .bytes(body), created: clock(), nonce: .random())
    }

    /// Signs a request whose body was hashed separately (`WHash.BodyHasher`, for streamed bodies).
    public func sign(method: HTTPMethod, url: String, bodyWHash: SHA256Digest) throws(SignCoreError) -> SignedHeaders {
        try sign(method: method, url: url, body: .whash(bodyWHash), created: clock(), nonce: .random())
    }

    /// Signs with a given creation time and nonce. Only for known-answer vectors and tests:
    /// real tokens need a fresh random nonce, which `sign(method:url:body:)` draws.
    public func sign(method: HTTPMethod, url: String, body: [UInt8] = [], created: Int64, nonce: Nonce) throws(SignCoreError) -> SignedHeaders {
        try sign(method: method, url: url, body: .bytes(body), created: created, nonce: nonce)
    }

    /// SPEC §4: canonical URL → whash → target digest → signing input → signature → token.
    /// Everything before the two header strings happens in stack memory.
    private func sign(method: HTTPMethod, url: String, body: RequestBody, created: Int64, nonce: Nonce) throws(SignCoreError) -> SignedHeaders {
        guard (0...WToken.maxCreated).contains(created) else {
            throw SignCoreError(.invalidInput, "the creation time is outside 0...99999999999")
        }
        let bodyWHash = body.whash(for: method)
        let digests = try withUTF8(of: url) { (raw) throws(SignCoreError) in
            try CanonicalURL.withCanonical(raw) { SigningInput.digests(method: method, canonicalURL: $0, bodyWHash: bodyWHash) }
        }
        return SignedHeaders(whash: digests.whash.description,
                             wtoken: try token(whash: digests.whash, target: digests.target, created: created, nonce: nonce))
    }

    private func token(whash: SHA256Digest, target: SHA256Digest, created: Int64, nonce: Nonce) throws(SignCoreError) -> String {
        var signature: SignatureStorage = (0, 0, 0, 0, 0, 0, 0, 0)
        var account = account
        var failure: SignCoreError?
        let token = account.withUTF8 { utf8 in
            let account = UnsafeRawBufferPointer(utf8)
            withUnsafeTemporaryAllocation(byteCount: SigningInput.maxByteCount, alignment: 16) { scratch in
                var input = ByteWriter(scratch)
                input.append(key.signingInputPrefix)
                SigningInput.writeRest(target: target, whash: whash, created: created, lifetime: lifetime, nonce: nonce,
                                       accountByteCount: account.count, into: &input) { $0.append(account) }
                withUnsafeMutableBytes(of: &signature) { out in
                    do throws(SignCoreError) { try key.sign(input.written, into: out, startsWithPrefix: true) } catch { failure = error }
                }
            }
            return target.withUnsafeBytes { digest in
                withUnsafeBytes(of: signature) { signature in
                    WToken.encode(keyID: key.idBytes, created: created, lifetime: lifetime, nonce: nonce,
                                  targetHint: UnsafeRawBufferPointer(rebasing: digest[..<WToken.targetHintBytes]),
                                  account: account,
                                  signature: UnsafeRawBufferPointer(rebasing: signature[..<key.algorithm.signatureByteCount]))
                }
            }
        }
        if let failure { throw failure }
        return token
    }
}

/// Room for any signature (64 bytes) without a heap allocation.
typealias SignatureStorage = (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64)
