import Logging
import PostgresNIO
import SignAttest
import SignCore
import SignPostgres
import SignTestSupport
import Testing

/// Device keys on a real PostgreSQL server shared by two nodes (docs/ATTEST.md §9.1, §9.5): the
/// counter window in one conditional statement, registration and revocation reaching the other
/// node's key cache at once.
@Suite(.serialized) struct PostgresDeviceRegistryTests {
    static let logger = Logger(label: "pg-devices", factory: { _ in SwiftLogNoOpLogHandler() })

    static func record(_ key: SigningKey, now: UInt64 = 1_767_225_600_000) throws -> DeviceRecord {
        DeviceRecord(keyID: key.id, format: .signcore, publicKey: try JWK.serialize(key, includePrivate: false), appID: "com.example.app",
                     registeredAt: now)
    }

    /// Two nodes, each with its own pool and registry.
    func withTwoNodes(_ body: @Sendable (PostgresDeviceRegistry, PostgresDeviceRegistry) async throws -> Void) async throws {
        let server = try await PostgresServer.start()
        defer { server.stop() }
        try await withPostgresClient(server) { first in
            try await withPostgresClient(server) { second in
                let a = try PostgresDeviceRegistry(client: first, logger: Self.logger)
                let b = try PostgresDeviceRegistry(client: second, logger: Self.logger)
                try await a.createSchema()
                try await b.createSchema()
                try await body(a, b)
            }
        }
    }

    @Test func registerReadRevoke() async throws {
        try await withTwoNodes { a, b in
            let key = try SigningKey.generate(.ed25519)
            let record = try Self.record(key)
            #expect(try await a.device(keyID: key.id) == nil)
            let first = try await a.register(record)
            #expect(first.record == record && first.inserted)
            // Registering again keeps the first record.
            var later = record
            later.appID = "com.example.other"
            let second = try await b.register(later)
            #expect(second.record == record && !second.inserted)
            // A platform key binds to the first signing key it answers for, and only to it.
            let signer = Array(key.thumbprint.bytes), other = [UInt8](repeating: 9, count: 32)
            #expect(try await a.bind(keyID: key.id, to: signer))
            #expect(try await b.bind(keyID: key.id, to: signer))
            #expect(try await !b.bind(keyID: key.id, to: other))
            #expect(try await a.device(keyID: key.id)?.boundKey == signer)
            await #expect(throws: SignCoreError.self) { try await a.bind(keyID: "nobody", to: signer) }
            #expect(try await b.record(id: key.id)?.key.publicKey == key.publicKey)
            #expect(try await b.revoke(keyID: key.id))
            #expect(try await !a.revoke(keyID: key.id))
            #expect(try await a.device(keyID: key.id)?.status == .revoked)
            #expect(try await a.record(id: key.id)?.status.verifies == false)
            await #expect(throws: SignCoreError.self) { try await a.observe(keyID: key.id, counter: 1, now: 1) }
        }
    }

    /// The same verdicts as the in-memory window for random sequences with reordering, repeats,
    /// jumps and counters too old, and the same state after.
    @Test func theWindowOnPostgreSQLMatchesTheInMemoryOne() async throws {
        try await withTwoNodes { a, b in
            let key = try SigningKey.generate(.p256)
            _ = try await a.register(Self.record(key))
            var model = CounterWindow(), highest: UInt64 = 0
            var generator = SystemRandomNumberGenerator()
            for step in 0..<400 {
                let counter: UInt64 = switch Int.random(in: 0..<5, using: &generator) {
                case 0: highest + UInt64.random(in: 1...70, using: &generator) * (step % 50 == 0 ? 3 : 1)
                case 1: highest > 140 ? highest - UInt64.random(in: 100...140, using: &generator) : 0
                case 2: highest - min(highest, UInt64.random(in: 0...5, using: &generator))
                case 3: 0
                default: highest - min(highest, UInt64.random(in: 0...127, using: &generator))
                }
                let expected = model.observe(counter)
                highest = model.highest
                let node = step % 2 == 0 ? a : b
                do throws(SignCoreError) {
                    try await node.observe(keyID: key.id, counter: counter, now: UInt64(step))
                    #expect(expected == .accepted, "counter \(counter) at step \(step)")
                } catch {
                    #expect(error.code == expected.error?.code, "counter \(counter) at step \(step)")
                }
            }
            let stored = try #require(try await b.device(keyID: key.id))
            #expect(stored.counter == model)
            #expect(stored.lastSeen > 0)
        }
    }

    /// 100 assertions of one device, counters 1-100 in a shuffled order, sent to two nodes at
    /// once: every one accepted, none lost (the highest is 100 and all 100 are marked), and each
    /// sent again is refused.
    @Test func concurrentCountersOfOneDeviceAcrossTwoNodesLoseNoUpdate() async throws {
        try await withTwoNodes { a, b in
            let key = try SigningKey.generate(.ed25519)
            _ = try await a.register(Self.record(key))
            let counters = Array(1...100).shuffled()
            let refused = await withTaskGroup(of: Int.self) { group in
                for (i, counter) in counters.enumerated() {
                    group.addTask {
                        do throws(SignCoreError) {
                            try await (i % 2 == 0 ? a : b).observe(keyID: key.id, counter: UInt64(counter), now: UInt64(i))
                            return 0
                        } catch { return 1 }
                    }
                }
                return await group.reduce(0, +)
            }
            #expect(refused == 0)
            let stored = try #require(try await a.device(keyID: key.id))
            #expect(stored.counter.highest == 100)
            var window = stored.counter
            #expect((1...100).allSatisfy { window.observe(UInt64($0)) == .repeated })
            for counter in [1, 50, 100] {
                await #expect(throws: SignCoreError.self) { try await b.observe(keyID: key.id, counter: UInt64(counter), now: 1) }
            }
        }
    }

    /// Node B's key cache holds a key; node A revokes it: B stops accepting it within a second,
    /// through the notification, not after the cache's lifetime (300 s). And a key B has just
    /// answered "unknown" for is found at once once A registers it.
    @Test func revocationAndRegistrationReachTheOtherNodeAtOnce() async throws {
        try await withTwoNodes { a, b in
            let listener = Task { await b.run() }
            defer { listener.cancel() }
            let cache = try KeyCache(source: b, positiveLifetime: 300, negativeLifetime: 300)
            b.changes.invalidate(cache)
            try await Self.waitUntil { b.isListening }
            let key = try SigningKey.generate(.ed25519)
            #expect(try await cache.key(id: key.id) == nil)  // unknown, and remembered so for 300 s
            _ = try await a.register(Self.record(key))
            try await Self.waitUntil { await Self.verifies(key, through: cache) }
            #expect(try await a.revoke(keyID: key.id))
            let clock = ContinuousClock(), start = clock.now
            try await Self.waitUntil { await !Self.verifies(key, through: cache) }
            #expect(clock.now - start < .seconds(1))
        }
    }

    /// Whether the cache answers `key` as one that verifies.
    static func verifies(_ key: SigningKey, through cache: KeyCache) async -> Bool {
        do throws(SignCoreError) { return try await cache.key(id: key.id)?.publicKey == key.publicKey } catch { return false }
    }

    static func waitUntil(_ condition: @Sendable () async -> Bool) async throws {
        for _ in 0..<200 {
            if await condition() { return }
            try await Task.sleep(for: .milliseconds(10))
        }
        Issue.record("the condition did not hold within 2 s")
    }
}
