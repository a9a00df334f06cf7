import Logging
import PostgresNIO
import SignAttest
import SignCore
import SignPostgres
import SignTestSupport
import Testing

/// Redeemed challenges on a real PostgreSQL server shared by two nodes (docs/ATTEST.md §4.3
/// step 8): one atomic insert, never read-then-write.
@Suite(.serialized) struct PostgresRedemptionStoreTests {
    static let logger = Logger(label: "pg-redemptions", factory: { _ in SwiftLogNoOpLogHandler() })

    /// Two nodes, each with its own pool, redeem the same 500 challenges at once, each challenge
    /// by both: exactly one redemption of each succeeds; a row is never taken over.
    @Test func eachChallengeIsRedeemedOnceAcrossNodes() async throws {
        let server = try await PostgresServer.start()
        defer { server.stop() }
        try await withPostgresClient(server) { first in
            try await withPostgresClient(server) { second in
                let a = try PostgresRedemptionStore(client: first, logger: Self.logger)
                let b = try PostgresRedemptionStore(client: second, logger: Self.logger)
                try await a.createSchema()
                try await b.createSchema()
                let ids = (0..<500).map { SHA256Hasher.hash(Array("challenge \($0)".utf8)) }
                let recorded = try await withThrowingTaskGroup(of: Int.self) { group in
                    for id in ids {
                        for node in [a, b] {
                            group.addTask { try await node.redeem(id, expiresAt: 2_000_000_000_000, now: 1_999_999_000_000) ? 1 : 0 }
                        }
                    }
                    return try await group.reduce(0, +)
                }
                #expect(recorded == ids.count)
                // A row is never taken over, even once its challenge has expired (a node with a
                // larger skew would redeem it twice); it leaves when swept.
                #expect(try await !a.redeem(ids[0], expiresAt: 2_000_000_000_000, now: 1_999_999_999_999))
                #expect(try await !b.redeem(ids[0], expiresAt: 2_000_000_100_000, now: 2_000_000_050_000))
                #expect(try await a.removeExpired(before: 2_000_000_000_001) == ids.count)
                #expect(try await b.redeem(ids[0], expiresAt: 2_000_000_100_000, now: 2_000_000_050_000))
            }
        }
    }

    /// Two attestors (two nodes) sharing the store, one attest request sent to both at once:
    /// exactly one token.
    @Test func oneChallengeRedeemedAtTwoNodesAtOnceGivesOneToken() async throws {
        let server = try await PostgresServer.start()
        defer { server.stop() }
        let keys = try AttestationKeys([SigningKey.hmac(secret: Array(repeating: 1, count: 32), id: "c"), SigningKey.generate(.ed25519, id: "t")])
        let client = try SigningKey.generate(.ed25519)
        try await withPostgresClient(server) { first in
            try await withPostgresClient(server) { second in
                let stores = [try PostgresRedemptionStore(client: first, logger: Self.logger),
                              try PostgresRedemptionStore(client: second, logger: Self.logger)]
                try await stores[0].createSchema()
                let nodes = try stores.map { try Attestor(keys: keys, redemptions: $0) }
                let now = UInt64(SystemClock.milliseconds())
                for _ in 0..<20 {
                    let challenge = try nodes[0].challenge(ChallengePolicy(difficulty: 12, count: 1, levels: .level(0)),
                                                           keyThumbprint: client.thumbprint.bytes, origin: "https://api.example.com", now: now)
                    let body = AttestRequest(challenge: challenge, answer: ProofOfWork.smallestAnswer(for: challenge)).body
                    let outcomes = await withTaskGroup(of: SignCoreError.Code?.self) { group in
                        for node in nodes {
                            group.addTask {
                                do throws(SignCoreError) {
                                    _ = try await node.redeem(body, keyThumbprint: client.thumbprint.bytes, origin: "https://api.example.com", now: now + 1)
                                    return nil
                                } catch { return error.code }
                            }
                        }
                        return await group.reduce(into: []) { $0.append($1) }
                    }
                    #expect(outcomes.filter { $0 == nil }.count == 1 && outcomes.contains(SignCoreError.Code.challengeRedeemed), "\(outcomes)")
                }
            }
        }
    }

    /// The server stops: a redemption is refused `unavailable` within the timeout, never recorded
    /// as done.
    @Test func failsClosed() async throws {
        let server = try await PostgresServer.start()
        defer { server.stop() }
        try await withPostgresClient(server) { client in
            var configuration = PostgresRedemptionStore.Configuration()
            configuration.timeout = .seconds(1)
            let store = try PostgresRedemptionStore(client: client, configuration: configuration, logger: Self.logger)
            try await store.createSchema()
            try await server.kill()
            let refused: SignCoreError.Code?
            do throws(SignCoreError) { _ = try await store.redeem(SHA256Hasher.hash([1]), expiresAt: 2, now: 1); refused = nil } catch { refused = error.code }
            #expect(refused == .unavailable)
            try await server.startAgain()
        }
    }
}
