import AsyncHTTPClient
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HTTPTypes
import HTTPTypesFoundation
import Hummingbird
import HummingbirdTesting
import NIOCore
import NIOHTTP1
import OpenAPIRuntime
import SignAsyncHTTPClient
import SignCore
import SignHTTP
import SignHummingbird
import SignOpenAPI
import SignTestSupport
import SignURLSession
import Testing

/// The three clients against a real server on loopback (Hummingbird with `SignatureMiddleware`,
/// the replay guard on): each request they sign is verified there, and the handler answers with
/// the identity it verified and the body bytes it received, so a client that signed the wrong
/// bytes, or resent a token, is refused at the server, not in the client.
@Suite struct ClientsLiveTests {
    static let key = try! SigningKey.hmac(secret: Array(repeating: 9, count: 32), id: "client-key")

    static let pattern = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }

    /// Answers a 428 with its body reversed; reads the first 64 KiB of every response.
    struct ChallengePolicy: ExchangePolicy {
        func bodyLimit(for response: HTTPResponse) -> Int { 64 * 1024 }
        func decide(_ exchange: Exchange) async -> ExchangeDecision {
            guard exchange.response.status.code == 428 else { return .deliver }
            var fields = HTTPFields()
            fields[HTTPField.Name("x-answer")!] = String(decoding: exchange.body.reversed(), as: UTF8.self)
            return .retry(after: .zero, setting: fields)
        }
    }

    static func application() throws -> some ApplicationProtocol {
        let verifier = try Verifier(keys: try KeySet([key]), replayGuard: InMemoryReplayGuard())
        let router = Router(context: BasicSignatureRequestContext.self)
        router.add(middleware: SignatureMiddleware(verifier: verifier, origin: ServerOrigin(scheme: "http"), policy: .requireAll,
                                                   body: .buffered(limit: 1 << 20)))
        // A challenge as the coming flows will send one: 428 with a body until the request carries
        // the answer (the body reversed), then a body of 300,000 bytes in many chunks.
        router.on("/v1/challenge", method: .get) { request, context -> Response in
            _ = try #require(context.signature)
            guard request.headers[HTTPField.Name("x-answer")!] == "cba" else {
                return Response(status: HTTPResponse.Status(code: 428), body: ResponseBody(byteBuffer: ByteBuffer(string: "abc")))
            }
            return Response(status: .ok, body: ResponseBody { writer in
                for chunk in 0..<30 { try await writer.write(ByteBuffer(bytes: Self.pattern[(chunk * 10_000)..<((chunk + 1) * 10_000)])) }
                try await writer.finish(nil)
            })
        }
        router.on("/v1/orders", method: .get) { _, context -> String in
            let signature = try #require(context.signature)
            return "\(signature.keyID) \(signature.account) 0"
        }
        router.on("/v1/orders", method: .post) { request, context -> String in
            let signature = try #require(context.signature)
            let body = try await request.body.collect(upTo: 1 << 20)
            return "\(signature.keyID) \(signature.account) \(body.readableBytes)"
        }
        return Application(router: router)
    }

    @Test func eachClientSignsWhatTheServerVerifies() async throws {
        let client = SigningClient(signer: try Signer(key: Self.key, account: "acct-7", coveredHeaders: ["content-type"]))
        try await Self.application().test(.live) { server in
            let port = try #require(server.port)
            let base = "http://127.0.0.1:\(port)"
            let http = HTTPClient(eventLoopGroupProvider: .singleton)
            defer { _ = http.shutdown() }

            // AsyncHTTPClient: a GET and a POST from memory.
            let get = try await http.execute(HTTPClientRequest(url: base + "/v1/orders?id=1"), client: client, timeout: .seconds(10))
            #expect(get.status == .ok)
            #expect(String(buffer: try await get.body.collect(upTo: 1 << 16)) == "client-key acct-7 0")
            var post = HTTPClientRequest(url: base + "/v1/orders")
            post.method = .POST
            post.headers.add(name: "content-type", value: "application/json")
            let posted = try await http.execute(post, body: .bytes(ByteBuffer(string: #"{"item":1}"#)), client: client, timeout: .seconds(10))
            #expect(String(buffer: try await posted.body.collect(upTo: 1 << 16)) == "client-key acct-7 10")

            // URLSession (FoundationNetworking on Linux).
            var request = HTTPRequest(method: .post, url: try #require(URL(string: base + "/v1/orders")))
            request.headerFields[.contentType] = "application/json"
            let (data, response) = try await URLSession.shared.signedData(for: request, body: Data("[1,2,3]".utf8), client: client)
            #expect(response.status == .ok)
            #expect(String(decoding: data, as: UTF8.self) == "client-key acct-7 7")

            // The OpenAPI middleware, its `next` sending through AsyncHTTPClient; a streamed body.
            let middleware = SigningMiddleware(client: client)
            let next = openAPITransport(http)
            var operation = HTTPRequest(method: .post, scheme: nil, authority: nil, path: "/v1/orders")
            operation.headerFields[.contentType] = "application/json"
            let streamed = HTTPBody(AsyncStream { $0.yield(ArraySlice("{\"a\":".utf8)); $0.yield(ArraySlice("1}".utf8)); $0.finish() }, length: .unknown)
            let (status, answer) = try await middleware.intercept(operation, body: streamed, baseURL: try #require(URL(string: base)),
                                                                  operationID: "createOrder", next: next)
            #expect(status.status == .ok)
            #expect(try await String(collecting: try #require(answer), upTo: 1 << 16) == "client-key acct-7 7")

            // A request the client did not sign is refused at the server: the checks above are the server's.
            let unsigned = try await http.execute(HTTPClientRequest(url: base + "/v1/orders"), timeout: .seconds(10))
            #expect(unsigned.status == .unauthorized)
        }
    }

    @Test func aPolicyAnswersAChallengeThroughEachClient() async throws {
        let client = SigningClient(signer: try Signer(key: Self.key, coveredHeaders: ["x-answer"]), policies: [ChallengePolicy()])
        try await Self.application().test(.live) { server in
            let base = "http://127.0.0.1:\(try #require(server.port))"
            let http = HTTPClient(eventLoopGroupProvider: .singleton)
            defer { _ = http.shutdown() }

            // AsyncHTTPClient: the 428 answered, then a streamed body whose first 64 KiB the policy read, delivered whole.
            let answered = try await http.execute(HTTPClientRequest(url: base + "/v1/challenge"), client: client, timeout: .seconds(10))
            #expect(answered.status == .ok)
            #expect(Array(buffer: try await answered.body.collect(upTo: 1 << 20)) == Self.pattern)

            // URLSession.
            let url = try #require(URL(string: base + "/v1/challenge"))
            let (data, response) = try await URLSession.shared.signedData(for: HTTPRequest(method: .get, url: url), client: client)
            #expect(response.status == .ok && Array(data) == Self.pattern)

            // The OpenAPI middleware.
            let (head, body) = try await SigningMiddleware(client: client).intercept(
                HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/v1/challenge"), body: nil,
                baseURL: try #require(URL(string: base)), operationID: "challenge", next: openAPITransport(http))
            #expect(head.status == .ok)
            #expect(try await [UInt8](collecting: try #require(body), upTo: 1 << 20) == Self.pattern)
        }
    }
}
