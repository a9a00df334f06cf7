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
import OpenAPIRuntime
import SignAsyncHTTPClient
@_spi(SignCoreTools) import SignCore
import SignAttest
import SignHTTP
import SignHummingbird
import SignOpenAPI
import SignTestSupport
import SignURLSession
import Testing

/// The seed flow (docs/ATTEST.md) with every client kind against a real Hummingbird server on
/// loopback: 428 → solve → attest → retry → 200, with no 428 handling written by the caller;
/// what the server counted (redemptions, 428s sent) says what the clients did.
@Suite struct AttestationClientsTests {
    static let keys = try! AttestationKeys([SigningKey.hmac(secret: Array(repeating: 5, count: 32), id: "challenge-1"),
                                            SigningKey.generate(.ed25519, id: "token-1")])

    /// What the server saw: redemptions recorded, and 428s sent on routes other than the endpoint.
    final class Counts: Sendable {
        let state = Locked<(redeemed: Int, challenged: Int)>((0, 0))
        var redeemed: Int { state.withLock { $0.redeemed } }
        var challenged: Int { state.withLock { $0.challenged } }
    }

    struct CountingStore: RedemptionStore {
        let store = InMemoryRedemptionStore()
        let counts: Counts
        func redeem(_ id: SHA256Digest, expiresAt: UInt64, now: UInt64) async throws(SignCoreError) -> Bool {
            let recorded = try await store.redeem(id, expiresAt: expiresAt, now: now)
            if recorded { counts.state.withLock { $0.redeemed += 1 } }
            return recorded
        }
    }

    struct CountChallenges<Context: SignatureRequestContext>: RouterMiddleware {
        let counts: Counts
        func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
            let response = try await next(request, context)
            if response.status == .preconditionRequired, !request.uri.path.hasPrefix("/.well-known") {
                counts.state.withLock { $0.challenged += 1 }
            }
            return response
        }
    }

    static func application(clients: [SigningKey], counts: Counts, tokenTTL: Int = 900) throws -> some ApplicationProtocol {
        let verifier = try Verifier(keys: KeySet(clients.map { try $0.publicOnly() }), replayGuard: InMemoryReplayGuard())
        var basic = RouteRequirements(signature: .require, body: .buffered(limit: 4 << 20))
        basic[RouteAttestation.self] = .require(.level(0))
        var strong = RouteRequirements.require
        strong[RouteAttestation.self] = .require([.level(0), .level(1)])
        var second = RouteRequirements.require
        second[RouteAttestation.self] = .require(.level(1))
        let policy = try RoutePolicy([.init("/basic/**", basic), .init("/strong/**", strong), .init("/second/**", second)], fallback: .require)
        let gate = try AttestationGate(attestor: Attestor(keys: keys, redemptions: CountingStore(counts: counts), tokenTTL: tokenTTL),
                                       challenges: [try ChallengePolicy(difficulty: 12, count: 2, levels: .level(0)),
                                                    try ChallengePolicy(difficulty: 12, count: 2, levels: .level(1))])
        let router = Router(context: BasicSignatureRequestContext.self)
        router.add(middleware: CountChallenges(counts: counts))
        router.add(middleware: SignatureMiddleware(verifier: verifier, origin: ServerOrigin(scheme: "http"), policy: policy,
                                                   body: .buffered(limit: 4 << 20), attestation: gate))
        for path in ["/basic/x", "/strong/x", "/second/x"] {
            router.get(RouterPath(stringLiteral: path)) { _, context -> String in "levels \(context.signCore[Attested.self]?.levels.rawValue ?? 0)" }
        }
        router.post("/basic/upload") { request, context -> String in
            let body = try await request.body.collect(upTo: 4 << 20)
            return "levels \(context.signCore[Attested.self]?.levels.rawValue ?? 0) bytes \(body.readableBytes)"
        }
        router.get("/own428") { _, _ in Response(status: .preconditionRequired) }
        return Application(router: router)
    }

    static func client(_ key: SigningKey, clockOffset: Int64 = 0, renewal: Double = 0.8) throws -> SigningClient {
        try SigningClient(signer: Signer(key: key, clock: { SystemClock.seconds() + clockOffset }),
                          attestation: AttestationPolicy(solver: ProofOfWorkSolver(workers: 2), renewal: renewal))
    }

    @Test func everyClientKindAnswersTheChallengeByItself() async throws {
        let keys = try (0..<3).map { _ in try SigningKey.generate(.ed25519) }
        let counts = Counts()
        try await Self.application(clients: keys, counts: counts).test(.live) { server in
            let base = "http://127.0.0.1:\(try #require(server.port))"
            let http = HTTPClient(eventLoopGroupProvider: .singleton)
            defer { _ = http.shutdown() }

            let viaAHC = try await http.execute(HTTPClientRequest(url: base + "/basic/x"), client: Self.client(keys[0]), timeout: .seconds(10))
            let ahcBody = try await viaAHC.body.collect(upTo: 1024)
            #expect(viaAHC.status == .ok && String(buffer: ahcBody) == "levels 1")

            let url = try #require(URL(string: base + "/basic/x"))
            let (data, response) = try await URLSession.shared.signedData(for: HTTPRequest(method: .get, url: url), client: Self.client(keys[1]))
            #expect(response.status == .ok && String(decoding: data, as: UTF8.self) == "levels 1")

            let (head, body) = try await SigningMiddleware(client: Self.client(keys[2])).intercept(
                HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/basic/x"), body: nil,
                baseURL: try #require(URL(string: base)), operationID: "basic", next: openAPITransport(http))
            #expect(head.status == .ok)
            #expect(try await String(collecting: try #require(body), upTo: 1024) == "levels 1")
        }
        #expect(counts.redeemed == 3 && counts.challenged == 3)
    }

    @Test func twentyConcurrentRequestsShareOneAttestation() async throws {
        let key = try SigningKey.generate(.ed25519)
        let counts = Counts()
        try await Self.application(clients: [key], counts: counts).test(.live) { server in
            let base = "http://127.0.0.1:\(try #require(server.port))"
            let http = HTTPClient(eventLoopGroupProvider: .singleton)
            defer { _ = http.shutdown() }
            let client = try Self.client(key)
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<20 {
                    group.addTask { Int(try await http.execute(HTTPClientRequest(url: base + "/basic/x"), client: client, timeout: .seconds(20)).status.code) }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(statuses == Array(repeating: 200, count: 20))
        }
        #expect(counts.redeemed == 1)
    }

    @Test func twoChainedChallengesForTwoLevels() async throws {
        let key = try SigningKey.generate(.ed25519)
        let counts = Counts()
        try await Self.application(clients: [key], counts: counts).test(.live) { server in
            let http = HTTPClient(eventLoopGroupProvider: .singleton)
            defer { _ = http.shutdown() }
            let response = try await http.execute(HTTPClientRequest(url: "http://127.0.0.1:\(try #require(server.port))/strong/x"),
                                                  client: Self.client(key), timeout: .seconds(10))
            let body = try await response.body.collect(upTo: 1024)
            #expect(response.status == .ok && String(buffer: body) == "levels 3")
        }
        #expect(counts.redeemed == 2 && counts.challenged == 2)
    }

    @Test func aTokenIsRenewedBeforeItExpiresWithNoRequestRefused() async throws {
        let key = try SigningKey.generate(.ed25519)
        let counts = Counts()
        try await Self.application(clients: [key], counts: counts, tokenTTL: 5).test(.live) { server in
            let base = "http://127.0.0.1:\(try #require(server.port))"
            let http = HTTPClient(eventLoopGroupProvider: .singleton)
            defer { _ = http.shutdown() }
            // Renewed at half its TTL: the 2.5 s left cover a renewal (a proof of work) on a loaded
            // machine, where the default 1 s (at 0.8) did not always.
            let client = try Self.client(key, renewal: 0.5)
            // 11 s of requests, a token lasting 5 s: renewed in the background every 2.5 s, twice at least.
            let end = ContinuousClock.now + .seconds(11)
            var sent = 0
            while ContinuousClock.now < end {
                let response = try await http.execute(HTTPClientRequest(url: base + "/basic/x"), client: client, timeout: .seconds(10))
                #expect(response.status == .ok)
                sent += 1
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(sent >= 10)
        }
        #expect(counts.redeemed >= 3)
        #expect(counts.challenged == 1, "only the first request met a 428: every renewal ran before its token expired")
    }

    @Test func aClientTenMinutesOffGetsThroughAfterOneRoundTrip() async throws {
        let key = try SigningKey.generate(.ed25519)
        let counts = Counts()
        try await Self.application(clients: [key], counts: counts).test(.live) { server in
            let http = HTTPClient(eventLoopGroupProvider: .singleton)
            defer { _ = http.shutdown() }
            for offset: Int64 in [600, -600] {
                let client = try Self.client(key, clockOffset: offset)
                let url = "http://127.0.0.1:\(try #require(server.port))/basic/x"
                let response = try await http.execute(HTTPClientRequest(url: url), client: client, timeout: .seconds(10))
                #expect(response.status == .ok)
                // Healed to within a second or two of the server's clock, for this origin only.
                let learned = client.clockOffset(for: try client.originState(for: HTTPRequest(method: .get, urlString: url)))
                #expect(abs(learned + offset) <= 2, "offset \(learned) for a clock \(offset) s off")
                #expect(client.clockOffset == 0)
            }
            // Five requests at once from a client ten minutes behind: each gets through (the
            // second to be refused finds the clock healed by the first, and signs again too).
            let late = try Self.client(key, clockOffset: -600)
            let statuses = try await withThrowingTaskGroup(of: UInt.self) { group in
                for _ in 0..<5 {
                    group.addTask {
                        try await http.execute(HTTPClientRequest(url: "http://127.0.0.1:\(try #require(server.port))/basic/x"), client: late,
                                               timeout: .seconds(10)).status.code
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(statuses == Array(repeating: 200, count: 5))
        }
    }

    /// Two routes asking different levels, met at once by a new client: both get through, and the
    /// token then holds both levels (the second attestation carried the first token).
    @Test func routesAskingDifferentLevelsAtOnce() async throws {
        let key = try SigningKey.generate(.ed25519)
        let counts = Counts()
        try await Self.application(clients: [key], counts: counts).test(.live) { server in
            let base = "http://127.0.0.1:\(try #require(server.port))"
            let http = HTTPClient(eventLoopGroupProvider: .singleton)
            defer { _ = http.shutdown() }
            let client = try Self.client(key)
            let statuses = try await withThrowingTaskGroup(of: UInt.self) { group in
                for path in ["/basic/x", "/second/x", "/basic/x", "/second/x"] {
                    group.addTask { try await http.execute(HTTPClientRequest(url: base + path), client: client, timeout: .seconds(20)).status.code }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(statuses == [200, 200, 200, 200])
            let both = try await http.execute(HTTPClientRequest(url: base + "/strong/x"), client: client, timeout: .seconds(10))
            let body = try await both.body.collect(upTo: 1024)
            #expect(String(buffer: body) == "levels 3")
        }
        #expect(counts.redeemed == 2, "one attestation per level")
    }

    @Test func attestingAtStartUpHealsTheClock() async throws {
        let key = try SigningKey.generate(.ed25519)
        let counts = Counts()
        try await Self.application(clients: [key], counts: counts).test(.live) { server in
            let base = "http://127.0.0.1:\(try #require(server.port))"
            let http = HTTPClient(eventLoopGroupProvider: .singleton)
            defer { _ = http.shutdown() }
            let client = try Self.client(key, clockOffset: 600)
            #expect(try await client.attest(at: base, through: HTTPClientTransport(http: http)) == .level(0))
        }
        #expect(counts.redeemed == 1)
    }

    @Test func anApplicationsOwn428IsReturnedUntouched() async throws {
        let key = try SigningKey.generate(.ed25519)
        let counts = Counts()
        try await Self.application(clients: [key], counts: counts).test(.live) { server in
            let http = HTTPClient(eventLoopGroupProvider: .singleton)
            defer { _ = http.shutdown() }
            let response = try await http.execute(HTTPClientRequest(url: "http://127.0.0.1:\(try #require(server.port))/own428"),
                                                  client: Self.client(key), timeout: .seconds(10))
            #expect(response.status == .preconditionRequired)
        }
        #expect(counts.redeemed == 0)
    }

    @Test func aLargeUploadIsSentOnlyWithAToken() async throws {
        let key = try SigningKey.generate(.ed25519)
        let counts = Counts()
        try await Self.application(clients: [key], counts: counts, tokenTTL: 1).test(.live) { server in
            let base = "http://127.0.0.1:\(try #require(server.port))"
            let http = HTTPClient(eventLoopGroupProvider: .singleton)
            defer { _ = http.shutdown() }
            let client = try Self.client(key)
            #expect(try await http.execute(HTTPClientRequest(url: base + "/basic/x"), client: client, timeout: .seconds(10)).status == .ok)
            try await Task.sleep(for: .milliseconds(1500))  // the token has expired, and no request renewed it
            var upload = HTTPClientRequest(url: base + "/basic/upload")
            upload.method = .POST
            let big = ByteBuffer(repeating: 7, count: 2 << 20)
            let response = try await http.execute(upload, body: .bytes(big), client: client, timeout: .seconds(20))
            let body = try await response.body.collect(upTo: 1024)
            #expect(String(buffer: body) == "levels 1 bytes 2097152")
        }
        #expect(counts.challenged == 1, "the upload was never refused with a 428")
        #expect(counts.redeemed == 2)
    }

    @Test func attestingAtStartUpSpendsNoRequest() async throws {
        let key = try SigningKey.generate(.ed25519)
        let counts = Counts()
        try await Self.application(clients: [key], counts: counts).test(.live) { server in
            let base = "http://127.0.0.1:\(try #require(server.port))"
            let http = HTTPClient(eventLoopGroupProvider: .singleton)
            defer { _ = http.shutdown() }
            let client = try Self.client(key)
            let levels = try await client.attest(at: base, levels: [.level(0), .level(1)], through: HTTPClientTransport(http: http))
            #expect(levels == [.level(0), .level(1)])
            let response = try await http.execute(HTTPClientRequest(url: base + "/strong/x"), client: client, timeout: .seconds(10))
            #expect(response.status == .ok)
        }
        #expect(counts.challenged == 0 && counts.redeemed == 2)
    }
}
