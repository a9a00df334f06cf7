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

    static func application() throws -> some ApplicationProtocol {
        let verifier = try Verifier(keys: try KeySet([key]), replayGuard: InMemoryReplayGuard())
        let router = Router(context: BasicSignatureRequestContext.self)
        router.add(middleware: SignatureMiddleware(verifier: verifier, origin: ServerOrigin(scheme: "http"), policy: .requireAll,
                                                   body: .buffered(limit: 1 << 20)))
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
        let signer = try Signer(key: Self.key, account: "acct-7", coveredHeaders: ["content-type"])
        try await Self.application().test(.live) { client in
            let port = try #require(client.port)
            let base = "http://127.0.0.1:\(port)"
            let http = HTTPClient(eventLoopGroupProvider: .singleton)
            defer { _ = http.shutdown() }

            // AsyncHTTPClient: a GET and a POST from memory.
            let get = try await http.execute(HTTPClientRequest(url: base + "/v1/orders?id=1"), signer: signer, timeout: .seconds(10))
            #expect(get.status == .ok)
            #expect(String(buffer: try await get.body.collect(upTo: 1 << 16)) == "client-key acct-7 0")
            var post = HTTPClientRequest(url: base + "/v1/orders")
            post.method = .POST
            post.headers.add(name: "content-type", value: "application/json")
            let posted = try await http.execute(post, body: .bytes(ByteBuffer(string: #"{"item":1}"#)), signer: signer, timeout: .seconds(10))
            #expect(String(buffer: try await posted.body.collect(upTo: 1 << 16)) == "client-key acct-7 10")

            // URLSession (FoundationNetworking on Linux).
            var request = HTTPRequest(method: .post, url: try #require(URL(string: base + "/v1/orders")))
            request.headerFields[.contentType] = "application/json"
            let (data, response) = try await URLSession.shared.signedData(for: request, body: Data("[1,2,3]".utf8), signer: signer)
            #expect(response.status == .ok)
            #expect(String(decoding: data, as: UTF8.self) == "client-key acct-7 7")

            // The OpenAPI middleware, its `next` sending through AsyncHTTPClient; a streamed body.
            let middleware = SigningMiddleware(signer: signer)
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
}
