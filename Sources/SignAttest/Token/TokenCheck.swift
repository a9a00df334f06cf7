import SignCore

extension Attestor {
    /// Checks the attestation token in a request's `fieldName` field (ATTEST.md §5.5), for a
    /// request whose wtoken verified under the key with `keyThumbprint` and covers
    /// `coveredHeaders`, at `origin`, against the levels the route requires. In the
    /// specification's order; the first failure is the result.
    public func checkToken(_ field: String, fieldName: String = "attest-token", keyThumbprint: [UInt8], coveredHeaders: [String],
                           origin: String, now: UInt64, required: AttestationLevels) throws(SignCoreError) -> AttestationToken {
        // 1. The wtoken covers the token's field, so it cannot be moved onto another request.
        let name = fieldName.lowercased()
        guard coveredHeaders.contains(where: { $0.utf8.elementsEqual(name.utf8) }) else {
            throw SignCoreError(.headerNotCovered, "the wtoken does not cover the attestation token's field")
        }
        // 2. The layout.
        let token = try AttestationToken(parsing: field)
        // 3. The signature, under the `OKP` or `EC` key it names.
        guard let key = keys.tokenKey(id: token.serverKeyID),
              (try? key.verifyMessage(Array(token.body), signature: Array(token.signature), context: AttestationToken.signatureContext)) != nil
        else { throw SignCoreError(.attestationInvalid, "the attestation token's signature does not verify under a server key") }
        // 4. Its time, with the fleet's skew on both sides.
        guard now.addingSaturated(skew) >= token.issuedAt, now < token.expiresAt.addingSaturated(skew) else {
            throw SignCoreError(.attestationExpired, "the attestation token has expired")
        }
        // 5. This origin.
        guard token.originDigest == AttestationScope.originDigest(origin) else {
            throw SignCoreError(.attestationScopeMismatch, "the attestation token was issued at another origin")
        }
        // 6. The key that signed the request.
        guard token.keyThumbprint == keyThumbprint else {
            throw SignCoreError(.attestationKeyMismatch, "the attestation token is bound to another key")
        }
        // 7. The route's levels.
        guard token.levels.meets(required) else {
            throw SignCoreError(.attestationInsufficient, "the attestation token lacks a level the route requires")
        }
        return token
    }
}
