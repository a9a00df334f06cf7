import Logging
import PostgresNIO
import SignCore
import SignPostgres
import Testing

/// The README's SignPostgres example, as printed there (between the `README` markers).
@Suite struct ReadmeExamplesTests {
    static let key = try! SigningKey.hmac(secret: Array(repeating: 7, count: 32), id: "readme")

    /// SignPostgres: compiled; run by PostgresReplayGuardTests against a real server.
    func postgresExample(logger: Logger) async throws {
        let keys = try KeySet([Self.key])
        // README SignPostgres: begin
        let client = PostgresClient(configuration: .init(host: "db.internal", port: 5432, username: "signd", password: nil,
                                                         database: "signd", tls: .disable), backgroundLogger: logger)
        let nonces = try PostgresReplayGuard(client: client, logger: logger)
        let verifier = try Verifier(keys: keys, replayGuard: nonces)   // every node of the fleet the same
        async let running: Void = client.run()                         // or put `client` in a ServiceGroup
        try await nonces.createSchema()                                // on start: safe on every node
        // README SignPostgres: end
        _ = verifier
        _ = await running
    }
}
