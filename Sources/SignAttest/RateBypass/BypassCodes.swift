import SignCore

/// The advice of a rate limit's refusal (ATTEST.md §10.8): answer one of the refusal's offers and
/// send the request again, signed afresh, with the answer; a client that can answer none waits
/// for `Retry-After`.
extension SignCoreError.Advice {
    public static let bypass = SignCoreError.Advice("bypass", isRetryable: true)
}

/// The rate limit flow's codes, in SPEC §7.3's range for rate limits (ATTEST.md §10.8): the 429
/// and one code per row of seed 001's error table.
extension SignCoreError.Code {
    public static let rateLimited = Self(120, "rateLimited", advice: .bypass, status: 429)
    /// Seed 001's "invalid token format".
    public static let bypassMalformed = Self(121, "bypassMalformed", advice: .fixRequest, status: 400)
    /// Seed 001's "nonce mismatch": an offer that is not this server's, or not for this bucket
    /// and key, or a verdict made for another.
    public static let bypassNonceMismatch = Self(122, "bypassNonceMismatch", advice: .fixRequest, status: 403)
    /// Seed 001's "expired nonce": carries a fresh offer.
    public static let bypassExpired = Self(123, "bypassExpired", advice: .bypass, status: 429)
    /// Seed 001's "replay detected".
    public static let bypassReplayed = Self(124, "bypassReplayed", advice: .fixRequest, status: 409)
    /// Seed 001's "device integrity failed", with its reason (`BypassRejection`).
    public static let bypassDeviceRejected = Self(125, "bypassDeviceRejected", advice: .fixRequest, status: 403)
    /// An answer of a type the limit does not offer.
    public static let bypassNotOffered = Self(126, "bypassNotOffered", advice: .fixRequest, status: 400)
    /// A proof of work that does not solve the offer.
    public static let bypassWrongAnswer = Self(127, "bypassWrongAnswer", advice: .fixRequest, status: 403)

    /// The codes of ATTEST.md §10.8, in number order.
    public static let rateLimitCodes: [Self] = [
        .rateLimited, .bypassMalformed, .bypassNonceMismatch, .bypassExpired, .bypassReplayed, .bypassDeviceRejected,
        .bypassNotOffered, .bypassWrongAnswer,
    ]
}

/// Why a device's answer was rejected (ATTEST.md §10.5 step 6): the `reason` member of a
/// `bypassDeviceRejected` refusal, with the device flow's code that decided (`cause`).
public enum BypassRejection: String, Sendable, CaseIterable {
    case notRegistered, revoked, attestationFailed, verdictTooWeak

    /// The reason for a device flow's refusal of an answer; nil for a code that is not one.
    public static func reason(for code: SignCoreError.Code) -> BypassRejection? {
        switch code {
        case .deviceUnknown: .notRegistered
        case .deviceRevoked: .revoked
        case .integrityVerdictFailed: .verdictTooWeak
        default: SignCoreError.Code.deviceCodes.contains(code) ? .attestationFailed : nil
        }
    }
}
