import HTTPTypes
import SignAttest
import SignCore

extension AttestationGate {
    /// Whether `request` is for the attest endpoint (its path, whatever the query).
    public func isEndpoint(_ request: HTTPRequest) -> Bool {
        guard let path = request.path else { return false }
        return path.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) == endpoint
    }

    /// Answers the attest endpoint (docs/ATTEST.md §4) for a request whose signature verified
    /// as `identity`, at `origin`:
    /// - `POST` with an attest request: redeems it (§4.3) and answers the token (§4.4). A valid
    ///   token sent beside it, bound to the same key and origin, carries its levels over, until
    ///   its own expiry (§4.5). An expired challenge gets a 428 with a fresh one; one redeemed
    ///   too early gets a 428 with the same challenge and `Retry-After`.
    /// - `GET`: asks for a challenge (a client attesting before it needs to): a 428 with the
    ///   challenge for the lowest level of `levels=<n>` in the query its token lacks, or of the
    ///   first policy.
    public func respond(to request: HTTPRequest, body: [UInt8], identity: VerifiedIdentity, origin: String) async -> (HTTPResponse, [UInt8]) {
        let now = clock()
        do throws(SignCoreError) {
            let thumbprint = try Self.thumbprint(of: identity)
            switch request.method {
            case .post: return try await redeem(request, body: body, identity: identity, thumbprint: thumbprint, origin: origin, now: now)
            case .get:
                // Only levels some policy grants: a client cannot make the server fail on a level it has no policy for.
                let asked = (Self.levels(inQueryOf: request) ?? []).intersection(grantableLevels)
                let wanted = asked.isEmpty ? challenges[0].levels : asked
                let held = presentedToken(request, identity: identity, thumbprint: thumbprint, origin: origin, now: now)?.levels ?? []
                let lacking = wanted.subtracting(held).isEmpty ? wanted : wanted.subtracting(held)
                let challenge = try challenge(for: lacking, thumbprint: thumbprint, origin: origin, now: now)
                return Self.pair(refusal(SignCoreError(.attestationRequired, "a challenge, as asked"), now: now, challenge: challenge))
            default:
                throw SignCoreError(.unsupportedMethod, "the attest endpoint takes GET and POST")
            }
        } catch {
            return Self.pair(refusal(error, now: now))
        }
    }

    private func redeem(_ request: HTTPRequest, body: [UInt8], identity: VerifiedIdentity, thumbprint: [UInt8], origin: String,
                        now: UInt64) async throws(SignCoreError) -> (HTTPResponse, [UInt8]) {
        var token: AttestationToken
        do {
            token = try await attestor.redeem(body, keyThumbprint: thumbprint, origin: origin, now: now)
        } catch where error.code == .challengeExpired || error.code == .challengeTooEarly {
            // The body parsed and its tag verified (steps 1-2 passed): answer with a challenge to go on with.
            let expired = try AttestRequest(body: body).challenge
            if error.code == .challengeTooEarly {
                return Self.pair(refusal(error, now: now, challenge: expired, retryAfter: expired.secondsUntilRedeemable(now: now)))
            }
            // A fresh one granting what the expired one granted (the policy may have changed since).
            let policy = challenges.first { $0.levels == expired.levels } ?? challenges.first { $0.levels.isSuperset(of: expired.levels) }
                ?? challenges.first { expired.levels.lowest.map($0.levels.contains) ?? false } ?? challenges[0]
            let fresh = try attestor.challenge(policy, keyThumbprint: thumbprint, origin: origin, now: now)
            return Self.pair(refusal(error, now: now, challenge: fresh))
        }
        if let held = presentedToken(request, identity: identity, thumbprint: thumbprint, origin: origin, now: now) {
            token = try attestor.carry(held, into: token, now: now)
        }
        var fields = HTTPFields()
        fields[.contentType] = "application/json"
        fields[.cacheControl] = "no-store"
        return (HTTPResponse(status: .ok, headerFields: fields), AttestResponse(token: token, now: now).body)
    }

    /// A valid token the request carries, covered by its signature, bound to its key and origin.
    private func presentedToken(_ request: HTTPRequest, identity: VerifiedIdentity, thumbprint: [UInt8], origin: String,
                                now: UInt64) -> AttestationToken? {
        let values = request.headerFields[values: names.token]
        guard values.count == 1 else { return nil }
        return try? attestor.checkToken(values[0], fieldName: names.token.canonicalName, keyThumbprint: thumbprint,
                                        coveredHeaders: identity.coveredHeaders, origin: origin, now: now, required: [])
    }

    /// `levels=<n>` (1-65535) in the query; nil when absent or not such a number.
    static func levels(inQueryOf request: HTTPRequest) -> AttestationLevels? {
        guard let path = request.path, let query = path.split(separator: "?", maxSplits: 1).dropFirst().first else { return nil }
        for pair in query.split(separator: "&") where pair.hasPrefix("levels=") {
            if let value = UInt16(pair.dropFirst(7)), value > 0 { return AttestationLevels(rawValue: value) }
        }
        return nil
    }

    private static func pair(_ refusal: Refusal) -> (HTTPResponse, [UInt8]) { (refusal.response, refusal.body) }
}

extension Attestor {
    /// `token` with the levels of `held` added (docs/ATTEST.md §4.5), valid no longer than `held`
    /// is: a level proven once is never extended by proving another.
    public func carry(_ held: AttestationToken, into token: AttestationToken, now: UInt64) throws(SignCoreError) -> AttestationToken {
        let union = held.levels.union(token.levels)
        guard union != token.levels, held.expiresAt > now else { return token }
        let remaining = held.expiresAt - now
        let ttl = min(token.ttl, Int(remaining / 1000))
        guard ttl >= 1 else { return token }
        return try AttestationToken(levels: union, issuedAt: now, ttl: ttl, keyThumbprint: token.keyThumbprint,
                                    originDigest: token.originDigest, key: keys.issuingTokenKey())
    }
}
