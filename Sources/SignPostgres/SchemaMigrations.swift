import Logging
import PostgresNIO
@_spi(SignCoreTools) import SignCore

/// One version of a store's schema: the statements that bring the version before it to this one.
/// Statements are SQL text written by the store (its identifiers checked, `PostgresStore.isPlainIdentifier`);
/// version 1 creates the schema with `IF NOT EXISTS`, so a database made before versions were
/// kept is taken as it is.
public struct SchemaMigration: Sendable {
    public let version: Int
    public let statements: [String]

    public init(version: Int, statements: [String]) {
        self.version = version
        self.statements = statements
    }
}

extension PostgresStore {
    /// Where each store's schema version is kept: one row per component.
    public static let versionsTable = "signcore_schema_versions"
    /// The advisory lock every migration takes: nodes starting at once migrate one at a time.
    static let migrationLock: Int64 = 0x5349_474E_4D49_4752  // "SIGNMIGR"

    /// Brings `component`'s schema to the last of `migrations` (versions 1, 2, … in order): in one
    /// transaction under an advisory lock, each migration past the stored version runs, then the
    /// version is stored; nothing is changed when a statement fails. Safe on every start, by every
    /// node at once. Refuses (`invalidConfiguration`) a database whose schema is newer than
    /// `migrations` know (a node older than the fleet's schema), and migrations not numbered
    /// 1, 2, …; `unavailable` when the database cannot be reached or a statement fails.
    /// Returns the version now stored.
    @discardableResult
    public func migrate(component: String, _ migrations: [SchemaMigration], timeout: Duration = .seconds(60)) async throws(SignCoreError) -> Int {
        guard !migrations.isEmpty, migrations.enumerated().allSatisfy({ $0.offset + 1 == $0.element.version }) else {
            throw SignCoreError(.invalidConfiguration, "schema migrations are numbered 1, 2, ... in order")
        }
        let latest = migrations.count
        let outcome: Result<Int, SignCoreError>
        do {
            outcome = try await withTimeout(timeout) { [client, logger] in
                try await client.withTransaction(logger: logger) { connection -> Result<Int, SignCoreError> in
                    try await connection.query("SELECT pg_advisory_xact_lock(\(Self.migrationLock))", logger: logger)
                    try await connection.query(PostgresQuery(unsafeSQL: """
                        CREATE TABLE IF NOT EXISTS \(Self.versionsTable) (
                            component text PRIMARY KEY,
                            version integer NOT NULL,
                            migrated timestamptz NOT NULL DEFAULT now()
                        )
                        """), logger: logger)
                    var stored = 0
                    let rows = try await connection.query("SELECT version FROM \(unescaped: Self.versionsTable) WHERE component = \(component)",
                                                          logger: logger)
                    for try await version in rows.decode(Int.self) { stored = version }
                    if stored > latest {
                        return .failure(SignCoreError(.invalidConfiguration,
                                                      "the database's schema of \(component) is version \(stored), newer than this build's \(latest)"))
                    }
                    for migration in migrations where migration.version > stored {
                        for statement in migration.statements { try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger) }
                    }
                    if stored < latest {
                        try await connection.query("""
                            INSERT INTO \(unescaped: Self.versionsTable) (component, version) VALUES (\(component), \(latest))
                            ON CONFLICT (component) DO UPDATE SET version = EXCLUDED.version, migrated = now()
                            """, logger: logger)
                    }
                    return .success(latest)
                }
            }
        } catch {
            throw SignCoreError(.unavailable, "the store could not migrate the schema of \(component) (\(Self.describe(error)))")
        }
        let version = try outcome.get()
        logger.debug("schema at its version", metadata: ["signcore.component": .string(component), "signcore.version": "\(version)"])
        return version
    }

    /// The version stored for `component`; nil when none is (a database never migrated).
    public func schemaVersion(component: String) async throws(SignCoreError) -> Int? {
        let exists = try await run("SELECT count(*) FROM pg_tables WHERE tablename = \(Self.versionsTable)", "read the schema versions")
        guard exists > 0 else { return nil }
        return try await rows("SELECT version FROM \(unescaped: Self.versionsTable) WHERE component = \(component)",
                              "read the schema versions") { try $0.decode(Int.self) }.first
    }
}
