/// A request as the server received it: the inputs a verifier recomputes everything from.
public struct ReceivedRequest: Sendable {
    public var method: String
    /// The absolute URL the server serves this request under: its own scheme, the `Host` /
    /// `:authority` it received, and the request target.
    public var url: String
    /// The body, whole or already hashed with `WHash.BodyHasher` while it streamed in.
    public var body: RequestBody
    /// The `whash` header value, if sent.
    public var whash: String?
    /// The `wtoken` header value, if sent.
    public var wtoken: String?

    public init(method: String, url: String, body: RequestBody = .bytes([]), whash: String?, wtoken: String?) {
        self.method = method
        self.url = url
        self.body = body
        self.whash = whash
        self.wtoken = wtoken
    }
}

/// What a verified token proves: who signed this exact request, for which account, when.
public struct VerifiedRequest: Sendable, Equatable {
    /// The id of the key that verified the token (a new String on each read).
    public var keyID: String { id.string }
    /// The key id held inline: a String shared with the key would be reference counted by
    /// every verify on every thread, one contended cache line.
    let id: KeyID
    public let algorithm: SignatureAlgorithm
    /// The account the client bound into the token; empty for none.
    public let account: String
    public let created: Int64
    public let expires: Int64
    public let nonce: Nonce
}

/// Verifies signed requests (the server side; SPEC §5). Thread-safe: share one instance.
public struct Verifier: Sendable {
    public let keys: KeySet
    /// Seconds a token's creation time may lie in the future (client clock ahead). No
    /// allowance is made past expiry.
    public let skew: Int64
    /// Longest lifetime accepted, in seconds.
    public let maxLifetime: Int64
    /// Whether a request without a `whash` header is refused (`missingHeader`). When false the
    /// header is still compared whenever present; the signature binds the whash either way.
    public let requireWhashHeader: Bool
    public let replayGuard: any ReplayGuard
    /// The shards of the same guard when it is the in-process one, called directly rather than
    /// through the protocol's async requirement (`replayGuard` keeps them alive).
    private let inMemoryShards: InMemoryReplayGuard.Shards?
    public let clock: @Sendable () -> Int64

    /// A negative `skew` counts as 0; `maxLifetime` is held within 1...86400 (SPEC §4.1).
    public init(keys: KeySet, replayGuard: any ReplayGuard, skew: Int64 = 30, maxLifetime: Int64 = 300,
                requireWhashHeader: Bool = true, clock: @escaping @Sendable () -> Int64 = SystemClock.seconds) {
        self.keys = keys
        self.replayGuard = replayGuard
        self.inMemoryShards = (replayGuard as? InMemoryReplayGuard)?.shards
        self.skew = max(0, skew)
        self.maxLifetime = min(max(1, maxLifetime), WToken.maxLifetime)
        self.requireWhashHeader = requireWhashHeader
        self.clock = clock
    }

    /// Every check including the replay guard: a token is accepted once. Runs on the caller's
    /// executor (`nonisolated(nonsending)`): the checks are synchronous work, so a hop to the
    /// global executor and back would only add a task switch to every verify.
    nonisolated(nonsending) public func verify(_ request: ReceivedRequest) async throws(SignCoreError) -> VerifiedRequest {
        let now = clock()
        guard let shards = inMemoryShards else {
            let verified = try check(request, now: now)
            try await replayGuard.record(nonce: verified.nonce, expires: verified.expires, now: now)
            return verified
        }
        // The nonce's table slot starts loading as soon as the token is parsed.
        var nonce: InMemoryReplayGuard.HashedNonce?
        let verified = try check(request, now: now) { nonce = shards.hashed($0) }
        try shards.record(nonce ?? shards.hashed(verified.nonce), expires: verified.expires, now: now)
        return verified
    }

    /// Every check except the replay guard (SPEC §5 steps 1–8). On its own this accepts the
    /// same token again until it expires; use `verify` unless replays are handled elsewhere.
    public func check(_ request: ReceivedRequest, now: Int64? = nil) throws(SignCoreError) -> VerifiedRequest {
        try check(request, now: now ?? clock()) { _ in }
    }

    /// The checks, telling `parsed` the token's nonce as soon as it is known.
    private func check(_ request: ReceivedRequest, now: Int64, parsed: (Nonce) -> Void) throws(SignCoreError) -> VerifiedRequest {
        // 1. The token: present, bounded, well-formed (parsed in place, nothing allocated).
        guard let header = request.wtoken else { throw SignCoreError(.missingHeader, "the request has no wtoken header") }
        // Only plain data leaves the byte-level closures (the key unretained: `keys` holds it),
        // and the account is made only when there is one, so the hot path does little
        // reference counting.
        var account = ""
        let (created, lifetime, nonce, key) = try withUTF8(of: header) { (tokenText) throws(SignCoreError) in
            let token = try TokenFields(parsing: tokenText)
            parsed(token.nonce)

            // 2. The request: a signable method and a valid URL.
            let method = try HTTPMethod(token: request.method)
            let key = try withUTF8(of: request.url) { (url) throws(SignCoreError) in
                try CanonicalURL.withCanonical(url) { (canonical) throws(SignCoreError) in
                    // 3. The key named by the token; its algorithm decides how the signature is checked.
                    guard let key = keys.unretainedKey(id: UnsafeRawBufferPointer(rebasing: tokenText[token.keyID])) else {
                        throw SignCoreError(.unknownKey, "no key has the token's key id")
                    }
                    try key.withObject { (key) throws(SignCoreError) in
                        try check(token, in: tokenText, request: request, method: method, canonicalURL: canonical, now: now, key: key)
                    }
                    return key
                }
            }
            if token.accountByteCount > 0 { account = token.account(in: tokenText) }
            return (token.created, token.lifetime, token.nonce, key)  // not the whole token: fewer bytes copied out
        }
        return key.withObject { signer in
            VerifiedRequest(id: KeyID(of: signer), algorithm: signer.algorithm, account: account,
                            created: created, expires: created + lifetime, nonce: nonce)
        }
    }

    /// Steps 3 (the algorithm) to 8, with the key the token names.
    private func check(_ token: TokenFields, in tokenText: UnsafeRawBufferPointer, request: ReceivedRequest,
                       method: HTTPMethod, canonicalURL canonical: UnsafeRawBufferPointer, now: Int64,
                       key: SigningKey) throws(SignCoreError) {
        guard token.signatureByteCount == key.algorithm.signatureByteCount else {
            throw SignCoreError(.algorithmMismatch, "the signature length does not fit the key's algorithm")
        }

        // 4–5. Time: lifetime within policy, created no later than now + skew, not yet expired.
        guard token.lifetime <= maxLifetime else {
            throw SignCoreError(.lifetimeTooLong, "the token lifetime exceeds the verifier's maximum")
        }
        guard token.created - skew <= now else {  // created is at most 11 digits: no overflow
            throw SignCoreError(.notYetValid, "the token was created in the future beyond the allowed clock skew")
        }
        let expires = token.created + token.lifetime
        guard now < expires else { throw SignCoreError(.expired, "the token has expired") }

        // 6. whash recomputed from what was received, compared with the header in constant time.
        // (For a URL-class method the whash is also the target digest of step 7.)
        let (whash, target) = SigningInput.digests(method: method, canonicalURL: canonical,
                                                     bodyWHash: request.body.whash(for: method))
        if let sent = request.whash {
            guard let sentDigest = SHA256Digest(base64url: sent) else {
                throw SignCoreError(.whashMismatch, "the whash header is not 32 bytes of base64url")
            }
            guard sentDigest == whash else {
                throw SignCoreError(.whashMismatch, "the whash header does not match the request content")
            }
        } else if requireWhashHeader {
            throw SignCoreError(.missingHeader, "the request has no whash header")
        }

        // 7. Target: the token was signed for this method and canonical URL.
        let hintMatches = target.withUnsafeBytes { digest in
            withUnsafeBytes(of: token.targetHint) { hint in constantTimePrefixEqual(digest, hint, WToken.targetHintBytes) }
        }
        guard hintMatches else {
            throw SignCoreError(.targetMismatch, "the token was signed for another method or URL")
        }

        // 8. Signature over the signing input rebuilt from the request and the token.
        let valid = withUnsafeTemporaryAllocation(byteCount: SigningInput.maxByteCount, alignment: 16) { scratch in
            var input = ByteWriter(scratch)
            input.append(key.signingInputPrefix)  // the same bytes as the token's key id
            SigningInput.writeRest(target: target, whash: whash, created: token.created, lifetime: token.lifetime,
                                   nonce: token.nonce, accountByteCount: token.accountByteCount,
                                   into: &input) { token.appendAccount(in: tokenText, to: &$0) }
            return withUnsafeBytes(of: token.signature) { signature in
                key.isValidSignature(UnsafeRawBufferPointer(rebasing: signature[..<token.signatureByteCount]),
                                    for: input.written, startsWithPrefix: true)
            }
        }
        guard valid else { throw SignCoreError(.badSignature, "the signature does not verify") }
    }
}
