import SignCore

/// The advice of a refusal that carries a challenge (ATTEST.md §6): solve it, redeem it, and send
/// the request again, signed afresh, with the token.
extension SignCoreError.Advice {
    public static let attest = SignCoreError.Advice("attest", isRetryable: true)
}

/// The attestation flow's codes, in SPEC §7.3's range for challenges and attestation
/// (ATTEST.md §6). 428s carry a challenge, except `challengeAbandoned`, a client's own.
extension SignCoreError.Code {
    public static let attestationRequired = Self(80, "attestationRequired", advice: .attest, status: 428)
    public static let attestationMalformed = Self(81, "attestationMalformed", advice: .fixRequest, status: 400)
    public static let challengeForged = Self(82, "challengeForged", advice: .fixRequest, status: 403)
    public static let challengeExpired = Self(83, "challengeExpired", advice: .attest, status: 428)
    public static let challengeTooEarly = Self(84, "challengeTooEarly", advice: .attest, status: 428)
    public static let challengeScopeMismatch = Self(85, "challengeScopeMismatch", advice: .fixRequest, status: 403)
    public static let challengeKeyMismatch = Self(86, "challengeKeyMismatch", advice: .fixRequest, status: 403)
    public static let wrongAnswer = Self(87, "wrongAnswer", advice: .fixRequest, status: 403)
    public static let challengeRedeemed = Self(88, "challengeRedeemed", advice: .fixRequest, status: 409)
    public static let attestationExpired = Self(89, "attestationExpired", advice: .attest, status: 428)
    public static let attestationInvalid = Self(90, "attestationInvalid", advice: .attest, status: 428)
    public static let attestationScopeMismatch = Self(91, "attestationScopeMismatch", advice: .fixRequest, status: 403)
    public static let attestationKeyMismatch = Self(92, "attestationKeyMismatch", advice: .fixRequest, status: 403)
    public static let attestationInsufficient = Self(93, "attestationInsufficient", advice: .attest, status: 428)
    /// A client's own: its solver gave up (time bound or cancelled). Never sent by a server.
    public static let challengeAbandoned = Self(94, "challengeAbandoned", advice: .retryLater, status: 428)

    /// The codes of ATTEST.md §6, in number order.
    public static let attestationCodes: [Self] = [
        .attestationRequired, .attestationMalformed, .challengeForged, .challengeExpired, .challengeTooEarly,
        .challengeScopeMismatch, .challengeKeyMismatch, .wrongAnswer, .challengeRedeemed, .attestationExpired,
        .attestationInvalid, .attestationScopeMismatch, .attestationKeyMismatch, .attestationInsufficient, .challengeAbandoned,
    ]
}
