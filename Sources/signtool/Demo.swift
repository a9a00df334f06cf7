import ArgumentParser
@_spi(SignCoreTools) import SignCore
import SignAttest

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
        let attestationSurprises = await attestation(client: edKey, other: hmacKey)
        if surprises + attestationSurprises > 0 { fail("\(surprises + attestationSurprises) demo step(s) did not behave as expected") }
        print("\nall \(steps.count + Self.attestationSteps) steps behaved as expected")
    }

    static let attestationSteps = 7

    /// The 428 flow of docs/ATTEST.md as a server and a client run it, without the HTTP around it:
    /// a challenge issued to the client's key, solved, redeemed for a token bound to that key, and
    /// what a thief or a replay gets. Returns the steps that did not behave as expected.
    private func attestation(client: SigningKey, other: SigningKey) async -> Int {
        let origin = "https://api.example.com"
        let keys = orFail { try AttestationKeys([SigningKey.generate(.hmacSHA256, id: "challenge-1"), SigningKey.generate(.ed25519, id: "token-1")]) }
        let attestor = orFail { try Attestor(keys: keys, redemptions: InMemoryRedemptionStore()) }
        let now = UInt64(SystemClock.milliseconds())
        let policy = orFail { try ChallengePolicy(difficulty: 18, count: 4, levels: .level(0)) }
        let challenge = orFail { try attestor.challenge(policy, keyThumbprint: client.thumbprint.bytes, origin: origin, now: now) }
        print("\nAttestation (docs/ATTEST.md): a route requires level 0; the request has no token.")
        print("  428 attest-challenge: \(challenge.text.prefix(48))... (d \(challenge.difficulty), k \(challenge.count), stateless)")
        let started = ContinuousClock.now
        let answer: [UInt8]
        do { answer = try await ProofOfWorkSolver().solve(challenge) } catch { fail("the solver gave up: \(error)") }
        print("  solved in \(started.duration(to: .now).formatted(.units(allowed: [.milliseconds]))) on \(ProofOfWorkSolver.onlineCores) cores")
        let body = AttestRequest(challenge: challenge, answer: answer).body
        var surprises = 0
        func step(_ what: String, _ expected: SignCoreError.Code?, _ body: () async throws -> Void) async {
            var code: SignCoreError.Code?
            do { try await body() } catch { code = (error as? SignCoreError)?.code ?? .cryptoFailure }
            if code != expected { surprises += 1 }
            print(row("attest", what, expected.map { "refused: \($0.name)" } ?? "accepted",
                      (code.map { "refused: \($0.name) (\($0.rawValue), HTTP \($0.status))" } ?? "accepted") + (code == expected ? "" : "  <-- UNEXPECTED")))
        }
        func check(_ token: String, key: SigningKey, at time: UInt64, levels: AttestationLevels) throws {
            _ = try attestor.checkToken(token, keyThumbprint: key.thumbprint.bytes, coveredHeaders: ["attest-token"], origin: origin, now: time,
                                        required: levels)
        }
        var token = ""
        await step("another key redeems the challenge", .challengeKeyMismatch) {
            _ = try await attestor.redeem(body, keyThumbprint: other.thumbprint.bytes, origin: origin, now: now + 10)
        }
        await step("the client redeems it", nil) {
            token = try await attestor.redeem(body, keyThumbprint: client.thumbprint.bytes, origin: origin, now: now + 10).text
        }
        await step("the same answer again", .challengeRedeemed) {
            _ = try await attestor.redeem(body, keyThumbprint: client.thumbprint.bytes, origin: origin, now: now + 20)
        }
        await step("the token beside the client's signature", nil) { try check(token, key: client, at: now + 30, levels: .level(0)) }
        await step("the token copied beside another key's", .attestationKeyMismatch) { try check(token, key: other, at: now + 30, levels: .level(0)) }
        await step("the token on a route asking level 1", .attestationInsufficient) {
            try check(token, key: client, at: now + 30, levels: [.level(0), .level(1)])
        }
        await step("the token 16 minutes later", .attestationExpired) { try check(token, key: client, at: now + 960_000, levels: .level(0)) }
        return surprises
    }

    private func request(_ method: String, _ url: String, _ body: [UInt8], _ headers: SignedHeaders) -> ReceivedRequest {
        ReceivedRequest(method: method, url: url, body: .bytes(body), whash: headers.whash, wtoken: headers.wtoken)
    }

    private func row(_ a: String, _ b: String, _ c: String, _ d: String) -> String {
        func pad(_ s: String, _ n: Int) -> String { s.count >= n ? s + " " : s + String(repeating: " ", count: n - s.count) }
        return pad(a, 17) + pad(b, 42) + pad(c, 32) + d
    }
}

/// The demo's clock: real time, moved forward on demand to show expiry.
final class DemoClock: Sendable {
    private let offset = AtomicWord(0)
    func advance(by seconds: Int64) { offset.add(seconds) }
    var read: @Sendable () -> Int64 { { SystemClock.seconds() + self.offset.load() } }
}
