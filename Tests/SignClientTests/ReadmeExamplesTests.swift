import AsyncHTTPClient
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HTTPTypes
import HTTPTypesFoundation
import OpenAPIRuntime
import SignAsyncHTTPClient
import SignCore
import SignHTTP
import SignOpenAPI
import SignURLSession
import Testing

/// The README's client examples, as printed there (between the `README` markers).
@Suite struct ReadmeExamplesTests {
    /// The clients: compiled; run against signd by GatewayTests.
    func clientExamples(key: SigningKey, http: HTTPClient) async throws {
        // README clients: begin
        // One client per key, kept: it signs every attempt afresh and decides after each response.
        let client = SigningClient(signer: try Signer(key: key, coveredHeaders: ["content-type"]))

        // URLSession (FoundationNetworking on Linux): a fresh signature for every attempt.
        var request = HTTPRequest(method: .post, url: URL(string: "https://api.example.com/v1/orders")!)
        request.headerFields[.contentType] = "application/json"
        let (data, response) = try await URLSession.shared.signedData(for: request, body: Data(#"{"item":1}"#.utf8), client: client)

        // AsyncHTTPClient: bodies in memory (not copied) or files (hashed once, streamed from disk).
        var upload = HTTPClientRequest(url: "https://api.example.com/v1/blobs/7")
        upload.method = .PUT
        let stored = try await http.execute(upload, body: try .file(atPath: "/tmp/blob.bin"), client: client, timeout: .seconds(60))

        // A generated OpenAPI client: the signing middleware last, so retries before it re-sign.
        let middlewares: [any ClientMiddleware] = [SigningMiddleware(client: client)]
        // README clients: end
        _ = (data, response, stored, middlewares)
    }
}
