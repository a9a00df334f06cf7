import SignCore

extension Attestor {
    /// ATTEST.md §9.6 step 7: the key that signed an attest request answering a device challenge
    /// is a registered device key, active, registered in a format that earns `levels`. (Its
    /// counter was checked with the request, as for every request of a device key, §9.5.)
    func checkDevice(keyThumbprint: [UInt8], levels: AttestationLevels) async throws(SignCoreError) {
        let devices = try configuredDevices()
        guard let record = try await devices.registry.device(keyID: Base64URL.encode(keyThumbprint)), record.format.signsRequests else {
            throw SignCoreError(.deviceUnknown, "the request's key is not a registered device key")
        }
        guard record.status.verifies else { throw SignCoreError(.deviceRevoked, "the device key has been revoked") }
        guard devices.policy.formats.contains(record.format) else {
            throw SignCoreError(.formatNotAccepted, "this server no longer accepts keys registered in this format")
        }
        guard record.format.isPlatformAttested || levels.isDisjoint(with: devices.policy.platformLevels) else {
            throw SignCoreError(.formatNotAccepted, "these levels are earned only by a platform-attested device")
        }
    }

    /// ATTEST.md §9.6 step 7 with an assertion: the key id names an active registered key of the
    /// assertion's format, and the assertion verifies over the challenge's text under it. Returns
    /// the key id (as the registry keeps it) and the assertion's counter, recorded after step 8.
    func checkAssertion(_ assertion: AttestRequest.PlatformAssertion, challenge: Challenge) async throws(SignCoreError)
        -> (keyID: String, value: UInt64) {
        let devices = try configuredDevices()
        guard assertion.format == .appleAppAttest, let verifier = devices.policy.verifiers[assertion.format],
              devices.policy.formats.contains(assertion.format) else {
            throw SignCoreError(.formatNotAccepted, "this server does not accept assertions in this format")
        }
        guard let bytes = DeviceRegistration.decodeBase64(Array(assertion.keyID.utf8)), bytes.count == 32 else {
            throw SignCoreError(.attestationMalformed, "an App Attest keyId is the base64 of 32 bytes")
        }
        let keyID = DeviceRegistration.base64(bytes)
        guard let record = try await devices.registry.device(keyID: keyID), record.format == assertion.format else {
            throw SignCoreError(.deviceUnknown, "no registered key of this format has this id")
        }
        guard record.status.verifies else { throw SignCoreError(.deviceRevoked, "the device key has been revoked") }
        let counter = try verifier.verifyAssertion(assertion.token, clientData: Array(challenge.text.utf8), record: record)
        return (keyID, counter)
    }
}
