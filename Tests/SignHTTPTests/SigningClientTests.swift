import HTTPTypes
import SignCore
@testable import SignHTTP
import Testing

/// The client core's loop: what each policy decision does to the next attempt and to what the
/// caller gets. The transport here answers from a script, so each decision can be driven; the
/// adapters over real libraries and servers are tested in SignClientTests and SignGatewayTests.
@Suite struct SigningClientTests {
    static let key = try! SigningKey.hmac(secret: (0..<32).map { UInt8($0) }, id: "client-test")

    /// Answers each attempt with the next scripted response and records what was sent and what
    /// was discarded.
    final class ScriptedTransport: SignedTransport, @unchecked Sendable {
        var script: [(HTTPResponse, [[UInt8]])]
        var sent: [HTTPRequest] = []
        var discarded = 0

        init(_ script: [(HTTPResponse, [[UInt8]])]) { self.script = script }

        func send(_ request: HTTPRequest) async throws -> (HTTPResponse, [[UInt8]]) {
            sent.append(request)
            return script.isEmpty ? (HTTPResponse(status: .ok), []) : script.removeFirst()
        }

        func peek(_ body: [[UInt8]], upTo limit: Int) async throws -> (bytes: [UInt8], isComplete: Bool, body: [[UInt8]]) {
            let chunks = AsyncChunks(chunks: body)
            let (bytes, isComplete, rest) = try await PeekedChunks.peek(chunks, upTo: limit, count: { $0.count }, bytes: { Array($0.prefix($1)) })
            var again: [[UInt8]] = []
            for try await chunk in rest { again.append(chunk) }
            return (bytes, isComplete, again)
        }

        func discard(_ body: [[UInt8]]) async { discarded += 1 }

        var direct: any DirectTransport { NoDirectRequests() }
    }

    /// These tests' policies send no requests of their own.
    struct NoDirectRequests: DirectTransport {
        func send(_ request: HTTPRequest, body: [UInt8]) async throws -> (HTTPResponse, [UInt8]) {
            throw SignCoreError(.invalidConfiguration, "no direct requests here")
        }
    }

    struct AsyncChunks: AsyncSequence {
        let chunks: [[UInt8]]
        func makeAsyncIterator() -> Iterator { Iterator(rest: chunks[...]) }
        struct Iterator: AsyncIteratorProtocol {
            var rest: ArraySlice<[UInt8]>
            mutating func next() async throws -> [UInt8]? { rest.popFirst() }
        }
    }

    /// A policy written outside SignHTTP's sources, as a challenge flow would be: it reads a 428's
    /// body, keeps what it learnt for the origin, and answers with a field.
    struct ChallengePolicy: ExchangePolicy {
        enum Solved: OriginStateKey { typealias Value = String }
        static let answer = HTTPField.Name("x-answer")!

        func bodyLimit(for response: HTTPResponse) -> Int { response.status.code == 428 ? 16 : 0 }

        func decide(_ exchange: Exchange) async -> ExchangeDecision {
            guard exchange.response.status.code == 428 else { return .deliver }
            guard exchange.bodyIsComplete else { return .fail(SignCoreError(.invalidInput, "the challenge is too long")) }
            let answer = String(decoding: exchange.body.reversed(), as: UTF8.self)
            exchange.origin[Solved.self] = answer
            var fields = HTTPFields()
            fields[Self.answer] = answer
            return .retry(after: .zero, setting: fields)
        }
    }

    func request(_ authority: String = "api.example.com") -> HTTPRequest {
        HTTPRequest(method: .get, scheme: "https", authority: authority, path: "/v1/orders")
    }

    @Test func a503IsRetriedSignedAfreshUntilTheAttemptsAreSpent() async throws {
        let busy = HTTPResponse(status: .serviceUnavailable, headerFields: [.retryAfter: "0"])
        let transport = ScriptedTransport(Array(repeating: (busy, [Array("busy".utf8)]), count: 5))
        let client = SigningClient(signer: try Signer(key: Self.key), policies: [RetryPolicy(maxAttempts: 3)])
        let (response, body) = try await client.send(request(), bodyWHash: WHash.ofEmptyBody, through: transport)
        #expect(response.status.code == 503 && body == [Array("busy".utf8)], "the last response, with its body")
        #expect(transport.sent.count == 3 && transport.discarded == 2)
        let tokens = Set(transport.sent.compactMap { $0.headerFields[SignHeaderNames.standard.wtoken] })
        #expect(tokens.count == 3, "every attempt signed afresh")
    }

    /// A 503 is sent again only when nothing can have been done twice: a verifier's own refusal
    /// (overloaded, unavailable), or an idempotent method; an upstream's 503 of a POST is delivered.
    @Test func a503OfAPostIsRetriedOnlyWhenTheVerifierRefusedIt() async throws {
        let client = SigningClient(signer: try Signer(key: Self.key))
        let bare = HTTPResponse(status: .serviceUnavailable, headerFields: [.retryAfter: "0"])
        var refusal = Refusal(SignCoreError(.unavailable, "the replay store could not record the nonce"), retryAfter: 0).response
        refusal.headerFields[.retryAfter] = "0"
        for (method, response, attempts) in [(HTTPRequest.Method.post, bare, 1), (.post, refusal, 2), (.patch, bare, 1), (.put, bare, 2),
                                             (.get, bare, 2), (.delete, bare, 2)] {
            let transport = ScriptedTransport([(response, [])])
            var request = request()
            request.method = method
            _ = try await client.send(request, bodyWHash: WHash.ofEmptyBody, through: transport)
            #expect(transport.sent.count == attempts, "\(method) \(response.headerFields[Refusal.errorField] ?? "bare")")
        }
    }

    @Test func aPolicyReadsTheBodySetsAFieldAndKeepsStateForTheOrigin() async throws {
        let challenge = HTTPResponse(status: HTTPResponse.Status(code: 428))
        let transport = ScriptedTransport([(challenge, [Array("ab".utf8), Array("c".utf8)]),
                                           (HTTPResponse(status: .serviceUnavailable, headerFields: [.retryAfter: "0"]), []),
                                           (HTTPResponse(status: .ok), [Array("done".utf8)])])
        let client = SigningClient(signer: try Signer(key: Self.key, coveredHeaders: ["x-answer"]),
                                   policies: [ChallengePolicy(), RetryPolicy()])
        let (response, body) = try await client.send(request(), bodyWHash: WHash.ofEmptyBody, through: transport)
        #expect(response.status == .ok && body == [Array("done".utf8)])
        #expect(transport.sent.map { $0.headerFields[ChallengePolicy.answer] } == [nil, "cba", nil], "set on the next attempt only")
        #expect(try client.originState(for: request())[ChallengePolicy.Solved.self] == "cba")
        #expect(try client.originState(for: request("API.example.com"))[ChallengePolicy.Solved.self] == "cba", "origins are case-blind")
        #expect(try client.originState(for: request("other.example.com"))[ChallengePolicy.Solved.self] == nil)

        // The answer is covered by the signature: a verifier accepts the attempt that carried it.
        let verifier = try Verifier(keys: KeySet([Self.key]), replayGuard: InMemoryReplayGuard(capacity: 1000, maxShare: 1))
        var received = transport.sent[1]
        received.scheme = nil
        let verified = try await verifier.verify(ReceivedRequest(received, origin: ServerOrigin(scheme: "https")))
        #expect(verified.keyID == "client-test")
    }

    @Test func aBodyPeekedButDeliveredArrivesWhole() async throws {
        let long = (0..<10).map { [UInt8](repeating: UInt8($0), count: 7) }
        let transport = ScriptedTransport([(HTTPResponse(status: HTTPResponse.Status(code: 428)), long)])
        let client = SigningClient(signer: try Signer(key: Self.key), policies: [ChallengePolicy()])
        await #expect(throws: SignCoreError(.invalidInput, "the challenge is too long")) {
            _ = try await client.send(request(), bodyWHash: WHash.ofEmptyBody, through: transport)
        }
        #expect(transport.discarded == 1)

        struct Reader: ExchangePolicy {
            func bodyLimit(for response: HTTPResponse) -> Int { 20 }
            func decide(_ exchange: Exchange) async -> ExchangeDecision {
                exchange.body.count == 20 && !exchange.bodyIsComplete ? .deliver : .fail(SignCoreError(.invalidInput, "wrong peek"))
            }
        }
        let reading = ScriptedTransport([(HTTPResponse(status: .ok), long)])
        let (_, body) = try await SigningClient(signer: try Signer(key: Self.key), policies: [Reader()])
            .send(request(), bodyWHash: WHash.ofEmptyBody, through: reading)
        #expect(body == long, "every chunk delivered after the peek")
    }

    @Test func maxAttemptsBoundsAPolicyThatAlwaysRetries() async throws {
        struct Forever: ExchangePolicy {
            func decide(_ exchange: Exchange) async -> ExchangeDecision { .retry(after: .zero) }
        }
        let transport = ScriptedTransport([])
        let client = SigningClient(signer: try Signer(key: Self.key), policies: [Forever()], maxAttempts: 4)
        let (response, _) = try await client.send(request(), bodyWHash: WHash.ofEmptyBody, through: transport)
        #expect(response.status == .ok && transport.sent.count == 4)
    }

    @Test func theClockOffsetMovesEveryTokensCreationTime() async throws {
        let client = SigningClient(signer: try Signer(key: Self.key, clock: { 1_800_000_000 }), policies: [])
        client.clockOffset = -600
        #expect(client.signer.clock() == 1_800_000_000 - 600)
        let transport = ScriptedTransport([])
        _ = try await client.send(request(), bodyWHash: WHash.ofEmptyBody, through: transport)
        var received = transport.sent[0]
        received.scheme = nil
        for (now, accepted) in [(Int64(1_800_000_000 - 600), true), (1_800_000_000, false)] {
            let verifier = try Verifier(keys: KeySet([Self.key]), replayGuard: InMemoryReplayGuard(capacity: 1000, maxShare: 1), clock: { now })
            let verified = try? await verifier.verify(ReceivedRequest(received, origin: ServerOrigin(scheme: "https")))
            #expect((verified != nil) == accepted)
        }
    }

    @Test func aRequestWithoutAnOriginIsRefused() async throws {
        let client = SigningClient(signer: try Signer(key: Self.key))
        let transport = ScriptedTransport([])
        await #expect(throws: SignCoreError.self) {
            _ = try await client.send(HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/"), bodyWHash: WHash.ofEmptyBody,
                                      through: transport)
        }
        #expect(transport.sent.isEmpty)
    }

    @Test func aURLStringIsSplitAsItIsWritten() throws {
        for (url, authority, path) in [("https://api.example.com/a?b#c", "api.example.com", "/a?b#c"),
                                       ("http://[::1]:8080", "[::1]:8080", "/"),
                                       ("https://h?q=1", "h", "/?q=1"),
                                       ("https://h/p@q", "h", "/p@q")] {
            let request = try HTTPRequest(method: .get, urlString: url)
            #expect(request.authority == authority && request.path == path, "\(url)")
        }
        #expect(throws: SignCoreError.self) { try HTTPRequest(method: .get, urlString: "/relative") }
        #expect(throws: SignCoreError.self) { try HTTPRequest(method: .get, urlString: "://h/") }
        #expect(throws: SignCoreError.self) { try HTTPRequest(method: .get, urlString: "https://user:secret@h/p") }
    }
}
