import SignCore

/// The RFC 9421 flow's codes, in SPEC §7.3's range for HTTP message signatures (docs/HTTPSIG.md
/// §6). Failures that mean what a wtoken's mean keep their codes: `badSignature`, `unknownKey`,
/// `algorithmMismatch`, `expired`, `notYetValid`, `replayed`, `headerNotCovered`.
extension SignCoreError.Code {
    /// `Signature-Input` or `Signature` is not a dictionary of the shape RFC 9421 §4 gives, is
    /// over its limits, or the two do not pair up for the label verified.
    public static let signatureFieldsMalformed = Self(140, "signatureFieldsMalformed", advice: .reSign, status: 401)
    /// The request carries no RFC 9421 signature the route reads (none, or none with its label or tag).
    public static let signatureNotFound = Self(141, "signatureNotFound", advice: .reSign, status: 401)
    /// A covered component cannot be taken from the message: a field or query parameter that is
    /// not there, a dictionary member that is not there, a response component in a request.
    public static let componentMissing = Self(142, "componentMissing", advice: .reSign, status: 401)
    /// A component identifier this profile does not accept: an unknown derived component, an
    /// unknown or conflicting parameter, `sf` on a field of unknown type, a duplicate, trailers.
    public static let componentInvalid = Self(143, "componentInvalid", advice: .reSign, status: 401)
    /// The signature has no `nonce` and the route requires one.
    public static let signatureNonceMissing = Self(144, "signatureNonceMissing", advice: .reSign, status: 401)
    /// The body received does not match its `Content-Digest` (RFC 9530).
    public static let contentDigestMismatch = Self(145, "contentDigestMismatch", advice: .reSign, status: 401)
    /// `Content-Digest` lists no algorithm this server checks (sha-256, sha-512), or is no dictionary of byte sequences.
    public static let contentDigestUnsupported = Self(146, "contentDigestUnsupported", advice: .fixRequest, status: 400)
    /// The request carries a wtoken and an RFC 9421 signature on a route that reads both: one
    /// request, one proof.
    public static let signatureFormatsMixed = Self(147, "signatureFormatsMixed", advice: .fixRequest, status: 400)
    /// The signature has no `created` parameter, which the age of a signature is measured from.
    public static let signatureCreatedMissing = Self(148, "signatureCreatedMissing", advice: .reSign, status: 401)
    /// `alg` names an algorithm this profile does not implement (RSA, P-384), or the key's
    /// algorithm is one no RFC 9421 name exists for.
    public static let signatureAlgorithmUnsupported = Self(149, "signatureAlgorithmUnsupported", advice: .fixConfiguration, status: 401)

    /// The `Signature-Agent` of a signature whose key the server does not hold is not an https
    /// origin whose key directory this server fetches (docs/HTTPSIG.md §7.3): nothing was fetched.
    public static let signatureAgentRefused = Self(150, "signatureAgentRefused", advice: .fixConfiguration, status: 401)
    /// The agent's key directory could not be fetched or proves no key (now, or within the last minute).
    public static let keyDirectoryUnavailable = Self(151, "keyDirectoryUnavailable", advice: .retryLater, status: 503)

    /// The codes of docs/HTTPSIG.md §6, in number order.
    public static let httpSignatureCodes: [Self] = [
        .signatureFieldsMalformed, .signatureNotFound, .componentMissing, .componentInvalid, .signatureNonceMissing,
        .contentDigestMismatch, .contentDigestUnsupported, .signatureFormatsMixed, .signatureCreatedMissing,
        .signatureAlgorithmUnsupported, .signatureAgentRefused, .keyDirectoryUnavailable,
    ]
}
