#if SIGNCORE_DEVICE_BENCH
import CBench
import Crypto
import Foundation
import Logging
import PostgresNIO
import SignAttest
import SignCore
import SignDevice
import SignPostgres

/// The device keys' rows (docs/ATTEST.md §9): an App Attest assertion check beside the ECDSA
/// P-256 verify and hashes it cannot avoid; the counter window in the in-memory registry beside
/// the window alone; and, with `--postgres`, the window's one conditional UPDATE beside a bare
/// round trip to the same server.
enum DeviceBench {
    static func cases(postgres: String?) throws -> [BenchCase] {
        var cases = [
            BenchCase(operation: "App Attest assertion check", size: "37 B data", target: 0.5) { try assertion() },
            BenchCase(operation: "device counter window, memory registry", size: "1 key", target: nil, floorNote: "the window alone") {
                (try memoryRegistry(), windowAlone())
            },
        ]
        if let postgres {
            cases.append(BenchCase(operation: "device counter window, PostgreSQL", size: "32 keys, 32 tasks", target: nil,
                                   floorNote: "SELECT 1 round trips") { try postgresRows(postgres) })
        }
        return cases
    }

    /// An assertion by a P-256 key over a client data, as a device makes it (docs/ATTEST.md §9.7).
    static func assertion() throws -> (Timed, Timed?) {
        let key = P256.Signing.PrivateKey()
        let clientData = Array("AQMAAAABAABm3x3Y…the challenge's text…".utf8)
        let authData = Array(SHA256.hash(data: Array("TEAM123456.com.example.app".utf8))) + [0x40, 0, 0, 0, 1]
        let nonce = Array(SHA256.hash(data: authData + Array(SHA256.hash(data: clientData))))
        let signature = try key.signature(for: nonce)
        // CBOR {"signature": bytes, "authenticatorData": bytes}, written by hand (the reader's own test data).
        let der = Array(signature.derRepresentation)
        let token: [UInt8] = [0xA2, 0x69] + Array("signature".utf8) + [0x58, UInt8(der.count)] + der + [0x71] + Array("authenticatorData".utf8)
            + [0x58, UInt8(authData.count)] + authData
        let point = Array(key.publicKey.x963Representation)
        let jwk = #"{"kty":"EC","crv":"P-256","x":"\#(Base64URL.encode(Array(point[1..<33])))","y":"\#(Base64URL.encode(Array(point[33..<65])))"}"#
        let record = DeviceRecord(keyID: "bench", format: .appleAppAttest, publicKey: jwk, appID: "TEAM123456.com.example.app", registeredAt: 0)
        let verifier = AppAttestVerifier()
        precondition((try? verifier.verifyAssertion(token, clientData: clientData, record: record)) == 1, "the bench's assertion verifies")
        let check: Timed = { iterations in
            time(iterations) { _ = try? verifier.verifyAssertion(token, clientData: clientData, record: record) }
        }
        // The floor: SHA-256 of the client data, then the verify of SHA-256(nonce) (OpenSSL, prepared key).
        let raw = Array(signature.rawRepresentation)
        let rawKey = Array(key.rawRepresentation)
        let floor: Timed = { iterations in
            guard let prepared = rawKey.withUnsafeBytes({ bench_p256_key_new($0.baseAddress) }),
                  let sig = raw.withUnsafeBytes({ bench_p256_signature_new($0.baseAddress) }) else { return .nan }
            defer { bench_p256_key_free(prepared); bench_p256_signature_free(sig) }
            let input = nonce
            return clientData.withUnsafeBytes { content in
                input.withUnsafeBytes { input in
                    time(iterations) { _ = bench_floor_verify_p256(prepared, content.baseAddress, content.count, input.baseAddress, input.count, sig) }
                }
            }
        }
        return (check, floor)
    }

    static func memoryRegistry() throws -> Timed {
        { iterations in
            let registry = InMemoryDeviceRegistry()
            _ = try? await registry.register(DeviceRecord(keyID: "bench", format: .signcore, publicKey: "{}", appID: "bench", registeredAt: 0))
            let start = ContinuousClock.now
            for counter in 1...max(1, iterations) { try? await registry.observe(keyID: "bench", counter: UInt64(counter), now: 1) }
            return seconds(ContinuousClock.now - start)
        }
    }

    static func windowAlone() -> Timed {
        { iterations in
            var window = CounterWindow()
            return time(iterations) { _ = window.observe(window.highest + 1) }
        }
    }

    /// 32 tasks, each counting on a key of its own, on the server at `address` (host:port, user
    /// `signcore`, database `postgres`); the floor, the same tasks sending `SELECT 1`.
    static func postgresRows(_ address: String) throws -> (Timed, Timed?) {
        let parts = address.split(separator: ":")
        guard parts.count == 2, let port = Int(parts[1]) else { throw BenchFailure("--postgres is host:port") }
        let host = String(parts[0])
        let operation: Timed = { iterations in
            await withClient(host: host, port: port) { client in
                guard let registry = try? PostgresDeviceRegistry(client: client, logger: Logger(label: "bench")) else { return .nan }
                try? await registry.createSchema()
                let table = UUID().uuidString.prefix(8)
                for task in 0..<32 {
                    _ = try? await registry.register(DeviceRecord(keyID: "bench-\(table)-\(task)", format: .signcore, publicKey: "{}", appID: "bench",
                                                                  registeredAt: 0))
                }
                let perTask = (max(1, iterations) + 31) / 32
                let start = ContinuousClock.now
                await withTaskGroup(of: Void.self) { group in
                    for task in 0..<32 {
                        group.addTask {
                            for counter in 1...perTask {
                                try? await registry.observe(keyID: "bench-\(table)-\(task)", counter: UInt64(counter), now: 1)
                            }
                        }
                    }
                }
                return seconds(ContinuousClock.now - start) * Double(iterations) / Double(32 * perTask)
            }
        }
        let floor: Timed = { iterations in
            await withClient(host: host, port: port) { client in
                let perTask = (max(1, iterations) + 31) / 32
                let start = ContinuousClock.now
                await withTaskGroup(of: Void.self) { group in
                    for _ in 0..<32 {
                        group.addTask {
                            for _ in 1...perTask { _ = try? await client.query("SELECT 1", logger: Logger(label: "bench")) }
                        }
                    }
                }
                return seconds(ContinuousClock.now - start) * Double(iterations) / Double(32 * perTask)
            }
        }
        return (operation, floor)
    }

    /// Runs `body` with a client whose 32 connections are open already (not timed).
    static func withClient(host: String, port: Int, _ body: @Sendable (PostgresClient) async -> Double) async -> Double {
        var configuration = PostgresClient.Configuration(host: host, port: port, username: "signcore", password: nil, database: "postgres", tls: .disable)
        configuration.options.maximumConnections = 32
        configuration.options.minimumConnections = 32
        let client = PostgresClient(configuration: configuration)
        return await withTaskGroup(of: Double?.self) { group in
            group.addTask { await client.run(); return nil }
            await withTaskGroup(of: Void.self) { warm in
                for _ in 0..<64 { warm.addTask { _ = try? await client.query("SELECT 1", logger: Logger(label: "bench")) } }
            }
            let result = await body(client)
            group.cancelAll()
            return result
        }
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}

struct BenchFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
#endif
