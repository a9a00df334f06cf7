import SignCore

/// An attestation token (ATTEST.md §5): fixed-offset binary signed by the server's `OKP` or `EC`
/// key, bound to the thumbprint of the client's key and to an origin. Carried in the
/// `attest-token` field beside a wtoken by that key that covers the field.
public struct AttestationToken: Sendable, Equatable, CustomStringConvertible {
    public static let version: UInt8 = 1
    /// The context of the signature's SPEC §10 signature (ATTEST.md §5.2).
    public static let signatureContext = "signcore-attestation/1"
    public static let ttls = 1...86400
    static let fixedBytes = 96, signatureBytes = 64

    public let levels: AttestationLevels
    /// Milliseconds since the epoch, by the issuing server's clock.
    public let issuedAt: UInt64
    /// Seconds.
    public let ttl: Int
    /// The thumbprint of the client key the token is bound to.
    public let keyThumbprint: [UInt8]
    /// The origin digest the token is valid for.
    public let originDigest: [UInt8]
    public let tokenID: [UInt8]
    /// The id of the server key that signed it.
    public let serverKeyID: String
    /// Every byte: the body, then the signature.
    public let bytes: [UInt8]

    public var body: ArraySlice<UInt8> { bytes[..<(bytes.count - Self.signatureBytes)] }
    public var signature: ArraySlice<UInt8> { bytes[(bytes.count - Self.signatureBytes)...] }
    /// The header field's value.
    public var text: String { Base64URL.encode(bytes) }
    /// Milliseconds: issuedAt + ttl.
    public var expiresAt: UInt64 { issuedAt.addingSaturated(UInt64(ttl) * 1000) }

    public var description: String { "AttestationToken(\(levels), ttl \(ttl) s, key \(serverKeyID))" }

    /// Issues a token (ATTEST.md §5.1, §5.2) signed by `key` (`OKP` or `EC`). Refuses
    /// (`invalidConfiguration`) values outside the layout's ranges.
    public init(levels: AttestationLevels, issuedAt: UInt64, ttl: Int, keyThumbprint: [UInt8], originDigest: [UInt8],
                tokenID: [UInt8]? = nil, key: SigningKey) throws(SignCoreError) {
        guard !levels.isEmpty, Self.ttls ~= ttl, keyThumbprint.count == 32, originDigest.count == 32, tokenID.map({ $0.count == 16 }) ?? true else {
            throw SignCoreError(.invalidConfiguration, "token values outside ATTEST.md §5.1's ranges")
        }
        guard key.algorithm != .hmacSHA256 else { throw SignCoreError(.invalidConfiguration, "a token is signed by an OKP or EC key") }
        var body = LayoutWriter(capacity: Self.fixedBytes + key.id.utf8.count + Self.signatureBytes)
        body.u8(Self.version)
        body.u16(levels.rawValue)
        body.u64(issuedAt)
        body.u32(UInt32(ttl))
        body.raw(keyThumbprint)
        body.raw(originDigest)
        body.raw(tokenID ?? Nonce.random().bytes)
        body.u8(UInt8(key.id.utf8.count))
        body.raw(key.id.utf8)
        let signature = try key.signMessage(body.bytes, context: Self.signatureContext)
        try self.init(bytes: body.bytes + signature)
    }

    /// Parses a token's header value (ATTEST.md §5.4); every refusal is `attestationMalformed`.
    /// The signature is not checked here: `TokenCheck` does that.
    public init(parsing text: String) throws(SignCoreError) {
        guard let bytes = decodeField(text) else { throw Self.malformed("a token is base64url of at most 1024 bytes") }
        try self.init(bytes: bytes)
    }

    init(bytes: [UInt8]) throws(SignCoreError) {
        guard bytes.count >= Self.fixedBytes + 1 + Self.signatureBytes else { throw Self.malformed("a token is at least 161 bytes") }
        let layout = LayoutReader(bytes: bytes)
        let kidLength = Int(layout.u8(at: 95))
        guard layout.u8(at: 0) == Self.version else { throw Self.malformed("the token's version is not 1") }
        levels = AttestationLevels(rawValue: layout.u16(at: 1))
        let issued = layout.u64(at: 3)
        ttl = Int(layout.u32(at: 11))
        guard !levels.isEmpty, Self.ttls ~= ttl else { throw Self.malformed("a token field is outside its range") }
        guard bytes.count == Self.fixedBytes + kidLength + Self.signatureBytes, LayoutReader.isKeyID(bytes[96..<(96 + kidLength)]) else {
            throw Self.malformed("the token's key id or length is wrong")
        }
        issuedAt = issued
        keyThumbprint = layout.raw(at: 15, count: 32)
        originDigest = layout.raw(at: 47, count: 32)
        tokenID = layout.raw(at: 79, count: 16)
        serverKeyID = String(decoding: bytes[96..<(96 + kidLength)], as: UTF8.self)
        self.bytes = bytes
    }

    static func malformed(_ detail: String) -> SignCoreError { SignCoreError(.attestationMalformed, detail) }
}
