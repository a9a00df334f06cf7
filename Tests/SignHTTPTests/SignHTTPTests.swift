import Foundation
import HTTPTypes
import SignCore
@testable import SignHTTP
import Testing

@Suite struct SignHTTPTests {
    static let key = try! SigningKey.hmac(secret: (0..<32).map { UInt8($0) }, id: "http-test")
    static let origin = ServerOrigin(scheme: "https")

    func verifier() throws -> Verifier {
        try Verifier(keys: KeySet([Self.key]), replayGuard: InMemoryReplayGuard(capacity: 10_000, maxShare: 1))
    }

    func request(_ method: HTTPRequest.Method = .get, path: String = "/v1/orders?id=42&sort=desc",
                 authority: String? = "api.example.com") -> HTTPRequest {
        var request = HTTPRequest(method: method, scheme: "https", authority: authority, path: path)
        request.headerFields[.contentType] = "application/json"
        request.headerFields[HTTPField.Name("x-tenant")!] = "acme"
        return request
    }

    /// What a server would see: the same fields and authority, no scheme.
    func received(_ request: HTTPRequest) -> HTTPRequest {
        var copy = request
        copy.scheme = nil  // a server never learns the scheme from the request
        return copy
    }

    func code(_ body: () async throws -> Void) async -> SignCoreError.Code? {
        do { try await body() } catch let error as SignCoreError { return error.code } catch { return nil }
        return nil
    }

    @Test func signedHTTPRequestVerifies() async throws {
        let signer = try Signer(key: Self.key, coveredHeaders: ["content-type", "x-tenant"])
        var outgoing = request(.post, path: "/v1/orders")
        let body = Array(#"{"item":1}"#.utf8)
        try signer.sign(&outgoing, body: body)
        #expect(outgoing.headerFields[HTTPField.Name("whash")!] != nil && outgoing.headerFields[HTTPField.Name("wtoken")!] != nil)
        let verified = try await verifier().verify(ReceivedRequest(received(outgoing), body: .bytes(body), origin: Self.origin))
        #expect(verified.keyID == "http-test" && verified.coveredHeaders == ["content-type", "x-tenant"])
        // The same with the authority fixed by the server's configuration.
        let fixed = ServerOrigin(scheme: "https", authority: "api.example.com")
        var noAuthority = received(outgoing)
        noAuthority.authority = nil
        _ = try await verifier().verify(ReceivedRequest(noAuthority, body: .bytes(body), origin: fixed))
    }

    /// Every part a token binds, changed between signer and server, is refused.
    @Test func tamperingIsRefused() async throws {
        let signer = try Signer(key: Self.key, coveredHeaders: ["content-type", "x-tenant"])
        var outgoing = request()
        try signer.sign(&outgoing)
        var otherPath = received(outgoing); otherPath.path = "/v1/orders?id=43&sort=desc"
        var otherTenant = received(outgoing); otherTenant.headerFields[HTTPField.Name("x-tenant")!] = "globex"
        var otherHost = received(outgoing); otherHost.authority = "evil.example.com"
        var otherMethod = received(outgoing); otherMethod.method = .delete
        // (A GET's whash hashes its method and URL, so those changes fail at the whash, step 6.)
        for (tampered, expected) in [(otherPath, SignCoreError.Code.whashMismatch), (otherTenant, .badSignature),
                                     (otherHost, .whashMismatch), (otherMethod, .whashMismatch)] {
            let verifier = try verifier()
            #expect(await code { _ = try await verifier.verify(ReceivedRequest(tampered, origin: Self.origin)) } == expected)
        }
        // The scheme is the server's: a token for https refused by a server reached over http.
        let plain = try verifier()
        #expect(await code { _ = try await plain.verify(ReceivedRequest(received(outgoing), origin: ServerOrigin(scheme: "http"))) } == .whashMismatch)
        // A fixed authority wins over what the request says.
        let fixed = try verifier()
        #expect(await code {
            _ = try await fixed.verify(ReceivedRequest(received(outgoing), origin: ServerOrigin(scheme: "https", authority: "other.example.com")))
        } == .whashMismatch)
        // A POST's whash hashes its body: another body fails there, another URL at the target.
        var post = request(.post, path: "/v1/orders")
        let body = Array("{}".utf8)
        try signer.sign(&post, body: body)
        var postElsewhere = received(post); postElsewhere.path = "/v1/refunds"
        #expect(await code { _ = try await verifier().verify(ReceivedRequest(postElsewhere, body: .bytes(body), origin: Self.origin)) } == .targetMismatch)
        #expect(await code { _ = try await verifier().verify(ReceivedRequest(received(post), body: .bytes(Array("[]".utf8)), origin: Self.origin)) } == .whashMismatch)
        // Replayed over HTTP as well.
        let once = try verifier()
        _ = try await once.verify(ReceivedRequest(received(outgoing), origin: Self.origin))
        #expect(await code { _ = try await once.verify(ReceivedRequest(received(outgoing), origin: Self.origin)) } == .replayed)
    }

    /// A body hashed as it streamed (its whash only) signs the same request as the whole body.
    @Test func streamedBodiesSignByTheirWHash() async throws {
        let signer = try Signer(key: Self.key, coveredHeaders: ["content-type"])
        let body = Array(repeating: UInt8(ascii: "x"), count: 100_000)
        var hasher = WHash.BodyHasher()
        for start in stride(from: 0, to: body.count, by: 4096) {
            try body[start..<min(start + 4096, body.count)].withUnsafeBytes { try hasher.append($0) }
        }
        var outgoing = request(.put, path: "/v1/blobs/7")
        try signer.sign(&outgoing, bodyWHash: hasher.finalize())
        _ = try await verifier().verify(ReceivedRequest(received(outgoing), body: .bytes(body), origin: Self.origin))
        var other = body
        other[50_000] = UInt8(ascii: "y")
        #expect(await code { _ = try await verifier().verify(ReceivedRequest(received(outgoing), body: .bytes(other), origin: Self.origin)) } == .whashMismatch)
        // Without a scheme nothing is signed, whichever way the body comes.
        var noScheme = request(.put, path: "/v1/blobs/7")
        noScheme.scheme = nil
        #expect(await code { try signer.sign(&noScheme, bodyWHash: hasher.finalize()) } == .invalidURL)
    }

    @Test func requestsSignedAgainGetFreshTokens() throws {
        let signer = try Signer(key: Self.key)
        var outgoing = request()
        try signer.sign(&outgoing)
        let first = outgoing.headerFields[HTTPField.Name("wtoken")!]
        try signer.sign(&outgoing)  // a retry: the old fields replaced, not added to
        #expect(outgoing.headerFields[values: HTTPField.Name("wtoken")!].count == 1)
        #expect(outgoing.headerFields[HTTPField.Name("wtoken")!] != first)
    }

    @Test func malformedHTTPRequestsAreRefused() async throws {
        let signer = try Signer(key: Self.key)
        var noScheme = request(); noScheme.scheme = nil
        #expect(await code { try signer.sign(&noScheme) } == .invalidURL)
        var noAuthority = request(authority: nil)
        noAuthority.scheme = "https"
        #expect(await code { try signer.sign(&noAuthority) } == .invalidURL)
        #expect(await code { _ = try ReceivedRequest(request(authority: nil), origin: Self.origin) } == .invalidURL)
        #expect(await code { _ = try ReceivedRequest(request(.options, path: "*"), origin: Self.origin) } == .invalidURL)
        // Two tokens are never one.
        var outgoing = request()
        try signer.sign(&outgoing)
        var doubled = received(outgoing)
        doubled.headerFields.append(HTTPField(name: HTTPField.Name("wtoken")!, value: outgoing.headerFields[HTTPField.Name("wtoken")!]!))
        #expect(await code { _ = try ReceivedRequest(doubled, origin: Self.origin) } == .invalidHeader)
    }

    @Test func headerNamesAreConfigurable() async throws {
        let names = SignHeaderNames(whash: HTTPField.Name("x-content-hash")!, wtoken: HTTPField.Name("x-request-token")!)
        let signer = try Signer(key: Self.key)
        var outgoing = request()
        try signer.sign(&outgoing, names: names)
        #expect(outgoing.headerFields[HTTPField.Name("wtoken")!] == nil && outgoing.headerFields[names.wtoken] != nil)
        _ = try await verifier().verify(ReceivedRequest(received(outgoing), origin: Self.origin, names: names))
        #expect(await code { _ = try await verifier().verify(ReceivedRequest(received(outgoing), origin: Self.origin)) } == .missingHeader)
    }

    /// Every code maps to its status, a problem document that parses, and the header fields
    /// RFC 9110 and 9457 ask for; nothing of the request is in it.
    @Test(arguments: SignCoreError.Code.allCases)
    func everyRefusalHasItsResponse(_ code: SignCoreError.Code) throws {
        let error = SignCoreError(code, "a fixed sentence", keyID: code == .unknownKey ? "k1" : nil)
        let refusal = Refusal(error, retryAfter: 2)
        let status = refusal.response.status
        #expect(status == Refusal.status(for: code))
        let document = try #require(try JSONSerialization.jsonObject(with: Data(refusal.body)) as? [String: Any])
        #expect(document["status"] as? Int == status.code)
        #expect(document["code"] as? Int == code.rawValue)
        #expect(document["name"] as? String == code.name)
        #expect(document["advice"] as? String == code.advice.rawValue)
        #expect(document["type"] as? String == "about:blank")
        #expect(document["title"] as? String == status.reasonPhrase)
        #expect((document["keyID"] as? String) == (code == .unknownKey ? "k1" : nil))
        let fields = refusal.response.headerFields
        #expect(fields[.contentType] == "application/problem+json")
        #expect(fields[Refusal.errorField] == "\(code.name);code=\(code.rawValue);advice=\(code.advice.rawValue)")
        #expect((fields[.retryAfter] == "2") == (status == .serviceUnavailable))
        #expect((fields[.wwwAuthenticate] != nil) == (status == .unauthorized))
        let expected: Int = switch code.advice {
        case .reSign, .refreshKeys, .resyncClock, .updateClient: 401
        case .retryLater: [.cryptoFailure: 500, .upstreamFailed: 502, .upstreamTimeout: 504][code] ?? 503
        case .fixRequest: code == .bodyTooLarge ? 413 : 400
        case .fixConfiguration: code == .lifetimeTooLong ? 401 : 500
        default: 0
        }
        #expect(status.code == (code == .headerTooLarge ? 431 : expected), "\(code.name)")
    }

    /// A refusal made from a real failed verify carries only the fixed sentence.
    @Test func refusalsCarryNothingOfTheRequest() async throws {
        let signer = try Signer(key: Self.key)
        var outgoing = request(path: "/secret-path?token=hunter2")
        try signer.sign(&outgoing)
        var tampered = received(outgoing)
        tampered.path = "/secret-path?token=hunter3"
        do {
            _ = try await verifier().verify(ReceivedRequest(tampered, origin: Self.origin))
            Issue.record("a tampered request was accepted")
        } catch let error as SignCoreError {
            let text = String(decoding: Refusal(error).body, as: UTF8.self)
            for secret in ["hunter", "secret-path", "api.example.com", outgoing.headerFields[HTTPField.Name("wtoken")!]!] {
                #expect(!text.contains(secret))
            }
        }
    }


    /// The README's SignHTTP example, as printed there (between the set-up and the checks).
    @Test func readmeExampleRuns() async throws {
        let key = Self.key
        let verifier = try verifier()
        var sent: HTTPRequest?
        // README: begin
        // Client: sign the request in place, and again for every attempt (a retry needs a fresh nonce).
        let signer = try Signer(key: key, coveredHeaders: ["content-type"])
        var request = HTTPRequest(method: .post, scheme: "https", authority: "api.example.com", path: "/v1/orders")
        request.headerFields[.contentType] = "application/json"
        let body = Array(#"{"item":1}"#.utf8)
        try signer.sign(&request, body: body)
        // README: end
        sent = request
        let received = self.received(try #require(sent))
        var refused: Refusal?
        // README: begin
        // Server: the URL from the server's own scheme (never from a client's header), the request's
        // authority unless the server fixes it, and the path; then the shared refusal on failure.
        let origin = ServerOrigin(scheme: "https")   // or ServerOrigin(scheme: "https", authority: "api.example.com")
        do {
            let verified = try await verifier.verify(ReceivedRequest(received, body: .bytes(body), origin: origin))
            print(verified.keyID, verified.account)
        } catch {                                     // typed: a SignCoreError
            let refusal = Refusal(error)             // refusal.response (status and fields), refusal.body
            refused = refusal
        }
        // README: end
        #expect(refused == nil)
    }
}
