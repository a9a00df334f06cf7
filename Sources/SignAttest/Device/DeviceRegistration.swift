import SignCore

/// The body of a registration (ATTEST.md §9.4): seed 003's `{platform, format, keyId, challenge,
/// token}`, or for format `signcore` `{format, keyId, jwk, challenge, appId}`.
public struct DeviceRegistration: Sendable {
    /// App Attest attestation objects are about 5.5 KB, 7.5 KB once encoded.
    public static let maxBytes = 16384
    static let maxTextBytes = 256

    public let format: DeviceFormat
    /// Seed 003's `platform` (`ios`, `android`): read, never relied on.
    public let platform: String?
    public let keyID: String
    public let challenge: Challenge
    /// The registering key, for format `signcore` (and the key a Play Integrity verdict vouches for).
    public let publicKey: SigningKey?
    public let appID: String?
    /// The platform's attestation (`token`), for the platform formats: App Attest's object
    /// (decoded from base64), Play Integrity's token text.
    public let token: [UInt8]?

    /// Reads a body (ATTEST.md §9.4 step 1): over 16384 bytes is `bodyTooLarge`; a format this
    /// version does not know is `formatNotAccepted`; anything else that is not a registration of
    /// its format is `registrationMalformed`.
    public init(body: [UInt8]) throws(SignCoreError) {
        guard body.count <= Self.maxBytes else { throw SignCoreError(.bodyTooLarge, "a registration is at most 16384 bytes") }
        let object: JSONObject
        do { object = try JSONObject(bytes: body, maxBytes: Self.maxBytes) } catch {
            throw Self.malformed("a registration is a JSON object")
        }
        func text(_ name: String, required: Bool = true) throws(SignCoreError) -> String? {
            guard let value = object[name] else {
                if required { throw Self.malformed("a registration has the string member \(name)") }
                return nil
            }
            guard case .string(let bytes) = value, (1...Self.maxTextBytes).contains(bytes.count) else {
                throw Self.malformed("\(name) is a string of 1-256 bytes")
            }
            return String(decoding: bytes, as: UTF8.self)
        }
        guard let formatName = try text("format") else { throw Self.malformed("a registration has a format") }
        format = DeviceFormat(rawValue: formatName)
        guard DeviceFormat.all.contains(format) else { throw SignCoreError(.formatNotAccepted, "the registration's format is not one this version knows") }
        platform = try text("platform", required: false)
        guard let keyID = try text("keyId") else { throw Self.malformed("a registration has a keyId") }
        self.keyID = keyID
        guard case .string(let challengeText)? = object["challenge"],
              let challenge = try? Challenge(parsing: String(decoding: challengeText, as: UTF8.self)), challenge.kind == .registration
        else { throw Self.malformed("the registration's challenge is not a registration challenge") }
        self.challenge = challenge
        appID = try text("appId", required: format == .signcore)
        if format.signsRequests {
            guard case .object(let jwk)? = object["jwk"], let key = try? jwk.withUnsafeBytes({ (raw) throws(SignCoreError) in try JWK.parseKey(bytes: raw) }),
                  key.algorithm != .hmacSHA256, !key.canSign
            else { throw Self.malformed("jwk is the public JWK of an Ed25519 or P-256 key") }
            publicKey = key
        } else {
            publicKey = nil
        }
        switch format {
        case .appleAppAttest:
            // App Attest's attestation object, base64.
            guard case .string(let tokenText)? = object["token"], let token = Self.decodeBase64(tokenText), !token.isEmpty else {
                throw Self.malformed("the registration's token is base64")
            }
            self.token = token
        case .androidPlayIntegrity:
            // Play Integrity's token as the platform wrote it (a JWE in compact form).
            guard case .string(let tokenText)? = object["token"], !tokenText.isEmpty else {
                throw Self.malformed("the registration's token is the integrity token's text")
            }
            token = tokenText
        default:
            token = nil
        }
    }

    static func malformed(_ detail: String) -> SignCoreError { SignCoreError(.registrationMalformed, detail) }
}

extension DeviceRegistration {
    /// Base64 in either alphabet (RFC 4648 §4 or §5), padded or not, as platform SDKs write their
    /// tokens (`base64EncodedString()`): nil for anything else.
    public static func decodeBase64(_ text: [UInt8]) -> [UInt8]? {
        var body = text[...]
        if body.count % 4 == 0, body.last == UInt8(ascii: "=") {
            body = body.dropLast()
            if body.last == UInt8(ascii: "=") { body = body.dropLast() }
        }
        let translated = body.map { byte -> UInt8 in
            switch byte {
            case UInt8(ascii: "+"): UInt8(ascii: "-")
            case UInt8(ascii: "/"): UInt8(ascii: "_")
            default: byte
            }
        }
        return Base64URL.decode(String(decoding: translated, as: UTF8.self))
    }

    /// Standard base64, padded (RFC 4648 §4): how App Attest writes key ids, and how the
    /// registry keeps them.
    public static func base64(_ bytes: [UInt8]) -> String {
        let url = Base64URL.encode(bytes).utf8.map { byte -> UInt8 in
            switch byte {
            case UInt8(ascii: "-"): UInt8(ascii: "+")
            case UInt8(ascii: "_"): UInt8(ascii: "/")
            default: byte
            }
        }
        return String(decoding: url, as: UTF8.self) + String(repeating: "=", count: (3 - bytes.count % 3) % 3)
    }
}
