/// The default header names (SPEC §4.6).
public enum HeaderName {
    public static let whash = "whash"
    public static let wtoken = "wtoken"
}

/// The two headers a signed request carries.
public struct SignedHeaders: Sendable, Equatable {
    /// base64url whash (43 characters), for the `whash` header.
    public let whash: String
    /// The wtoken, for the `wtoken` header.
    public let wtoken: String
}
