import Foundation
import Logging
import PostgresNIO
import SignCore
import SignPostgres
import SignTestSupport
import Testing

/// What every store on PostgreSQL shares: schema versions and migrations against a real server,
/// and group commit that fails closed.
@Suite(.serialized) struct PostgresStoreTests {
    static let logger = Logger(label: "pg-store", factory: { _ in SwiftLogNoOpLogHandler() })

    static func code(_ body: () async throws -> Void) async -> SignCoreError.Code? {
        do { try await body() } catch let error as SignCoreError { return error.code } catch { return nil }
        return nil
    }

    static let devices = [
        SchemaMigration(version: 1, statements: ["CREATE TABLE IF NOT EXISTS test_devices (id text PRIMARY KEY)"]),
        SchemaMigration(version: 2, statements: ["ALTER TABLE test_devices ADD COLUMN status text NOT NULL DEFAULT 'active'"]),
    ]

    static func columns(_ store: PostgresStore) async throws -> [String] {
        try await store.rows("SELECT column_name FROM information_schema.columns WHERE table_name = 'test_devices' ORDER BY column_name",
                             "read the columns") { try $0.decode(String.self) }
    }

    @Test func migrationsRunOnceInOrderAndAllOrNothing() async throws {
        let server = try await PostgresServer.start()
        defer { server.stop() }
        try await withPostgresClient(server) { client in
            let store = PostgresStore(client: client, logger: Self.logger)
            #expect(try await store.schemaVersion(component: "devices") == nil)
            // Four nodes starting at once, each migrating: one at a time, each version once.
            try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<4 { group.addTask { try await store.migrate(component: "devices", Array(Self.devices.prefix(1))) } }
                for try await version in group { #expect(version == 1) }
            }
            #expect(try await store.schemaVersion(component: "devices") == 1)
            // A later build: version 2 runs once, again and again safe.
            #expect(try await store.migrate(component: "devices", Self.devices) == 2)
            #expect(try await store.migrate(component: "devices", Self.devices) == 2)
            #expect(try await Self.columns(store) == ["id", "status"])
            // An older build meets the newer schema: refused, not run against it.
            #expect(await Self.code { try await store.migrate(component: "devices", Array(Self.devices.prefix(1))) } == .invalidConfiguration)
            // A migration whose second statement fails changes nothing: the first is rolled back.
            let broken = Self.devices + [SchemaMigration(version: 3, statements: [
                "ALTER TABLE test_devices ADD COLUMN model text", "ALTER TABLE no_such_table ADD COLUMN x text",
            ])]
            #expect(await Self.code { try await store.migrate(component: "devices", broken) } == .unavailable)
            #expect(try await store.schemaVersion(component: "devices") == 2)
            #expect(try await Self.columns(store) == ["id", "status"])
            // Migrations not numbered 1, 2, ...: refused before anything is sent.
            #expect(await Self.code { try await store.migrate(component: "other", [Self.devices[1]]) } == .invalidConfiguration)
            #expect(await Self.code { try await store.migrate(component: "other", []) } == .invalidConfiguration)
        }
    }

    /// A nonce table made before versions were kept is taken as version 1, its rows kept.
    @Test func aTableFromBeforeVersionsIsKept() async throws {
        let server = try await PostgresServer.start()
        defer { server.stop() }
        try await withPostgresClient(server) { client in
            let store = PostgresStore(client: client, logger: Self.logger)
            try await store.run("CREATE TABLE signcore_nonces (key_id text NOT NULL, nonce uuid NOT NULL, expires bigint NOT NULL, PRIMARY KEY (key_id, nonce))",
                                "create the old table")
            let nonce = Nonce.random()
            let old = try PostgresReplayGuard(client: client, logger: Self.logger)
            try await old.record(keyID: "k", nonce: nonce, expires: 2_000_000_000, now: 1_999_999_000)
            try await old.createSchema()
            #expect(try await store.schemaVersion(component: "replay:signcore_nonces") == 1)
            #expect(await Self.code { try await old.record(keyID: "k", nonce: nonce, expires: 2_000_000_000, now: 1_999_999_000) } == .replayed)
        }
    }

    @Test func batchesGroupConcurrentRecordsAndFailClosed() async throws {
        let sizes = BatchSizes()
        let queue = try BatchQueue<Int, Int>(maxBatch: 100, maxConcurrentBatches: 1) { (batch: [Int]) async throws(SignCoreError) in
            sizes.add(batch.count)
            try? await Task.sleep(for: .milliseconds(20))
            if batch.contains(-1) { throw SignCoreError(.unavailable, "the statement failed") }
            return batch.map { .success($0 * 2) }
        }
        let answers = try await withThrowingTaskGroup(of: Int.self) { group in
            for value in 1...500 { group.addTask { try await queue.submit(value) } }
            return try await group.reduce(0, +)
        }
        #expect(answers == (1...500).reduce(0, +) * 2)
        #expect(queue.batching.records == 500 && queue.batching.statements < 500 && sizes.largest <= 100)
        // One record the statement fails on: every record of its batch is refused, none accepted.
        let refused = await withTaskGroup(of: SignCoreError.Code?.self) { group in
            for value in [-1] + Array(1...20) { group.addTask { await Self.code { _ = try await queue.submit(value) } } }
            return await group.reduce(into: [SignCoreError.Code?]()) { $0.append($1) }
        }
        #expect(refused.contains(.unavailable) && refused.allSatisfy { $0 == nil || $0 == .unavailable })
        // A store that answers a batch incompletely: refused rather than guessed.
        let short = try BatchQueue<Int, Int>(maxBatch: 10, maxConcurrentBatches: 2) { (_: [Int]) async throws(SignCoreError) in [] }
        #expect(await Self.code { _ = try await short.submit(1) } == .unavailable)
        #expect(await Self.code { _ = try BatchQueue<Int, Int>(maxBatch: 0, maxConcurrentBatches: 1) { _ in [] } } == .invalidConfiguration)
    }
}

/// The largest batch seen, under a lock.
final class BatchSizes: @unchecked Sendable {
    private let lock = NSLock()
    private var value = 0
    func add(_ size: Int) { lock.lock(); value = max(value, size); lock.unlock() }
    var largest: Int { lock.lock(); defer { lock.unlock() }; return value }
}
