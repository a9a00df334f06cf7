import SignCore

extension Attestor {
    /// Redeems an attest request (ATTEST.md §4.3) made by the key with `keyThumbprint` (its
    /// wtoken verified first) at `origin`: checks, in the specification's order, then records the
    /// challenge id in one atomic step and returns the token. Nothing is written before the last
    /// step, so bad requests cost no store row.
    public func redeem(_ body: [UInt8], keyThumbprint: [UInt8], origin: String, now: UInt64) async throws(SignCoreError) -> AttestationToken {
        // A node that cannot issue tokens redeems nothing.
        let tokenKey = try keys.issuingTokenKey()
        // 1. An attest request whose challenge parses and whose answer is 8k bytes.
        let request = try AttestRequest(body: body)
        let challenge = request.challenge
        guard challenge.kind != .payload else {
            throw SignCoreError(.attestationMalformed, "a payload is asserted at the device endpoint, never redeemed for a token")
        }
        // 2. The tag, under the `oct` key it names.
        guard let key = keys.challengeKey(id: challenge.serverKeyID),
              (try? key.verifyMessage(Array(challenge.body), signature: Array(challenge.tag), context: Challenge.tagContext)) != nil
        else { throw SignCoreError(.challengeForged, "the challenge's tag does not verify under a server key") }
        // 3. Not expired, with the fleet's skew.
        guard now < challenge.expiresAt.addingSaturated(skew) else {
            throw SignCoreError(.challengeExpired, "the challenge has expired")
        }
        // 4. The minimum time since issue, with no skew.
        guard now >= challenge.redeemableAt else {
            throw SignCoreError(.challengeTooEarly, "the challenge's minimum time has not passed")
        }
        // 5. Issued at this origin.
        guard challenge.originDigest == AttestationScope.originDigest(origin) else {
            throw SignCoreError(.challengeScopeMismatch, "the challenge was issued at another origin")
        }
        // 6. Issued to this key.
        guard challenge.keyThumbprint == keyThumbprint else {
            throw SignCoreError(.challengeKeyMismatch, "the challenge was issued to another key")
        }
        // 7. The answer: the work, a registered device's key, or its platform's assertion (ATTEST.md §9.6).
        var counter: (keyID: String, value: UInt64)?
        if let assertion = request.assertion {
            counter = try await checkAssertion(assertion, challenge: challenge)
        } else if challenge.kind == .device {
            try await checkDevice(keyThumbprint: keyThumbprint, levels: challenge.levels)
        } else if !ProofOfWork.isValid(request.answer, for: challenge) {
            throw SignCoreError(.wrongAnswer, "the answer does not solve the challenge")
        }
        // 8. Redeemed once, fleet-wide.
        guard try await redemptions.redeem(challenge.id, expiresAt: challenge.expiresAt.addingSaturated(skew), now: now) else {
            throw SignCoreError(.challengeRedeemed, "the challenge has been redeemed already")
        }
        // 9. An assertion's platform key, bound to the key that signs (on its first use), and its
        // counter, in the key's window (ATTEST.md §9.5, §9.6).
        if let counter, let devices {
            guard try await devices.registry.bind(keyID: counter.keyID, to: keyThumbprint) else {
                throw SignCoreError(.deviceKeyMismatch, "the platform key answers for another signing key")
            }
            try await devices.registry.observe(keyID: counter.keyID, counter: counter.value, now: now)
        }
        return try AttestationToken(levels: challenge.levels, issuedAt: now, ttl: tokenTTL, keyThumbprint: keyThumbprint,
                                    originDigest: challenge.originDigest, key: tokenKey)
    }
}

extension Challenge {
    /// Milliseconds: issuedAt + minElapsed, when a redemption may come (ATTEST.md §4.3 step 4).
    public var redeemableAt: UInt64 { issuedAt.addingSaturated(UInt64(minElapsed)) }

    /// The `Retry-After` of a `challengeTooEarly` refusal: ⌈(redeemableAt − now) / 1000⌉ seconds,
    /// at least 1 (ATTEST.md §4.3 step 4).
    public func secondsUntilRedeemable(now: UInt64) -> UInt64 {
        guard redeemableAt > now else { return 1 }
        let wait = redeemableAt - now
        return max(1, wait / 1000 + (wait % 1000 == 0 ? 0 : 1))
    }
}
