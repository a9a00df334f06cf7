import SignCore

/// The advice of a refusal that asks for a registered device (ATTEST.md §9.9): register this
/// request's key at the device endpoint against a fresh registration challenge, then send the
/// request again, signed afresh.
extension SignCoreError.Advice {
    public static let register = SignCoreError.Advice("register", isRetryable: true)
}

/// The device flow's codes, in SPEC §7.3's range for registered device keys (ATTEST.md §9.9).
extension SignCoreError.Code {
    public static let deviceUnknown = Self(100, "deviceUnknown", advice: .register, status: 428)
    public static let deviceRevoked = Self(101, "deviceRevoked", advice: .fixRequest, status: 403)
    public static let registrationMalformed = Self(102, "registrationMalformed", advice: .fixRequest, status: 400)
    public static let registrationExpired = Self(103, "registrationExpired", advice: .register, status: 428)
    public static let deviceKeyMismatch = Self(104, "deviceKeyMismatch", advice: .fixRequest, status: 400)
    public static let appMismatch = Self(105, "appMismatch", advice: .fixRequest, status: 403)
    public static let formatNotAccepted = Self(106, "formatNotAccepted", advice: .fixRequest, status: 403)
    public static let counterRepeated = Self(107, "counterRepeated", advice: .fixRequest, status: 409)
    public static let counterTooOld = Self(108, "counterTooOld", advice: .fixRequest, status: 409)
    public static let counterMissing = Self(109, "counterMissing", advice: .fixRequest, status: 409)

    /// The codes of ATTEST.md §9.9, in number order.
    public static let deviceCodes: [Self] = [
        .deviceUnknown, .deviceRevoked, .registrationMalformed, .registrationExpired, .deviceKeyMismatch,
        .appMismatch, .formatNotAccepted, .counterRepeated, .counterTooOld, .counterMissing,
    ] + platformCodes
}
