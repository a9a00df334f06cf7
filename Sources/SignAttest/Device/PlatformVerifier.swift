import SignCore

/// Verifies a platform format (docs/ATTEST.md §9.7 App Attest, §9.8 Play Integrity): what a
/// registration's token attests, and an assertion by a registered key. The SignDevice module
/// implements them (X.509 and CBOR stay out of this module).
public protocol PlatformVerifier: Sendable {
    var format: DeviceFormat { get }

    /// The key a registration's `token` attests (§9.4 step 6): checked against the registration's
    /// challenge text (what the app handed the platform), its key id, the app ids served, at `now`
    /// (milliseconds). Throws the refusal of the first check that fails.
    func verifyRegistration(_ registration: DeviceRegistration, appIDs: [String], now: UInt64) async throws(SignCoreError) -> AttestedKey

    /// An assertion `token` by the key of `record` over `clientData` (§9.7): its counter. Throws
    /// `assertionInvalid` (and the others of §9.7) when it does not verify.
    func verifyAssertion(_ token: [UInt8], clientData: [UInt8], record: DeviceRecord) throws(SignCoreError) -> UInt64

    /// A standalone verdict `token` whose nonce decodes to `nonce` (a rate limit's offer, §10.5):
    /// the app id it vouches for. Throws the refusal of §9.8's first failing check.
    func verifyVerdict(_ token: [UInt8], nonce: [UInt8], appIDs: [String]) throws(SignCoreError) -> String
}

extension PlatformVerifier {
    public func verifyAssertion(_ token: [UInt8], clientData: [UInt8], record: DeviceRecord) throws(SignCoreError) -> UInt64 {
        throw SignCoreError(.formatNotAccepted, "this format makes no assertions")
    }

    public func verifyVerdict(_ token: [UInt8], nonce: [UInt8], appIDs: [String]) throws(SignCoreError) -> String {
        throw SignCoreError(.formatNotAccepted, "this format gives no standalone verdicts")
    }
}

/// What a platform attests of a registering key (§9.4 steps 6-9).
public struct AttestedKey: Sendable, Equatable {
    /// The key id the record is kept under: a SignCore key's thumbprint (base64url), an App
    /// Attest key's id (base64, padded, as the platform writes it).
    public var keyID: String
    /// The public key as a JWK (P-256 for App Attest).
    public var publicKey: String
    /// The 32-byte key id a registration challenge may be bound to (§9.3).
    public var binding: [UInt8]
    /// The app id the platform vouches for (one the deployment serves).
    public var appID: String
    /// `development` or `production` (App Attest), else empty.
    public var environment: String

    public init(keyID: String, publicKey: String, binding: [UInt8], appID: String, environment: String) {
        self.keyID = keyID
        self.publicKey = publicKey
        self.binding = binding
        self.appID = appID
        self.environment = environment
    }
}

/// The platform formats' own codes (docs/ATTEST.md §9.9), after the registry's.
extension SignCoreError.Code {
    public static let platformTokenMalformed = Self(110, "platformTokenMalformed", advice: .fixRequest, status: 400)
    public static let certificateUntrusted = Self(111, "certificateUntrusted", advice: .fixRequest, status: 403)
    public static let nonceMismatch = Self(112, "nonceMismatch", advice: .fixRequest, status: 403)
    public static let environmentMismatch = Self(113, "environmentMismatch", advice: .fixRequest, status: 403)
    public static let platformCounterInvalid = Self(114, "platformCounterInvalid", advice: .fixRequest, status: 403)
    public static let assertionInvalid = Self(115, "assertionInvalid", advice: .fixRequest, status: 403)
    public static let integrityVerdictFailed = Self(116, "integrityVerdictFailed", advice: .fixRequest, status: 403)

    public static let platformCodes: [Self] = [
        .platformTokenMalformed, .certificateUntrusted, .nonceMismatch, .environmentMismatch, .platformCounterInvalid,
        .assertionInvalid, .integrityVerdictFailed,
    ]
}
