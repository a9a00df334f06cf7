import SignCore

/// The server's keys (ATTEST.md §1): one JWK Set, the same on every node of a fleet. Its `oct`
/// keys authenticate challenges, its `OKP` and `EC` keys sign tokens; the first key of each kind
/// in the set's array issues, and every key of the set is accepted when checking, so a key
/// rotates by being put first everywhere, and leaves once the longest TTL it issued has passed.
public struct AttestationKeys: Sendable {
    /// The `oct` key that authenticates new challenges.
    public let challengeKey: SigningKey
    /// The `OKP` or `EC` key that signs new tokens.
    public let tokenKey: SigningKey
    private let challengeKeys: [String: SigningKey]
    private let tokenKeys: [String: SigningKey]

    /// Keys in issuing order. Refuses (`invalidConfiguration`) a set with no `oct` key or no
    /// `OKP`/`EC` key, a key that cannot sign (a public key issues nothing), and two keys with
    /// one id.
    public init(_ keys: [SigningKey]) throws(SignCoreError) {
        var challengeKeys: [String: SigningKey] = [:], tokenKeys: [String: SigningKey] = [:]
        var ids = Set<String>()
        for key in keys {
            guard key.canSign, key.externalSigner == nil else {
                throw SignCoreError(.invalidConfiguration, "an attestation key is a private key held here (key \(key.id))")
            }
            guard ids.insert(key.id).inserted else { throw SignCoreError(.invalidConfiguration, "two attestation keys have the id \(key.id)") }
            if key.algorithm == .hmacSHA256 { challengeKeys[key.id] = key } else { tokenKeys[key.id] = key }
        }
        guard let challengeKey = keys.first(where: { $0.algorithm == .hmacSHA256 }) else {
            throw SignCoreError(.invalidConfiguration, "the attestation keys have no oct key to authenticate challenges")
        }
        guard let tokenKey = keys.first(where: { $0.algorithm != .hmacSHA256 }) else {
            throw SignCoreError(.invalidConfiguration, "the attestation keys have no OKP or EC key to sign tokens")
        }
        self.challengeKey = challengeKey
        self.tokenKey = tokenKey
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

    /// The `oct` key with this id, which checks a challenge's tag.
    public func challengeKey(id: String) -> SigningKey? { challengeKeys[id] }

    /// The `OKP` or `EC` key with this id, which checks a token's signature.
    public func tokenKey(id: String) -> SigningKey? { tokenKeys[id] }

    /// The token keys' public halves, as a JWK Set an upstream can verify tokens with.
    public func publicTokenKeys() throws(SignCoreError) -> String {
        var keys: [SigningKey] = []
        for key in tokenKeys.values.sorted(by: { $0.id < $1.id }) { keys.append(try key.publicOnly()) }
        return try JWK.serialize(keys, includePrivate: false)
    }
}
