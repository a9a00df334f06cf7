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
    let client: PostgresClient
    let logger: Logger
    let state = Locked(State())

    struct Pending {
        var keyID: String
        var nonce: UUID
        var expires: Int64
        var continuation: CheckedContinuation<Result<Void, SignCoreError>, Never>
    }

    struct State {
        var pending: [Pending] = []
        var batchesInFlight = 0
        /// Rows that expired before this were deleted (or are being): see `Configuration.retention`.
        var sweptBefore: Int64 = .min
        var nextSweep: Int64 = .min
        var sweeping = false
        var statements = 0
        var records = 0
    }

    /// Insert statements sent and records they carried, since the guard was made: how well
    /// concurrent records are batched (records / statements).
    public var batching: (statements: Int, records: Int) { state.withLock { ($0.statements, $0.records) } }

    /// - Parameter client: a `PostgresClient` that the caller runs (`await client.run()`, or in a
    ///   `ServiceGroup`); the guard only sends statements through it.
    public init(client: PostgresClient, configuration: Configuration = .init(), logger: Logger) throws(SignCoreError) {
        guard Self.isPlainIdentifier(configuration.table) else {
            throw SignCoreError(.invalidConfiguration, "the nonce table is a lower-case SQL identifier, optionally schema-qualified")
        }
        guard configuration.maxBatch >= 1, configuration.maxConcurrentBatches >= 1, configuration.retention >= 0,
              configuration.sweepInterval >= 1, configuration.sweepLimit >= 1 else {
            throw SignCoreError(.invalidConfiguration, "the PostgreSQL replay guard needs positive batch, sweep and retention settings")
        }
        self.client = client
        self.configuration = configuration
        self.logger = logger
    }

    /// Creates the table and its expiry index when they do not exist (safe on every start, by
    /// every node at once).
    public func createSchema() async throws(SignCoreError) {
        let table = configuration.table
        let index = table.replacingOccurrences(of: ".", with: "_") + "_expires"
        try await run(PostgresQuery(unsafeSQL: """
            CREATE TABLE IF NOT EXISTS \(table) (
                key_id text NOT NULL,
                nonce uuid NOT NULL,
                expires bigint NOT NULL,
                PRIMARY KEY (key_id, nonce)
            )
            """), "create the nonce table")
        try await run(PostgresQuery(unsafeSQL: "CREATE INDEX IF NOT EXISTS \(index) ON \(table) (expires)"), "create the expiry index")
    }

    /// Whether the store answers, within the timeout: a statement that reads the nonce table
    /// (so a missing table fails too) and returns no row. Throws `unavailable` otherwise.
    public func ping() async throws(SignCoreError) {
        _ = try await run(PostgresQuery(unsafeSQL: "SELECT 1 FROM \(configuration.table) LIMIT 0"), "answer")
    }

    public func record(keyID: String, nonce: Nonce, expires: Int64, now: Int64) async throws(SignCoreError) {
        let uuid = Self.uuid(nonce)
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

        let result = await withCheckedContinuation { continuation in
            let start = state.withLock { state -> Bool in
                state.pending.append(Pending(keyID: keyID, nonce: uuid, expires: expires, continuation: continuation))
                guard state.batchesInFlight < configuration.maxConcurrentBatches else { return false }
                state.batchesInFlight += 1
                return true
            }
            if start { Task { await self.sendBatches() } }
        }
        try result.get()
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
            let count = try await run(query, "remove expired nonces")
            removed += count
            if count < configuration.sweepLimit { return removed }
        }
    }

    // MARK: - Batches

    /// Sends what is pending, a batch at a time, until nothing is left.
    private func sendBatches() async {
        while true {
            let batch = state.withLock { state -> [Pending] in
                let batch = Array(state.pending.prefix(configuration.maxBatch))
                state.pending.removeFirst(batch.count)
                if batch.isEmpty { state.batchesInFlight -= 1 } else { state.statements += 1; state.records += batch.count }
                return batch
            }
            if batch.isEmpty { return }
            let outcomes = await insert(batch)
            for (entry, outcome) in zip(batch, outcomes) { entry.continuation.resume(returning: outcome) }
        }
    }

    /// One statement for the whole batch; the pairs it returns were new. A pair that appears
    /// twice in the batch is new for its first record only. Rows go in in key order: two nodes
    /// inserting the same pairs at once then wait for each other in the same order, where any
    /// other order can deadlock (each holding a pair the other's statement needs).
    private func insert(_ batch: [Pending]) async -> [Result<Void, SignCoreError>] {
        var first = [PairKey: Int]()
        var keyIDs: [String] = [], nonces: [UUID] = [], expiries: [Int64] = []
        keyIDs.reserveCapacity(batch.count); nonces.reserveCapacity(batch.count); expiries.reserveCapacity(batch.count)
        for (index, entry) in batch.enumerated() where first[PairKey(entry.keyID, entry.nonce)] == nil {
            first[PairKey(entry.keyID, entry.nonce)] = index
            keyIDs.append(entry.keyID); nonces.append(entry.nonce); expiries.append(entry.expires)
        }
        let query: PostgresQuery = """
            INSERT INTO \(unescaped: configuration.table) (key_id, nonce, expires)
            SELECT * FROM unnest(\(keyIDs)::text[], \(nonces)::uuid[], \(expiries)::bigint[]) AS batch (key_id, nonce, expires)
            ORDER BY key_id, nonce
            ON CONFLICT DO NOTHING
            RETURNING key_id, nonce
            """
        let inserted: Set<PairKey>
        do {
            inserted = try await withTimeout(configuration.timeout) { [client, logger] in
                var inserted = Set<PairKey>()
                let rows = try await client.query(query, logger: logger)
                for try await (keyID, nonce) in rows.decode((String, UUID).self) { inserted.insert(PairKey(keyID, nonce)) }
                return inserted
            }
        } catch {
            logger.warning("replay store unavailable: nonces not recorded, requests refused",
                           metadata: ["signcore.batch": "\(batch.count)", "signcore.error": "\(Self.describe(error))"])
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
            if removed > 0 { logger.debug("expired nonces removed", metadata: ["signcore.removed": "\(removed)"]) }
        } catch {
            logger.warning("expired nonces not removed", metadata: ["signcore.error": "\(error.detail)"])
        }
    }

    // MARK: - Helpers

    struct PairKey: Hashable {
        var keyID: String
        var nonce: UUID
        init(_ keyID: String, _ nonce: UUID) { self.keyID = keyID; self.nonce = nonce }
    }

    /// Runs a statement, with the timeout; returns the first column of its first row as a
    /// count (0 when it returns no rows).
    @discardableResult
    private func run(_ query: PostgresQuery, _ what: String) async throws(SignCoreError) -> Int {
        do {
            return try await withTimeout(configuration.timeout) { [client, logger] in
                var count = 0
                let rows = try await client.query(query, logger: logger)
                for try await row in rows where count == 0 {
                    count = (try? row.decode(Int.self)) ?? 0
                }
                return count
            }
        } catch {
            throw SignCoreError(.unavailable, "the replay store could not \(what) (\(Self.describe(error)))")
        }
    }

    /// What went wrong, without anything of the query's values (PSQLError's description can
    /// carry the statement's text but not its bind parameters).
    static func describe(_ error: any Error) -> String {
        if let error = error as? PSQLError {
            if let message = error.serverInfo?[.message] { return "server: \(message)" }
            return "\(error.code)"
        }
        if error is TimeoutError { return "no answer in time" }
        return String(describing: type(of: error))
    }

    static func uuid(_ nonce: Nonce) -> UUID {
        let b = nonce.bytes
        return UUID(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]))
    }

    static func isPlainIdentifier(_ name: String) -> Bool {
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        return (1...2).contains(parts.count) && parts.allSatisfy { part in
            (1...63).contains(part.utf8.count) && part.utf8.allSatisfy { ($0 >= 0x61 && $0 <= 0x7A) || $0 == 0x5F || ($0 >= 0x30 && $0 <= 0x39) }
                && !(part.utf8.first.map { $0 >= 0x30 && $0 <= 0x39 } ?? true)
        }
    }
}

struct TimeoutError: Error {}

/// Runs `body`, and throws `TimeoutError` once `timeout` has passed, whether or not `body` has
/// returned: a statement to a server that has stopped answering (stalled, not gone) may not end
/// on cancellation, so the caller is never made to wait for it. `body` is cancelled and left to
/// end in the background (its connection is then the pool's to close or reuse).
func withTimeout<T: Sendable>(_ timeout: Duration, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    let outcome = FirstOutcome<T>()
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { continuation in
            outcome.await(continuation)
            let work = Task {
                do { outcome.resume(.success(try await body())) } catch { outcome.resume(.failure(error)) }
            }
            let timer = Task {
                try? await Task.sleep(for: timeout)
                work.cancel()
                outcome.resume(.failure(TimeoutError()))
            }
            outcome.onResume { work.cancel(); timer.cancel() }
        }
    } onCancel: {
        outcome.resume(.failure(CancellationError()))
    }
}

/// The first of several outcomes, delivered once to one waiting continuation.
final class FirstOutcome<T: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<T, any Error>?
        var early: Result<T, any Error>?
        var done = false
        var cleanup: (@Sendable () -> Void)?
    }
    private let state = Locked(State())

    func await(_ continuation: CheckedContinuation<T, any Error>) {
        let early: Result<T, any Error>? = state.withLock { state in
            if let early = state.early { state.done = true; return early }
            state.continuation = continuation
            return nil
        }
        if let early { continuation.resume(with: early) }
    }

    /// What to stop once an outcome is delivered (runs at once if one already was).
    func onResume(_ cleanup: @escaping @Sendable () -> Void) {
        let now = state.withLock { state in
            if state.done { return true }
            state.cleanup = cleanup
            return false
        }
        if now { cleanup() }
    }

    func resume(_ result: Result<T, any Error>) {
        let (continuation, cleanup): (CheckedContinuation<T, any Error>?, (@Sendable () -> Void)?) = state.withLock { state in
            guard !state.done else { return (nil, nil) }
            guard let continuation = state.continuation else {
                if state.early == nil { state.early = result }  // before the continuation was handed over
                return (nil, nil)
            }
            state.done = true
            state.continuation = nil
            defer { state.cleanup = nil }
            return (continuation, state.cleanup)
        }
        continuation?.resume(with: result)
        cleanup?()
    }
}
