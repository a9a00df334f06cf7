import HTTPTypes
import RawStructuredFieldValues
import SignCore
import SignHTTP

extension SignatureAlgorithm {
    /// The algorithm's name in RFC 9421's registry (§6.2).
    public var httpSignatureName: String {
        switch self {
        case .hmacSHA256: "hmac-sha256"
        case .ed25519: "ed25519"
        case .p256: "ecdsa-p256-sha256"
        }
    }

    /// The algorithm named `name` in RFC 9421's registry; nil for one this profile does not
    /// implement (`rsa-pss-sha512`, `rsa-v1_5-sha256`, `ecdsa-p384-sha384`) or no name at all.
    public init?(httpSignatureName name: String) {
        guard let algorithm = Self.allCases.first(where: { $0.httpSignatureName == name }) else { return nil }
        self = algorithm
    }
}

/// Signs requests (and responses) with RFC 9421 signatures (docs/HTTPSIG.md §3): the key's
/// algorithm, `created`, a fresh `nonce`, `keyid`, `alg` and the tag; `Content-Digest` for content.
public struct MessageSigner: Sendable {
    public let key: SigningKey
    /// The components covered; `content-digest` is added when the request has content.
    public var components: [ComponentIdentifier]
    public var label: String
    public var tag: String?
    /// The key id written (`keyid`): the key's id unless set (Web Bot Auth: its thumbprint).
    public var keyID: String
    /// Seconds until `expires`; nil for none.
    public var lifetime: Int64?
    /// The `Content-Digest` algorithms computed for content.
    public var digestAlgorithms: [ContentDigest.Algorithm]
    /// Whether a fresh `nonce` is sent (a verifier refuses signatures without one by default).
    public var nonce = true
    public var clock: @Sendable () -> Int64

    public init(key: SigningKey, components: [ComponentIdentifier] = [.method, .targetURI], label: String = "sig1", tag: String? = nil,
                keyID: String? = nil, lifetime: Int64? = nil, digestAlgorithms: [ContentDigest.Algorithm] = [.sha256],
                clock: @escaping @Sendable () -> Int64 = SystemClock.seconds) {
        self.key = key
        self.components = components
        self.label = label
        self.tag = tag
        self.keyID = keyID ?? key.id
        self.lifetime = lifetime
        self.digestAlgorithms = digestAlgorithms
        self.clock = clock
    }

    /// Signs `request` (its scheme, authority and path set) with `body` as its content: adds
    /// `Content-Digest` (when there is content, or the method carries content), then a
    /// `Signature-Input` and `Signature` member under `label` beside any already there.
    public func sign(_ request: inout HTTPRequest, body: [UInt8] = []) async throws(SignCoreError) {
        var components = self.components
        let method = try RequestMethod(token: request.method.rawValue)
        if !body.isEmpty || method.contentClass == .body {
            request.headerFields[ContentDigest.field] = ContentDigest.of(body, algorithms: digestAlgorithms).fieldValue
            if !components.contains(.contentDigest) { components.append(.contentDigest) }
        }
        let message = MessageComponents(request: try MessageComponents.RequestParts(signing: request))
        let (input, signature) = try await fields(components, message: message)
        request.headerFields.append(HTTPField(name: SignatureFields.signatureInput, value: input))
        request.headerFields.append(HTTPField(name: SignatureFields.signature, value: signature))
    }

    /// Signs a response to `request` (whose components `req` reads), adding its two fields to `fields`.
    public func signResponse(status: Int, fields: inout HTTPFields, request: MessageComponents.RequestParts? = nil) async throws(SignCoreError) {
        let message = MessageComponents(status: status, fields: fields, request: request)
        let (input, signature) = try await self.fields(components, message: message)
        fields.append(HTTPField(name: SignatureFields.signatureInput, value: input))
        fields.append(HTTPField(name: SignatureFields.signature, value: signature))
    }

    /// The two field values for `components` over `message`.
    func fields(_ components: [ComponentIdentifier], message: MessageComponents) async throws(SignCoreError) -> (String, String) {
        let created = clock()
        let parameters = SignatureParameters(components: components, created: created, expires: lifetime.map { created + $0 },
                                             nonce: nonce ? Nonce.random().description : nil, algorithm: key.algorithm.httpSignatureName,
                                             keyID: keyID, tag: tag)
        let base = try SignatureBase.make(parameters, message: message)
        let signature = try await key.signSignatureBaseAsync(base)
        return try SignatureFields.serialize(label: label, parameters: parameters, signature: signature)
    }
}

extension MessageSigner {
    /// A signer that answers a refusal's `Accept-Signature` (RFC 9421 §5.1, docs/HTTPSIG.md
    /// §5.5): its first member's label, components and `tag`; `created`, `nonce` and `keyid` are
    /// always sent (the Boolean parameters ask for them). Nil when the field is absent, over 8 KiB
    /// or no dictionary, or its first member is not an inner list of components this profile
    /// reads, or asks for less than the method and target, or for a key or algorithm other than
    /// this key's (`keyid="…"`, `alg="…"`).
    public init?(key: SigningKey, accepting response: HTTPResponse, clock: @escaping @Sendable () -> Int64 = SystemClock.seconds) {
        guard let value = response.headerFields[SignatureFields.acceptSignature], value.utf8.count <= SignatureFields.maxFieldBytes else { return nil }
        var parser = StructuredFieldValueParser(Array(value.utf8))
        guard let dictionary = try? parser.parseDictionaryFieldValue(), let (label, member) = dictionary.first,
              case .innerList(let list) = member, list.bareInnerList.count <= SignatureParameters.maxComponents else { return nil }
        var components: [ComponentIdentifier] = []
        for item in list.bareInnerList {
            guard let component = try? ComponentIdentifier(item: item), !components.contains(component) else { return nil }
            if component != .contentDigest { components.append(component) }  // added by `sign` with the content
        }
        var tag: String?, keyID: String?
        for (name, parameter) in list.rfc9651Parameters {
            switch (name, parameter) {
            case ("tag", .string(let text)): tag = text
            case ("keyid", .string(let text)):
                guard text == key.id || text == key.thumbprint.description else { return nil }
                keyID = text
            case ("alg", .string(let text)): guard text == key.algorithm.httpSignatureName else { return nil }
            default: continue
            }
        }
        // Never less than the request itself (docs/HTTPSIG.md §5.1's request coverage): a field
        // that asks for less, from whoever wrote it, gets no signature.
        let names = Set(components.map(\.name))
        guard SignatureFields.isLabel(label), names.contains("@method"),
              names.contains("@target-uri") || (names.contains("@authority") && (names.contains("@request-target") || names.isSuperset(of: ["@path", "@query"])))
        else { return nil }
        self.init(key: key, components: components, label: label, tag: tag, keyID: keyID, clock: clock)
    }
}
