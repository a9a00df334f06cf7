import SignCore

extension Attestor {
    /// A one-time payload for seed 003's assertions (ATTEST.md §9.6): a challenge of type 4 bound
    /// to the platform key id `keyID` (32 bytes), which the attest endpoint never redeems.
    /// Writes nothing.
    public func assertionPayload(boundTo keyID: [UInt8], origin: String, now: UInt64) throws(SignCoreError) -> Challenge {
        let devices = try configuredDevices()
        guard keyID.count == 32 else { throw SignCoreError(.attestationMalformed, "a key id to bind is 32 bytes") }
        return try Challenge(kind: .payload, difficulty: 0, count: 0, levels: [], issuedAt: now, ttl: devices.policy.registrationTTL,
                             keyThumbprint: keyID, originDigest: AttestationScope.originDigest(origin), key: keys.issuingChallengeKey())
    }

    /// Verifies seed 003's assertion (`{platform, format, keyId, payload, token}`, ATTEST.md §9.6)
    /// sent without a signature, at `origin`: the payload one of this fleet's, unexpired, issued
    /// here to this key id; the assertion by that registered key over the payload's text; then the
    /// payload redeemed once and the counter recorded. Returns the record and the counter.
    public func verifySeedAssertion(_ body: [UInt8], origin: String, now: UInt64) async throws(SignCoreError) -> (DeviceRecord, UInt64) {
        let request = try AttestRequest(body: body)
        let challenge = request.challenge
        guard challenge.kind == .payload, let assertion = request.assertion,
              let keyID = DeviceRegistration.decodeBase64(Array(assertion.keyID.utf8)), keyID.count == 32
        else { throw SignCoreError(.attestationMalformed, "an assertion has a payload, a format, a keyId (base64 of 32 bytes) and a token") }
        guard let key = keys.challengeKey(id: challenge.serverKeyID),
              (try? key.verifyMessage(Array(challenge.body), signature: Array(challenge.tag), context: Challenge.tagContext)) != nil
        else { throw SignCoreError(.challengeForged, "the payload's tag does not verify under a server key") }
        guard now < challenge.expiresAt.addingSaturated(skew) else { throw SignCoreError(.challengeExpired, "the payload has expired") }
        guard challenge.originDigest == AttestationScope.originDigest(origin) else {
            throw SignCoreError(.challengeScopeMismatch, "the payload was issued at another origin")
        }
        guard keyID == challenge.keyThumbprint else {
            throw SignCoreError(.challengeKeyMismatch, "the payload was issued to another key")
        }
        let counter = try await checkAssertion(assertion, challenge: challenge)
        guard try await redemptions.redeem(challenge.id, expiresAt: challenge.expiresAt.addingSaturated(skew), now: now) else {
            throw SignCoreError(.challengeRedeemed, "the payload has been used already")
        }
        let devices = try configuredDevices()
        try await devices.registry.observe(keyID: counter.keyID, counter: counter.value, now: now)
        guard let record = try await devices.registry.device(keyID: counter.keyID) else {
            throw SignCoreError(.deviceUnknown, "no registered key has this id")
        }
        return (record, counter.value)
    }
}
