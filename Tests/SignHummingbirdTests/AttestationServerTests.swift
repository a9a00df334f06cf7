import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
@_spi(SignCoreTools) import SignCore
import SignAttest
import SignHTTP
import SignHummingbird
import Testing

/// The attestation flow's server half on a real Hummingbird server on loopback: 428 with a
/// challenge, the attest endpoint, tokens bound to the key and covered by the signature, chained
/// levels, monitor mode, and an application's own 428 left alone.
@Suite struct AttestationServerTests {
    static let client = try! SigningKey.generate(.ed25519)
    static let thief = try! SigningKey.generate(.ed25519)
    static let origin = ServerOrigin(scheme: "https", authority: "api.example.com")
    static let keys = try! AttestationKeys([SigningKey.hmac(secret: Array(repeating: 3, count: 32), id: "challenge-1"),
                                            SigningKey.generate(.ed25519, id: "token-1")])
    static let challengeField = HTTPField.Name("attest-challenge")!
    static let tokenField = HTTPField.Name("attest-token")!

    final class Clock: Sendable {
        let now = Locked<UInt64>(UInt64(SystemClock.milliseconds()))
        func advance(milliseconds: UInt64) { now.withLock { $0 += milliseconds } }
        var read: UInt64 { now.withLock { $0 } }
    }

    static func app(store: any RedemptionStore = InMemoryRedemptionStore(), clock: Clock = Clock(),
                    challenges: [ChallengePolicy]? = nil) throws -> some ApplicationProtocol {
        let verifier = try Verifier(keys: KeySet([client.publicOnly(), thief.publicOnly()]),
                                    replayGuard: InMemoryReplayGuard(capacity: 10_000, maxShare: 1),
                                    clock: { Int64(clock.read / 1000) })
        var strong = RouteRequirements.require
        strong[RouteAttestation.self] = .require([.level(0), .level(1)])
        var basic = RouteRequirements.require
        basic[RouteAttestation.self] = .require(.level(0))
        var watched = RouteRequirements.require
        watched[RouteAttestation.self] = .monitor(.level(0))
        let policy = try RoutePolicy([
            .init("/strong/**", strong), .init("/basic/**", basic), .init("/watched/**", watched), .init("/own428", .require),
        ], fallback: .require)
        let attestor = try Attestor(keys: keys, redemptions: store)
        let gate = try AttestationGate(attestor: attestor, challenges: challenges ?? [
            try ChallengePolicy(difficulty: 12, count: 2, levels: .level(0)),
            try ChallengePolicy(difficulty: 12, count: 1, levels: .level(1), minElapsed: 1000),
        ], clock: { clock.read })
        let router = Router(context: BasicSignatureRequestContext.self)
        router.add(middleware: SignatureMiddleware(verifier: verifier, origin: origin, policy: policy, attestation: gate))
        for path in ["/strong/x", "/basic/x", "/watched/x", "/open"] {
            router.get(RouterPath(stringLiteral: path)) { _, context -> String in
                "levels \(context.signCore[Attested.self]?.levels.rawValue ?? 0)"
            }
        }
        // The application's own 428 (RFC 6585, a missing If-Match): no signcore-error, no challenge.
        router.get("/own428") { _, _ in Response(status: .preconditionRequired, headers: [.contentType: "text/plain"]) }
        return Application(router: router)
    }

    /// The fields of a GET signed by `key`, covering the token field, with `token` when given.
    static func signed(_ path: String, key: SigningKey = client, token: String? = nil, method: RequestMethod = .get,
                       body: [UInt8] = [], cover: Bool = true, clock: Clock? = nil) throws -> HTTPFields {
        var fields = HTTPFields()
        if let token { fields[tokenField] = token }
        let signer = try Signer(key: key, coveredHeaders: cover ? ["attest-token"] : [],
                                clock: { clock.map { Int64($0.read / 1000) } ?? SystemClock.seconds() })
        let headers = try signer.sign(method: method, url: "https://api.example.com" + path, body: body,
                                      headers: fields.map { HeaderField($0.name.rawName, $0.value) })
        fields[HTTPField.Name("whash")!] = headers.whash
        fields[HTTPField.Name("wtoken")!] = headers.wtoken
        return fields
    }

    static func code(_ response: TestResponse) -> Int? {
        guard let field = response.headers[HTTPField.Name("signcore-error")!] else { return nil }
        return field.split(separator: ";").first { $0.hasPrefix("code=") }.flatMap { Int($0.dropFirst(5)) }
    }

    static func serverTime(_ response: TestResponse) -> Int64? {
        response.headers[HTTPField.Name("signcore-error")!]?.split(separator: ";").first { $0.hasPrefix("now=") }.flatMap { Int64($0.dropFirst(4)) }
    }

    /// Solves the 428's challenge and redeems it; the attest response's token.
    static func attest(_ client: some TestClientProtocol, challenge text: String, key: SigningKey = client,
                       token: String? = nil, clock: Clock? = nil) async throws -> (TestResponse, String?) {
        let challenge = try Challenge(parsing: text)
        let body = AttestRequest(challenge: challenge, answer: ProofOfWork.smallestAnswer(for: challenge)).body
        let response = try await client.execute(uri: AttestationGate.defaultEndpoint, method: .post,
                                                headers: signed(AttestationGate.defaultEndpoint, key: key, token: token, method: .post, body: body, clock: clock),
                                                body: ByteBuffer(bytes: body))
        guard response.status == .ok else { return (response, nil) }
        return (response, try AttestResponse(body: Array(buffer: response.body)).token)
    }

    @Test func challengeSolveAttestRetry() async throws {
        try await Self.app().test(.live) { client in
            let first = try await client.execute(uri: "/basic/x", method: .get, headers: Self.signed("/basic/x"))
            #expect(first.status == .preconditionRequired)
            #expect(Self.code(first) == 80)
            #expect(Self.serverTime(first) != nil)
            #expect(first.headers[.contentType] == "application/problem+json")
            let challenge = try #require(first.headers[Self.challengeField])
            let (attested, token) = try await Self.attest(client, challenge: challenge)
            #expect(attested.status == .ok)
            #expect(attested.headers[.contentType] == "application/json")
            let retried = try await client.execute(uri: "/basic/x", method: .get, headers: Self.signed("/basic/x", token: try #require(token)))
            #expect(retried.status == .ok)
            #expect(String(buffer: retried.body) == "levels 1")
            // The same challenge a second time: already redeemed.
            let (again, _) = try await Self.attest(client, challenge: challenge)
            #expect(again.status == .conflict && Self.code(again) == 88)
        }
    }

    @Test func anUnverifiableRequestGetsItsSignatureRefusalNeverAChallenge() async throws {
        try await Self.app().test(.live) { client in
            let unsigned = try await client.execute(uri: "/basic/x", method: .get)
            #expect(unsigned.status == .unauthorized && unsigned.headers[Self.challengeField] == nil)
            var tampered = try Self.signed("/basic/y")
            tampered[Self.tokenField] = "x"
            let wrong = try await client.execute(uri: "/basic/x", method: .get, headers: tampered)
            #expect(wrong.status == .unauthorized && wrong.headers[Self.challengeField] == nil)
            let endpoint = try await client.execute(uri: AttestationGate.defaultEndpoint, method: .post, body: ByteBuffer(string: "{}"))
            #expect(endpoint.status == .unauthorized)
        }
    }

    @Test func aTokenIsUselessBesideAnotherKeysSignatureOrUncovered() async throws {
        try await Self.app().test(.live) { client in
            let first = try await client.execute(uri: "/basic/x", method: .get, headers: Self.signed("/basic/x"))
            let (_, token) = try await Self.attest(client, challenge: try #require(first.headers[Self.challengeField]))
            let token_ = try #require(token)
            let stolen = try await client.execute(uri: "/basic/x", method: .get, headers: Self.signed("/basic/x", key: Self.thief, token: token_))
            #expect(stolen.status == .forbidden && Self.code(stolen) == 92)
            let uncovered = try await client.execute(uri: "/basic/x", method: .get, headers: Self.signed("/basic/x", token: token_, cover: false))
            #expect(uncovered.status == .unauthorized && Self.code(uncovered) == 32)
            // The thief's own attempt to redeem the client's challenge.
            let second = try await client.execute(uri: "/basic/x", method: .get, headers: Self.signed("/basic/x"))
            let (redeemed, _) = try await Self.attest(client, challenge: try #require(second.headers[Self.challengeField]), key: Self.thief)
            #expect(redeemed.status == .forbidden && Self.code(redeemed) == 86)
        }
    }

    @Test func chainedLevelsTwoChallengesInTurn() async throws {
        let clock = Clock()
        try await Self.app(clock: clock).test(.live) { client in
            let first = try await client.execute(uri: "/strong/x", method: .get, headers: Self.signed("/strong/x", clock: clock))
            #expect(Self.code(first) == 80)
            let (_, basic) = try await Self.attest(client, challenge: try #require(first.headers[Self.challengeField]), clock: clock)
            let second = try await client.execute(uri: "/strong/x", method: .get, headers: Self.signed("/strong/x", token: try #require(basic), clock: clock))
            #expect(second.status == .preconditionRequired && Self.code(second) == 93)
            let next = try Challenge(parsing: try #require(second.headers[Self.challengeField]))
            #expect(next.levels == .level(1))
            // Its minimum time: too early gets the same challenge back with Retry-After.
            let (early, _) = try await Self.attest(client, challenge: next.text, token: basic, clock: clock)
            #expect(early.status == .preconditionRequired && Self.code(early) == 84)
            #expect(early.headers[Self.challengeField] == next.text && early.headers[.retryAfter] == "1")
            clock.advance(milliseconds: 1000)
            let (_, strong) = try await Self.attest(client, challenge: next.text, token: basic, clock: clock)
            let third = try await client.execute(uri: "/strong/x", method: .get, headers: Self.signed("/strong/x", token: try #require(strong), clock: clock))
            #expect(third.status == .ok && String(buffer: third.body) == "levels 3")
        }
    }

    @Test func expiredTokensAndChallengesGetFreshChallenges() async throws {
        let clock = Clock()
        try await Self.app(clock: clock).test(.live) { client in
            let first = try await client.execute(uri: "/basic/x", method: .get, headers: Self.signed("/basic/x", clock: clock))
            let challenge = try #require(first.headers[Self.challengeField])
            clock.advance(milliseconds: 126_000)  // past the challenge's 120 s and the 5 s skew
            let (late, _) = try await Self.attest(client, challenge: challenge, clock: clock)
            #expect(late.status == .preconditionRequired && Self.code(late) == 83)
            let fresh = try #require(late.headers[Self.challengeField])
            #expect(fresh != challenge)
            let (_, token) = try await Self.attest(client, challenge: fresh, clock: clock)
            clock.advance(milliseconds: 906_000)  // past the token's 900 s and the skew
            let expired = try await client.execute(uri: "/basic/x", method: .get, headers: Self.signed("/basic/x", token: try #require(token), clock: clock))
            #expect(expired.status == .preconditionRequired && Self.code(expired) == 89 && expired.headers[Self.challengeField] != nil)
        }
    }

    @Test func monitorLetsThroughAndTheApplicationsOwn428IsUntouched() async throws {
        try await Self.app().test(.live) { client in
            let watched = try await client.execute(uri: "/watched/x", method: .get, headers: Self.signed("/watched/x"))
            #expect(watched.status == .ok && String(buffer: watched.body) == "levels 0")
            let own = try await client.execute(uri: "/own428", method: .get, headers: Self.signed("/own428"))
            #expect(own.status == .preconditionRequired)
            #expect(own.headers[HTTPField.Name("signcore-error")!] == nil && own.headers[Self.challengeField] == nil)
        }
    }

    @Test func aClientCanAskForAChallengeBeforeItNeedsOne() async throws {
        try await Self.app().test(.live) { client in
            let asked = try await client.execute(uri: AttestationGate.defaultEndpoint + "?levels=2", method: .get,
                                                 headers: Self.signed(AttestationGate.defaultEndpoint + "?levels=2"))
            #expect(asked.status == .preconditionRequired && Self.code(asked) == 80)
            #expect(try Challenge(parsing: try #require(asked.headers[Self.challengeField])).levels == .level(1))
            // A level no policy grants: the first policy's challenge, never a server error.
            let unknown = try await client.execute(uri: AttestationGate.defaultEndpoint + "?levels=32768", method: .get,
                                                   headers: Self.signed(AttestationGate.defaultEndpoint + "?levels=32768"))
            #expect(unknown.status == .preconditionRequired && Self.code(unknown) == 80)
            #expect(try Challenge(parsing: try #require(unknown.headers[Self.challengeField])).levels == .level(0))
        }
    }

    /// A group's own signature middleware decides by its own policy: an outer middleware's `off`
    /// never lets an unsigned request through the inner one.
    @Test func anInnerSignatureMiddlewareDecidesByItsOwnPolicy() async throws {
        let verifier = try Verifier(keys: KeySet([Self.client.publicOnly()]), replayGuard: InMemoryReplayGuard())
        let router = Router(context: BasicSignatureRequestContext.self)
        router.add(middleware: SignatureMiddleware(verifier: verifier, origin: Self.origin, policy: RoutePolicy([], fallback: .off)))
        router.group("admin").add(middleware: SignatureMiddleware(verifier: verifier, origin: Self.origin, policy: .requireAll))
            .get("x") { _, _ in "reached" }
        try await Application(router: router).test(.live) { client in
            let unsigned = try await client.execute(uri: "/admin/x", method: .get)
            #expect(unsigned.status == .unauthorized)
        }
    }

    @Test func aRequestAnsweredWith428SpendsNoNonceAndAnAcceptedOneIsNeverReplayed() async throws {
        try await Self.app().test(.live) { client in
            // The same tokenless request twice: 428 both times (its nonce was not recorded).
            let tokenless = try Self.signed("/basic/x")
            #expect(Self.code(try await client.execute(uri: "/basic/x", method: .get, headers: tokenless)) == 80)
            let again = try await client.execute(uri: "/basic/x", method: .get, headers: tokenless)
            #expect(again.status == .preconditionRequired && Self.code(again) == 80)
            let (_, token) = try await Self.attest(client, challenge: try #require(again.headers[Self.challengeField]))
            // An accepted request, replayed: refused, the nonce recorded once the token passed.
            let accepted = try Self.signed("/basic/x", token: try #require(token))
            #expect(try await client.execute(uri: "/basic/x", method: .get, headers: accepted).status == .ok)
            let replayed = try await client.execute(uri: "/basic/x", method: .get, headers: accepted)
            #expect(replayed.status == .unauthorized && Self.code(replayed) == 23)
        }
    }

    /// Under a policy whose fallback asks for attestation, the endpoint's own requests are still
    /// verified as any signed request: a replayed attest request is refused.
    @Test func theEndpointsNoncesAreRecordedWhateverThePolicyAsks() async throws {
        var attested = RouteRequirements.require
        attested[RouteAttestation.self] = .require(.level(0))
        let verifier = try Verifier(keys: KeySet([Self.client.publicOnly()]), replayGuard: InMemoryReplayGuard())
        let gate = try AttestationGate(attestor: Attestor(keys: Self.keys, redemptions: InMemoryRedemptionStore()),
                                       challenges: [try ChallengePolicy(difficulty: 12, count: 1, levels: .level(0))])
        let router = Router(context: BasicSignatureRequestContext.self)
        router.add(middleware: SignatureMiddleware(verifier: verifier, origin: Self.origin, policy: RoutePolicy([], fallback: attested),
                                                   attestation: gate))
        router.get("/x") { _, _ in "reached" }
        try await Application(router: router).test(.live) { client in
            let first = try await client.execute(uri: "/x", method: .get, headers: Self.signed("/x"))
            let challenge = try Challenge(parsing: try #require(first.headers[Self.challengeField]))
            let body = AttestRequest(challenge: challenge, answer: ProofOfWork.smallestAnswer(for: challenge)).body
            let headers = try Self.signed(AttestationGate.defaultEndpoint, method: .post, body: body)
            let redeemed = try await client.execute(uri: AttestationGate.defaultEndpoint, method: .post, headers: headers, body: ByteBuffer(bytes: body))
            #expect(redeemed.status == .ok)
            let replayed = try await client.execute(uri: AttestationGate.defaultEndpoint, method: .post, headers: headers, body: ByteBuffer(bytes: body))
            #expect(replayed.status == .unauthorized && Self.code(replayed) == 23)
        }
    }

    @Test func aRouteAskingAttestationWithoutAGateFailsClosed() async throws {
        var attested = RouteRequirements.require
        attested[RouteAttestation.self] = .require(.level(0))
        let router = Router(context: BasicSignatureRequestContext.self)
        let verifier = try Verifier(keys: KeySet([Self.client.publicOnly()]), replayGuard: InMemoryReplayGuard())
        router.add(middleware: SignatureMiddleware(verifier: verifier, origin: Self.origin, policy: RoutePolicy([], fallback: attested)))
        router.get("/x") { _, _ in "reached" }
        try await Application(router: router).test(.live) { client in
            let response = try await client.execute(uri: "/x", method: .get, headers: Self.signed("/x"))
            #expect(response.status == .internalServerError && Self.code(response) == 60)
        }
    }

    @Test func requestsWithoutTokensWriteNothing() async throws {
        let store = InMemoryRedemptionStore()
        // The server's clock stands still: the requests are signed by it too, however long 200 of them take.
        let clock = Clock()
        try await Self.app(store: store, clock: clock).test(.live) { client in
            for _ in 0..<200 {
                let response = try await client.execute(uri: "/basic/x", method: .get, headers: Self.signed("/basic/x", clock: clock))
                #expect(response.status == .preconditionRequired)
            }
            // Bad answers write nothing either.
            let first = try await client.execute(uri: "/basic/x", method: .get, headers: Self.signed("/basic/x", clock: clock))
            let challenge = try Challenge(parsing: try #require(first.headers[Self.challengeField]))
            let body = AttestRequest(challenge: challenge, answer: Array(repeating: 0xFF, count: 16)).body
            let wrong = try await client.execute(uri: AttestationGate.defaultEndpoint, method: .post,
                                                 headers: Self.signed(AttestationGate.defaultEndpoint, method: .post, body: body, clock: clock),
                                                 body: ByteBuffer(bytes: body))
            #expect(Self.code(wrong) == 87)
        }
        #expect(store.count == 0)
    }
}
