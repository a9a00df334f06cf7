import Logging
import PostgresNIO
@_spi(SignCoreTools) import SignCore
import SignAttest

/// Redeemed challenges (docs/ATTEST.md §4.3 step 8) on PostgreSQL, shared by every node of a
/// fleet: a challenge redeemed at one node is redeemed at all.
///
/// - **One atomic statement**: `INSERT … ON CONFLICT (id) DO NOTHING RETURNING` returns a row
///   only when this redemption is the one recorded. Never read-then-write: two nodes redeeming
///   one challenge at once cannot both pass, and a row is never taken over, even once its
///   challenge has expired (nodes whose skews differ would otherwise redeem it twice).
/// - **Fail closed**: a statement that fails or does not answer within the timeout is
///   `unavailable` (503): no token is issued without its challenge recorded.
/// - **Expiry**: rows go once `retention` seconds past their expiry, swept by the redemptions
///   themselves every `sweepInterval` seconds in the background.
///
/// Redemptions are rare (one per attestation, after a proof of work), so each is one statement;
/// the replay guard's batching is not needed here.
public final class PostgresRedemptionStore: RedemptionStore {
    public struct Configuration: Sendable {
        /// The table of redeemed challenges (created by `createSchema`), optionally schema-qualified.
        public var table: String = "signcore_redemptions"
        public var timeout: Duration = .seconds(2)
        /// Seconds a row is kept after its challenge expired: at least the fleet's largest skew
        /// (60 s), so that no node whose clock runs behind can redeem a challenge whose row is gone.
        public var retention: Int64 = 120
        public var sweepInterval: Int64 = 30

        public init() {}
    }

    public let configuration: Configuration
    public let store: PostgresStore
    private let nextSweep = Locked<UInt64>(0)

    public init(client: PostgresClient, configuration: Configuration = .init(), logger: Logger) throws(SignCoreError) {
        guard PostgresStore.isPlainIdentifier(configuration.table) else {
            throw SignCoreError(.invalidConfiguration, "the redemption table is a lower-case SQL identifier, optionally schema-qualified")
        }
        guard (Int64(Attestor.skews.upperBound / 1000)...86_400).contains(configuration.retention),
              (1...86_400).contains(configuration.sweepInterval) else {
            throw SignCoreError(.invalidConfiguration, "the PostgreSQL redemption store keeps rows 60 s to a day past expiry, and sweeps every 1 s to a day")
        }
        self.configuration = configuration
        store = PostgresStore(client: client, logger: logger, timeout: configuration.timeout)
    }

    /// The table's schema, version by version (`PostgresStore.migrate`).
    public var migrations: [SchemaMigration] {
        let table = configuration.table
        let index = table.replacingOccurrences(of: ".", with: "_") + "_expires"
        return [
            SchemaMigration(version: 1, statements: [
                "CREATE TABLE IF NOT EXISTS \(table) (id bytea PRIMARY KEY, expires bigint NOT NULL)",
                "CREATE INDEX IF NOT EXISTS \(index) ON \(table) (expires)",
            ]),
        ]
    }

    /// Brings the table to this build's schema version (safe on every start, by every node).
    public func createSchema() async throws(SignCoreError) {
        try await store.migrate(component: "redemptions:" + configuration.table, migrations)
    }

    public func redeem(_ id: SHA256Digest, expiresAt: UInt64, now: UInt64) async throws(SignCoreError) -> Bool {
        let expires = Int64(clamping: expiresAt)
        let query: PostgresQuery = """
            INSERT INTO \(unescaped: configuration.table) (id, expires) VALUES (\(ByteBuffer(bytes: id.bytes)), \(expires))
            ON CONFLICT (id) DO NOTHING
            RETURNING 1
            """
        let recorded = try await store.rows(query, "record the redemption") { _ in true }.count == 1
        sweepIfDue(now: now)
        return recorded
    }

    /// Deletes rows whose challenge expired before `before` (milliseconds); returns how many.
    @discardableResult
    public func removeExpired(before: UInt64) async throws(SignCoreError) -> Int {
        let query: PostgresQuery = """
            WITH removed AS (DELETE FROM \(unescaped: configuration.table) WHERE expires < \(Int64(clamping: before)) RETURNING 1)
            SELECT count(*) FROM removed
            """
        return try await store.run(query, "remove expired redemptions")
    }

    private func sweepIfDue(now: UInt64) {
        let due = nextSweep.withLock { next -> Bool in
            guard now >= next else { return false }
            next = now + UInt64(configuration.sweepInterval) * 1000
            return true
        }
        guard due else { return }
        let before = now.subtractingReportingOverflow(UInt64(configuration.retention) * 1000)
        guard !before.overflow else { return }
        Task { [self] in
            do throws(SignCoreError) { try await removeExpired(before: before.partialValue) } catch {
                store.logger.warning("expired redemptions not removed", metadata: ["signcore.error": "\(error.detail)"])
            }
        }
    }
}
