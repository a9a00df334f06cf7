internal import CSignBytes

/// The part of a signing input that follows its key's fixed prefix (SPEC §4.2: target, whash,
/// created, lifetime, nonce, account, headers), in the C layout the shim hashes straight from.
typealias SigningInputRest = sc_signing_input_rest

/// The bytes a wtoken signature covers (SPEC §4.2). Every variable-length field is
/// length-prefixed and every other field has a fixed size, so two different requests or
/// tokens can never produce the same signing input.
///
///     "SignCore/3 wtoken\n"
///     u8 len(alg)  || alg            ("HS256", "EdDSA", "ES256")
///     u8 len(kid)  || kid
///     target digest (32)             the whash for GET, HEAD, OPTIONS, DELETE; else
///                                    SHA-256("SignCore/3 target\n" || method || " " || canonical URL)
///     whash (32)
///     created  (u64, big-endian)
///     lifetime (u32, big-endian)
///     nonce (16)
///     u16 len(account) || account    (UTF-8, big-endian length)
///     u8 n                           number of covered header fields
///     headers digest (32)            only when n > 0 (CoveredHeaders.digest, SPEC §4.3)
public enum SigningInput {
    static let prefix: StaticString = "SignCore/3 wtoken\n"
    static let targetPrefix: StaticString = "SignCore/3 target\n"
    /// The longest signing input: a 64-byte key id and a 256-byte account.
    static let maxByteCount = 18 + 1 + 5 + 1 + SigningKey.maxKeyIDLength + 32 + 32 + 8 + 4 + 16 + 2 + WToken.maxAccountBytes + 1 + 32

    /// The longest prefix (fixed text, algorithm, key id) that is the same for every input under one key.
    static let maxPrefixByteCount = 18 + 1 + 5 + 1 + SigningKey.maxKeyIDLength

    /// The digest that binds the method and the canonical URL (SPEC §4.2): for a URL-class
    /// method the whash, which already hashes both.
    public static func targetDigest(method: RequestMethod, canonicalURL: UnsafeRawBufferPointer) -> SHA256Digest {
        SHA256Hasher.hash(prefix: digestHead(method).bytes, canonicalURL)
    }

    /// The target digest of a request URL, canonicalised on the way (SPEC §2): in one pass for a
    /// common URL where the backend has the fused paths (`FusedFastPaths`), else canonical form first.
    /// `commonPath: false`: the URL is known not to be common (a one-pass sign declined it), so
    /// only the general path runs. Throws `invalidURL` as `CanonicalURL` does.
    @inline(__always)
    static func targetDigest(method: RequestMethod, url: UnsafeRawBufferPointer, commonPath: Bool = true) throws(SignCoreError) -> SHA256Digest {
        if commonPath, CryptoBackend.hasFusedFastPaths {
            var digest = SHA256Digest()
            let head = digestHead(method).bytes
            if digest.withUnsafeMutableBytes({ CryptoBackend.hashCommonURL(prefix: head, url: url, into: $0) }) { return digest }
            return try CanonicalURL.withCanonical(url, commonPath: false) { targetDigest(method: method, canonicalURL: $0) }
        }
        return try CanonicalURL.withCanonical(url, commonPath: commonPath) { targetDigest(method: method, canonicalURL: $0) }
    }

    /// What a target digest hashes before the canonical URL: the whash prefix for a URL-class
    /// method (SPEC §3.2), else the target prefix (§4.2), then the method and a space. Spelled
    /// out per method so that no digest assembles them (a test checks each against its parts).
    static func digestHead(_ method: RequestMethod) -> StaticString {
        switch method {
        case .get: "SignCore/3 whash url\nGET "
        case .head: "SignCore/3 whash url\nHEAD "
        case .options: "SignCore/3 whash url\nOPTIONS "
        case .delete: "SignCore/3 whash url\nDELETE "
        case .post: "SignCore/3 target\nPOST "
        case .put: "SignCore/3 target\nPUT "
        case .patch: "SignCore/3 target\nPATCH "
        }
    }

    /// SHA-256(prefix || method || " " || canonical URL).
    static func digest(prefix: StaticString, method: RequestMethod, canonicalURL: UnsafeRawBufferPointer) -> SHA256Digest {
        // The longest prefix (22 bytes), method (7) and space fit in 32 bytes.
        withUnsafeTemporaryAllocation(byteCount: 32, alignment: 8) { scratch in
            var head = ByteWriter(scratch)
            head.append(prefix)
            head.append(method.token)
            head.append(UInt8(ascii: " "))
            return SHA256Hasher.hash(prefix: head.written, canonicalURL)
        }
    }

    /// The signing input as bytes (for interoperability checks; signing writes it in place).
    /// Refuses fields the format cannot hold: a key id outside 1–64 bytes, an account over 256
    /// bytes, a creation time outside 0...99999999999, a lifetime outside 1...86400 or more than
    /// 16 covered headers. `headers` is the count of covered fields and their digest.
    public static func bytes(algorithm: SignatureAlgorithm, keyID: String, target: SHA256Digest, whash: SHA256Digest,
                             created: Int64, lifetime: Int64, nonce: Nonce, account: String,
                             headers: (count: Int, digest: SHA256Digest)? = nil) throws(SignCoreError) -> [UInt8] {
        guard (1...SigningKey.maxKeyIDLength).contains(keyID.utf8.count), account.utf8.count <= WToken.maxAccountBytes,
              (0...WToken.maxCreated).contains(created), (1...WToken.maxLifetime).contains(lifetime),
              (0...CoveredHeaders.maxCount).contains(headers?.count ?? 0) else {
            throw SignCoreError(.invalidInput, "a signing-input field is outside its limits")
        }
        var keyID = keyID, account = account
        return keyID.withUTF8 { kid in
            account.withUTF8 { account in
                [UInt8](unsafeUninitializedCapacity: maxByteCount) { buffer, count in
                    var out = ByteWriter(UnsafeMutableRawBufferPointer(buffer))
                    writePrefix(algorithm: algorithm, keyID: UnsafeRawBufferPointer(kid), into: &out)
                    write(rest(target: target, whash: whash, created: created, lifetime: lifetime, nonce: nonce,
                               account: UnsafeRawBufferPointer(account),
                               headers: headers.map { Headers(count: $0.count, digest: $0.digest) } ?? .none), into: &out)
                    count = out.count
                }
            }
        }
    }

    /// The covered header fields as the signing input binds them: how many, and their digest.
    struct Headers {
        var count: Int
        var digest: SHA256Digest
        static let none = Headers(count: 0, digest: SHA256Digest())
    }

    /// Everything after the key's prefix, as the values the C writer lays out
    /// (`sc_signing_input_rest_write`, the layout above) and an HMAC key hashes straight from.
    /// `account` must stay valid while the value is used. Every caller has bounded the account
    /// and the header count already; the C writers fill fixed buffers sized from those bounds, so
    /// a value past them is a bug here and traps before any byte is written.
    static func rest(target: SHA256Digest, whash: SHA256Digest, created: Int64, lifetime: Int64, nonce: Nonce,
                     account: UnsafeRawBufferPointer, headers: Headers) -> SigningInputRest {
        precondition(account.count <= WToken.maxAccountBytes && (0...CoveredHeaders.maxCount).contains(headers.count),
                     "signing-input bounds")
        return SigningInputRest(target: target.words, whash: whash.words, created: created, lifetime: lifetime,
                              nonce: nonce.words, account: account.baseAddress, account_length: account.count,
                              headers_count: Int32(truncatingIfNeeded: headers.count), headers_digest: headers.digest.words)
    }

    static func write(_ rest: SigningInputRest, into out: inout ByteWriter) {
        var rest = rest
        out.appendRun(maxCount: Int(SC_SIGNING_INPUT_REST_MAX)) { sc_signing_input_rest_write(&rest, $0.base) }
    }

    /// The part that depends only on the key: written once per key (`SigningKey.signingInputPrefix`).
    static func writePrefix(algorithm: SignatureAlgorithm, keyID: UnsafeRawBufferPointer, into out: inout ByteWriter) {
        out.append(prefix)
        let name = algorithm.name
        out.append(UInt8(name.utf8CodeUnitCount))
        out.append(name)
        out.append(UInt8(keyID.count))
        out.append(keyID)
    }
}
