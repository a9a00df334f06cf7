import Foundation
import Logging
import PostgresNIO
@_spi(SignCoreTools) import SignCore

/// A replay guard (SPEC §5 step 9, §6.3) on PostgreSQL, shared by every verifier of a fleet:
/// a token accepted by one node is a replay at every other.
///
/// - **One-time insert** keyed by (key id, nonce): `INSERT … ON CONFLICT DO NOTHING RETURNING`
///   says which pairs were new; a pair already there is `replayed`.
/// - **Batched** (group commit): records that arrive while a statement is in flight wait for it
///   and go together in the next, up to `maxBatch` rows a statement and `maxConcurrentBatches`
///   statements at once (one by default: bigger batches cost the database less per record; in
///   the gateway benchmark one in flight gave 0.54 of the in-memory guard's rate, four 0.44).
/// - **Fail closed**: a statement that fails or does not answer within `timeout` refuses every
///   record in it with `unavailable` (HTTP 503, retry later); nothing is accepted without its
///   nonce stored. The client's pool reconnects by itself, so the guard recovers when the server
///   returns, without a restart.
/// - **Expiry**: rows are deleted once `retention` seconds past their expiry, by the records
///   themselves (a sweep every `sweepInterval` seconds, in the background, `sweepLimit` rows a
///   statement). The retention covers clock differences between nodes: every node must keep its
///   clock within `retention` − its verifier's skew of the others. A record whose expiry is not
///   after what this node has already swept is refused `expired` (its clock stepped back).
///
/// Values always travel as bind parameters; the table name, the one identifier, is checked to
/// be a plain lower-case identifier before it is written into a statement.
public final class PostgresReplayGuard: ReplayGuard {
    public struct Configuration: Sendable {
        /// The table of nonces (created by `createSchema`), optionally schema-qualified.
        public var table: String = "signcore_nonces"
        public var maxBatch: Int = 1024
        public var maxConcurrentBatches: Int = 1
        /// How long one round trip may take before its records are refused `unavailable`.
        public var timeout: Duration = .seconds(2)
        /// Seconds a row is kept after its token expired.
        public var retention: Int64 = 120
        public var sweepInterval: Int64 = 10
        public var sweepLimit: Int = 50_000

        public init() {}
    }

    public let configuration: Configuration
    /// The statements' timeout and fail-closed answers, the schema's versions (`PostgresStore`).
    public let store: PostgresStore
    private let batches: BatchQueue<Entry, Void>
    private let state = Locked(SweepState())

    struct Entry: Sendable {
        var keyID: String
        var nonce: UUID
        var expires: Int64
    }

    struct SweepState {
        /// Rows that expired before this were deleted (or are being): see `Configuration.retention`.
        var sweptBefore: Int64 = .min
        var nextSweep: Int64 = .min
        var sweeping = false
    }

    /// Insert statements sent and records they carried, since the guard was made: how well
    /// concurrent records are batched (records / statements).
    public var batching: (statements: Int, records: Int) { batches.batching }

    /// - Parameter client: a `PostgresClient` that the caller runs (`await client.run()`, or in a
    ///   `ServiceGroup`); the guard only sends statements through it.
    public init(client: PostgresClient, configuration: Configuration = .init(), logger: Logger) throws(SignCoreError) {
        guard PostgresStore.isPlainIdentifier(configuration.table) else {
            throw SignCoreError(.invalidConfiguration, "the nonce table is a lower-case SQL identifier, optionally schema-qualified")
        }
        guard configuration.maxBatch >= 1, configuration.maxConcurrentBatches >= 1, configuration.retention >= 0,
              configuration.sweepInterval >= 1, configuration.sweepLimit >= 1 else {
            throw SignCoreError(.invalidConfiguration, "the PostgreSQL replay guard needs positive batch, sweep and retention settings")
        }
        let store = PostgresStore(client: client, logger: logger, timeout: configuration.timeout)
        self.store = store
        self.configuration = configuration
        let table = configuration.table
        batches = try BatchQueue(maxBatch: configuration.maxBatch, maxConcurrentBatches: configuration.maxConcurrentBatches) { batch in
            await Self.insert(batch, into: table, store: store)
        }
    }

    /// The nonce table's schema, version by version (`PostgresStore.migrate`).
    public var migrations: [SchemaMigration] {
        let table = configuration.table
        let index = table.replacingOccurrences(of: ".", with: "_") + "_expires"
        return [
            SchemaMigration(version: 1, statements: [
                """
                CREATE TABLE IF NOT EXISTS \(table) (
                    key_id text NOT NULL,
                    nonce uuid NOT NULL,
                    expires bigint NOT NULL,
                    PRIMARY KEY (key_id, nonce)
                )
                """,
                "CREATE INDEX IF NOT EXISTS \(index) ON \(table) (expires)",
            ]),
        ]
    }

    /// Brings the table and its expiry index to this build's schema version (safe on every start,
    /// by every node at once; a table made before versions were kept is taken as version 1).
    public func createSchema() async throws(SignCoreError) {
        try await store.migrate(component: "replay:" + configuration.table, migrations)
    }

    /// Whether the store answers, within the timeout: a statement that reads the nonce table
    /// (so a missing table fails too) and returns no row. Throws `unavailable` otherwise.
    public func ping() async throws(SignCoreError) {
        try await store.run(PostgresQuery(unsafeSQL: "SELECT 1 FROM \(configuration.table) LIMIT 0"), "answer")
    }

    public func record(keyID: String, nonce: Nonce, expires: Int64, now: Int64) async throws(SignCoreError) {
        let (expired, sweep) = state.withLock { state -> (Bool, Bool) in
            if expires <= state.sweptBefore { return (true, false) }
            guard now >= state.nextSweep, !state.sweeping else { return (false, false) }
            state.sweeping = true
            state.nextSweep = now + configuration.sweepInterval
            return (false, true)
        }
        if expired {
            throw SignCoreError(.expired, "the token expired before entries the replay guard has already removed (the clock stepped back)")
        }
        if sweep { Task { await self.sweep(before: now - configuration.retention) } }
        try await batches.submit(Entry(keyID: keyID, nonce: Self.uuid(nonce), expires: expires))
    }

    /// Deletes rows whose token expired before `before` (at most `sweepLimit` a statement, until
    /// none are left); returns how many. Records call it on their own; a command may too.
    @discardableResult
    public func removeExpired(before: Int64) async throws(SignCoreError) -> Int {
        state.withLock { $0.sweptBefore = max($0.sweptBefore, before) }
        var removed = 0
        while true {
            let query: PostgresQuery = """
                WITH removed AS (
                    DELETE FROM \(unescaped: configuration.table) WHERE ctid = ANY(ARRAY(
                        SELECT ctid FROM \(unescaped: configuration.table) WHERE expires < \(before) LIMIT \(configuration.sweepLimit)))
                    RETURNING 1)
                SELECT count(*) FROM removed
                """
            let count = try await store.run(query, "remove expired nonces")
            removed += count
            if count < configuration.sweepLimit { return removed }
        }
    }

    /// One statement for the whole batch; the pairs it returns were new. A pair that appears
    /// twice in the batch is new for its first record only. Rows go in in key order: two nodes
    /// inserting the same pairs at once then wait for each other in the same order, where any
    /// other order can deadlock (each holding a pair the other's statement needs). A statement
    /// that fails or times out refuses every record `unavailable` (fail closed).
    private static func insert(_ batch: [Entry], into table: String, store: PostgresStore) async -> [Result<Void, SignCoreError>] {
        var first = [PairKey: Int]()
        var keyIDs: [String] = [], nonces: [UUID] = [], expiries: [Int64] = []
        keyIDs.reserveCapacity(batch.count); nonces.reserveCapacity(batch.count); expiries.reserveCapacity(batch.count)
        for (index, entry) in batch.enumerated() where first[PairKey(entry.keyID, entry.nonce)] == nil {
            first[PairKey(entry.keyID, entry.nonce)] = index
            keyIDs.append(entry.keyID); nonces.append(entry.nonce); expiries.append(entry.expires)
        }
        let query: PostgresQuery = """
            INSERT INTO \(unescaped: table) (key_id, nonce, expires)
            SELECT * FROM unnest(\(keyIDs)::text[], \(nonces)::uuid[], \(expiries)::bigint[]) AS batch (key_id, nonce, expires)
            ORDER BY key_id, nonce
            ON CONFLICT DO NOTHING
            RETURNING key_id, nonce
            """
        let inserted: Set<PairKey>
        do {
            inserted = Set(try await store.rows(query, "record the nonces") { row in
                let (keyID, nonce) = try row.decode((String, UUID).self)
                return PairKey(keyID, nonce)
            })
        } catch {
            store.logger.warning("replay store unavailable: nonces not recorded, requests refused",
                                 metadata: ["signcore.batch": "\(batch.count)", "signcore.error": "\(error.detail)"])
            let refusal = SignCoreError(.unavailable, "the replay store could not record the nonce; retry later")
            return Array(repeating: .failure(refusal), count: batch.count)
        }
        return batch.enumerated().map { index, entry in
            let pair = PairKey(entry.keyID, entry.nonce)
            return first[pair] == index && inserted.contains(pair)
                ? .success(())
                : .failure(SignCoreError(.replayed, "the token's nonce was already used"))
        }
    }

    private func sweep(before: Int64) async {
        defer { state.withLock { $0.sweeping = false } }
        do {
            let removed = try await removeExpired(before: before)
            if removed > 0 { store.logger.debug("expired nonces removed", metadata: ["signcore.removed": "\(removed)"]) }
        } catch {
            store.logger.warning("expired nonces not removed", metadata: ["signcore.error": "\(error.detail)"])
        }
    }

    struct PairKey: Hashable, Sendable {
        var keyID: String
        var nonce: UUID
        init(_ keyID: String, _ nonce: UUID) { self.keyID = keyID; self.nonce = nonce }
    }

    static func uuid(_ nonce: Nonce) -> UUID {
        let b = nonce.bytes
        return UUID(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]))
    }
}
