/// Signs outgoing requests with one key (the client side; SPEC §4).
///
/// A value type: configure it once (key, lifetime, account, covered headers), then call `sign`
/// per request, or `signAsync`, which also signs with an external key (`ExternalSigner`).
public struct Signer: Sendable {
    public let key: SigningKey
    /// Seconds a token stays valid after its creation (1–86400).
    public let lifetime: Int64
    /// The end-user account bound into every token (`setAccount`); empty for none.
    public let account: String
    /// The header fields every token covers (SPEC §4.3), in the token's form: lower case,
    /// sorted, each once. A covered field that a request does not carry is signed as absent.
    public let coveredHeaders: [String]
    /// Whether a body on GET, HEAD, OPTIONS or DELETE is signed anyway. Such a body is NOT
    /// covered by the signature (SPEC §3.2): anyone can change it in transit. Off by default,
    /// when signing one is `unexpectedBody`.
    public let allowsUnsignedBody: Bool
    /// Seconds since the Unix epoch; injected so tests and vectors pin time, and replaced by a
    /// client that corrects for a server's clock (`withClock`).
    public private(set) var clock: @Sendable () -> Int64
    /// `coveredHeaders` as the token's `headers` field.
    private let headersField: String

    /// Throws `invalidKey` for a public key, `invalidConfiguration` for a lifetime outside
    /// 1...86400 or a covered name that cannot be covered, `invalidInput` for an account longer
    /// than 256 bytes.
    public init(key: SigningKey, lifetime: Int64 = 60, account: String = "", coveredHeaders: [String] = [],
                allowsUnsignedBody: Bool = false, clock: @escaping @Sendable () -> Int64 = SystemClock.seconds) throws(SignCoreError) {
        try SignCoreRuntime.start()  // nonces come from the crypto backend
        guard key.canSign else { throw SignCoreError(.invalidKey, "a public key cannot sign") }
        guard (1...WToken.maxLifetime).contains(lifetime) else {
            throw SignCoreError(.invalidConfiguration, "the lifetime must be 1 to 86400 seconds")
        }
        guard account.utf8.count <= WToken.maxAccountBytes else {
            throw SignCoreError(.invalidInput, "the account is longer than 256 bytes")
        }
        do {
            self.coveredHeaders = try CoveredHeaders.normalizedNames(coveredHeaders)
        } catch {
            throw SignCoreError(.invalidConfiguration, error.detail)
        }
        self.key = key
        self.lifetime = lifetime
        self.account = account
        self.allowsUnsignedBody = allowsUnsignedBody
        self.clock = clock
        headersField = self.coveredHeaders.joined(separator: ",")
        let longest = WToken.encodedLength(keyID: key.idBytes.count, created: WToken.maxCreated, lifetime: lifetime,
                                           account: account.utf8.count, headers: headersField.utf8.count,
                                           signature: key.algorithm.signatureByteCount)
        guard longest <= WToken.maxLength else {
            throw SignCoreError(.invalidConfiguration, "the key id, account and covered headers make tokens longer than 1024 bytes")
        }
    }

    /// The same signer bound to another account (after a log-in, say).
    public func withAccount(_ account: String) throws(SignCoreError) -> Signer {
        try Signer(key: key, lifetime: lifetime, account: account, coveredHeaders: coveredHeaders,
                   allowsUnsignedBody: allowsUnsignedBody, clock: clock)
    }

    /// The same signer covering `names` too (a flow's field, such as the attestation token's).
    public func covering(_ names: [String]) throws(SignCoreError) -> Signer {
        try Signer(key: key, lifetime: lifetime, account: account, coveredHeaders: coveredHeaders + names,
                   allowsUnsignedBody: allowsUnsignedBody, clock: clock)
    }

    /// The same signer reading another clock (a client's, corrected by an offset it learnt).
    public func withClock(_ clock: @escaping @Sendable () -> Int64) -> Signer {
        var signer = self
        signer.clock = clock
        return signer
    }

    /// Signs a request whose body is in memory. `headers` are the request's header fields: the
    /// covered ones are read from them.
    public func sign(method: RequestMethod, url: String, body: [UInt8] = [], headers: [HeaderField] = []) throws(SignCoreError) -> SignedHeaders {
        try withBytes(of: body) { (raw) throws(SignCoreError) in try sign(method: method, url: url, body: raw, headers: headers) }
    }

    /// Signs a request whose body is in memory anywhere (no copy).
    public func sign(method: RequestMethod, url: String, body: UnsafeRawBufferPointer, headers: [HeaderField] = []) throws(SignCoreError) -> SignedHeaders {
        try sign(method: method, url: url, content: .bytes(body), headers: headers, created: clock(), nonce: .random())
    }

    /// Signs a request whose body was hashed separately (`WHash.BodyHasher`, for streamed bodies).
    public func sign(method: RequestMethod, url: String, bodyWHash: SHA256Digest, headers: [HeaderField] = []) throws(SignCoreError) -> SignedHeaders {
        try sign(method: method, url: url, content: .whash(bodyWHash), headers: headers, created: clock(), nonce: .random())
    }

    /// Signs a request whose body is in memory, with any key: the only way to sign with an
    /// external key (`SigningKey.external`, whose holder may suspend); other keys sign at once,
    /// as `sign` does. The token's creation time is taken before the holder is asked; a holder
    /// that answers after the token's lifetime is `expired`, one that fails or is cancelled
    /// `cryptoFailure` (`Task.isCancelled` tells a cancellation apart).
    public func signAsync(method: RequestMethod, url: String, body: [UInt8] = [], headers: [HeaderField] = []) async throws(SignCoreError) -> SignedHeaders {
        guard let external = key.externalSigner else { return try sign(method: method, url: url, body: body, headers: headers) }
        let pending = try withBytes(of: body) { (raw) throws(SignCoreError) in
            try prepare(method: method, url: url, content: .bytes(raw), headers: headers, created: clock(), nonce: .random())
        }
        return try await pending.completed(by: external, signer: self)
    }

    /// `signAsync` for a body hashed separately (`WHash.BodyHasher`).
    public func signAsync(method: RequestMethod, url: String, bodyWHash: SHA256Digest, headers: [HeaderField] = []) async throws(SignCoreError) -> SignedHeaders {
        guard let external = key.externalSigner else { return try sign(method: method, url: url, bodyWHash: bodyWHash, headers: headers) }
        let pending = try prepare(method: method, url: url, content: .whash(bodyWHash), headers: headers, created: clock(), nonce: .random())
        return try await pending.completed(by: external, signer: self)
    }

    /// Signs with a given creation time and nonce. Only for known-answer vectors and tests:
    /// real tokens need a fresh random nonce, which `sign(method:url:body:)` draws.
    public func sign(method: RequestMethod, url: String, body: [UInt8] = [], headers: [HeaderField] = [],
                     created: Int64, nonce: Nonce) throws(SignCoreError) -> SignedHeaders {
        try withBytes(of: body) { (raw) throws(SignCoreError) in
            try sign(method: method, url: url, content: .bytes(raw), headers: headers, created: created, nonce: nonce)
        }
    }

    /// A body in memory, or the whash of one.
    private enum Content {
        case bytes(UnsafeRawBufferPointer)
        case whash(SHA256Digest)
    }

    /// The body's whash for a body-class method; nil for a URL-class method, whose body must be
    /// empty unless `allowsUnsignedBody` (SPEC §3.2). Static, so that the closure calling it on
    /// the hot path captures a Bool, not a copy of the whole signer.
    @inline(__always)
    private static func bodyWHash(_ method: RequestMethod, _ content: Content, allowsUnsignedBody: Bool) throws(SignCoreError) -> SHA256Digest? {
        let isEmpty: Bool
        switch content {
        case .bytes(let body):
            if method.contentClass == .body { return WHash.ofBody(body) }
            isEmpty = body.isEmpty
        case .whash(let digest):
            if method.contentClass == .body { return digest }
            isEmpty = digest == WHash.ofEmptyBody
        }
        guard isEmpty || allowsUnsignedBody else { throw Self.unexpectedBody }
        return nil
    }

    /// The digest of this signer's covered header fields as `fields` carry them (SPEC §4.3);
    /// nil when it covers none.
    public func coveredHeadersDigest(_ fields: [HeaderField]) throws(SignCoreError) -> SHA256Digest? {
        guard !coveredHeaders.isEmpty else { return nil }
        return try withUTF8(of: headersField) { (names) throws(SignCoreError) in try CoveredHeaders.digest(names: names, fields: fields) }
    }

    private static var unexpectedBody: SignCoreError {
        SignCoreError(.unexpectedBody, "a GET, HEAD, OPTIONS or DELETE body is not covered by the signature")
    }

    /// SPEC §4: canonical URL → target digest → whash → covered headers → signing input →
    /// signature → token, in one C pass for the usual HS256 request (`signInOnePass`).
    /// Everything before the two header strings happens in stack memory.
    private func sign(method: RequestMethod, url: String, content: Content, headers: [HeaderField],
                      created: Int64, nonce: Nonce) throws(SignCoreError) -> SignedHeaders {
        var content = content
        var urlIsCommon = true
        if let signed = signInOnePass(method: method, url: url, content: &content, created: created, nonce: nonce,
                                      urlIsCommon: &urlIsCommon) { return signed }
        let request = try prepare(method: method, url: url, content: content, headers: headers, created: created, nonce: nonce,
                                  urlIsCommon: urlIsCommon)
        return SignedHeaders(whash: request.whash.description,
                             wtoken: try token(whash: request.whash, target: request.target, headers: request.covered,
                                               created: created, nonce: nonce))
    }

    /// SPEC §4 in one pass (`SigningKey.signCommonURL`) for the usual request: an HMAC key, no
    /// covered headers, a creation time in range, a common URL, no body on a URL-class method.
    /// Nil for any other, which the general path signs (and refuses in step order); a body
    /// hashed here is handed on to it in `content`, so it is never hashed twice, and a URL the
    /// pass declined is marked in `urlIsCommon`, so it is not tried as common twice.
    @inline(__always)
    private func signInOnePass(method: RequestMethod, url: String, content: inout Content, created: Int64, nonce: Nonce,
                               urlIsCommon: inout Bool) -> SignedHeaders? {
        guard key.signsInOnePass, coveredHeaders.isEmpty, (0...WToken.maxCreated).contains(created) else { return nil }
        var bodyWHash = SHA256Digest()  // a URL-class method's whash is its target digest, set in C
        switch (method.contentClass, content) {
        case (.body, .bytes(let body)):
            bodyWHash = WHash.ofBody(body)
            content = .whash(bodyWHash)
        case (.body, .whash(let whash)):
            bodyWHash = whash
        case (.url, .bytes(let body)) where body.isEmpty:
            break
        case (.url, .whash(let whash)) where whash == WHash.ofEmptyBody:
            break
        default:
            return nil  // a body on a URL-class method: allowed unsigned or refused, by the general path
        }
        let (key, lifetime) = (key, lifetime)
        let signed = account.utf8.withContiguousStorageIfAvailable { account in
            url.utf8.withContiguousStorageIfAvailable { url -> SignedHeaders? in
                var rest = SigningInputRest(target: (0, 0, 0, 0), whash: bodyWHash.words, created: created, lifetime: lifetime,
                                            nonce: nonce.words, account: account.baseAddress, account_length: account.count,
                                            headers_count: 0, headers_digest: (0, 0, 0, 0))
                var parts = TokenParts(key_id: key.idBytes.baseAddress, key_id_length: key.idBytes.count, created: created,
                                       lifetime: lifetime, nonce: nil, target: nil, target_length: 0, account: account.baseAddress,
                                       account_length: account.count, headers: nil, headers_length: 0, signature: nil,
                                       signature_length: 0)
                // The token, bounded by `init` (1 KiB: on the stack), and the whash's 43 characters.
                var whash: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0)
                return withUnsafeTemporaryAllocation(byteCount: WToken.maxLength, alignment: 16) { token -> SignedHeaders? in
                    withUnsafeMutableBytes(of: &whash) { whash -> SignedHeaders? in
                        guard let text = token.baseAddress, let digest = whash.baseAddress,
                              let count = key.signCommonURL(prefix: SigningInput.digestHead(method).bytes, urlClass: method.contentClass == .url,
                                                            url: UnsafeRawBufferPointer(url), rest: &rest, parts: &parts,
                                                            whash: digest, token: text) else {
                            urlIsCommon = false
                            return nil
                        }
                        return SignedHeaders(whash: stringOfOwnASCII(UnsafeRawBufferPointer(start: digest, count: 43)),
                                             wtoken: stringOfOwnASCII(UnsafeRawBufferPointer(start: text, count: count)))
                    }
                }
            }
        }
        return signed.flatMap { $0 }.flatMap { $0 }  // nil too where a string is not contiguous UTF-8 (bridged)
    }

    /// A request's digests and token fields, before its signature (SPEC §4.1-4.3).
    private struct Prepared {
        let whash: SHA256Digest, target: SHA256Digest
        let covered: SigningInput.Headers
        let created: Int64, nonce: Nonce

        /// The token with the signature of an external key's holder, checked under its public key.
        func completed(by external: any ExternalSigner, signer: Signer) async throws(SignCoreError) -> SignedHeaders {
            let key = signer.key
            let input = signer.signingInput(whash: whash, target: target, headers: covered, created: created, nonce: nonce)
            let signature: [UInt8]
            do {
                signature = try await external.signature(for: input)
            } catch {
                throw SignCoreError(.cryptoFailure, "the external signer failed (\(type(of: error)))")
            }
            let valid = signature.withUnsafeBytes { signature in
                input.withUnsafeBytes { key.isValidSignature(signature, for: $0) }
            }
            guard valid else {
                throw SignCoreError(.cryptoFailure, "the external signer's signature does not verify under its public key")
            }
            guard signer.clock() < created + signer.lifetime else {
                throw SignCoreError(.expired, "the external signer answered after the token's lifetime")
            }
            let token = signature.withUnsafeBytes { signer.encodeToken(target: target, created: created, nonce: nonce, signature: $0) }
            return SignedHeaders(whash: whash.description, wtoken: token)
        }
    }

    /// `urlIsCommon: false`: the one-pass sign declined the URL, so it is canonicalised by the
    /// general path alone.
    private func prepare(method: RequestMethod, url: String, content: Content, headers: [HeaderField],
                         created: Int64, nonce: Nonce, urlIsCommon: Bool = true) throws(SignCoreError) -> Prepared {
        guard (0...WToken.maxCreated).contains(created) else {
            throw SignCoreError(.invalidInput, "the creation time is outside 0...99999999999")
        }
        let allowsUnsignedBody = allowsUnsignedBody
        let target = try withUTF8(of: url) { (raw) throws(SignCoreError) in
            try SigningInput.targetDigest(method: method, url: raw, commonPath: urlIsCommon)
        }
        let whash = try Self.bodyWHash(method, content, allowsUnsignedBody: allowsUnsignedBody) ?? target
        var covered = SigningInput.Headers.none
        if !coveredHeaders.isEmpty, let digest = try coveredHeadersDigest(headers) {  // tested first: no call when none is covered
            covered = SigningInput.Headers(count: coveredHeaders.count, digest: digest)
        }
        return Prepared(whash: whash, target: target, covered: covered, created: created, nonce: nonce)
    }

    /// The signing input after the key's prefix (SPEC §4.2), handed to `body` with the account's bytes.
    private func withRest<R>(whash: SHA256Digest, target: SHA256Digest, headers: SigningInput.Headers, created: Int64, nonce: Nonce,
                             _ body: (_ rest: inout SigningInputRest, _ account: UnsafeRawBufferPointer) -> R) -> R {
        var account = account
        return account.withUTF8 { utf8 in
            let account = UnsafeRawBufferPointer(utf8)
            var rest = SigningInput.rest(target: target, whash: whash, created: created, lifetime: lifetime, nonce: nonce,
                                         account: account, headers: headers)
            return body(&rest, account)
        }
    }

    /// The signing input as bytes, for a signer outside this process.
    private func signingInput(whash: SHA256Digest, target: SHA256Digest, headers: SigningInput.Headers, created: Int64,
                              nonce: Nonce) -> [UInt8] {
        withRest(whash: whash, target: target, headers: headers, created: created, nonce: nonce) { rest, _ in
            key.withSigningInput(rest) { Array($0) }
        }
    }

    private func token(whash: SHA256Digest, target: SHA256Digest, headers: SigningInput.Headers, created: Int64,
                       nonce: Nonce) throws(SignCoreError) -> String {
        var signature: SignatureStorage = (0, 0, 0, 0, 0, 0, 0, 0)
        var failure: SignCoreError?
        let token = withRest(whash: whash, target: target, headers: headers, created: created, nonce: nonce) { rest, account in
            withUnsafeMutableBytes(of: &signature) { out in
                do throws(SignCoreError) { try key.sign(rest: &rest, into: out) } catch { failure = error }
            }
            return withUnsafeBytes(of: signature) { signature in
                encodeToken(target: target, created: created, nonce: nonce, account: account,
                            signature: UnsafeRawBufferPointer(rebasing: signature[..<key.algorithm.signatureByteCount]))
            }
        }
        if let failure { throw failure }
        return token
    }

    /// The wtoken (SPEC §4.1) around a signature.
    private func encodeToken(target: SHA256Digest, created: Int64, nonce: Nonce, signature: UnsafeRawBufferPointer) -> String {
        var account = account
        return account.withUTF8 { encodeToken(target: target, created: created, nonce: nonce, account: UnsafeRawBufferPointer($0), signature: signature) }
    }

    private func encodeToken(target: SHA256Digest, created: Int64, nonce: Nonce, account: UnsafeRawBufferPointer,
                             signature: UnsafeRawBufferPointer) -> String {
        var headersField = headersField
        return headersField.withUTF8 { names in
            target.withUnsafeBytes { digest in
                WToken.encode(keyID: key.idBytes, created: created, lifetime: lifetime, nonce: nonce,
                              targetHint: UnsafeRawBufferPointer(rebasing: digest[..<WToken.targetHintBytes]),
                              account: account, headers: UnsafeRawBufferPointer(names), signature: signature, bounded: true)
            }
        }
    }
}

/// Room for any signature (64 bytes) without a heap allocation.
typealias SignatureStorage = (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64)
