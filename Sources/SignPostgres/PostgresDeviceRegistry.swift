import Logging
import PostgresNIO
@_spi(SignCoreTools) import SignCore
import SignAttest

/// Registered device keys (docs/ATTEST.md §9.1) on PostgreSQL, shared by every node of a fleet.
///
/// - **One conditional statement per write**: registration is `INSERT … ON CONFLICT DO NOTHING`,
///   revocation an `UPDATE … WHERE status = 'active'`, and a counter (§9.5) one `UPDATE … WHERE`
///   whose condition is the window's, so two nodes observing counters of one device at once are
///   serialised by the row's lock and lose no update (PostgreSQL re-reads the row a waiting update
///   finds changed). The window is a `bit(128)`.
/// - **Fleet-wide at once**: each registration and revocation sends `NOTIFY` on the table's
///   channel in the same statement; `run()` listens and announces every key id on `changes`,
///   which key caches subscribe to, so no node keeps a revoked key or a stale "unknown" for a
///   cache lifetime. While it is not listening (a lost connection), it announces "everything"
///   once it is again, since notifications sent meanwhile are lost. Counters never rely on a
///   cache: each is checked on the row, revoked keys included.
/// - **Fail closed**: a statement that fails or does not answer in time is `unavailable`.
public final class PostgresDeviceRegistry: DeviceRegistry, Sendable {
    public struct Configuration: Sendable {
        /// The table of device keys (created by `createSchema`), optionally schema-qualified; its
        /// name, dots made underscores, is also the notification channel.
        public var table: String = "signcore_devices"
        public var timeout: Duration = .seconds(2)
        /// How long to wait before listening again after the connection was lost.
        public var relistenDelay: Duration = .seconds(1)

        public init() {}
    }

    public let configuration: Configuration
    public let store: PostgresStore
    public let changes = DeviceChanges()
    private let channel: String
    private let listening = Locked(false)

    public init(client: PostgresClient, configuration: Configuration = .init(), logger: Logger) throws(SignCoreError) {
        guard PostgresStore.isPlainIdentifier(configuration.table) else {
            throw SignCoreError(.invalidConfiguration, "the device table is a lower-case SQL identifier, optionally schema-qualified")
        }
        self.configuration = configuration
        store = PostgresStore(client: client, logger: logger, timeout: configuration.timeout)
        channel = configuration.table.replacingOccurrences(of: ".", with: "_")
    }

    /// The table's schema, version by version (`PostgresStore.migrate`).
    public var migrations: [SchemaMigration] {
        [
            SchemaMigration(version: 1, statements: [
                """
                CREATE TABLE IF NOT EXISTS \(configuration.table) (
                    key_id text PRIMARY KEY,
                    format text NOT NULL,
                    public_key text NOT NULL,
                    app_id text NOT NULL,
                    environment text NOT NULL,
                    status text NOT NULL,
                    registered_at bigint NOT NULL,
                    counter_high bigint NOT NULL DEFAULT 0,
                    counter_seen bit(128) NOT NULL DEFAULT 0::bit(128),
                    last_seen bigint NOT NULL
                )
                """,
            ]),
            // The platform key's binding to the SignCore key it answers for (ATTEST.md §9.6).
            SchemaMigration(version: 2, statements: [
                "ALTER TABLE \(configuration.table) ADD COLUMN IF NOT EXISTS bound_key bytea",
            ]),
        ]
    }

    /// Brings the table to this build's schema version (safe on every start, by every node).
    public func createSchema() async throws(SignCoreError) {
        try await store.migrate(component: "devices:" + configuration.table, migrations)
    }

    public func register(_ record: DeviceRecord) async throws(SignCoreError) -> (record: DeviceRecord, inserted: Bool) {
        let query: PostgresQuery = """
            WITH inserted AS (
                INSERT INTO \(unescaped: configuration.table)
                    (key_id, format, public_key, app_id, environment, status, registered_at, last_seen)
                VALUES (\(record.keyID), \(record.format.rawValue), \(record.publicKey), \(record.appID), \(record.environment),
                        \(record.status.name), \(Int64(clamping: record.registeredAt)), \(Int64(clamping: record.lastSeen)))
                ON CONFLICT (key_id) DO NOTHING
                RETURNING key_id
            )
            SELECT pg_notify(\(channel), key_id) FROM inserted
            """
        let inserted = try await store.rows(query, "register the device key") { _ in true }.count == 1
        guard let stored = try await device(keyID: record.keyID) else {
            throw SignCoreError(.unavailable, "the store lost a device key just registered")
        }
        return (stored, inserted)
    }

    public func bind(keyID: String, to thumbprint: [UInt8]) async throws(SignCoreError) -> Bool {
        // Bound now, or bound already to this key: one conditional statement.
        let query: PostgresQuery = """
            UPDATE \(unescaped: configuration.table) SET bound_key = \(ByteBuffer(bytes: thumbprint))
            WHERE key_id = \(keyID) AND (bound_key IS NULL OR bound_key = \(ByteBuffer(bytes: thumbprint)))
            RETURNING 1
            """
        if try await store.rows(query, "bind the platform key") { _ in true }.count == 1 { return true }
        guard try await device(keyID: keyID) != nil else { throw SignCoreError(.deviceUnknown, "no device key has this id") }
        return false
    }

    public func device(keyID: String) async throws(SignCoreError) -> DeviceRecord? {
        let query: PostgresQuery = """
            SELECT key_id, format, public_key, app_id, environment, status, registered_at, counter_high, counter_seen::text, last_seen, bound_key
            FROM \(unescaped: configuration.table) WHERE key_id = \(keyID)
            """
        return try await store.rows(query, "read the device key") { row in
            let (id, format, publicKey, appID, environment, status, registeredAt, high, seen, lastSeen, bound) =
                try row.decode((String, String, String, String, String, String, Int64, Int64, String, Int64, ByteBuffer?).self)
            guard let status = KeyRecord.Status(name: status), let counter = CounterWindow(highest: UInt64(max(0, high)), bits: seen) else {
                throw SignCoreError(.unavailable, "a device row holds a status or counter this build does not read")
            }
            return DeviceRecord(keyID: id, format: DeviceFormat(rawValue: format), publicKey: publicKey, appID: appID, environment: environment,
                                status: status, registeredAt: UInt64(max(0, registeredAt)), counter: counter, lastSeen: UInt64(max(0, lastSeen)),
                                boundKey: bound.map { Array(buffer: $0) })
        }.first
    }

    public func observe(keyID: String, counter: UInt64, now: UInt64) async throws(SignCoreError) {
        guard counter <= CounterWindow.maximum else { throw SignCoreError(.invalidHeader, "a device counter is at most 2^63 - 1") }
        let c = Int64(counter), seenAt = Int64(clamping: now)
        let query: PostgresQuery
        if counter == 0 {
            // No counter: only from a device that has never sent one (§9.5).
            query = """
                UPDATE \(unescaped: configuration.table) SET last_seen = GREATEST(last_seen, \(seenAt))
                WHERE key_id = \(keyID) AND status = 'active' AND counter_high = 0
                RETURNING 1
                """
        } else {
            // The window in one statement: above the highest slides it; within it, an unseen bit
            // is set. Every expression reads the row as it was (PostgreSQL's SET semantics).
            query = """
                UPDATE \(unescaped: configuration.table) SET
                    counter_seen = CASE WHEN \(c) > counter_high
                        THEN (counter_seen << LEAST(\(c) - counter_high, 128)::int) | 1::bit(128)
                        ELSE set_bit(counter_seen, (127 - (counter_high - \(c)))::int, 1) END,
                    counter_high = GREATEST(counter_high, \(c)),
                    last_seen = GREATEST(last_seen, \(seenAt))
                WHERE key_id = \(keyID) AND status = 'active' AND CASE
                    WHEN \(c) > counter_high THEN true
                    WHEN counter_high - \(c) >= 128 THEN false
                    ELSE get_bit(counter_seen, (127 - (counter_high - \(c)))::int) = 0 END
                RETURNING 1
                """
        }
        let accepted = try await store.rows(query, "record the device counter") { _ in true }.count == 1
        guard !accepted else { return }
        // Refused: why, from the row as it is now. A window only moves forward, so a counter
        // refused stays refused and the reason read after is the reason.
        guard let record = try await device(keyID: keyID) else { throw SignCoreError(.deviceUnknown, "no device key has this id") }
        guard record.status.verifies else { throw SignCoreError(.deviceRevoked, "the device key has been revoked") }
        var window = record.counter
        throw window.observe(counter).error ?? CounterWindow.Verdict.repeated.error!
    }

    public func revoke(keyID: String) async throws(SignCoreError) -> Bool {
        let query: PostgresQuery = """
            WITH revoked AS (
                UPDATE \(unescaped: configuration.table) SET status = 'revoked' WHERE key_id = \(keyID) AND status = 'active' RETURNING key_id
            )
            SELECT pg_notify(\(channel), key_id) FROM revoked
            """
        return try await store.rows(query, "revoke the device key") { _ in true }.count == 1
    }

    /// Whether `run()` is listening now (for readiness checks and tests).
    public var isListening: Bool { listening.withLock { $0 } }

    /// Listens for registrations and revocations made by any node and announces them on
    /// `changes`, until cancelled; after a lost connection it listens again and announces that
    /// anything may have changed. Run it beside the server (a `ServiceGroup` service, a task).
    public func run() async {
        while !Task.isCancelled {
            do {
                try await store.client.withConnection { connection in
                    try await connection.listen(on: channel) { notifications in
                        listening.withLock { $0 = true }
                        changes.announce(nil)  // whatever happened while no one listened
                        for try await notification in notifications { changes.announce(notification.payload) }
                    }
                }
            } catch {
                if !Task.isCancelled {
                    store.logger.warning("device key notifications lost; listening again",
                                         metadata: ["signcore.error": "\(PostgresStore.describe(error))"])
                }
            }
            listening.withLock { $0 = false }
            changes.announce(nil)
            try? await Task.sleep(for: configuration.relistenDelay)
        }
    }
}

extension CounterWindow {
    /// A window read back from PostgreSQL's text of a `bit(128)` (128 `0`/`1`, offset 0 last).
    init?(highest: UInt64, bits: String) {
        let digits = Array(bits.utf8)
        guard digits.count == 128, digits.allSatisfy({ $0 == UInt8(ascii: "0") || $0 == UInt8(ascii: "1") }) else { return nil }
        let bytes = (0..<16).map { byte in
            (0..<8).reduce(UInt8(0)) { $0 << 1 | (digits[byte * 8 + $1] == UInt8(ascii: "1") ? 1 : 0) }
        }
        self.init(highest: highest, bitmap: bytes)
    }
}
