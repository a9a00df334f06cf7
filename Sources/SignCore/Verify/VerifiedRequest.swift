/// What a verified token proves: who signed this exact request, for which account, when.
public struct VerifiedRequest: Sendable, Equatable, CustomStringConvertible {
    /// The id of the key that verified the token (a new String on each read).
    public var keyID: String { id.string }
    /// The key id held inline: a String shared with the key would be reference counted by
    /// every verify on every thread, one contended cache line.
    let id: KeyID
    public let algorithm: SignatureAlgorithm
    /// The RFC 7638 thumbprint of that key (`SigningKey.thumbprint`), copied, not recomputed.
    public let keyThumbprint: SHA256Digest
    /// The account the client bound into the token; empty for none. Anyone who sees the token
    /// can read it (it is base64url, not encrypted).
    public let account: String
    public let created: Int64
    public let expires: Int64
    public let nonce: Nonce
    /// The header fields the signature covers (lower case); their values are as received.
    public var coveredHeaders: [String] { headersField.isEmpty ? [] : headersField.split(separator: ",").map(String.init) }
    /// The token's `headers` field: a String, empty (and free to copy) when nothing is covered.
    let headersField: String

    public var description: String {
        "VerifiedRequest(keyID: \(keyID), algorithm: \(algorithm.rawValue), account: \(account.debugDescription), "
            + "created: \(created), expires: \(expires), coveredHeaders: \(coveredHeaders))"
    }
}
