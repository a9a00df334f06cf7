/// The wtoken header value (SPEC §4.1): ASCII, header-safe, eight dot-separated fields.
///
///     v1.<kid>.<created>.<lifetime>.<nonce>.<target>.<account>.<signature>
///
/// The token carries only what a verifier cannot take from the request itself; the method,
/// canonical URL and whash are bound through the signature over the signing input (§4.2).
public struct WToken: Sendable, Equatable {
    public static let version = "v1"
    /// Longest token accepted, in bytes; longer header values are refused before parsing.
    public static let maxLength = 1024
    /// Longest account, in UTF-8 bytes.
    public static let maxAccountBytes = 256
    /// Longest lifetime a token can state, in seconds (a verifier usually allows less).
    public static let maxLifetime: Int64 = 86_400
    /// Largest creation time, in seconds since the Unix epoch (11 digits).
    public static let maxCreated: Int64 = 99_999_999_999
    /// Bytes of the target digest carried as a hint.
    public static let targetHintBytes = 6

    public var keyID: String
    /// Creation time, seconds since 1970-01-01T00:00:00Z.
    public var created: Int64
    /// Seconds after `created` at which the token expires.
    public var lifetime: Int64
    public var nonce: Nonce
    /// The first 6 bytes of the target digest: lets a verifier say "signed for another URL"
    /// instead of "bad signature". Not a security check; the signature covers all 32 bytes.
    public var targetHint: [UInt8]
    /// The end-user account the client set, if any (empty means none).
    public var account: String
    public var signature: [UInt8]

    public var expires: Int64 { created + lifetime }

    /// The header value.
    public var encoded: String {
        [WToken.version, keyID, String(created), String(lifetime), nonce.description,
         Base64URL.encode(targetHint), Base64URL.encode(Array(account.utf8)), Base64URL.encode(signature)].joined(separator: ".")
    }

    /// Parses a header value strictly: every field has exactly one spelling, so a token with any
    /// byte changed either fails to parse or parses to different values.
    public init(parsing text: String) throws(SignCoreError) {
        let utf8 = Array(text.utf8)
        guard utf8.count <= WToken.maxLength else { throw SignCoreError(.headerTooLarge, "the wtoken is longer than 1024 bytes") }
        let fields = utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard let first = fields.first, first.elementsEqual(WToken.version.utf8) else {
            if let first = fields.first, first.first == UInt8(ascii: "v"), fields.count > 1 {
                throw SignCoreError(.unsupportedVersion, "the wtoken version is not v1")
            }
            throw Self.malformed("the wtoken does not start with v1.")
        }
        guard fields.count == 8 else { throw Self.malformed("the wtoken must have 8 fields") }
        let kid = String(decoding: fields[1], as: UTF8.self)
        guard SigningKey.isValidKeyID(kid) else { throw Self.malformed("the key id field is not 1-64 base64url characters") }
        guard let created = Self.decimal(fields[2], max: WToken.maxCreated) else {
            throw Self.malformed("the created field is not a decimal number of seconds")
        }
        guard let lifetime = Self.decimal(fields[3], max: WToken.maxLifetime), lifetime > 0 else {
            throw Self.malformed("the lifetime field is not a number of seconds from 1 to 86400")
        }
        guard fields[4].count == 22, let nonceBytes = Base64URL.decode(fields[4]), let nonce = Nonce(bytes: nonceBytes) else {
            throw Self.malformed("the nonce field is not 16 bytes of base64url")
        }
        guard fields[5].count == 8, let hint = Base64URL.decode(fields[5]) else {
            throw Self.malformed("the target field is not 6 bytes of base64url")
        }
        guard let accountBytes = Base64URL.decode(fields[6]), accountBytes.count <= WToken.maxAccountBytes,
              UTF8Validation.isValid(accountBytes) else {
            throw Self.malformed("the account field is not base64url of at most 256 bytes of UTF-8")
        }
        guard let signature = Base64URL.decode(fields[7]), signature.count == 32 || signature.count == 64 else {
            throw Self.malformed("the signature field is not 32 or 64 bytes of base64url")
        }
        self.keyID = kid
        self.created = created
        self.lifetime = lifetime
        self.nonce = nonce
        self.targetHint = hint
        self.account = String(decoding: accountBytes, as: UTF8.self)
        self.signature = signature
    }

    init(keyID: String, created: Int64, lifetime: Int64, nonce: Nonce, targetHint: [UInt8], account: String, signature: [UInt8]) {
        self.keyID = keyID
        self.created = created
        self.lifetime = lifetime
        self.nonce = nonce
        self.targetHint = targetHint
        self.account = account
        self.signature = signature
    }

    /// Digits only, no sign, no leading zero (except "0" itself), at most `max`.
    private static func decimal(_ field: ArraySlice<UInt8>, max: Int64) -> Int64? {
        guard !field.isEmpty, field.count <= 11, field.count == 1 || field.first != UInt8(ascii: "0") else { return nil }
        var value: Int64 = 0
        for byte in field {
            guard (0x30...0x39).contains(byte) else { return nil }
            value = value * 10 + Int64(byte - 0x30)
        }
        return value <= max ? value : nil
    }

    private static func malformed(_ detail: String) -> SignCoreError { SignCoreError(.malformedToken, detail) }
}
