import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import InMemoryLogging
import Logging
import MetricsTestKit
@_spi(SignCoreTools) import SignCore
import SignHTTP
import SignHummingbird
import Testing

/// SignatureMiddleware on a real Hummingbird server on loopback (`.live`), requests sent over
/// TCP by HummingbirdTesting's client.
@Suite struct SignatureMiddlewareTests {
    static let key = try! SigningKey.hmac(secret: (0..<32).map { UInt8($0 &* 7) }, id: "mw-test")
    static let origin = ServerOrigin(scheme: "https", authority: "api.example.com")

    struct Server {
        let app: Application<RouterResponder<BasicSignatureRequestContext>>
        let logs: InMemoryLogHandler
        let metrics: TestMetrics
        let seen: Seen
    }

    /// What handlers saw: identities and body byte counts.
    final class Seen: Sendable {
        let state = Locked<[String]>([])
        let verdictState = Locked<[SignatureVerdict]>([])
        func add(_ line: String) { state.withLock { $0.append(line) } }
        var lines: [String] { state.withLock { $0 } }
        var verdicts: [SignatureVerdict] { verdictState.withLock { $0 } }
    }

    static func server(policy: RoutePolicy = .requireAll, body: BodyHandling = .buffered(), replayGuard: (any ReplayGuard)? = nil,
                       clock: @escaping @Sendable () -> Int64 = SystemClock.seconds) throws -> Server {
        let verifier = try Verifier(keys: KeySet([key]), replayGuard: replayGuard ?? InMemoryReplayGuard(capacity: 100_000, maxShare: 1),
                                    clock: clock)
        let logs = InMemoryLogHandler()
        let metrics = TestMetrics()
        let seen = Seen()
        let router = Router(context: BasicSignatureRequestContext.self)
        router.add(middleware: SignatureMiddleware(verifier: verifier, origin: origin, policy: policy, body: body, metricsFactory: metrics))
        let handler: @Sendable (Request, BasicSignatureRequestContext) async throws -> Response = { request, context in
            seen.verdictState.withLock { $0.append(context.signCore.verdict) }
            var bytes = 0
            do {
                for try await chunk in request.body { bytes += chunk.readableBytes }
            } catch {
                seen.add("body failed after \(bytes)")
                throw error
            }
            seen.add("\(context.signature?.keyID ?? "-") \(context.signature?.account ?? "-") \(bytes)")
            return Response(status: .ok, body: ResponseBody(byteBuffer: ByteBuffer(string: context.signature?.keyID ?? "unsigned")))
        }
        for path in ["/v1/orders", "/public/info", "/upload"] {
            router.on(RouterPath(stringLiteral: path), method: .get, use: handler)
            router.on(RouterPath(stringLiteral: path), method: .post, use: handler)
            router.on(RouterPath(stringLiteral: path), method: .put, use: handler)
        }
        var logger = Logger(label: "test", factory: { _ in logs })
        logger.logLevel = .debug
        return Server(app: Application(router: router, logger: logger), logs: logs, metrics: metrics, seen: seen)
    }

    /// Header fields of a request signed for `https://api.example.com` + `path`.
    static func signed(_ method: RequestMethod, _ path: String, body: [UInt8] = [], signer: Signer? = nil,
                       url: String? = nil) throws -> HTTPFields {
        let signer = try signer ?? Signer(key: key, account: "acct-1")
        let headers = try signer.sign(method: method, url: url ?? "https://api.example.com" + path, body: body)
        return [HTTPField.Name("whash")!: headers.whash, HTTPField.Name("wtoken")!: headers.wtoken]
    }

    static func problem(_ response: TestResponse) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(buffer: response.body)) as? [String: Any]) ?? [:]
    }

    @Test func signedRequestsReachTheHandlerWithTheirIdentity() async throws {
        let server = try Self.server()
        try await server.app.test(.live) { client in
            let get = try await client.execute(uri: "/v1/orders?id=1", method: .get, headers: Self.signed(.get, "/v1/orders?id=1"))
            #expect(get.status == .ok && String(buffer: get.body) == "mw-test")
            let body = Array("{\"item\":1}".utf8)
            let post = try await client.execute(uri: "/v1/orders", method: .post, headers: Self.signed(.post, "/v1/orders", body: body),
                                                body: ByteBuffer(bytes: body))
            #expect(post.status == .ok)
        }
        #expect(server.seen.lines == ["mw-test acct-1 0", "mw-test acct-1 10"])
        #expect(try server.metrics.expectCounter("signcore_verifications_total", [("verdict", "accepted"), ("code", "none")]).totalValue == 2)
        #expect(try server.metrics.expectTimer("signcore_verify_duration").values.count == 2)
    }

    /// Each refusal the middleware can meet, end to end: status, signcore-error field, problem document.
    @Test func refusalsCarryTheirCodeStatusAndProblem() async throws {
        let now = SystemClock.seconds()
        let server = try Self.server(body: .buffered(limit: 64))
        let body = Array("{\"item\":1}".utf8)
        let replayed = try Self.signed(.get, "/v1/orders")
        var doubled = try Self.signed(.get, "/v1/orders")
        doubled.append(HTTPField(name: HTTPField.Name("wtoken")!, value: doubled[HTTPField.Name("wtoken")!]!))
        var uncovered = try Self.signed(.get, "/v1/orders", signer: Signer(key: Self.key, coveredHeaders: ["x-tenant"]))
        uncovered[HTTPField.Name("x-tenant")!] = "globex"
        let other = try SigningKey.hmac(secret: Array(repeating: 9, count: 32), id: "mw-other")
        let forged = try Self.signed(.get, "/v1/orders", signer: Signer(key: SigningKey.hmac(secret: Array(repeating: 1, count: 32), id: "mw-test")))
        let cases: [(String, HTTPRequest.Method, String, HTTPFields, [UInt8]?, SignCoreError.Code, Int)] = [
            ("no token", .get, "/v1/orders", [:], nil, .missingHeader, 401),
            ("garbage token", .get, "/v1/orders", [HTTPField.Name("wtoken")!: "v3.x"], nil, .malformedToken, 401),
            ("unknown key", .get, "/v1/orders", try Self.signed(.get, "/v1/orders", signer: Signer(key: other)), nil, .unknownKey, 401),
            ("wrong secret", .get, "/v1/orders", forged, nil, .badSignature, 401),
            ("changed query", .get, "/v1/orders?id=2", try Self.signed(.get, "/v1/orders?id=1"), nil, .whashMismatch, 401),
            ("other host", .get, "/v1/orders", try Self.signed(.get, "/v1/orders", url: "https://other.example.com/v1/orders"), nil,
             .whashMismatch, 401),
            ("tampered body", .post, "/v1/orders", try Self.signed(.post, "/v1/orders", body: body), Array("{\"item\":2}".utf8),
             .whashMismatch, 401),
            ("body sent elsewhere", .post, "/upload", try Self.signed(.post, "/v1/orders", body: body), body, .targetMismatch, 401),
            ("uncovered header changed", .get, "/v1/orders", uncovered, nil, .badSignature, 401),
            ("expired", .get, "/v1/orders", try Self.signed(.get, "/v1/orders", signer: Signer(key: Self.key, lifetime: 10, clock: { now - 100 })),
             nil, .expired, 401),
            ("from the future", .get, "/v1/orders", try Self.signed(.get, "/v1/orders", signer: Signer(key: Self.key, clock: { now + 600 })),
             nil, .notYetValid, 401),
            ("too long a lifetime", .get, "/v1/orders", try Self.signed(.get, "/v1/orders", signer: Signer(key: Self.key, lifetime: 3600)),
             nil, .lifetimeTooLong, 401),
            ("body on a GET", .get, "/v1/orders", try Self.signed(.get, "/v1/orders"), [1, 2, 3], .unexpectedBody, 400),
            ("token twice", .get, "/v1/orders", doubled, nil, .invalidHeader, 400),
            ("body over the limit", .post, "/v1/orders", try Self.signed(.post, "/v1/orders", body: Array(repeating: 0, count: 100)),
             Array(repeating: 0, count: 100), .bodyTooLarge, 413),
            ("unsignable method", .trace, "/v1/orders", try Self.signed(.get, "/v1/orders"), nil, .unsupportedMethod, 400),
        ]
        try await server.app.test(.live) { client in
            let first = try await client.execute(uri: "/v1/orders", method: .get, headers: replayed)
            #expect(first.status == .ok)
            let again = try await client.execute(uri: "/v1/orders", method: .get, headers: replayed)
            #expect(again.status == .unauthorized && Self.problem(again)["name"] as? String == "replayed")
            for (name, method, uri, headers, body, code, status) in cases {
                let response = try await client.execute(uri: uri, method: method, headers: headers, body: body.map { ByteBuffer(bytes: $0) })
                let problem = Self.problem(response)
                #expect(response.status.code == status, "\(name): \(response.status) \(String(buffer: response.body))")
                #expect(problem["code"] as? Int == code.rawValue && problem["name"] as? String == code.name, "\(name): \(problem)")
                #expect(response.headers[Refusal.errorField]?.hasPrefix(code.name + ";code=\(code.rawValue)") == true, "\(name)")
                #expect(response.headers[.contentType] == "application/problem+json", "\(name)")
                if code == .whashMismatch {
                    // A GET's whash is its URL's: the detail points at the scheme, host and port signed for.
                    let hint = (problem["detail"] as? String)?.contains("check the scheme, host and port") == true
                    #expect(hint == (method == .get), "\(name): \(problem)")
                }
                // Nothing of the request comes back: no token, no path, no body.
                let text = String(buffer: response.body)
                #expect(!text.contains("/v1") && !text.contains("v3.") && !text.contains("item"), "\(name)")
            }
        }
        #expect(!server.seen.lines.contains { $0.hasPrefix("-") }, "no refused request reached the handler")
        #expect(try server.metrics.expectCounter("signcore_verifications_total", [("verdict", "refused"), ("code", "replayed")]).totalValue == 1)
        let refusals = server.logs.entries.filter { $0.message.description == "request refused" }
        #expect(refusals.count == cases.count + 1)
        // Audit lines name the code and the route pattern, never the path or a token.
        for entry in refusals {
            #expect(entry.metadata["signcore.route"] == "*" && entry.metadata["signcore.code"] != nil)
            #expect(!entry.metadata.values.contains { "\($0)".contains("/v1/orders") || "\($0)".contains("v3.") })
        }
    }

    @Test func monitorLetsThroughAndLogsOffSkips() async throws {
        let policy = RoutePolicy([try .init("/public/**", .off), try .init("GET /v1/**", .monitor)])
        let server = try Self.server(policy: policy)
        try await server.app.test(.live) { client in
            let unsigned = try await client.execute(uri: "/v1/orders", method: .get)
            #expect(unsigned.status == .ok && String(buffer: unsigned.body) == "unsigned")
            let signed = try await client.execute(uri: "/v1/orders", method: .get, headers: Self.signed(.get, "/v1/orders"))
            #expect(String(buffer: signed.body) == "mw-test", "a monitored request that verifies still gets its identity")
            let open = try await client.execute(uri: "/public/info", method: .get)
            #expect(open.status == .ok)
            // A POST to /v1 is not covered by the GET-only monitor rule: the fallback requires.
            let post = try await client.execute(uri: "/v1/orders", method: .post, body: ByteBuffer(string: "x"))
            #expect(post.status == .unauthorized)
            // A path that is not plain never borrows a weaker rule.
            let dotted = try await client.execute(uri: "/public/../v1/orders", method: .get)
            #expect(dotted.status == .unauthorized)
        }
        #expect(server.seen.verdicts == [.failed(.missingHeader), .verified(bodyStreamed: false), .unchecked])
        let monitored = server.logs.entries.filter { $0.metadata["signcore.verdict"] == "monitored" }
        #expect(monitored.count == 1 && monitored.first?.metadata["signcore.code"] == "missingHeader"
                && monitored.first?.metadata["signcore.route"] == "GET /v1/**")
        #expect(try server.metrics.expectCounter("signcore_verifications_total", [("verdict", "monitored"), ("code", "missingHeader")]).totalValue == 1)
        #expect(server.logs.entries.filter { $0.metadata["signcore.route"] == "/public/**" }.isEmpty, "off routes are not verified")
    }

    /// Streamed: the handler reads the body as it arrives, and a tampered one fails before its end.
    @Test func streamedBodiesAreCheckedBeforeTheirLastChunk() async throws {
        let server = try Self.server(body: .streamed())
        let body = (0..<3_000_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let tampered = body.enumerated().map { $0.offset == 2_999_000 ? $0.element ^ 1 : $0.element }
        try await server.app.test(.live) { client in
            let good = try await client.execute(uri: "/upload", method: .put, headers: Self.signed(.put, "/upload", body: body),
                                                body: ByteBuffer(bytes: body))
            #expect(good.status == .ok)
            let bad = try await client.execute(uri: "/upload", method: .put, headers: Self.signed(.put, "/upload", body: body),
                                               body: ByteBuffer(bytes: tampered))
            #expect(bad.status == .unauthorized && Self.problem(bad)["name"] as? String == "whashMismatch")
            // Without a whash header a streamed body cannot be checked: refused before the handler.
            var noWHash = try Self.signed(.put, "/upload", body: body)
            noWHash[HTTPField.Name("whash")!] = nil
            let missing = try await client.execute(uri: "/upload", method: .put, headers: noWHash, body: ByteBuffer(bytes: body))
            #expect(missing.status == .unauthorized && Self.problem(missing)["name"] as? String == "missingHeader")
        }
        let lines = server.seen.lines
        #expect(lines.first == "mw-test acct-1 3000000")
        #expect(server.seen.verdicts == [.verified(bodyStreamed: true), .verified(bodyStreamed: true)], "the handler is told the body still streams")
        let failed = lines.first { $0.hasPrefix("body failed after ") }
        let delivered = failed.flatMap { Int($0.dropFirst("body failed after ".count)) }
        #expect(delivered.map { $0 < body.count } == true, "the handler never held the whole tampered body: \(lines)")
        #expect(lines.count == 2)
    }

    /// A replay store that cannot answer: 503 with Retry-After, and the handler never runs.
    @Test func unavailableStoreRefusesWith503() async throws {
        struct DownGuard: ReplayGuard {
            func record(keyID: String, nonce: Nonce, expires: Int64, now: Int64) async throws(SignCoreError) {
                throw SignCoreError(.unavailable, "the replay store could not record the nonce; retry later")
            }
        }
        let server = try Self.server(replayGuard: DownGuard())
        try await server.app.test(.live) { client in
            let response = try await client.execute(uri: "/v1/orders", method: .get, headers: Self.signed(.get, "/v1/orders"))
            #expect(response.status == .serviceUnavailable && response.headers[.retryAfter] == "1")
            #expect(Self.problem(response)["retryable"] as? Bool == true)
        }
        #expect(server.seen.lines.isEmpty)
    }
}
