import Foundation
import HTTPTypes
@_spi(SignCoreTools) import SignCore
import SignHTTP
@testable import SignHTTPSignatures
import Testing

/// The verifier's policy (docs/HTTPSIG.md §5): each check, in order, with the code it refuses
/// with, over requests our signer made (and then changed the way an attacker would).
@Suite struct MessageSignatureVerifierTests {
    static let now: Int64 = 1_790_000_000
    static let origin = ServerOrigin(scheme: "https")

    struct Setup {
        let keys: [SigningKey]
        let verifier: Verifier

        init(skew: Int64 = 30) throws {
            keys = [try SigningKey.generate(.hmacSHA256, id: "hmac-1"), try SigningKey.generate(.ed25519, id: "ed-1"),
                    try SigningKey.generate(.p256, id: "p256-1")]
            let publicKeys = try keys.map { key in key.algorithm == .hmacSHA256 ? key : try JWK.parseKey(JWK.serialize(key, includePrivate: false)) }
            verifier = try Verifier(keys: KeySet(publicKeys), replayGuard: InMemoryReplayGuard(capacity: 10_000), skew: skew,
                                    clock: { MessageSignatureVerifierTests.now })
        }

        func checker(_ policy: HTTPSignaturePolicy = HTTPSignaturePolicy()) -> MessageSignatureVerifier {
            MessageSignatureVerifier(verifier, policy: policy)
        }
    }

    static func request(_ method: HTTPRequest.Method = .get, path: String = "/api/items?b=2&a=1", fields: HTTPFields = [:]) -> HTTPRequest {
        HTTPRequest(method: method, scheme: "https", authority: "api.example.com", path: path, headerFields: fields)
    }

    static func signed(_ key: SigningKey, _ method: HTTPRequest.Method = .get, body: [UInt8] = [], at created: Int64 = now,
                       configure: (inout MessageSigner) -> Void = { _ in }) async throws -> HTTPRequest {
        var signer = MessageSigner(key: key, clock: { created })
        configure(&signer)
        var request = request(method)
        try await signer.sign(&request, body: body)
        return request
    }

    static func verify(_ checker: MessageSignatureVerifier, _ request: HTTPRequest, body: [UInt8] = []) async throws(SignCoreError) -> VerifiedIdentity {
        let digested: Result<ContentDigest, SignCoreError> = body.withUnsafeBytes { bytes in
            Result { () throws(SignCoreError) in try checker.digest(ofBody: bytes, for: request) }
        }
        let digest = try digested.get()
        return try await checker.verify(request, bodyDigest: digest, origin: origin)
    }

    static func refusal(_ checker: MessageSignatureVerifier, _ request: HTTPRequest, body: [UInt8] = []) async -> SignCoreError.Code? {
        do {
            _ = try await verify(checker, request, body: body)
            return nil
        } catch { return error.code }
    }

    /// The code `body` throws, nil when it throws nothing.
    static func code(_ body: () throws -> Any) -> SignCoreError.Code? {
        do {
            _ = try body()
            return nil
        } catch let error as SignCoreError { return error.code } catch { return nil }
    }

    @Test func eachAlgorithmSignsAndVerifiesAGetAndAPost() async throws {
        let setup = try Setup()
        for key in setup.keys {
            let get = try await Self.signed(key)
            let identity = try await Self.verify(setup.checker(), get)
            #expect(identity.keyID == key.id && identity.algorithm == key.algorithm && identity.format == "rfc9421")
            #expect(identity.coveredHeaders == [])  // fields only: nothing but derived components here
            let body = Array("{\"amount\":10}".utf8)
            let post = try await Self.signed(key, .post, body: body)
            #expect(post.headerFields[ContentDigest.field] == ContentDigest.of(body).fieldValue)
            _ = try await Self.verify(setup.checker(), post, body: body)
            // The same request again: its nonce is spent.
            #expect(await Self.refusal(setup.checker(), post, body: body) == .replayed)
            // Another body under the same signature.
            let again = try await Self.signed(key, .post, body: body)
            #expect(await Self.refusal(setup.checker(), again, body: Array("{\"amount\":99}".utf8)) == .contentDigestMismatch)
        }
    }

    @Test func theSignatureBindsMethodTargetAuthorityAndCoveredFields() async throws {
        let setup = try Setup()
        let key = setup.keys[1]
        var request = try await Self.signed(key)
        request.path = "/api/items?b=2&a=2"
        #expect(await Self.refusal(setup.checker(), request) == .badSignature)
        request = try await Self.signed(key)
        request.authority = "evil.example.com"
        #expect(await Self.refusal(setup.checker(), request) == .badSignature)
        request = try await Self.signed(key)
        request.method = .delete
        #expect(await Self.refusal(setup.checker(), request) == .badSignature)
        // A server whose origin is another scheme (the signature names https).
        request = try await Self.signed(key)
        let digest = try setup.checker().digest(ofBody: UnsafeRawBufferPointer(start: nil, count: 0), for: request)
        do {
            _ = try await setup.checker().verify(request, bodyDigest: digest, origin: ServerOrigin(scheme: "http"))
            Issue.record("verified for another scheme")
        } catch { #expect(error.code == .badSignature) }
        // A covered field that is not there is not signed; one changed does not verify, one removed is missing.
        await #expect(throws: SignCoreError.self) { _ = try await Self.signed(key) { $0.components.append(try! .field("x-account")) } }
        var withField = Self.request(fields: [HTTPField.Name("x-account")!: "alice"])
        try await MessageSigner(key: key, components: [.method, .targetURI, try .field("x-account")], clock: { Self.now }).sign(&withField)
        _ = try await Self.verify(setup.checker(), withField)
        withField.headerFields[HTTPField.Name("x-account")!] = "mallory"
        #expect(await Self.refusal(setup.checker(), withField) == .badSignature)
        withField.headerFields[HTTPField.Name("x-account")!] = nil
        #expect(await Self.refusal(setup.checker(), withField) == .componentMissing)
    }

    @Test func aSignatureOverTooLittleNeverPasses() async throws {
        let setup = try Setup()
        let key = setup.keys[0]
        for components: [ComponentIdentifier] in [[], [.method], [.targetURI], [.authority, .path], [.method, .authority, .path],
                                                   [.method, .path, .query]] {
            let request = try await Self.signed(key) { $0.components = components }
            #expect(await Self.refusal(setup.checker(), request) == .headerNotCovered, "\(components)")
        }
        for components: [ComponentIdentifier] in [[.method, .authority, .requestTarget], [.method, .authority, .path, .query]] {
            _ = try await Self.verify(setup.checker(), try await Self.signed(key) { $0.components = components })
        }
        // Content without content-digest covered: the signer adds it, so strip it from the input.
        let body = Array("x".utf8)
        var request = Self.request(.post)
        request.headerFields[ContentDigest.field] = ContentDigest.of(body).fieldValue
        try await MessageSigner(key: key, clock: { Self.now }).fieldsOnly(&request)
        #expect(await Self.refusal(setup.checker(), request, body: body) == .headerNotCovered)
        // A route's own required component.
        let policy = HTTPSignaturePolicy(requiredComponents: [try .field("content-type")])
        #expect(await Self.refusal(setup.checker(policy), try await Self.signed(key)) == .headerNotCovered)
    }

    @Test func theAlgorithmIsAlwaysTheKeys() async throws {
        let setup = try Setup()
        // An ed25519 key named with another algorithm: refused before anything is computed.
        let request = try await Self.signed(setup.keys[1])
        var forged = request
        let input = try #require(request.headerFields[SignatureFields.signatureInput])
        forged.headerFields[SignatureFields.signatureInput] = input.replacingOccurrences(of: "alg=\"ed25519\"", with: "alg=\"hmac-sha256\"")
        #expect(await Self.refusal(setup.checker(), forged) == .algorithmMismatch)
        forged.headerFields[SignatureFields.signatureInput] = input.replacingOccurrences(of: "alg=\"ed25519\"", with: "alg=\"rsa-pss-sha512\"")
        #expect(await Self.refusal(setup.checker(), forged) == .signatureAlgorithmUnsupported)
        forged.headerFields[SignatureFields.signatureInput] = input.replacingOccurrences(of: "keyid=\"ed-1\"", with: "keyid=\"nobody\"")
        #expect(await Self.refusal(setup.checker(), forged) == .unknownKey)
        // Without alg, the key's algorithm is used and the signature still verifies.
        let bare = try await Self.signed(setup.keys[2]) { _ in }
        _ = try await Self.verify(setup.checker(), bare)
    }

    @Test func timeNonceAndCreatedFollowThePolicy() async throws {
        let setup = try Setup()
        let key = setup.keys[1]
        #expect(await Self.refusal(setup.checker(), try await Self.signed(key, at: Self.now - 301)) == .expired)
        _ = try await Self.verify(setup.checker(), try await Self.signed(key, at: Self.now - 300))
        #expect(await Self.refusal(setup.checker(), try await Self.signed(key, at: Self.now + 31)) == .notYetValid)
        _ = try await Self.verify(setup.checker(), try await Self.signed(key, at: Self.now + 30))
        #expect(await Self.refusal(setup.checker(HTTPSignaturePolicy(maxAge: 60)), try await Self.signed(key, at: Self.now - 61)) == .expired)
        // Nothing past expires, whatever the age allows.
        #expect(await Self.refusal(setup.checker(), try await Self.signed(key, at: Self.now - 10) { $0.lifetime = 9 }) == .expired)
        _ = try await Self.verify(setup.checker(), try await Self.signed(key, at: Self.now - 10) { $0.lifetime = 10 })
        // No nonce: refused by default, accepted (and not recorded) where the route opts in.
        let noNonce = try await Self.signed(key) { $0.nonce = false }
        #expect(await Self.refusal(setup.checker(), noNonce) == .signatureNonceMissing)
        _ = try await Self.verify(setup.checker(HTTPSignaturePolicy(nonce: .optional)), noNonce)
        _ = try await Self.verify(setup.checker(HTTPSignaturePolicy(nonce: .optional)), noNonce)
        // No created.
        var request = try await Self.signed(key)
        let input = try #require(request.headerFields[SignatureFields.signatureInput])
        request.headerFields[SignatureFields.signatureInput] = input.replacingOccurrences(of: "created=\(Self.now);", with: "")
        #expect(await Self.refusal(setup.checker(), request) == .signatureCreatedMissing)
    }

    @Test func theLabelOrTagChoosesTheSignatureAndTheOthersAreIgnored() async throws {
        let setup = try Setup()
        var request = Self.request()
        // A signature by an unknown key first, then a good one tagged for the route.
        let stranger = try SigningKey.generate(.ed25519, id: "stranger")
        try await MessageSigner(key: stranger, label: "other", clock: { Self.now }).sign(&request)
        try await MessageSigner(key: setup.keys[1], label: "mine", tag: "app-1", clock: { Self.now }).sign(&request)
        #expect(await Self.refusal(setup.checker(), request) == .unknownKey)  // the first, when nothing selects
        #expect(try await Self.verify(setup.checker(HTTPSignaturePolicy(tag: "app-1")), request).keyID == "ed-1")
        var fresh = Self.request()
        try await MessageSigner(key: stranger, label: "other", clock: { Self.now }).sign(&fresh)
        try await MessageSigner(key: setup.keys[1], label: "mine", clock: { Self.now }).sign(&fresh)
        #expect(try await Self.verify(setup.checker(HTTPSignaturePolicy(label: "mine")), fresh).keyID == "ed-1")
        #expect(await Self.refusal(setup.checker(HTTPSignaturePolicy(label: "absent")), fresh) == .signatureNotFound)
        #expect(await Self.refusal(setup.checker(HTTPSignaturePolicy(tag: "web-bot-auth")), fresh) == .signatureNotFound)
    }

    @Test func malformedFieldsGetTheirOwnCodes() async throws {
        let setup = try Setup()
        let good = try await Self.signed(setup.keys[0])
        let cases: [(String?, String?, SignCoreError.Code)] = [
            (nil, nil, .signatureNotFound),
            ("sig1=(", nil, .signatureFieldsMalformed),
            ("sig1=\"@method\"", nil, .signatureFieldsMalformed),
            ("sig1=(\"@method\" \"@method\");created=1", nil, .componentInvalid),
            ("sig1=(\"@nonsense\");created=1", nil, .componentInvalid),
            ("sig1=(\"Content-Type\");created=1", nil, .componentInvalid),
            ("sig1=(\"@method\";sf);created=1", nil, .componentInvalid),
            ("sig1=(\"x-a\";bs;sf);created=1", nil, .componentInvalid),
            ("sig1=(\"@query-param\");created=1", nil, .componentInvalid),
            ("sig1=(\"@method\");created=\"1\"", nil, .signatureFieldsMalformed),
            ("sig1=(\"@method\");created=-1", nil, .signatureFieldsMalformed),
            (nil, "sig1=:AAAA:", .signatureFieldsMalformed),
            (nil, "sig1=\"text\"", .signatureFieldsMalformed),
            (nil, "other=:AAAA:", .signatureFieldsMalformed),
        ]
        for (input, signature, code) in cases {
            var request = good
            if input != nil || signature == nil { request.headerFields[SignatureFields.signatureInput] = input }
            if let signature { request.headerFields[SignatureFields.signature] = signature }
            if signature == nil, input == nil { request.headerFields[SignatureFields.signature] = nil }
            let got = await Self.refusal(setup.checker(), request)
            if signature == "sig1=:AAAA:" { #expect(got == .badSignature || got == code); continue }
            #expect(got == code, "\(input ?? "-") \(signature ?? "-")")
        }
        // Over the limits.
        var huge = good
        huge.headerFields[SignatureFields.signatureInput] = (0..<9).map { "s\($0)=(\"@method\");created=1" }.joined(separator: ", ")
        #expect(await Self.refusal(setup.checker(), huge) == .signatureFieldsMalformed)
        huge.headerFields[SignatureFields.signatureInput] = "s=(" + (0..<33).map { "\"x-\($0)\"" }.joined(separator: " ") + ")"
        #expect(await Self.refusal(setup.checker(), huge) == .signatureFieldsMalformed)
        // Content-Digest listing nothing checked, or a member of the wrong length.
        var digest = try await Self.signed(setup.keys[0], .post, body: [1])
        digest.headerFields[ContentDigest.field] = "md5=:AAAAAAAAAAAAAAAAAAAAAA==:"
        #expect(await Self.refusal(setup.checker(), digest, body: [1]) == .contentDigestUnsupported)
        digest.headerFields[ContentDigest.field] = "sha-256=:AAAA:"
        #expect(await Self.refusal(setup.checker(), digest, body: [1]) == .contentDigestUnsupported)
    }

    @Test func aRefusalNamesWhatTheRouteAccepts() throws {
        let setup = try Setup()
        let fields = setup.checker().refusalFields(for: SignCoreError(.badSignature, ""), request: Self.request(.post))
        #expect(fields[SignatureFields.acceptSignature] == "sig1=(\"@method\" \"@target-uri\" \"content-digest\");created;nonce;keyid")
        let agent = setup.checker(.webBotAuth).refusalFields(for: SignCoreError(.expired, ""), request: Self.request())
        #expect(agent[SignatureFields.acceptSignature] == "sig1=(\"@authority\");created;keyid;tag=\"web-bot-auth\"")
        #expect(setup.checker().refusalFields(for: SignCoreError(.invalidURL, ""), request: Self.request()).isEmpty)
    }

    /// A client reads a 401's `Accept-Signature` and signs as it asks; the route then accepts.
    @Test func aSignerAnswersAcceptSignature() async throws {
        let setup = try Setup()
        let key = setup.keys[1]
        let policy = HTTPSignaturePolicy(requiredComponents: [try .field("content-type")], label: "app", tag: "checkout")
        let checker = setup.checker(policy)
        var first = Self.request(.post, fields: [.contentType: "application/json"])
        try await MessageSigner(key: key, clock: { Self.now }).sign(&first, body: [1, 2])
        #expect(await Self.refusal(checker, first, body: [1, 2]) == .signatureNotFound)
        let refusal = HTTPResponse(status: .unauthorized, headerFields: checker.refusalFields(for: SignCoreError(.signatureNotFound, ""), request: first))
        #expect(refusal.headerFields[SignatureFields.acceptSignature]
                == "app=(\"@method\" \"@target-uri\" \"content-digest\" \"content-type\");created;nonce;keyid;tag=\"checkout\"")
        let answering = MessageSigner(key: key, accepting: refusal, clock: { Self.now })
        let signer = try #require(answering)
        var second = Self.request(.post, fields: [.contentType: "application/json"])
        try await signer.sign(&second, body: [1, 2])
        #expect(try await Self.verify(checker, second, body: [1, 2]).coveredHeaders == ["content-type", "content-digest"])
        // A field asking for another key or algorithm, or none: no signer.
        for value in ["sig1=(\"@method\" \"@target-uri\");keyid=\"someone-else\"", "sig1=();created;keyid", "sig1=(\"@authority\");tag=\"web-bot-auth\"", "sig1=(\"@method\" \"@target-uri\");alg=\"rsa-pss-sha512\"", "sig1=\"x\"", "("] {
            #expect(MessageSigner(key: key, accepting: HTTPResponse(status: .unauthorized, headerFields: [SignatureFields.acceptSignature: value])) == nil)
        }
        #expect(MessageSigner(key: key, accepting: HTTPResponse(status: .unauthorized)) == nil)
    }

    /// docs/HTTPSIG.md §3.3: no input is both a SignCore signing input and a signature base, so
    /// the same key's signatures never cross formats.
    @Test func theFormatsAreDomainSeparated() throws {
        let key = try SigningKey.generate(.ed25519, id: "k")
        let message = try key.messageSigningInput([1, 2, 3], context: "test")
        #expect(Self.code { try key.signSignatureBase(message) } == .invalidInput)
        #expect(!key.isValidSignature(try key.signMessage([1, 2, 3], context: "test"), forBase: message))
        // A base is refused as anything else's input: it never starts with "SignCore/3 ".
        let base = Array("\"@method\": GET\n\"@signature-params\": (\"@method\");created=1".utf8)
        let signature = try key.signSignatureBase(base)
        #expect(key.isValidSignature(signature, forBase: base))
        #expect(Self.code { try key.signSignatureBase(Array("\"@method\": GET".utf8)) } == .invalidInput)
        #expect(Self.code { try key.signSignatureBase(Array("SignCore/3 x\n\"@signature-params\": ()".utf8)) } == .invalidInput)
    }
}

extension MessageSigner {
    /// Only the signature fields over the components set, without adding Content-Digest (a
    /// careless signer's request, for the coverage check).
    func fieldsOnly(_ request: inout HTTPRequest) async throws(SignCoreError) {
        let message = MessageComponents(request: try MessageComponents.RequestParts(signing: request))
        let (input, signature) = try await fields(components, message: message)
        request.headerFields.append(HTTPField(name: SignatureFields.signatureInput, value: input))
        request.headerFields.append(HTTPField(name: SignatureFields.signature, value: signature))
    }
}
