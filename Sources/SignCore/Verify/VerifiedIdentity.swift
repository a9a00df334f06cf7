/// Who a request proved to come from, whatever proved it: a wtoken (SPEC §5) today, an RFC 9421
/// signature or a registered device's key in the flows to come. Format-neutral and public to
/// build, so a verifier in any module hands the same value to handlers, logs and a gateway's
/// forwarded fields.
public struct VerifiedIdentity: Sendable, Equatable, CustomStringConvertible {
    /// What proved it: `wtoken` (SignCore/3), or the name a later format gives itself.
    public var format: String
    /// The id of the key that verified the proof.
    public var keyID: String
    public var algorithm: SignatureAlgorithm
    /// The account the client bound into the proof; empty for none.
    public var account: String
    /// When the proof was made and when it stops being accepted, seconds since the Unix epoch.
    public var created: Int64
    public var expires: Int64
    /// The header fields the proof covers (lower case).
    public var coveredHeaders: [String]
    /// The RFC 7638 thumbprint of the key, when the format knows it: what an attestation token
    /// is bound to (docs/ATTEST.md §5.3).
    public var keyThumbprint: SHA256Digest?

    public init(format: String, keyID: String, algorithm: SignatureAlgorithm, account: String = "", created: Int64, expires: Int64,
                coveredHeaders: [String] = [], keyThumbprint: SHA256Digest? = nil) {
        self.format = format
        self.keyID = keyID
        self.algorithm = algorithm
        self.account = account
        self.created = created
        self.expires = expires
        self.coveredHeaders = coveredHeaders
        self.keyThumbprint = keyThumbprint
    }

    public var description: String {
        "VerifiedIdentity(format: \(format), keyID: \(keyID), algorithm: \(algorithm.rawValue), account: \(account.debugDescription), "
            + "created: \(created), expires: \(expires), coveredHeaders: \(coveredHeaders))"
    }
}

extension VerifiedRequest {
    /// The token's identity in the format-neutral form (`format` is `wtoken`).
    public var identity: VerifiedIdentity {
        VerifiedIdentity(format: "wtoken", keyID: keyID, algorithm: algorithm, account: account, created: created, expires: expires,
                         coveredHeaders: coveredHeaders, keyThumbprint: keyThumbprint)
    }
}
