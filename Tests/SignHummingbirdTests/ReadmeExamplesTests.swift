import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import SignCore
import SignHTTP
import SignHummingbird
import Testing

/// The README's SignHummingbird example, as printed there (between the `README` markers),
/// compiled and run.
@Suite struct ReadmeExamplesTests {
    static let key = try! SigningKey.hmac(secret: Array(repeating: 7, count: 32), id: "readme")

    /// SignHummingbird: the README's router, run live and sent a signed and an unsigned request.
    @Test func hummingbirdExample() async throws {
        let keys = try KeySet([Self.key])
        // README SignHummingbird: begin
        let verifier = try Verifier(keys: keys, replayGuard: InMemoryReplayGuard())
        let policy = RoutePolicy([try .init("GET /health", .off), try .init("/beta/**", .monitor)])   // everything else: require
        let router = Router(context: BasicSignatureRequestContext.self)
        router.add(middleware: SignatureMiddleware(verifier: verifier, origin: ServerOrigin(scheme: "https", authority: "api.example.com"),
                                                   policy: policy, body: .buffered(limit: 1 << 20)))
        router.post("/v1/orders") { request, context -> String in
            let signature = try #require(context.signature)   // nil only on off routes and monitored failures
            return "order for \(signature.account) by key \(signature.keyID)"
        }
        let app = Application(router: router)
        // README SignHummingbird: end
        try await app.test(.live) { client in
            let body = Array(#"{"item":1}"#.utf8)
            let headers = try Signer(key: Self.key, account: "alice").sign(method: .post, url: "https://api.example.com/v1/orders", body: body)
            let signed = try await client.execute(uri: "/v1/orders", method: .post,
                                                  headers: [HTTPField.Name("whash")!: headers.whash, HTTPField.Name("wtoken")!: headers.wtoken],
                                                  body: ByteBuffer(bytes: body))
            #expect(String(buffer: signed.body) == "order for alice by key readme")
            let unsigned = try await client.execute(uri: "/v1/orders", method: .post, body: ByteBuffer(bytes: body))
            #expect(unsigned.status == .unauthorized)
        }
    }
}
