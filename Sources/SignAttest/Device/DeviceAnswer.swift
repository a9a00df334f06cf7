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
        guard record.format.isPlatformAttested || levels.isDisjoint(with: devices.policy.platformLevels) else {
            throw SignCoreError(.formatNotAccepted, "these levels are earned only by a platform-attested device")
        }
    }
}
