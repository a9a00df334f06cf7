/// Keys as JSON Web Keys (RFC 7517, SPEC §6): parse, serialise, and the RFC 7638 thumbprint
/// that is the default key id.
public enum JWK {
    /// The RFC 7638 thumbprint of a key, whatever its key id (base64url of `key.thumbprint`).
    public static func thumbprint(of key: SigningKey) -> String { key.thumbprint.description }

    /// SHA-256 of the required members, sorted, no whitespace (RFC 7638). Hashed in pieces so
    /// that an HMAC secret is never copied into a String, which could not be wiped.
    static func thumbprintDigest(algorithm: SignatureAlgorithm, publicKey: [UInt8], hmacSecret: UnsafeRawBufferPointer) -> SHA256Digest {
        // Base64url of at most 1024 secret bytes, wiped after use.
        withHeapBuffer(byteCount: Base64URL.encodedLength(SigningKey.maxHMACSecretBytes), wiped: true) { encoded in
            thumbprint(algorithm: algorithm, publicKey: publicKey, hmacSecret: hmacSecret, encodingInto: encoded)
        }
    }

    private static func thumbprint(algorithm: SignatureAlgorithm, publicKey: [UInt8], hmacSecret: UnsafeRawBufferPointer,
                                   encodingInto encoded: UnsafeMutableRawBufferPointer) -> SHA256Digest {
        var hasher = SHA256Hasher()
        func member(_ text: String, base64url bytes: UnsafeRawBufferPointer) {
            hasher.update(Array(text.utf8))
            var writer = ByteWriter(encoded)
            Base64URL.appendSecret(bytes, to: &writer)  // the HMAC secret, and public keys alike
            hasher.update(writer.written)
        }
        func member(_ text: String, base64url bytes: ArraySlice<UInt8>) {
            bytes.withUnsafeBytes { member(text, base64url: $0) }
        }
        switch algorithm {
        case .hmacSHA256:
            member(#"{"k":""#, base64url: hmacSecret)
            hasher.update(Array(#"","kty":"oct"}"#.utf8))
        case .ed25519:
            member(#"{"crv":"Ed25519","kty":"OKP","x":""#, base64url: publicKey[...])
            hasher.update(Array(#""}"#.utf8))
        case .p256:
            member(#"{"crv":"P-256","kty":"EC","x":""#, base64url: publicKey[1..<33])
            member(#"","y":""#, base64url: publicKey[33..<65])
            hasher.update(Array(#""}"#.utf8))
        }
        return hasher.finalize()
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
            members.append((key.algorithm == .hmacSHA256 ? "k" : "d", Base64URL.encodeSecret(secret)))
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

    /// Parses one JWK document. The String the caller holds cannot be wiped; read key files as
    /// bytes and use `parseKey(bytes:)` to keep secret text out of Swift Strings.
    public static func parseKey(_ text: String) throws(SignCoreError) -> SigningKey {
        try withUTF8(of: text) { (bytes) throws(SignCoreError) in try parseKey(bytes: bytes) }
    }

    /// Parses one JWK document from bytes (the caller wipes them); secret members are decoded
    /// into buffers that are wiped after use.
    public static func parseKey(bytes: UnsafeRawBufferPointer) throws(SignCoreError) -> SigningKey {
        let document = try parse(bytes)
        return try key(from: document.root, in: document)
    }

    /// Parses a JWK Set document; a single JWK is accepted as a set of one.
    public static func parseKeys(_ text: String) throws(SignCoreError) -> [SigningKey] {
        try withUTF8(of: text) { (bytes) throws(SignCoreError) in try parseKeys(bytes: bytes) }
    }

    /// Parses a JWK Set document from bytes (SPEC §6.1): a document with a `keys` member is a
    /// set (its other members are ignored); any other object is a single JWK, a set of one. An
    /// invalid key fails the set with that key's own code.
    public static func parseKeys(bytes: UnsafeRawBufferPointer) throws(SignCoreError) -> [SigningKey] {
        let document = try parse(bytes)
        guard case .object = document.root else { throw invalid("a JWK Set must be a JSON object") }
        guard let keys = document["keys"] else { return [try key(from: document.root, in: document)] }
        guard case let .array(items) = keys else { throw invalid("\"keys\" must be an array") }
        var result: [SigningKey] = []
        for item in items { result.append(try key(from: item, in: document)) }
        return result
    }

    /// Builds a key from a parsed JWK, checking in this order (SPEC §6.1): every member used is
    /// a string; `kty`, then `crv`; `alg`, when present, matches the key type
    /// (`algorithmMismatch`); `use`, when present, is `sig`; the key id; the key material, and
    /// that private and public parts belong together. Names and values are compared as bytes.
    static func key(from jwk: JSON, in document: JSONDocument) throws(SignCoreError) -> SigningKey {
        guard case .object = jwk else { throw invalid("a JWK must be a JSON object") }
        for name: StaticString in ["kty", "crv", "alg", "use", "kid", "k", "x", "y", "d"] {
            if let value = jwk[name], !value.isString { throw invalid("\"\(name)\" must be a string") }
        }
        func text(_ name: StaticString) -> [UInt8]? { jwk[name].flatMap { document.text($0) } }
        func equals(_ value: [UInt8]?, _ expected: StaticString) -> Bool {
            value?.withUnsafeBytes { bytesEqual($0, expected.bytes) } ?? false
        }
        let kty = text("kty")
        let algorithm: SignatureAlgorithm
        if equals(kty, "oct") {
            algorithm = .hmacSHA256
        } else if equals(kty, "OKP") {
            guard equals(text("crv"), "Ed25519") else { throw invalid("only the OKP curve Ed25519 is supported") }
            algorithm = .ed25519
        } else if equals(kty, "EC") {
            guard equals(text("crv"), "P-256") else { throw invalid("only the EC curve P-256 is supported") }
            algorithm = .p256
        } else {
            throw invalid(kty == nil ? "\"kty\" is missing" : "\"kty\" must be oct, OKP or EC")
        }
        if let alg = text("alg"), !equals(alg, algorithm.name) {
            throw SignCoreError(.algorithmMismatch, "the JWK \"alg\" does not match its key type")
        }
        if let use = text("use"), !equals(use, "sig") { throw invalid("\"use\" must be \"sig\"") }
        let kid = text("kid").map { String(decoding: $0, as: UTF8.self) }  // checked first by the constructors
        switch algorithm {
        case .hmacSHA256:
            return try secret(jwk, "k", in: document) { (k) throws(SignCoreError) in try .hmac(secretBytes: k, id: kid) }
        case .ed25519:
            let x = try publicBytes(jwk, "x", in: document)
            guard jwk["d"] != nil else { return try .ed25519(publicKey: x, id: kid) }
            let key = try secret(jwk, "d", in: document) { (d) throws(SignCoreError) in try SigningKey.ed25519(seedBytes: d, id: kid) }
            guard key.publicKey == x else { throw invalid("\"x\" is not the public key of \"d\"") }
            return key
        case .p256:
            let x = try publicBytes(jwk, "x", in: document), y = try publicBytes(jwk, "y", in: document)
            guard x.count == 32, y.count == 32 else { throw invalid("P-256 \"x\" and \"y\" must be 32 bytes each") }
            let point = [0x04] + x + y
            guard jwk["d"] != nil else { return try .p256(publicKey: point, id: kid) }
            let key = try secret(jwk, "d", in: document) { (d) throws(SignCoreError) in try SigningKey.p256(privateKeyBytes: d, id: kid) }
            guard key.publicKey == point else { throw invalid("\"x\", \"y\" are not the public key of \"d\"") }
            return key
        }
    }

    /// The parsed document; any JSON error is reported as `invalidKey` (SPEC §6.1).
    private static func parse(_ bytes: UnsafeRawBufferPointer) throws(SignCoreError) -> JSONDocument {
        do { return try JSONDocument(copying: bytes) } catch { throw invalid(error.detail) }
    }

    private static func invalid(_ detail: String) -> SignCoreError { SignCoreError(.invalidKey, "JWK: " + detail) }

    /// A public binary member, base64url-decoded.
    private static func publicBytes(_ jwk: JSON, _ name: StaticString, in document: JSONDocument) throws(SignCoreError) -> [UInt8] {
        guard let value = jwk[name] else { throw invalid("\"\(name)\" is missing") }
        guard let decoded = document.withString(value, { Base64URL.decode($0) }) ?? nil else {
            throw invalid("\"\(name)\" is not base64url")
        }
        return decoded
    }

    /// A secret binary member, unescaped and base64url-decoded (in constant time) into wiped
    /// buffers, handed to `body` and wiped when it returns.
    private static func secret<R>(_ jwk: JSON, _ name: StaticString, in document: JSONDocument,
                                  _ body: (UnsafeRawBufferPointer) throws(SignCoreError) -> R) throws(SignCoreError) -> R {
        guard let value = jwk[name] else { throw invalid("\"\(name)\" is missing") }
        let result = try document.withString(value) { (text) throws(SignCoreError) -> R in
            guard let length = Base64URL.decodedLength(text.count) else { throw invalid("\"\(name)\" is not base64url") }
            return try withHeapBuffer(byteCount: length, wiped: true) { (buffer) throws(SignCoreError) -> R in
                var out = ByteWriter(buffer)
                guard Base64URL.decodeSecret(text, into: &out) else { throw invalid("\"\(name)\" is not base64url") }
                return try body(out.written)
            }
        }
        guard let result else { throw invalid("\"\(name)\" must be a string") }
        return result
    }
}

