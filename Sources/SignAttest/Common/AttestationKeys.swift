import SignCore

/// The server's keys (ATTEST.md §1): one JWK Set, the same on every node of a fleet. Its `oct`
/// keys authenticate challenges, its `OKP` and `EC` keys sign tokens; the first key of each kind
/// in the set's array issues, and every key of the set is accepted when checking, so a key
/// rotates by being put first everywhere, and leaves once the longest TTL it issued has passed.
public struct AttestationKeys: Sendable {
    /// The `oct` key that authenticates new challenges: the first of the set; nil when it has none.
    public let challengeKey: SigningKey?
    /// The `OKP` or `EC` key that signs new tokens: the first of the set; nil when it has none.
    public let tokenKey: SigningKey?
    private let challengeKeys: [String: SigningKey]
    private let tokenKeys: [String: SigningKey]

    /// Keys in issuing order. A set may hold one kind only (a node that only checks tokens holds
    /// their public keys); issuing what it has no key for is `invalidConfiguration`. Refuses
    /// (`invalidConfiguration`) two keys with one id.
    public init(_ keys: [SigningKey]) throws(SignCoreError) {
        var challengeKeys: [String: SigningKey] = [:], tokenKeys: [String: SigningKey] = [:]
        for key in keys {
            guard challengeKeys[key.id] == nil, tokenKeys[key.id] == nil else {
                throw SignCoreError(.invalidConfiguration, "two attestation keys have the id \(key.id)")
            }
            if key.algorithm == .hmacSHA256 { challengeKeys[key.id] = key } else { tokenKeys[key.id] = key }
        }
        challengeKey = keys.first { $0.algorithm == .hmacSHA256 }
        tokenKey = keys.first { $0.algorithm != .hmacSHA256 }
        self.challengeKeys = challengeKeys
        self.tokenKeys = tokenKeys
    }

    /// The keys of a JWK Set text (SPEC §6.1, private members allowed).
    public init(jwks: String) throws(SignCoreError) {
        try self.init(JWK.parseKeys(jwks))
    }

    /// The keys of a JWK Set file, read into wiped memory (`JWK.parseKeys(file:)`).
    public init(jwksFile path: String) throws(SignCoreError) {
        try self.init(JWK.parseKeys(file: path))
    }

    /// The key that issues challenges (`invalidConfiguration` when the set has no `oct` key).
    public func issuingChallengeKey() throws(SignCoreError) -> SigningKey {
        guard let challengeKey else { throw SignCoreError(.invalidConfiguration, "the attestation keys have no oct key to authenticate challenges") }
        return challengeKey
    }

    /// The key that signs tokens (`invalidConfiguration` when the set has no `OKP` or `EC` key).
    public func issuingTokenKey() throws(SignCoreError) -> SigningKey {
        guard let tokenKey else { throw SignCoreError(.invalidConfiguration, "the attestation keys have no OKP or EC key to sign tokens") }
        return tokenKey
    }

    /// The `oct` key with this id, which checks a challenge's tag.
    public func challengeKey(id: String) -> SigningKey? { challengeKeys[id] }

    /// The `OKP` or `EC` key with this id, which checks a token's signature.
    public func tokenKey(id: String) -> SigningKey? { tokenKeys[id] }
}
