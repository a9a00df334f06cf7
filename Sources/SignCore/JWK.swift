import CSignShim

/// Keys as JSON Web Keys (RFC 7517, SPEC §6): parse, serialise, and the RFC 7638 thumbprint
/// that is the default key id.
public enum JWK {
    /// The RFC 7638 thumbprint of a key, whatever its key id.
    public static func thumbprint(of key: SigningKey) -> String {
        var secret = key.algorithm == .hmacSHA256 ? key.exportSecret() ?? [] : []
        defer { wipe(&secret) }
        return thumbprint(algorithm: key.algorithm, publicKey: key.publicKey, hmacSecret: secret)
    }

    /// RFC 7638: base64url(SHA-256(the required members, sorted, no whitespace)). Hashed in
    /// pieces so that an HMAC secret is never copied into a String, which could not be wiped.
    static func thumbprint(algorithm: SignatureAlgorithm, publicKey: [UInt8], hmacSecret: [UInt8]) -> String {
        var hasher = SHA256Hasher()
        // Base64url of at most 1024 secret bytes, wiped after use.
        let encoded = UnsafeMutableRawBufferPointer.allocate(byteCount: Base64URL.encodedLength(SigningKey.maxHMACSecretBytes), alignment: 1)
        defer {
            sc_memzero(encoded.baseAddress, encoded.count)
            encoded.deallocate()
        }
        func member(_ text: String, base64url bytes: ArraySlice<UInt8>) {
            hasher.update(Array(text.utf8))
            var writer = ByteWriter(encoded)
            bytes.withUnsafeBytes { Base64URL.append($0, to: &writer) }
            hasher.update(writer.written)
        }
        switch algorithm {
        case .hmacSHA256:
            member(#"{"k":""#, base64url: hmacSecret[...])
            hasher.update(Array(#"","kty":"oct"}"#.utf8))
        case .ed25519:
            member(#"{"crv":"Ed25519","kty":"OKP","x":""#, base64url: publicKey[...])
            hasher.update(Array(#""}"#.utf8))
        case .p256:
            member(#"{"crv":"P-256","kty":"EC","x":""#, base64url: publicKey[1..<33])
            member(#"","y":""#, base64url: publicKey[33..<65])
            hasher.update(Array(#""}"#.utf8))
        }
        return hasher.finalize().description
    }

    /// The JWK of `key`; private members (`d`, or `k` of an HMAC key) only when asked for.
    public static func serialize(_ key: SigningKey, includePrivate: Bool) throws(SignCoreError) -> String {
        var members: [(String, String)] = []
        switch key.algorithm {
        case .hmacSHA256:
            guard includePrivate else { throw SignCoreError(.invalidKey, "an HMAC key has no public part to export") }
            members = [("kty", "oct"), ("kid", key.id), ("alg", "HS256"), ("use", "sig")]
        case .ed25519:
            members = [("kty", "OKP"), ("crv", "Ed25519"), ("kid", key.id), ("alg", "EdDSA"), ("use", "sig"),
                       ("x", Base64URL.encode(key.publicKey))]
        case .p256:
            members = [("kty", "EC"), ("crv", "P-256"), ("kid", key.id), ("alg", "ES256"), ("use", "sig"),
                       ("x", Base64URL.encode(Array(key.publicKey[1..<33]))),
                       ("y", Base64URL.encode(Array(key.publicKey[33..<65])))]
        }
        if includePrivate, var secret = key.exportSecret() {
            members.append((key.algorithm == .hmacSHA256 ? "k" : "d", Base64URL.encode(secret)))
            wipe(&secret)
        }
        return "{" + members.map { "\(JSON.quote($0.0)):\(JSON.quote($0.1))" }.joined(separator: ",") + "}"
    }

    /// A JWK Set document (`{"keys":[...]}`) of several keys.
    public static func serialize(_ keys: [SigningKey], includePrivate: Bool) throws(SignCoreError) -> String {
        var parts: [String] = []
        for key in keys { parts.append(try serialize(key, includePrivate: includePrivate)) }
        return #"{"keys":["# + parts.joined(separator: ",") + "]}"
    }

    /// Parses one JWK document.
    public static func parseKey(_ text: String) throws(SignCoreError) -> SigningKey {
        try key(from: try document(text))
    }

    /// Parses a JWK Set document; a single JWK is accepted as a set of one.
    public static func parseKeys(_ text: String) throws(SignCoreError) -> [SigningKey] {
        let json = try document(text)
        guard let keys = json["keys"] else { return [try key(from: json)] }
        guard case let .array(items) = keys else { throw invalid("\"keys\" must be an array") }
        var result: [SigningKey] = []
        for item in items { result.append(try key(from: item)) }
        return result
    }

    /// Builds a key from a parsed JWK. `alg`, when present, must match the key type; `use`,
    /// when present, must be `sig`; private and public parts must belong together.
    static func key(from jwk: JSON) throws(SignCoreError) -> SigningKey {
        guard case .object = jwk else { throw invalid("a JWK must be a JSON object") }
        let kid = try optionalString(jwk, "kid")
        if let use = try optionalString(jwk, "use"), use != "sig" { throw invalid("\"use\" must be \"sig\"") }
        let alg = try optionalString(jwk, "alg")
        func expectAlg(_ expected: SignatureAlgorithm) throws(SignCoreError) {
            if let alg, alg != expected.rawValue {
                throw SignCoreError(.algorithmMismatch, "the JWK \"alg\" does not match its key type")
            }
        }
        switch try requiredString(jwk, "kty") {
        case "oct":
            try expectAlg(.hmacSHA256)
            var secret = try bytes(jwk, "k")
            defer { wipe(&secret) }
            return try .hmac(secret: secret, id: kid)
        case "OKP":
            try expectAlg(.ed25519)
            guard try requiredString(jwk, "crv") == "Ed25519" else { throw invalid("only the OKP curve Ed25519 is supported") }
            let x = try bytes(jwk, "x")
            guard jwk["d"] != nil else { return try .ed25519(publicKey: x, id: kid) }
            var seed = try bytes(jwk, "d")
            defer { wipe(&seed) }
            let key = try SigningKey.ed25519(seed: seed, id: kid)
            guard key.publicKey == x else { throw invalid("\"x\" is not the public key of \"d\"") }
            return key
        case "EC":
            try expectAlg(.p256)
            guard try requiredString(jwk, "crv") == "P-256" else { throw invalid("only the EC curve P-256 is supported") }
            let x = try bytes(jwk, "x"), y = try bytes(jwk, "y")
            guard x.count == 32, y.count == 32 else { throw invalid("P-256 \"x\" and \"y\" must be 32 bytes each") }
            let point = [0x04] + x + y
            guard jwk["d"] != nil else { return try .p256(publicKey: point, id: kid) }
            var scalar = try bytes(jwk, "d")
            defer { wipe(&scalar) }
            let key = try SigningKey.p256(privateKey: scalar, id: kid)
            guard key.publicKey == point else { throw invalid("\"x\", \"y\" are not the public key of \"d\"") }
            return key
        default:
            throw invalid("\"kty\" must be oct, OKP or EC")
        }
    }

    /// The parsed JSON of a key document; any JSON error is reported as `invalidKey`.
    private static func document(_ text: String) throws(SignCoreError) -> JSON {
        do { return try JSON.parse(Array(text.utf8)) } catch { throw invalid(error.detail) }
    }

    private static func invalid(_ detail: String) -> SignCoreError { SignCoreError(.invalidKey, "JWK: " + detail) }

    private static func optionalString(_ jwk: JSON, _ name: String) throws(SignCoreError) -> String? {
        guard let value = jwk[name] else { return nil }
        guard let string = value.stringValue else { throw invalid("\"\(name)\" must be a string") }
        return string
    }

    private static func requiredString(_ jwk: JSON, _ name: String) throws(SignCoreError) -> String {
        guard let value = try optionalString(jwk, name) else { throw invalid("\"\(name)\" is missing") }
        return value
    }

    private static func bytes(_ jwk: JSON, _ name: String) throws(SignCoreError) -> [UInt8] {
        guard let decoded = Base64URL.decode(try requiredString(jwk, name)) else {
            throw invalid("\"\(name)\" is not base64url")
        }
        return decoded
    }
}

