import AsyncHTTPClient
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HTTPTypes
import HTTPTypesFoundation
import NIOCore
import NIOHTTP1
import OpenAPIRuntime
import PostgresNIO
import SignAsyncHTTPClient
@_spi(SignCoreTools) import SignCore
import SignAttest
@testable import SignGateway
import SignHTTP
import SignOpenAPI
import SignTestSupport
import SignURLSession
import Testing

/// The attestation flow through signd (docs/ATTEST.md, docs/SIGND.md "Attestation"), in front of
/// a real upstream: what reaches the upstream, every code end to end, a fleet on PostgreSQL.
@Suite(.serialized) struct GatewayAttestationTests {
    static let serverKeys: [SigningKey] = [try! SigningKey.hmac(secret: Array(repeating: 0x42, count: 32), id: "challenge-1"),
                                           try! SigningKey.generate(.ed25519, id: "token-1")]
    static let origin = "https://gateway.test"

    /// signd's configuration with attestation: `/basic/**` requires level 0, `/strong/**` levels
    /// 0 and 1 (the second with a minimum time), `/watched/**` monitors level 0.
    static func configuration(upstream: Int, keys: String, attestKeys: String, store: [String: Any] = [:],
                              replay: [String: Any]? = nil, minElapsed: Int = 0, fixedOrigin: Bool = false) -> String {
        var attestation: [String: Any] = ["keys": attestKeys, "challenges": [
            ["levels": [0], "difficulty": 12, "count": 2],
            ["levels": [1], "difficulty": 12, "count": 1, "minElapsed": minElapsed],
        ]]
        attestation.merge(store) { $1 }
        var overrides: [String: Any] = [
            "origin": fixedOrigin ? ["scheme": "https", "authority": "gateway.test"] : ["scheme": "http"],
            "attestation": attestation,
            "policy": ["routes": [
                ["route": "/basic/**", "signature": "require", "attestation": ["mode": "require", "levels": [0]]],
                ["route": "/strong/**", "signature": "require", "attestation": ["mode": "require", "levels": [0, 1]]],
                ["route": "/watched/**", "signature": "require", "attestation": ["mode": "monitor", "levels": [0]]],
            ]],
        ]
        if let replay { overrides["replay"] = replay }
        return GatewayTests.configuration(upstream: upstream, keys: keys, overrides)
    }

    static func files(_ folder: TemporaryFolder, clients: [SigningKey]) throws -> (keys: String, attestKeys: String) {
        (try folder.writeKeys(clients.map { try $0.publicOnly() }), try folder.writeKeys(serverKeys, to: "attest.jwks"))
    }

    static func client(_ key: SigningKey) throws -> SigningClient {
        try SigningClient(signer: Signer(key: key), attestation: AttestationPolicy(solver: ProofOfWorkSolver(workers: 2)))
    }

    @Test func everyClientKindThroughSignd() async throws {
        let folder = try TemporaryFolder()
        let clients = try (0..<3).map { _ in try SigningKey.generate(.ed25519) }
        let (keys, attestKeys) = try Self.files(folder, clients: clients)
        let upstream = Upstream()
        try await upstream.run { upstreamPort in
            try await withGateway(Self.configuration(upstream: upstreamPort, keys: keys, attestKeys: attestKeys)) { port in
                let base = "http://127.0.0.1:\(port)"
                let http = HTTPClient(eventLoopGroupProvider: .singleton)
                defer { _ = http.shutdown() }

                let ahc = try await http.execute(HTTPClientRequest(url: base + "/basic/a"), client: Self.client(clients[0]), timeout: .seconds(20))
                #expect(ahc.status == .ok)

                let url = try #require(URL(string: base + "/basic/b"))
                let (_, response) = try await URLSession.shared.signedData(for: HTTPRequest(method: .get, url: url), client: Self.client(clients[1]))
                #expect(response.status == .ok)

                let (head, _) = try await SigningMiddleware(client: Self.client(clients[2])).intercept(
                    HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/strong/c"), body: nil,
                    baseURL: try #require(URL(string: base)), operationID: "strong", next: openAPITransport(http))
                #expect(head.status == .ok)

                // An upstream's own 428 reaches the client untouched: no challenge, nothing redeemed.
                let own = try await http.execute(HTTPClientRequest(url: base + "/own428"), client: Self.client(clients[0]), timeout: .seconds(20))
                #expect(own.status == .preconditionRequired && own.headers.first(name: "signcore-error") == nil)
                #expect(String(buffer: try await own.body.collect(upTo: 1024)) == "If-Match")
            }
        }
        let records = upstream.all
        // (The upstream's own 428 is answered before it records anything.)
        #expect(records.map(\.path) == ["/basic/a", "/basic/b", "/strong/c"], "the attest endpoint is signd's, never forwarded")
        let attested = records.map { $0.fields.first { $0.hasPrefix("signcore-attestation: ") } }
        #expect(attested == ["signcore-attestation: 1", "signcore-attestation: 1", "signcore-attestation: 3"])
        // The token is spent at signd, as the wtoken is: the upstream could not check its binding.
        #expect(records.allSatisfy { !$0.fields.contains { $0.hasPrefix("attest-token:") } })
    }

    /// A request signed by `key` for `path` on https://gateway.test, sent to `port` with that host.
    static func signed(_ http: HTTPClient, port: Int, _ path: String, method: HTTPMethod = .GET, key: SigningKey,
                       token: String? = nil, body: [UInt8] = []) async throws -> HTTPClientResponse {
        var fields = [HeaderField]()
        if let token { fields.append(HeaderField("attest-token", token)) }
        let signer = try Signer(key: key, coveredHeaders: ["attest-token"])
        let headers = try signer.sign(method: try RequestMethod(token: method.rawValue), url: Self.origin + path, body: body, headers: fields)
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)" + path)
        request.method = method
        request.headers.add(name: "host", value: "gateway.test")
        request.headers.add(name: "whash", value: headers.whash)
        request.headers.add(name: "wtoken", value: headers.wtoken)
        if let token { request.headers.add(name: "attest-token", value: token) }
        if !body.isEmpty { request.body = .bytes(ByteBuffer(bytes: body)) }
        return try await http.execute(request, timeout: .seconds(20))
    }

    /// The `signcore-error` code, advice and `signcore-action` of a response.
    static func refusal(_ response: HTTPClientResponse) -> (code: Int?, advice: String?, action: String?) {
        let field = response.headers.first(name: "signcore-error") ?? ""
        let parameters = field.split(separator: ";").dropFirst()
        let code = parameters.first { $0.hasPrefix("code=") }.flatMap { Int($0.dropFirst(5)) }
        let advice = parameters.first { $0.hasPrefix("advice=") }.map { String($0.dropFirst(7)) }
        return (code, advice, response.headers.first(name: "signcore-action"))
    }

    /// Every code of docs/ATTEST.md §6 a server sends, end to end through signd, with its status,
    /// advice and action: the artefacts are made with the configured server keys where a code
    /// needs a genuine one (an expired token, a token for another origin).
    @Test func everyCodeEndToEnd() async throws {
        let folder = try TemporaryFolder()
        let client = try SigningKey.generate(.ed25519), thief = try SigningKey.generate(.p256)
        let (keys, attestKeys) = try Self.files(folder, clients: [client, thief])
        let attestor = try Attestor(keys: AttestationKeys(Self.serverKeys), redemptions: InMemoryRedemptionStore())
        let now = UInt64(SystemClock.milliseconds())
        let endpoint = AttestationGate.defaultEndpoint
        let upstream = Upstream()
        try await upstream.run { upstreamPort in
            let json = Self.configuration(upstream: upstreamPort, keys: keys, attestKeys: attestKeys, minElapsed: 30_000, fixedOrigin: true)
            try await withGateway(json) { port in
                let http = HTTPClient(eventLoopGroupProvider: .singleton)
                defer { _ = http.shutdown() }
                var seen: [Int: (UInt, String?, String?)] = [:]
                func note(_ response: HTTPClientResponse) -> HTTPClientResponse {
                    let (code, advice, action) = Self.refusal(response)
                    if let code { seen[code] = (response.status.code, advice, action) }
                    return response
                }
                func attest(_ challenge: Challenge, answer: [UInt8]? = nil, key: SigningKey = client, token: String? = nil) async throws -> HTTPClientResponse {
                    let body = AttestRequest(challenge: challenge, answer: answer ?? ProofOfWork.smallestAnswer(for: challenge)).body
                    return note(try await Self.signed(http, port: port, endpoint, method: .POST, key: key, token: token, body: body))
                }
                // 80: no token.
                let first = note(try await Self.signed(http, port: port, "/basic/x", key: client))
                let challenge = try Challenge(parsing: try #require(first.headers.first(name: "attest-challenge")))
                // 81: a token field that is not a token.
                _ = note(try await Self.signed(http, port: port, "/basic/x", key: client, token: "not-a-token"))
                // 82: a challenge whose tag is altered.
                var forged = challenge.bytes
                forged[forged.count - 1] ^= 1
                _ = try await attest(try Challenge(parsing: Base64URL.encode(forged)), answer: ProofOfWork.smallestAnswer(for: challenge))
                // 83: a challenge issued ten minutes ago.
                let old = try attestor.challenge(ChallengePolicy(difficulty: 12, count: 1, levels: .level(0)), keyThumbprint: client.thumbprint.bytes,
                                                 origin: Self.origin, now: now - 600_000)
                let expired = try await attest(old)
                #expect(expired.headers.first(name: "attest-challenge") != nil)
                // 85: a challenge for another origin; 86: redeemed by another key; 87: a wrong answer.
                _ = try await attest(try attestor.challenge(ChallengePolicy(difficulty: 12, count: 1, levels: .level(0)),
                                                            keyThumbprint: client.thumbprint.bytes, origin: "https://elsewhere.test", now: now))
                _ = try await attest(challenge, key: thief)
                _ = try await attest(challenge, answer: Array(repeating: 0xFF, count: 16))
                // 200, then 88: the same challenge again.
                let redeemed = try await attest(challenge)
                #expect(redeemed.status == .ok)
                let token = try AttestResponse(body: Array(buffer: try await redeemed.body.collect(upTo: 4096))).token
                _ = try await attest(challenge)
                // 84: level 1's challenge has a minimum time of 30 s.
                let strong = note(try await Self.signed(http, port: port, "/strong/x", key: client, token: token))
                let next = try Challenge(parsing: try #require(strong.headers.first(name: "attest-challenge")))
                let early = try await attest(next, token: token)
                #expect(early.headers.first(name: "retry-after") == "30" && early.headers.first(name: "attest-challenge") == next.text)
                // 89: a token that expired; 90: one whose signature is altered; 91: another origin's; 92: a stolen one; 93 above.
                let stale = try AttestationToken(levels: .level(0), issuedAt: now - 3_600_000, ttl: 900, keyThumbprint: client.thumbprint.bytes,
                                                 originDigest: AttestationScope.originDigest(Self.origin), key: try AttestationKeys(Self.serverKeys).issuingTokenKey())
                _ = note(try await Self.signed(http, port: port, "/basic/x", key: client, token: stale.text))
                var altered = try AttestationToken(parsing: token).bytes
                altered[altered.count - 1] ^= 1
                _ = note(try await Self.signed(http, port: port, "/basic/x", key: client, token: Base64URL.encode(altered)))
                let elsewhere = try AttestationToken(levels: .level(0), issuedAt: now, ttl: 900, keyThumbprint: client.thumbprint.bytes,
                                                     originDigest: AttestationScope.originDigest("https://elsewhere.test"),
                                                     key: try AttestationKeys(Self.serverKeys).issuingTokenKey())
                _ = note(try await Self.signed(http, port: port, "/basic/x", key: client, token: elsewhere.text))
                _ = note(try await Self.signed(http, port: port, "/basic/x", key: thief, token: token))
                // And the token works where it should.
                #expect(try await Self.signed(http, port: port, "/basic/x", key: client, token: token).status == .ok)
                #expect(seen[94] == nil)
                let expected: [Int: (UInt, String, String?)] = [
                    80: (428, "attest", "challenge"), 81: (400, "fixRequest", "block"), 82: (403, "fixRequest", "block"),
                    83: (428, "attest", "challenge"), 84: (428, "attest", "challenge"), 85: (403, "fixRequest", "block"),
                    86: (403, "fixRequest", "block"), 87: (403, "fixRequest", "block"), 88: (409, "fixRequest", "block"),
                    89: (428, "attest", "challenge"), 90: (428, "attest", "challenge"), 91: (403, "fixRequest", "block"),
                    92: (403, "fixRequest", "block"), 93: (428, "attest", "challenge"),
                ]
                for (code, (status, advice, action)) in expected.sorted(by: { $0.key < $1.key }) {
                    let got = try #require(seen[code], "code \(code) was never answered")
                    #expect(got.0 == status && got.1 == advice && got.2 == action, "code \(code): \(got)")
                }
            }
        }
        #expect(upstream.all.map(\.path) == ["/basic/x"], "only the attested request reached the upstream")
    }

    /// Two signd nodes on one PostgreSQL (replay and redemptions): the same challenge redeemed at
    /// both at once is redeemed once; and 10,000 unsigned requests and 1,000 signed ones without a
    /// token write nothing to either store (challenges are issued statelessly, and the nonce of a
    /// request answered with 428 is not recorded).
    @Test func aFleetOnPostgresRedeemsEachChallengeOnce() async throws {
        let server = try await PostgresServer.start()
        defer { server.stop() }
        let folder = try TemporaryFolder()
        let client = try SigningKey.generate(.ed25519)
        let (keys, attestKeys) = try Self.files(folder, clients: [client])
        let upstream = Upstream()
        try await upstream.run { upstreamPort in
            let json = Self.configuration(upstream: upstreamPort, keys: keys, attestKeys: attestKeys, store: ["store": "postgres"],
                                          replay: GatewayFleetTests.postgresReplay(server), fixedOrigin: true)
            try await withGateway(json) { first in
                try await withGateway(json) { second in
                    let http = HTTPClient(eventLoopGroupProvider: .singleton)
                    defer { _ = http.shutdown() }
                    for round in 0..<10 {
                        let refused = try await Self.signed(http, port: round % 2 == 0 ? first : second, "/basic/x", key: client)
                        let challenge = try Challenge(parsing: try #require(refused.headers.first(name: "attest-challenge")))
                        let body = AttestRequest(challenge: challenge, answer: ProofOfWork.smallestAnswer(for: challenge)).body
                        let statuses = try await withThrowingTaskGroup(of: UInt.self) { group in
                            for port in [first, second] {
                                group.addTask { try await Self.signed(http, port: port, AttestationGate.defaultEndpoint, method: .POST, key: client, body: body).status.code }
                            }
                            return try await group.reduce(into: []) { $0.append($1) }.sorted()
                        }
                        #expect(statuses == [200, 409], "round \(round)")
                    }
                    let redemptions = try await Self.rows(server, "signcore_redemptions")
                    #expect(redemptions == 10)
                    // Only the attest requests' nonces were recorded: a request answered with 428 spends none.
                    let nonces = try await Self.rows(server, "signcore_nonces")
                    #expect(nonces == 20)
                    // Requests without tokens: none writes a redemption.
                    for index in 0..<1_000 {
                        #expect(try await Self.signed(http, port: index % 2 == 0 ? first : second, "/basic/\(index)", key: client).status.code == 428)
                    }
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        for worker in 0..<8 {
                            group.addTask {
                                for index in stride(from: worker, to: 10_000, by: 8) {
                                    var request = HTTPClientRequest(url: "http://127.0.0.1:\(index % 2 == 0 ? first : second)/basic/\(index)")
                                    request.headers.add(name: "host", value: "gateway.test")
                                    let response = try await http.execute(request, timeout: .seconds(20))
                                    guard response.status == .unauthorized else { throw POSIXError(.EPROTO) }
                                }
                            }
                        }
                        try await group.waitForAll()
                    }
                    #expect(try await Self.rows(server, "signcore_redemptions") == redemptions)
                    #expect(try await Self.rows(server, "signcore_nonces") == nonces)
                }
            }
        }
        #expect(upstream.all.isEmpty)
    }

    static func rows(_ server: PostgresServer, _ table: String) async throws -> Int {
        try await withPostgresClient(server) { client in
            let rows = try await client.query(PostgresQuery(unsafeSQL: "SELECT count(*) FROM \(table)"), logger: quietLogger)
            var count = 0
            for try await row in rows { count = try row.decode(Int.self) }
            return count
        }
    }
}
