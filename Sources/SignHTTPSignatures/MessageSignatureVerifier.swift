import HTTPTypes
import SignCore
import SignHTTP

/// Verifies RFC 9421 signatures on requests under a route's policy (docs/HTTPSIG.md §5), with
/// the keys, clock and replay guard of a wtoken `Verifier`: one key set and one replay guard
/// for both formats.
public struct MessageSignatureVerifier: RequestVerifier {
    public typealias Digest = ContentDigest.Hasher
    public let verifier: Verifier
    public var policy: HTTPSignaturePolicy
    /// The key directories of allowed agents, for routes of agent coverage whose signatures name
    /// a key the key set does not hold (docs/HTTPSIG.md §7.3); nil: none is fetched.
    public let directories: KeyDirectories?

    public init(_ verifier: Verifier, policy: HTTPSignaturePolicy = HTTPSignaturePolicy(), directories: KeyDirectories? = nil) {
        self.verifier = verifier
        self.policy = policy
        self.directories = directories
    }

    public var allowsUnsignedBody: Bool { false }

    public func configured(for route: RouteRequirements) -> MessageSignatureVerifier {
        var configured = self
        configured.policy = route[RouteSignatureFormat.self].policy
        return configured
    }

    /// The signature fields, `Content-Digest`, and every field a signature of the request covers.
    public func protectedFields(of request: HTTPRequest) -> Set<String> {
        var protected: Set<String> = ["signature-input", "signature", "content-digest", "signature-agent"]
        protected.formUnion(policy.requiredComponents.filter { !$0.isDerived }.map(\.name))
        if let fields = try? SignatureFields(request.headerFields) {
            for entry in fields.entries { protected.formUnion(entry.parameters.components.filter { !$0.isDerived }.map(\.name)) }
        }
        return protected
    }

    public func claimedDigest(of request: HTTPRequest) throws(SignCoreError) -> ContentDigest {
        guard let claimed = try ContentDigest.claimed(in: request.headerFields) else {
            throw SignCoreError(.missingHeader, "the request has no Content-Digest field")
        }
        return claimed
    }

    /// The algorithms the request's `Content-Digest` lists (refused before a byte of the body is
    /// read when it lists none checked here); none when it has no such field.
    public func bodyDigest(for request: HTTPRequest, limit: UInt64) throws(SignCoreError) -> ContentDigest.Hasher {
        ContentDigest.Hasher(algorithms: try ContentDigest.claimed(in: request.headerFields)?.digests.map(\.0) ?? [], limit: limit)
    }

    nonisolated(nonsending) public func verify(_ request: HTTPRequest, bodyDigest: ContentDigest, origin: ServerOrigin)
        async throws(SignCoreError) -> VerifiedIdentity {
        let (identity, record) = try await verifyDeferringRecord(request, bodyDigest: bodyDigest, origin: origin)
        try await record()
        return identity
    }

    nonisolated(nonsending) public func verifyDeferringRecord(_ request: HTTPRequest, bodyDigest: ContentDigest, origin: ServerOrigin)
        async throws(SignCoreError) -> (identity: VerifiedIdentity, record: DeferredRecord) {
        let now = verifier.clock()
        let agentKey = try await self.agentKey(of: request)
        let checked = try check(request, bodyDigest: bodyDigest, origin: origin, now: now, agentKey: agentKey)
        guard let nonce = checked.nonce else { return (checked.identity, .none) }
        let replayGuard = verifier.replayGuard, keyID = checked.identity.keyID, until = checked.rememberUntil
        return (checked.identity, DeferredRecord { () async throws(SignCoreError) in
            try await replayGuard.record(keyID: keyID, nonce: nonce, expires: until, now: now)
        })
    }

    /// The checks of docs/HTTPSIG.md §5.2, in order, all but the replay record: the identity, the
    /// nonce as the replay guard keys it, and until when it must be remembered.
    public func check(_ request: HTTPRequest, bodyDigest: ContentDigest, origin: ServerOrigin, now: Int64, agentKey: SigningKey? = nil)
        throws(SignCoreError) -> (identity: VerifiedIdentity, nonce: Nonce?, rememberUntil: Int64) {
        // 1-2. The fields, and the one signature this route reads.
        let fields = try SignatureFields(request.headerFields)
        guard let entry = selected(fields) else { throw SignCoreError(.signatureNotFound, "the request has no signature with the route's label or tag") }
        let parameters = entry.parameters
        guard let signature = entry.signature else {
            throw SignCoreError(.signatureFieldsMalformed, "the Signature field has no byte sequence for the label verified")
        }
        // 3. The algorithm named (one this profile implements), the key, and the algorithm always the key's.
        let named = try parameters.algorithm.map { (name) throws(SignCoreError) in
            guard let algorithm = SignatureAlgorithm(httpSignatureName: name) else {
                throw SignCoreError(.signatureAlgorithmUnsupported, "alg names an algorithm this server does not implement")
            }
            return algorithm
        }
        guard let keyID = parameters.keyID else { throw SignCoreError(.unknownKey, "the signature names no keyid") }
        guard let key = verifier.keys.key(id: keyID) ?? agentKey.flatMap({ $0.id == keyID ? $0 : nil }) else {
            // SPEC §7.1: a key id goes into the problem only when it is one SignCore could hold.
            let plain = (1...SigningKey.maxKeyIDLength).contains(keyID.utf8.count) && keyID.utf8.allSatisfy { byte in
                (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || byte == 0x2D || byte == 0x5F
            }
            throw SignCoreError(.unknownKey, "no key has the signature's keyid", keyID: plain ? keyID : nil)
        }
        if let named, named != key.algorithm { throw SignCoreError(.algorithmMismatch, "alg is not the key's algorithm") }
        // 4. What the signature covers.
        try checkCoverage(parameters.components, request: request, hadContent: bodyDigest.hadContent)
        // 5. Its time and nonce.
        guard let created = parameters.created else { throw SignCoreError(.signatureCreatedMissing, "the signature has no created parameter") }
        guard created <= Self.sum(now, policy.skew) else { throw SignCoreError(.notYetValid, "the signature was created in the future") }
        guard now <= Self.sum(created, policy.maxAge) else { throw SignCoreError(.expired, "the signature is older than the route's maximum age") }
        if let expires = parameters.expires, now > expires { throw SignCoreError(.expired, "the signature's expires has passed") }
        guard parameters.nonce != nil || policy.nonce == .optional else {
            throw SignCoreError(.signatureNonceMissing, "the route requires a nonce and the signature has none")
        }
        // 6-7. The base, and the signature over it.
        let message = MessageComponents(request: try MessageComponents.RequestParts(request, origin: origin))
        let base = try SignatureBase.make(parameters, message: message)
        guard key.isValidSignature(signature, forBase: base) else {
            throw SignCoreError(.badSignature, "the signature does not verify under the key")
        }
        // 8. The content received against its Content-Digest.
        if let claimed = try ContentDigest.claimed(in: request.headerFields), claimed != bodyDigest {
            throw SignCoreError(.contentDigestMismatch, "the body received does not match its Content-Digest")
        }
        let expires = min(parameters.expires ?? .max, Self.sum(created, policy.maxAge))
        let identity = VerifiedIdentity(format: policy.coverage == .agent ? "rfc9421-agent" : "rfc9421", keyID: key.id, algorithm: key.algorithm,
                                        created: created, expires: expires, coveredHeaders: parameters.components.filter(\.coversWholeField).map(\.name),
                                        keyThumbprint: key.thumbprint)
        return (identity, parameters.nonce.map(Self.replayNonce), Self.sum(expires, policy.skew))
    }

    /// docs/HTTPSIG.md §7.3: under agent coverage, the key of a signature whose `keyid` the key
    /// set does not hold, from the directory its `Signature-Agent` names (the member its covered
    /// `signature-agent` component's `key` names, else its label's); nil when there is nothing to fetch.
    nonisolated(nonsending) func agentKey(of request: HTTPRequest) async throws(SignCoreError) -> SigningKey? {
        guard let directories, policy.coverage == .agent, let fields = try? SignatureFields(request.headerFields),
              let entry = selected(fields), let keyID = entry.parameters.keyID, verifier.keys.key(id: keyID) == nil else { return nil }
        let member = entry.parameters.components.first { $0.name == "signature-agent" }?.key
        guard let agent = SignatureAgent.url(in: request.headerFields, label: entry.label, member: member) else { return nil }
        return try await directories.key(keyID, agentURL: agent)
    }

    /// The entry verified: the one with the route's label (carrying its tag, when it sets one);
    /// else the first with its tag; else the first. The others are ignored, never failures.
    func selected(_ fields: SignatureFields) -> SignatureFields.Entry? {
        if let label = policy.label { return fields.entries.first { $0.label == label && (policy.tag == nil || $0.parameters.tag == policy.tag) } }
        if let tag = policy.tag { return fields.entries.first { $0.parameters.tag == tag } }
        return fields.entries.first
    }

    /// docs/HTTPSIG.md §5.2 step 4: the route's coverage and required components (`headerNotCovered`).
    func checkCoverage(_ components: [ComponentIdentifier], request: HTTPRequest, hadContent: Bool) throws(SignCoreError) {
        // A component counts by its name (docs/HTTPSIG.md §5.1): `"content-digest";sf` covers the field too.
        let covered = Set(components.filter { !$0.request }.map(\.name))
        func require(_ condition: Bool, _ what: String) throws(SignCoreError) {
            guard condition else { throw SignCoreError(.headerNotCovered, "the signature does not cover \(what)") }
        }
        switch policy.coverage {
        case .request:
            try require(covered.contains("@method"), "@method")
            let target = covered.contains("@target-uri")
                || (covered.contains("@authority") && (covered.contains("@request-target") || (covered.contains("@path") && covered.contains("@query"))))
            try require(target, "the request target (@target-uri, or @authority with @request-target or @path and @query)")
            try require(!hadContent || covered.contains("content-digest"), "content-digest, and the request has content")
        case .agent:
            try require(covered.contains("@authority"), "@authority")
            if request.headerFields[SignatureAgent.field] != nil {
                try require(components.contains { $0.name == "signature-agent" && !$0.request }, "signature-agent")
            }
        }
        for component in policy.requiredComponents { try require(components.contains(component), "a component the route requires") }
    }

    /// `a + b`, held at `Int64.max` (a policy of any age never traps).
    static func sum(_ a: Int64, _ b: Int64) -> Int64 {
        let (value, overflow) = a.addingReportingOverflow(b)
        return overflow ? (b > 0 ? .max : .min) : value
    }

    /// An RFC 9421 nonce as the replay guard keys it (docs/HTTPSIG.md §5.3): the first 16 bytes
    /// of SHA-256("SignCore/3 rfc9421 nonce\n" ‖ nonce), under the key's id. A wtoken's nonce is
    /// 16 random bytes, so neither format can spend the other's.
    static func replayNonce(_ nonce: String) -> Nonce {
        let digest = SHA256Hasher.hash(Array("SignCore/3 rfc9421 nonce\n".utf8) + Array(nonce.utf8)).bytes
        // 16 of 32 bytes: always a nonce.
        return Nonce(bytes: Array(digest.prefix(Nonce.byteCount))) ?? Nonce.random()
    }

    /// A 401 names what the route would accept (RFC 9421 §5.1): the label, the components its
    /// coverage needs, `created`, `nonce` when required, and the tag.
    public func refusalFields(for error: SignCoreError, request: HTTPRequest) -> HTTPFields {
        guard error.code.status == 401 else { return HTTPFields() }
        var components: [ComponentIdentifier]
        switch policy.coverage {
        case .request:
            components = [.method, .targetURI]
            if let method = try? RequestMethod(token: request.method.rawValue), method.contentClass == .body { components.append(.contentDigest) }
        case .agent:
            components = [.authority]
        }
        components += policy.requiredComponents.filter { !components.contains($0) }
        var accepted = SignatureParameters(components: components, tag: policy.tag)
        accepted.order = ["created"] + (policy.nonce == .required ? ["nonce"] : []) + ["keyid", "tag"]
        accepted.flags = Set(accepted.order.filter { $0 != "tag" })
        guard let value = try? accepted.serialized() else { return HTTPFields() }
        return HTTPFields([HTTPField(name: SignatureFields.acceptSignature, value: (policy.label ?? "sig1") + "=" + value)])
    }
}

