import ArgumentParser
@_spi(SignCoreTools) import SignCore

/// An in-process walk through signing and the failures a verifier catches.
struct Demo: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Sign, verify, and show what is refused and why.")

    func run() async {
        let clock = DemoClock()
        let url = "https://api.example.com/v1/orders?id=42&sort=desc"
        let body = Array(#"{"item":"book","qty":1}"#.utf8)
        let (hmacKey, edKey) = orFail { (try SigningKey.generate(.hmacSHA256), try SigningKey.generate(.ed25519)) }
        let signer = orFail { try Signer(key: hmacKey, lifetime: 60, account: "alice", clock: clock.read) }
        let edSigner = orFail { try Signer(key: edKey, lifetime: 60, clock: clock.read) }
        let keys = orFail { try KeySet([hmacKey, edKey.publicOnly()]) }
        let verifier = orFail { try Verifier(keys: keys, replayGuard: InMemoryReplayGuard(), skew: 30, maxLifetime: 300, clock: clock.read) }

        print("SignCore demo (\(SignCoreVersion.spec)): HS256 key \(hmacKey.id.prefix(12))..., Ed25519 key \(edKey.id.prefix(12))...")
        let post = orFail { try signer.sign(method: .post, url: url, body: body) }
        let get = orFail { try signer.sign(method: .get, url: url) }
        print("  whash:  \(post.whash)")
        print("  wtoken: \(post.wtoken)\n")

        var tampered = body
        tampered[17] = UInt8(ascii: "9")
        let steps: [(String, String, ReceivedRequest, SignCoreError.Code?, Int64)] = [
            ("sign and verify", "POST /v1/orders, body as signed", request("POST", url, body, post), nil, 0),
            ("tampered body", "POST, qty 1 -> 9 after signing", request("POST", url, tampered, post), .whashMismatch, 0),
            ("changed query", "GET ?id=43 instead of ?id=42", request("GET", url.replacingOccurrences(of: "id=42", with: "id=43"), [], get), .whashMismatch, 0),
            ("other host", "POST to evil.example.com", request("POST", url.replacingOccurrences(of: "api.example.com", with: "evil.example.com"), body, post), .targetMismatch, 0),
            ("re-encoded URL", "GET, host upper-cased, query reordered", request("GET", "https://API.EXAMPLE.COM/v1/orders?sort=desc&id=4%32", [], get), nil, 0),
            ("replay", "the same GET token again", request("GET", url, [], get), .replayed, 0),
            ("Ed25519 key", "DELETE signed with a device key", request("DELETE", url, [], orFail { try edSigner.sign(method: .delete, url: url) }), nil, 0),
            ("expired", "a new GET verified 61 s later", request("GET", url, [], orFail { try signer.sign(method: .get, url: url) }), .expired, 61),
        ]
        print(row("step", "request", "expected", "result"))
        print(String(repeating: "-", count: 110))
        var surprises = 0
        for (name, what, received, expected, later) in steps {
            clock.advance(by: later)
            let outcome: String
            let code: SignCoreError.Code?
            do {
                let verified = try await verifier.verify(received)
                code = nil
                outcome = "accepted (kid \(verified.keyID.prefix(8))...\(verified.account.isEmpty ? "" : ", account \(verified.account)"))"
            } catch {
                code = error.code
                outcome = "refused: \(error.code.name) (\(error.code.rawValue))"
            }
            if code != expected { surprises += 1 }
            print(row(name, what, expected.map { "refused: \($0.name)" } ?? "accepted", outcome + (code == expected ? "" : "  <-- UNEXPECTED")))
        }
        if surprises > 0 { fail("\(surprises) demo step(s) did not behave as expected") }
        print("\nall \(steps.count) steps behaved as expected")
    }

    private func request(_ method: String, _ url: String, _ body: [UInt8], _ headers: SignedHeaders) -> ReceivedRequest {
        ReceivedRequest(method: method, url: url, body: .bytes(body), whash: headers.whash, wtoken: headers.wtoken)
    }

    private func row(_ a: String, _ b: String, _ c: String, _ d: String) -> String {
        func pad(_ s: String, _ n: Int) -> String { s.count >= n ? s + " " : s + String(repeating: " ", count: n - s.count) }
        return pad(a, 17) + pad(b, 40) + pad(c, 24) + d
    }
}

/// The demo's clock: real time, moved forward on demand to show expiry.
final class DemoClock: Sendable {
    private let offset = AtomicWord(0)
    func advance(by seconds: Int64) { offset.add(seconds) }
    var read: @Sendable () -> Int64 { { SystemClock.seconds() + self.offset.load() } }
}
