/// The wtoken header value (SPEC §4.1): ASCII, header-safe, nine dot-separated fields.
///
///     v3.<kid>.<created>.<lifetime>.<nonce>.<target>.<account>.<headers>.<signature>
///
/// The token carries only what a verifier cannot take from the request itself; the method,
/// canonical URL, whash and covered header values are bound through the signature over the
/// signing input (§4.2).
public struct WToken: Sendable, Equatable {
    public static let version = "v3"
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
    /// The names of the header fields the signature covers: lower case, sorted (§4.3).
    public var coveredHeaders: [String]
    public var signature: [UInt8]

    public var expires: Int64 { created + lifetime }

    /// The header value.
    public var encoded: String {
        var keyID = keyID, account = account, headers = coveredHeaders.joined(separator: ",")
        return keyID.withUTF8 { kid in
            account.withUTF8 { account in
                headers.withUTF8 { headers in
                    targetHint.withUnsafeBytes { hint in
                        signature.withUnsafeBytes { signature in
                            WToken.encode(keyID: UnsafeRawBufferPointer(kid), created: created, lifetime: lifetime, nonce: nonce,
                                          targetHint: hint, account: UnsafeRawBufferPointer(account),
                                          headers: UnsafeRawBufferPointer(headers), signature: signature)
                        }
                    }
                }
            }
        }
    }

    /// Parses a header value strictly: every field has exactly one spelling, so a token with any
    /// byte changed either fails to parse or parses to different values.
    public init(parsing text: String) throws(SignCoreError) {
        self = try withUTF8(of: text) { (bytes) throws(SignCoreError) in
            let fields = try TokenFields(parsing: bytes)
            var signature = fields.signature
            return WToken(keyID: String(decoding: bytes[fields.keyID], as: UTF8.self), created: fields.created,
                          lifetime: fields.lifetime, nonce: fields.nonce,
                          targetHint: withUnsafeBytes(of: fields.targetHint) { Array($0.prefix(WToken.targetHintBytes)) },
                          account: fields.account(in: bytes),
                          coveredHeaders: CoveredHeaders.names(in: fields.headers(in: bytes)).map {
                              String(decoding: fields.headers(in: bytes)[$0], as: UTF8.self)
                          },
                          signature: withUnsafeBytes(of: &signature) { Array($0.prefix(fields.signatureByteCount)) })
        }
    }

    init(keyID: String, created: Int64, lifetime: Int64, nonce: Nonce, targetHint: [UInt8], account: String,
         coveredHeaders: [String], signature: [UInt8]) {
        self.keyID = keyID
        self.created = created
        self.lifetime = lifetime
        self.nonce = nonce
        self.targetHint = targetHint
        self.account = account
        self.coveredHeaders = coveredHeaders
        self.signature = signature
    }

    /// Builds the header value in one allocation (the signer's path). `bounded`: the caller
    /// knows the token fits `maxLength` (a signer checks its fields once, at its start), so
    /// no length is computed per token.
    static func encode(keyID: UnsafeRawBufferPointer, created: Int64, lifetime: Int64, nonce: Nonce,
                       targetHint: UnsafeRawBufferPointer, account: UnsafeRawBufferPointer,
                       headers: UnsafeRawBufferPointer, signature: UnsafeRawBufferPointer, bounded: Bool = false) -> String {
        let length = bounded ? maxLength : encodedLength(keyID: keyID.count, created: created, lifetime: lifetime, target: targetHint.count,
                                                        account: account.count, headers: headers.count, signature: signature.count)
        // Written on the stack, then copied into the string (see `Base64URL.encode`).
        return withUnsafeTemporaryAllocation(byteCount: length, alignment: 16) { buffer in
            withUnsafeBytes(of: nonce.words) { nonce in
                var parts = TokenParts(key_id: keyID.baseAddress, key_id_length: keyID.count,
                                       created: created, lifetime: lifetime, nonce: nonce.baseAddress,
                                       target: targetHint.baseAddress, target_length: targetHint.count, account: account.baseAddress,
                                       account_length: account.count, headers: headers.baseAddress,
                                       headers_length: headers.count, signature: signature.baseAddress,
                                       signature_length: signature.count)
                let count = encodeToken(&parts, into: buffer.baseAddress)
                return String(decoding: UnsafeRawBufferPointer(rebasing: buffer[..<count]), as: UTF8.self)
            }
        }
    }

    /// The length of an encoded token with fields of these sizes.
    /// (`target`: the hint's byte count, 6 in every token a signer makes; a WToken's fields can
    /// be set to anything by hand, and its encoding still fits.)
    static func encodedLength(keyID: Int, created: Int64, lifetime: Int64, target: Int = targetHintBytes, account: Int,
                              headers: Int, signature: Int) -> Int {
        3 + keyID + 1 + decimalDigits(created) + 1 + decimalDigits(lifetime) + 1
            + Base64URL.encodedLength(Nonce.byteCount) + 1 + Base64URL.encodedLength(target) + 1
            + Base64URL.encodedLength(account) + 1 + headers + 1 + Base64URL.encodedLength(signature)
    }

    private static func decimalDigits(_ value: Int64) -> Int {
        (value < 0 ? 1 : 0) + decimalDigitCount(value.magnitude)
    }
}
