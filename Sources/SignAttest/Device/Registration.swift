import SignCore

extension Attestor {
    /// Registers a device key (ATTEST.md §9.4) from a registration read at `origin`, whose request
    /// was signed by the key with thumbprint `signedBy` (format `signcore`: the HTTP layer has
    /// verified the request under the registration's own key); in the specification's order. The
    /// challenge is redeemed only once every check has passed, and then the record is stored:
    /// registering a key twice keeps the first record (`inserted` false).
    public func register(_ registration: DeviceRegistration, signedBy: [UInt8]?, origin: String,
                         now: UInt64) async throws(SignCoreError) -> (record: DeviceRecord, inserted: Bool) {
        let devices = try configuredDevices()
        // 2. A format this deployment accepts.
        guard devices.policy.formats.contains(registration.format) else {
            throw SignCoreError(.formatNotAccepted, "this server does not accept registrations in this format")
        }
        // 3-5. The challenge: issued by the fleet, not expired, at this origin.
        let challenge = registration.challenge
        guard let tagKey = keys.challengeKey(id: challenge.serverKeyID),
              (try? tagKey.verifyMessage(Array(challenge.body), signature: Array(challenge.tag), context: Challenge.tagContext)) != nil
        else { throw SignCoreError(.challengeForged, "the registration challenge's tag does not verify under a server key") }
        guard now < challenge.expiresAt.addingSaturated(skew) else {
            throw SignCoreError(.registrationExpired, "the registration challenge has expired")
        }
        guard challenge.originDigest == AttestationScope.originDigest(origin) else {
            throw SignCoreError(.challengeScopeMismatch, "the registration challenge was issued at another origin")
        }
        // 6-8. The key: what proves it (its id, or the platform's attestation), who signed, and
        // the key the challenge is bound to.
        let key = try await registeredKey(registration, signedBy: signedBy, policy: devices.policy, now: now)
        guard challenge.keyThumbprint == Self.unbound || challenge.keyThumbprint == key.binding else {
            throw SignCoreError(.challengeKeyMismatch, "the registration challenge is bound to another key")
        }
        // 9. The app.
        guard devices.policy.appIDs.contains(key.appID) else {
            throw SignCoreError(.appMismatch, "the registration names an app this server does not serve")
        }
        let appID = key.appID
        // 10. Never a revoked key again.
        if let held = try await devices.registry.device(keyID: key.keyID), !held.status.verifies {
            throw SignCoreError(.deviceRevoked, "the device key has been revoked")
        }
        // 11. The challenge, once, fleet-wide.
        guard try await redemptions.redeem(challenge.id, expiresAt: challenge.expiresAt.addingSaturated(skew), now: now) else {
            throw SignCoreError(.challengeRedeemed, "the registration challenge has been answered already")
        }
        // 12. The record.
        let record = DeviceRecord(keyID: key.keyID, format: registration.format, publicKey: key.publicKey, appID: appID,
                                  environment: key.environment, registeredAt: now)
        let stored = try await devices.registry.register(record)
        guard stored.record.status.verifies else { throw SignCoreError(.deviceRevoked, "the device key has been revoked") }
        return stored
    }

    /// What a registration proves of its key (ATTEST.md §9.4 steps 6-7), by format.
    private func registeredKey(_ registration: DeviceRegistration, signedBy: [UInt8]?, policy: DevicePolicy,
                               now: UInt64) async throws(SignCoreError) -> AttestedKey {
        var attested: AttestedKey
        if registration.format == .signcore {
            guard let key = registration.publicKey else { throw DeviceRegistration.malformed("a signcore registration has a jwk") }
            let thumbprint = key.thumbprint.bytes
            guard registration.keyID == Base64URL.encode(thumbprint), key.id == registration.keyID else {
                throw SignCoreError(.deviceKeyMismatch, "the keyId (and the jwk's kid, when it has one) is not the RFC 7638 thumbprint of the jwk")
            }
            attested = AttestedKey(keyID: registration.keyID, publicKey: try JWK.serialize(key, includePrivate: false), binding: thumbprint,
                                   appID: registration.appID ?? "", environment: "")
        } else {
            guard let verifier = policy.verifiers[registration.format] else {
                throw SignCoreError(.formatNotAccepted, "this server does not verify registrations in this format")
            }
            attested = try await verifier.verifyRegistration(registration, appIDs: policy.appIDs, now: now)
        }
        // 7. A key that signs requests signed its own registration.
        if registration.format.signsRequests, signedBy != attested.binding {
            throw SignCoreError(.deviceKeyMismatch, "the registration is not signed by the key it registers")
        }
        return attested
    }
}
