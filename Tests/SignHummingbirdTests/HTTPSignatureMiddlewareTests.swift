import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
@_spi(SignCoreTools) import SignCore
import SignHTTP
import SignHTTPSignatures
import SignHummingbird
import Testing

/// RFC 9421 through SignatureMiddleware on a real server (`.live`): routes reading wtokens, RFC
/// 9421 signatures or both (docs/HTTPSIG.md §5.4), one key set and one replay guard; Content-Digest
/// checked on buffered and streamed bodies; a 401 naming what the route accepts.
@Suite struct HTTPSignatureMiddlewareTests {
    static let key = try! SigningKey.generate(.ed25519, id: "agent-1")
    static let origin = ServerOrigin(scheme: "https", authority: "api.example.com")

    static func app() throws -> Application<RouterResponder<BasicSignatureRequestContext>> {
        let verifier = try Verifier(keys: KeySet([try JWK.parseKey(JWK.serialize(key, includePrivate: false))]),
                                    replayGuard: InMemoryReplayGuard(capacity: 10_000))
        let policy = RoutePolicy([
            try .init("/both/**", RouteRequirements.require.reading(.both)),
            try .init("/rfc/**", RouteRequirements.require.reading(.httpSignature)),
            try .init("POST /stream/**", RouteRequirements(signature: .require, body: .streamed()).reading(.httpSignature)),
            try .init("/strict/**", RouteRequirements.require.reading(.httpSignature, policy: HTTPSignaturePolicy(
                requiredComponents: [try .field("content-type")], tag: "app"))),
        ])
        let router = Router(context: BasicSignatureRequestContext.self)
        router.add(middleware: SignatureMiddleware(verifier: SignatureFormatsVerifier(verifier), origin: origin, policy: policy))
        let handler: @Sendable (Request, BasicSignatureRequestContext) async throws -> Response = { request, context in
            var bytes = 0
            for try await chunk in request.body { bytes += chunk.readableBytes }
            let identity = context.signature.map { "\($0.format) \($0.keyID)" } ?? "-"
            return Response(status: .ok, body: ResponseBody(byteBuffer: ByteBuffer(string: "\(identity) \(bytes)")))
        }
        for path in ["/both/x", "/rfc/x", "/wt/x", "/stream/x", "/strict/x"] {
            router.on(RouterPath(stringLiteral: path), method: .get, use: handler)
            router.on(RouterPath(stringLiteral: path), method: .post, use: handler)
        }
        return Application(router: router)
    }

    /// The fields of an RFC 9421 request for `path` (signed at the server's origin).
    static func signed(_ method: HTTPRequest.Method, _ path: String, body: [UInt8] = [], fields: HTTPFields = [:],
                       configure: (inout MessageSigner) -> Void = { _ in }) async throws -> HTTPFields {
        var request = HTTPRequest(method: method, scheme: "https", authority: "api.example.com", path: path, headerFields: fields)
        var signer = MessageSigner(key: key)
        configure(&signer)
        try await signer.sign(&request, body: body)
        return request.headerFields
    }

    static func wtoken(_ method: RequestMethod, _ path: String) throws -> HTTPFields {
        let headers = try Signer(key: key).sign(method: method, url: "https://api.example.com" + path)
        return [HTTPField.Name("whash")!: headers.whash, HTTPField.Name("wtoken")!: headers.wtoken]
    }

    static func code(_ response: TestResponse) -> Int? {
        ((try? JSONSerialization.jsonObject(with: Data(buffer: response.body))) as? [String: Any])?["code"] as? Int
    }

    @Test func eachRouteReadsItsFormats() async throws {
        try await Self.app().test(.live) { client in
            // RFC 9421 where it is read.
            for path in ["/both/x", "/rfc/x"] {
                let response = try await client.execute(uri: path, method: .get, headers: try await Self.signed(.get, path))
                #expect(response.status == .ok && String(buffer: response.body) == "rfc9421 agent-1 0")
            }
            // A wtoken where it is read, and ignored where it is not (then nothing proves the request).
            let wtoken = try await client.execute(uri: "/both/x", method: .get, headers: try Self.wtoken(.get, "/both/x"))
            #expect(String(buffer: wtoken.body) == "wtoken agent-1 0")
            let ignored = try await client.execute(uri: "/rfc/x", method: .get, headers: try Self.wtoken(.get, "/rfc/x"))
            #expect(ignored.status == .unauthorized && Self.code(ignored) == SignCoreError.Code.signatureNotFound.rawValue)
            #expect(ignored.headers[SignatureFields.acceptSignature] == "sig1=(\"@method\" \"@target-uri\");created;nonce;keyid")
            // The default routes read wtokens alone: an RFC 9421 signature there proves nothing.
            let unread = try await client.execute(uri: "/wt/x", method: .get, headers: try await Self.signed(.get, "/wt/x"))
            #expect(unread.status == .unauthorized && Self.code(unread) == SignCoreError.Code.missingHeader.rawValue)
            #expect(unread.headers[SignatureFields.acceptSignature] == nil)
            // Both on one request: refused, whichever would verify.
            var both = try await Self.signed(.get, "/both/x")
            both.append(contentsOf: try Self.wtoken(.get, "/both/x"))
            let mixed = try await client.execute(uri: "/both/x", method: .get, headers: both)
            #expect(mixed.status == .badRequest && Self.code(mixed) == SignCoreError.Code.signatureFormatsMixed.rawValue)
        }
    }

    @Test func replaysAndTamperingAreRefusedWithTheirReasons() async throws {
        try await Self.app().test(.live) { client in
            let fields = try await Self.signed(.get, "/rfc/x")
            #expect(try await client.execute(uri: "/rfc/x", method: .get, headers: fields).status == .ok)
            let replay = try await client.execute(uri: "/rfc/x", method: .get, headers: fields)
            #expect(replay.status == .unauthorized && Self.code(replay) == SignCoreError.Code.replayed.rawValue)
            // Signed for one path, sent to another.
            let moved = try await client.execute(uri: "/both/x", method: .get, headers: try await Self.signed(.get, "/rfc/x"))
            #expect(Self.code(moved) == SignCoreError.Code.badSignature.rawValue)
            // A body under another body's Content-Digest.
            let body = Array("{\"n\":1}".utf8)
            let post = try await Self.signed(.post, "/rfc/x", body: body)
            let tampered = try await client.execute(uri: "/rfc/x", method: .post, headers: post, body: ByteBuffer(string: "{\"n\":2}"))
            #expect(tampered.status == .unauthorized && Self.code(tampered) == SignCoreError.Code.contentDigestMismatch.rawValue)
            let genuine = try await client.execute(uri: "/rfc/x", method: .post, headers: try await Self.signed(.post, "/rfc/x", body: body),
                                                   body: ByteBuffer(bytes: body))
            #expect(String(buffer: genuine.body) == "rfc9421 agent-1 7")
            // A signature over too little, on a route whose policy asks more.
            let bare = try await Self.signed(.get, "/strict/x") { $0.tag = "app" }
            #expect(Self.code(try await client.execute(uri: "/strict/x", method: .get, headers: bare)) == SignCoreError.Code.headerNotCovered.rawValue)
            let typed = try await Self.signed(.get, "/strict/x", fields: [.contentType: "text/plain"]) {
                $0.tag = "app"
                $0.components.append(try! .field("content-type"))
            }
            #expect(try await client.execute(uri: "/strict/x", method: .get, headers: typed).status == .ok)
        }
    }

    /// The README's example, as written there.
    @Test func theReadmeExample() async throws {
        let partnerKey = try SigningKey.generate(.ed25519, id: "partner-1")
        let verifier = try Verifier(keys: KeySet([try JWK.parseKey(JWK.serialize(partnerKey, includePrivate: false))]),
                                    replayGuard: InMemoryReplayGuard(capacity: 1000))
        let origin = ServerOrigin(scheme: "https", authority: "api.example.com")
        let router = Router(context: BasicSignatureRequestContext.self)
        let body = Array("{\"sku\":7}".utf8)
        // README httpsig: begin
        // Server: /partners/** reads RFC 9421, /catalog/** also Web Bot Auth agents; the rest wtokens.
        let policy = try RoutePolicy([
            .init("/partners/**", RouteRequirements.require.reading(.httpSignature)),
            .init("/catalog/**", RouteRequirements.require.reading(.both, policy: .webBotAuth)),
        ])
        router.add(middleware: SignatureMiddleware(verifier: SignatureFormatsVerifier(verifier), origin: origin, policy: policy))

        // Client: sign a swift-http-types request (Content-Digest is added for a body).
        var request = HTTPRequest(method: .post, scheme: "https", authority: "api.example.com", path: "/partners/orders")
        try await MessageSigner(key: partnerKey).sign(&request, body: body)
        // README httpsig: end
        router.post("/partners/orders") { _, context -> String in context.signature.map { "\($0.format) \($0.keyID)" } ?? "-" }
        let signedFields = request.headerFields
        try await Application(router: router).test(.live) { client in
            let response = try await client.execute(uri: "/partners/orders", method: .post, headers: signedFields, body: ByteBuffer(bytes: body))
            #expect(String(buffer: response.body) == "rfc9421 partner-1")
        }
    }

    @Test func aStreamedBodyIsHeldToItsContentDigest() async throws {
        let body = [UInt8](repeating: 0x61, count: 300_000)
        try await Self.app().test(.live) { client in
            let good = try await client.execute(uri: "/stream/x", method: .post,
                                                headers: try await Self.signed(.post, "/stream/x", body: body) { $0.digestAlgorithms = [.sha512] },
                                                body: ByteBuffer(bytes: body))
            #expect(String(buffer: good.body) == "rfc9421 agent-1 300000")
            var other = body
            other[299_999] = 0x62
            let bad = try await client.execute(uri: "/stream/x", method: .post, headers: try await Self.signed(.post, "/stream/x", body: body),
                                               body: ByteBuffer(bytes: other))
            // The handler read all but the held last chunk, then the body failed: the refusal's code.
            #expect(bad.status == .unauthorized && Self.code(bad) == SignCoreError.Code.contentDigestMismatch.rawValue)
            // A Content-Digest of nothing this server checks: refused before the body is read.
            var unsupported = try await Self.signed(.post, "/stream/x", body: body)
            unsupported[ContentDigest.field] = "md5=:AAAAAAAAAAAAAAAAAAAAAA==:"
            let refused = try await client.execute(uri: "/stream/x", method: .post, headers: unsupported, body: ByteBuffer(bytes: body))
            #expect(refused.status == .badRequest && Self.code(refused) == SignCoreError.Code.contentDigestUnsupported.rawValue)
        }
    }
}
