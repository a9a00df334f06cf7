import Foundation
import Logging
import PostgresNIO
import SignCore
import SignPostgres
import SignTestSupport
import Testing

/// The PostgreSQL replay guard against a real server started for each test.
@Suite(.serialized) struct PostgresReplayGuardTests {
    static let logger = Logger(label: "pg-guard", factory: { _ in SwiftLogNoOpLogHandler() })

    static func code(_ body: () async throws -> Void) async -> SignCoreError.Code? {
        do { try await body() } catch let error as SignCoreError { return error.code } catch { return nil }
        return nil
    }

    /// A fresh nonce recorded by `guard_`: nil when accepted, else the refusal's code.
    static func recordFresh(_ guard_: PostgresReplayGuard) async -> SignCoreError.Code? {
        await code { try await guard_.record(keyID: "k", nonce: .random(), expires: 2_000_000_000, now: 1_999_999_000) }
    }

    /// Whether fresh records are accepted again within 20 s (the server back, the pool reconnected).
    static func recovers(_ guard_: PostgresReplayGuard) async throws -> Bool {
        for _ in 0..<100 {
            if await recordFresh(guard_) == nil { return true }
            try await Task.sleep(for: .milliseconds(200))
        }
        return false
    }

    /// Two guards (two nodes, each with its own connection pool) on one server: 10,000 nonces,
    /// each recorded by both at once, are accepted exactly once; and a nonce is keyed by its key.
    @Test func eachNonceIsAcceptedOnceAcrossNodes() async throws {
        let server = try await PostgresServer.start()
        defer { server.stop() }
        try await withPostgresClient(server) { first in
            try await withPostgresClient(server) { second in
                let a = try PostgresReplayGuard(client: first, logger: Self.logger)
                let b = try PostgresReplayGuard(client: second, logger: Self.logger)
                try await a.createSchema()
                try await b.createSchema()  // every node on start: safe to repeat
                let nonces = (0..<10_000).map { _ in Nonce.random() }
                let accepted = try await withThrowingTaskGroup(of: Int.self) { group in
                    for (index, nonce) in nonces.enumerated() {
                        for node in [a, b] {
                            group.addTask {
                                let key = index % 2 == 0 ? "key-even" : "key-odd"
                                return await Self.code { try await node.record(keyID: key, nonce: nonce, expires: 2_000_000_000, now: 1_999_999_000) } == nil ? 1 : 0
                            }
                        }
                    }
                    return try await group.reduce(0, +)
                }
                #expect(accepted == nonces.count)
                let batching = [a.batching, b.batching]
                #expect(batching.map(\.records).reduce(0, +) == 2 * nonces.count)
                #expect(batching.map(\.statements).reduce(0, +) < nonces.count, "concurrent records share statements: \(batching)")
                // The same nonce under another key is another pair.
                #expect(await Self.code { try await a.record(keyID: "key-other", nonce: nonces[0], expires: 2_000_000_000, now: 1_999_999_000) } == nil)
                #expect(await Self.code { try await b.record(keyID: "key-even", nonce: nonces[0], expires: 2_000_000_000, now: 1_999_999_000) } == .replayed)
            }
        }
    }

    /// A server that stops answering (every process stopped, connections open): each record is
    /// refused `unavailable` within its timeout, none waits for the server, and records are
    /// accepted again once it goes on.
    @Test func aStalledServerIsRefusedWithinTheTimeout() async throws {
        let server = try await PostgresServer.start()
        defer { try? server.stall(false); server.stop() }
        try await withPostgresClient(server) { client in
            var configuration = PostgresReplayGuard.Configuration()
            configuration.timeout = .seconds(1)
            let guard_ = try PostgresReplayGuard(client: client, configuration: configuration, logger: Self.logger)
            try await guard_.createSchema()
            try await guard_.record(keyID: "k", nonce: .random(), expires: 2_000_000_000, now: 1_999_999_000)
            try server.stall(true)
            // Should a record wait for the server after all, the server goes on after 10 s: a failure, not a hang.
            let watchdog = Task { try await Task.sleep(for: .seconds(10)); try? server.stall(false) }
            defer { watchdog.cancel() }
            let started = ContinuousClock.now
            let outcomes = try await withThrowingTaskGroup(of: (SignCoreError.Code?, Duration).self) { group in
                for index in 0..<100 {
                    group.addTask {
                        try await Task.sleep(for: .milliseconds(30 * index))  // spread over 3 s, each one waiting on its own
                        let begun = ContinuousClock.now
                        let code = await Self.recordFresh(guard_)
                        return (code, ContinuousClock.now - begun)
                    }
                }
                return try await group.reduce(into: [(SignCoreError.Code?, Duration)]()) { $0.append($1) }
            }
            #expect(outcomes.allSatisfy { $0.0 == .unavailable }, "\(Set(outcomes.map { String(describing: $0.0) }))")
            // A batch waits for the one before it: at most two timeouts and some slack.
            #expect(outcomes.allSatisfy { $0.1 < .seconds(3) }, "slowest: \(outcomes.map(\.1).max() ?? .zero)")
            #expect(ContinuousClock.now - started < .seconds(8))
            try server.stall(false)
            let recovered = try await Self.recovers(guard_)
            #expect(recovered, "records are accepted again once the server goes on")
        }
    }

    @Test func expiredRowsLeaveAndAClockStepBackIsRefused() async throws {
        let server = try await PostgresServer.start()
        defer { server.stop() }
        try await withPostgresClient(server) { client in
            var configuration = PostgresReplayGuard.Configuration()
            configuration.retention = 10
            configuration.sweepInterval = 1
            let guard_ = try PostgresReplayGuard(client: client, configuration: configuration, logger: Self.logger)
            try await guard_.createSchema()
            for i in 0..<100 { try await guard_.record(keyID: "k", nonce: .random(), expires: 1000 + Int64(i), now: 990) }
            #expect(try await guard_.removeExpired(before: 1050) == 50)
            #expect(try await guard_.removeExpired(before: 1050) == 0)
            // A token expiring before what was swept could be a replay the store forgot.
            #expect(await Self.code { try await guard_.record(keyID: "k", nonce: .random(), expires: 1040, now: 1030) } == .expired)
            // Records sweep on their own: now 2000 − retention 10 removes every row left.
            try await guard_.record(keyID: "k", nonce: .random(), expires: 2060, now: 2000)
            var rows = -1
            for _ in 0..<50 where rows != 1 {
                try await Task.sleep(for: .milliseconds(100))
                rows = try await client.query("SELECT count(*) FROM signcore_nonces", logger: Self.logger).decode(Int.self).first { _ in true } ?? -1
            }
            #expect(rows == 1)
        }
    }

    /// The server stops: every record is refused `unavailable` (none accepted) within the
    /// timeout; it comes back: records are accepted again, without a restart.
    @Test func failsClosedAndRecovers() async throws {
        let server = try await PostgresServer.start()
        defer { server.stop() }
        try await withPostgresClient(server) { client in
            var configuration = PostgresReplayGuard.Configuration()
            configuration.timeout = .seconds(1)
            let guard_ = try PostgresReplayGuard(client: client, configuration: configuration, logger: Self.logger)
            try await guard_.createSchema()
            try await guard_.record(keyID: "k", nonce: .random(), expires: 2_000_000_000, now: 1_999_999_000)
            try await server.kill()
            let started = ContinuousClock.now
            let outcomes = try await withThrowingTaskGroup(of: SignCoreError.Code?.self) { group in
                for _ in 0..<200 {
                    group.addTask { await Self.recordFresh(guard_) }
                }
                return try await group.reduce(into: [SignCoreError.Code?]()) { $0.append($1) }
            }
            #expect(outcomes.allSatisfy { $0 == .unavailable }, "\(Set(outcomes.map { "\(String(describing: $0))" }))")
            #expect(ContinuousClock.now - started < .seconds(10))
            try await server.startAgain()
            let recovered = try await Self.recovers(guard_)
            #expect(recovered, "records are accepted again once the server is back")
        }
    }

    @Test func tableNamesAreCheckedIdentifiers() async throws {
        let client = PostgresClient(configuration: .init(host: "127.0.0.1", port: 1, username: "x", password: nil, database: nil, tls: .disable))
        for name in ["nonces; DROP TABLE x", "Nonces", "1nonces", "a.b.c", "", "schema.", String(repeating: "a", count: 64)] {
            var configuration = PostgresReplayGuard.Configuration()
            configuration.table = name
            #expect(throws: SignCoreError.self, "\(name)") { _ = try PostgresReplayGuard(client: client, configuration: configuration, logger: Self.logger) }
        }
        var configuration = PostgresReplayGuard.Configuration()
        configuration.table = "signcore.nonces_v1"
        _ = try PostgresReplayGuard(client: client, configuration: configuration, logger: Self.logger)
    }
}
