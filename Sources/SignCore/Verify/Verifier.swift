/// Verifies signed requests (the server side; SPEC §5). Thread-safe: share one instance.
public struct Verifier: Sendable {
    /// The keys accepted now; `replaceKeys` swaps them while the verifier serves.
    public var keys: KeySet { keyStore.keys }
    /// Looked up by id when `keys` does not hold a token's key (per-device keys, say).
    public let keyCache: KeyCache?
    /// Seconds a token's creation time may lie in the future (client clock ahead). No
    /// allowance is made past expiry.
    public let skew: Int64
    /// Longest lifetime accepted, in seconds.
    public let maxLifetime: Int64
    /// Whether a request without a `whash` header is refused (`missingHeader`). When false the
    /// header is still compared whenever present; the signature binds the whash either way.
    public let requireWhashHeader: Bool
    /// Whether a GET, HEAD, OPTIONS or DELETE may carry a body. Such a body is not covered by
    /// the signature; by default it is refused (`unexpectedBody`, SPEC §5 step 2).
    public let allowsUnsignedBody: Bool
    /// The header fields tokens must cover.
    public let requiredHeaders: RequiredHeaders
    private let requiresCoverage: Bool
    public let replayGuard: any ReplayGuard
    /// The shards of the same guard when it is the in-process one, called directly rather than
    /// through the protocol's async requirement (`replayGuard` keeps them alive).
    private let inMemoryShards: InMemoryReplayGuard.Shards?
    private let keyStore: KeyStore
    /// The store's current set, reached without a reference count (`keyStore` keeps it alive).
    private let currentKeys: KeyStore.Current
    public let clock: @Sendable () -> Int64

    /// Throws `invalidConfiguration` for a skew outside 0...86400 or a maximum lifetime outside
    /// 1...86400 (SPEC §4.1).
    public init(keys: KeySet, keyCache: KeyCache? = nil, replayGuard: any ReplayGuard, skew: Int64 = 30,
                maxLifetime: Int64 = 300, requireWhashHeader: Bool = true, allowsUnsignedBody: Bool = false,
                requiredHeaders: RequiredHeaders = .none,
                clock: @escaping @Sendable () -> Int64 = SystemClock.seconds) throws(SignCoreError) {
        guard (0...WToken.maxLifetime).contains(skew) else {
            throw SignCoreError(.invalidConfiguration, "the skew must be 0 to 86400 seconds")
        }
        guard (1...WToken.maxLifetime).contains(maxLifetime) else {
            throw SignCoreError(.invalidConfiguration, "the maximum lifetime must be 1 to 86400 seconds")
        }
        keyStore = KeyStore(keys)
        currentKeys = keyStore.reader
        self.keyCache = keyCache
        self.replayGuard = replayGuard
        self.inMemoryShards = (replayGuard as? InMemoryReplayGuard)?.shards
        self.skew = skew
        self.maxLifetime = maxLifetime
        self.requireWhashHeader = requireWhashHeader
        self.allowsUnsignedBody = allowsUnsignedBody
        self.requiredHeaders = requiredHeaders
        requiresCoverage = requiredHeaders != .none
        self.clock = clock
    }

    /// Replaces the accepted keys atomically, while requests are being verified: each verify
    /// uses the old set or the new one, never a mix. Copies of this verifier share the change;
    /// the replay guard keeps every nonce it holds (SPEC §6.3).
    public func replaceKeys(_ keys: KeySet) {
        keyStore.replace(with: keys)
    }

    /// Every check including the replay guard: a token is accepted once. Runs on the caller's
    /// executor (`nonisolated(nonsending)`): the checks are synchronous work, so a hop to the
    /// global executor and back would only add a task switch to every verify.
    nonisolated(nonsending) public func verify(_ request: ReceivedRequest) async throws(SignCoreError) -> VerifiedRequest {
        let now = clock()
        var missing: String?
        let verified: VerifiedRequest
        do {
            verified = try checkRecording(request, now: now, fetched: nil, missingKey: &missing)
        } catch where error.code == .unknownKey && missing != nil {
            // A key neither the set nor the cache holds: fetched from the cache's source once.
            guard let cache = keyCache, let id = missing, let key = try await cache.key(id: id) else { throw error }
            verified = try checkRecording(request, now: now, fetched: key, missingKey: &missing)
        }
        if inMemoryShards == nil {
            try await replayGuard.record(keyID: verified.keyID, nonce: verified.nonce, expires: verified.expires, now: now)
        }
        return verified
    }

    /// `verify` for a request that brings its own key (a device registration, docs/ATTEST.md
    /// §9.4): the key set is asked first, then `offeredKey` when its id is the token's key id.
    /// The caller checks that the key that verified is the one it meant (its thumbprint).
    nonisolated(nonsending) public func verify(_ request: ReceivedRequest, offeredKey: SigningKey) async throws(SignCoreError) -> VerifiedRequest {
        let now = clock()
        var missing: String?
        let verified = try checkRecording(request, now: now, fetched: offeredKey, missingKey: &missing)
        if inMemoryShards == nil {
            try await replayGuard.record(keyID: verified.keyID, nonce: verified.nonce, expires: verified.expires, now: now)
        }
        return verified
    }

    /// Every check of `verify` but the replay record, which the caller makes with `record` once
    /// the request is to go on: a request that a later stage refuses (a 428 asking for
    /// attestation) then writes nothing to the replay store. Keys are fetched as `verify`
    /// fetches them. The request must not be acted on before `record` has succeeded.
    nonisolated(nonsending) public func verifyDeferringRecord(_ request: ReceivedRequest) async throws(SignCoreError)
        -> (verified: VerifiedRequest, now: Int64) {
        let now = clock()
        var missing: String?
        do {
            return (try check(request, now: now, fetched: nil, missingKey: &missing, parsed: { _, _, _ in }, accepted: { _, _, _ in }), now)
        } catch where error.code == .unknownKey && missing != nil {
            guard let cache = keyCache, let id = missing, let key = try await cache.key(id: id) else { throw error }
            return (try check(request, now: now, fetched: key, missingKey: &missing, parsed: { _, _, _ in }, accepted: { _, _, _ in }), now)
        }
    }

    /// The replay record of a request checked by `verifyDeferringRecord` at `now` (SPEC §5
    /// step 10): `replayed` when its nonce was used already.
    nonisolated(nonsending) public func record(_ verified: VerifiedRequest, now: Int64) async throws(SignCoreError) {
        try await replayGuard.record(keyID: verified.keyID, nonce: verified.nonce, expires: verified.expires, now: now)
    }

    /// `verify` without an `await`, for callers that cannot suspend (a SwiftNIO channel
    /// handler) and for instruction counting: the same checks and the same in-process replay
    /// record. Keys of the key cache are used only when already cached (a miss is
    /// `unknownKey`). Throws `invalidConfiguration` when the replay guard is not an
    /// `InMemoryReplayGuard`: a shared store has to be awaited.
    public func verifySynchronously(_ request: ReceivedRequest) throws(SignCoreError) -> VerifiedRequest {
        guard inMemoryShards != nil else {
            throw SignCoreError(.invalidConfiguration, "only a verifier with an in-memory replay guard verifies synchronously")
        }
        var missing: String?
        return try checkRecording(request, now: clock(), fetched: nil, missingKey: &missing)
    }

    /// Every check except the replay guard (SPEC §5 steps 1–9). On its own this accepts the
    /// same token again until it expires; use `verify` unless replays are handled elsewhere.
    /// Keys of the key cache are used only when already cached (`verify` fetches them).
    public func check(_ request: ReceivedRequest, now: Int64? = nil) throws(SignCoreError) -> VerifiedRequest {
        var missing: String?
        return try check(request, now: now ?? clock(), fetched: nil, missingKey: &missing, parsed: { _, _, _ in }, accepted: { _, _, _ in })
    }

    /// The checks and, with the in-memory guard, the replay record, hashed as soon as the
    /// key is known so that its table slot loads while the signature is checked, and made once
    /// every check has passed, before the result is built (so it is built in place, not copied).
    @inline(__always)
    private func checkRecording(_ request: ReceivedRequest, now: Int64, fetched: SigningKey?,
                                missingKey: inout String?) throws(SignCoreError) -> VerifiedRequest {
        guard let shards = inMemoryShards else {
            return try check(request, now: now, fetched: fetched, missingKey: &missingKey, parsed: { _, _, _ in }, accepted: { _, _, _ in })
        }
        var pair: InMemoryReplayGuard.HashedNonce?
        return try check(request, now: now, fetched: fetched, missingKey: &missingKey, parsed: { tag, nonce, expires in
            pair = shards.hashed(nonce, key: ReplayKey(tag: tag), expires: expires)
        }, accepted: { (tag, nonce, expires) throws(SignCoreError) in
            try shards.record(pair ?? shards.hashed(nonce, key: ReplayKey(tag: tag), expires: expires), expires: expires, now: now)
        })
    }

    /// The checks, telling `parsed` the key's replay tag, the nonce and the token's expiry as
    /// soon as they are known (before the time checks), and `accepted` the same once every
    /// check has passed (it may still refuse).
    /// When the token's key is in neither the key set nor the cache and a cache is configured,
    /// `missingKey` names it (and `unknownKey` is thrown).
    private func check(_ request: ReceivedRequest, now: Int64, fetched: SigningKey?, missingKey: inout String?,
                       parsed: (UInt64, Nonce, Int64) -> Void,
                       accepted: (UInt64, Nonce, Int64) throws(SignCoreError) -> Void) throws(SignCoreError) -> VerifiedRequest {
        // 1. The token: present, bounded, well-formed (parsed in place, nothing allocated).
        guard let header = request.wtoken else { throw SignCoreError(.missingHeader, "the request has no wtoken header") }
        // Only plain data leaves the byte-level closures (the key unretained: the key set, the
        // cache or `fetched` holds it), and the account is made only when there is one, so the
        // hot path does little reference counting.
        var account = ""
        var covered = ""
        var cachedKey: SigningKey?  // holds a key from the cache while it is used
        let keySet = currentKeys.unretained
        let (created, lifetime, nonce, key) = try withUTF8(of: header) { (tokenText) throws(SignCoreError) in
            let token = try TokenFields(parsing: tokenText, deferringKeyIDAlphabet: true)
            // 3. The key named by the token, when the set holds it, looked up ahead of step 2
            // (refusing nothing yet) so that its secret states load while the URL is
            // canonicalised (in a large key set they are not in the cache). Any other outcome is
            // settled in step order, below. An id the set holds is valid base64url; any other is
            // checked here, still step 1.
            let id = UnsafeRawBufferPointer(rebasing: tokenText[token.keyID])
            let inSet = keySet.withObject { $0.keys.unretainedKey(id: id) }
            if inSet == nil, !token.isKeyIDAlphabet(in: tokenText) { throw TokenFields.keyIDMalformed }

            // 2. The request: a signable method, a valid URL, no body on a URL-class method.
            let method = try RequestMethod(token: request.method)
            // The URL canonicalised and hashed (the target digest of step 8; for a URL-class
            // method also the whash of step 6).
            let target = try withUTF8(of: request.url) { (url) throws(SignCoreError) in try SigningInput.targetDigest(method: method, url: url) }
            if method.contentClass == .url, !allowsUnsignedBody, !request.body.isEmpty {
                throw SignCoreError(.unexpectedBody, "a GET, HEAD, OPTIONS or DELETE request carries a body, which no signature covers")
            }
            // The key's algorithm decides how the signature is checked.
            let key: Unmanaged<SigningKey>
            if let inSet {
                key = inSet
            } else {
                key = try keySet.withObject { (set) throws(SignCoreError) in
                    try lookUp(id, in: set.keys, fetched: fetched, cached: &cachedKey, missing: &missingKey)
                }
            }
            try key.withObject { (key) throws(SignCoreError) in
                parsed(key.replayTag, token.nonce, token.created + token.lifetime)
                try check(token, in: tokenText, request: request, method: method, target: target, now: now, key: key)
            }
            if token.accountByteCount > 0 { account = token.account(in: tokenText) }
            if token.coveredCount > 0 { covered = String(decoding: token.headers(in: tokenText), as: UTF8.self) }
            return (token.created, token.lifetime, token.nonce, key)  // not the whole token: fewer bytes copied out
        }
        try accepted(key.withObject { $0.replayTag }, nonce, created + lifetime)
        return withExtendedLifetime(cachedKey) {
            key.withObject { signer in
                VerifiedRequest(id: signer.keyID, algorithm: signer.algorithm, keyThumbprint: signer.thumbprint, account: account,
                                created: created, expires: created + lifetime, nonce: nonce, headersField: covered)
            }
        }
    }

    /// Step 3's lookup: the key set, then a key just fetched, then the cache.
    private func lookUp(_ id: UnsafeRawBufferPointer, in keys: KeySet, fetched: SigningKey?, cached: inout SigningKey?,
                        missing: inout String?) throws(SignCoreError) -> Unmanaged<SigningKey> {
        if let key = keys.unretainedKey(id: id) { return key }
        if let fetched, bytesEqual(fetched.idBytes, id) { return Unmanaged.passUnretained(fetched) }
        if let cache = keyCache {
            let name = String(decoding: id, as: UTF8.self)
            switch cache.cached(id: name) {
            case .some(.some(let record)) where record.status.verifies:
                cached = record.key
                return Unmanaged.passUnretained(record.key)
            case .some:
                break  // known not to exist, or its key may not verify (revoked)
            case .none:
                missing = name
            }
        }
        throw SignCoreError(.unknownKey, "no key has the token's key id", keyID: String(decoding: id, as: UTF8.self))
    }

    /// Step 7's first half: every header field the verifier requires is named by the token.
    private func checkCoverage(_ names: UnsafeRawBufferPointer, method: RequestMethod) throws(SignCoreError) {
        let covered = CoveredHeaders.names(in: names)
        for required in requiredHeaders.names(for: method) {
            var required = required
            let isCovered = required.withUTF8 { wanted in
                covered.contains { bytesEqual(UnsafeRawBufferPointer(rebasing: names[$0]), UnsafeRawBufferPointer(wanted)) }
            }
            guard isCovered else {
                throw SignCoreError(.headerNotCovered, "the token does not cover a header field the verifier requires")
            }
        }
    }

    /// Steps 3 (the algorithm) to 9, with the key the token names.
    private func check(_ token: TokenFields, in tokenText: UnsafeRawBufferPointer, request: ReceivedRequest,
                       method: RequestMethod, target: SHA256Digest, now: Int64, key: SigningKey) throws(SignCoreError) {
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
        // (For a URL-class method the whash is the target digest of step 8.)
        let whash = request.body.whash(for: method) ?? target
        if let sent = request.whash {
            guard whash.isEncoded(as: sent) else {
                guard SHA256Digest(base64url: sent) != nil else {
                    throw SignCoreError(.whashMismatch, "the whash header is not 32 bytes of base64url")
                }
                // A URL-class whash is the URL's: a mismatch is most often a client that signed for
                // another scheme, host or port than this server verifies for (http vs https, a proxy).
                throw SignCoreError(.whashMismatch, method.contentClass == .url
                    ? "the whash header does not match the URL received: check the scheme, host and port the client signed for"
                    : "the whash header does not match the request content")
            }
        } else if requireWhashHeader {
            throw SignCoreError(.missingHeader, "the request has no whash header")
        }

        // 7. Covered headers: every required one covered; the covered values as received.
        let names = token.headers(in: tokenText)
        if requiresCoverage { try checkCoverage(names, method: method) }
        var headers = SigningInput.Headers.none
        if token.coveredCount > 0 {
            headers.count = token.coveredCount
            headers.digest = try CoveredHeaders.digest(names: names, fields: request.headers)
        }

        // 8. Target: the token was signed for this method and canonical URL.
        let hintMatches = target.withUnsafeBytes { digest in
            withUnsafeBytes(of: token.targetHint) { hint in constantTimePrefixEqual(digest, hint, WToken.targetHintBytes) }
        }
        guard hintMatches else {
            throw SignCoreError(.targetMismatch, "the token was signed for another method or URL")
        }

        // 9. Signature over the signing input rebuilt from the request and the token (the key's
        // prefix holds the same bytes as the token's key id).
        let valid = token.withAccount(in: tokenText) { account in
            var rest = SigningInput.rest(target: target, whash: whash, created: token.created, lifetime: token.lifetime,
                                         nonce: token.nonce, account: account, headers: headers)
            return withUnsafeBytes(of: token.signature) { signature in
                key.isValidSignature(UnsafeRawBufferPointer(rebasing: signature[..<token.signatureByteCount]), forRest: &rest)
            }
        }
        guard valid else { throw SignCoreError(.badSignature, "the signature does not verify") }
    }
}
