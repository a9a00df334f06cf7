import AsyncHTTPClient
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HTTPTypes
import HTTPTypesFoundation
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import OpenAPIRuntime
import PostgresNIO
import SignAsyncHTTPClient
import SignCore
import SignHTTP
import SignHummingbird
import SignOpenAPI
import SignPostgres
import SignURLSession
import Testing

/// The README's examples for the server and client modules, as printed there (between the
/// `README` markers), compiled and run.
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

    /// SignPostgres: compiled; run by PostgresReplayGuardTests against a real server.
    func postgresExample(logger: Logger) async throws {
        let keys = try KeySet([Self.key])
        // README SignPostgres: begin
        let client = PostgresClient(configuration: .init(host: "db.internal", port: 5432, username: "signd", password: nil,
                                                         database: "signd", tls: .disable), backgroundLogger: logger)
        let nonces = try PostgresReplayGuard(client: client, logger: logger)
        let verifier = try Verifier(keys: keys, replayGuard: nonces)   // every node of the fleet the same
        async let running: Void = client.run()                         // or put `client` in a ServiceGroup
        try await nonces.createSchema()                                // on start: safe on every node
        // README SignPostgres: end
        _ = verifier
        _ = await running
    }

    /// The clients: compiled; run against signd by GatewayTests.
    func clientExamples(key: SigningKey, http: HTTPClient) async throws {
        // README clients: begin
        let signer = try Signer(key: key, coveredHeaders: ["content-type"])

        // URLSession (FoundationNetworking on Linux): a fresh signature for every attempt.
        var request = HTTPRequest(method: .post, url: URL(string: "https://api.example.com/v1/orders")!)
        request.headerFields[.contentType] = "application/json"
        let (data, response) = try await URLSession.shared.signedData(for: request, body: Data(#"{"item":1}"#.utf8), signer: signer)

        // AsyncHTTPClient: bodies in memory (not copied) or files (hashed once, streamed from disk).
        var upload = HTTPClientRequest(url: "https://api.example.com/v1/blobs/7")
        upload.method = .PUT
        let stored = try await http.execute(upload, body: try .file(atPath: "/tmp/blob.bin"), signer: signer, timeout: .seconds(60))

        // A generated OpenAPI client: the signing middleware last, so retries before it re-sign.
        let middlewares: [any ClientMiddleware] = [SigningMiddleware(signer: signer)]
        // README clients: end
        _ = (data, response, stored, middlewares)
    }
}
