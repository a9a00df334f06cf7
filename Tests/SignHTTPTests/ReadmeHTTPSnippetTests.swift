import HTTPTypes
import SignCore
import SignHTTP
import Testing

/// The README's SignHTTP example, as printed there (the code between the `README SignHTTP`
/// markers, read as one block by `scripts/check-readme`), run: the signed request verifies, and
/// the same request sent again gets the shared refusal of a replay.
@Suite struct ReadmeHTTPSnippetTests {
    @Test func theReadmeExampleSignsVerifiesAndRefusesAReplay() async throws {
        let key = try SigningKey.hmac(secret: Array(repeating: 9, count: 32), id: "readme-http")
        let verifier = try Verifier(keys: KeySet([key]), replayGuard: InMemoryReplayGuard(capacity: 1_000, maxShare: 1))
        // README SignHTTP: begin
        // Client: sign the request in place, and again for every attempt (a retry needs a fresh nonce).
        let signer = try Signer(key: key, coveredHeaders: ["content-type"])
        var request = HTTPRequest(method: .post, scheme: "https", authority: "api.example.com", path: "/v1/orders")
        request.headerFields[.contentType] = "application/json"
        let body = Array(#"{"item":1}"#.utf8)
        try signer.sign(&request, body: body)
        // README SignHTTP: end
        #expect(request.headerFields[HTTPField.Name("whash")!] != nil && request.headerFields[HTTPField.Name("wtoken")!] != nil)
        var received = request
        received.scheme = nil  // a server never learns the scheme from the request
        var accepted: [String] = []
        var refusals: [Refusal] = []
        for _ in 0..<2 {  // the second time, the same token: a replay
            // README SignHTTP: begin
            // Server: the URL from the server's own scheme (never from a client's header), the request's
            // authority unless the server fixes it, and the path; then the shared refusal on failure.
            let origin = ServerOrigin(scheme: "https")   // or ServerOrigin(scheme: "https", authority: "api.example.com")
            do {
                let verified = try await verifier.verify(ReceivedRequest(received, body: .bytes(body), origin: origin))
                print(verified.keyID, verified.account)
                // README SignHTTP: end
                accepted.append(verified.keyID)
                // README SignHTTP: begin
            } catch {                                     // typed: a SignCoreError
                let refusal = Refusal(error)             // refusal.response (status and fields), refusal.body
                // README SignHTTP: end
                refusals.append(refusal)
                // README SignHTTP: begin
            }
            // README SignHTTP: end
        }
        #expect(accepted == ["readme-http"])
        #expect(refusals.count == 1)
        #expect(refusals.first?.response.status == .unauthorized)
        #expect(refusals.first?.response.headerFields[Refusal.errorField] == "replayed;code=23;advice=reSign")
    }
}
