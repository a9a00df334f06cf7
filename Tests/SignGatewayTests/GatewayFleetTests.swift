import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import SignAsyncHTTPClient
@_spi(SignCoreTools) import SignCore
import SignGateway
import SignHTTP
import SignTestSupport
import Testing

/// signd as a fleet (two instances sharing one real PostgreSQL), signd with the store gone, and
/// signd streaming a body of 1 GiB.
@Suite(.serialized) struct GatewayFleetTests {
    static let key = GatewayTests.key

    static func postgresReplay(_ server: PostgresServer) -> [String: Any] {
        ["store": "postgres", "postgres": ["host": "127.0.0.1", "port": server.port, "username": server.user, "database": "postgres", "timeout": 1]]
    }

    /// Signed GETs for `count` distinct URLs (signed once each: the tokens are what is replayed),
    /// valid for signd's longest lifetime (300 s): a slow machine takes more than a minute to send them.
    static func signedRequests(_ count: Int, base: String) throws -> [(String, String, String)] {
        let signer = try Signer(key: key, lifetime: 300)
        return try (0..<count).map { index in
            let url = "/v1/items/\(index)"
            let headers = try signer.sign(method: .get, url: base + url, body: [])
            return (url, headers.whash, headers.wtoken)
        }
    }

    /// Sends the same signed request to each of `ports` at once; returns the statuses.
    static func sendToAll(_ http: HTTPClient, ports: [Int], path: String, whash: String, wtoken: String) async throws -> [UInt] {
        try await withThrowingTaskGroup(of: UInt.self) { group in
            for port in ports {
                group.addTask {
                    var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)" + path)
                    request.headers.add(name: "host", value: "gateway.test")
                    request.headers.add(name: "whash", value: whash)
                    request.headers.add(name: "wtoken", value: wtoken)
                    let response = try await http.execute(request, timeout: .seconds(30))
                    _ = try await response.body.collect(upTo: 1 << 16)
                    return response.status.code
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
    }

    /// Two signd instances on one PostgreSQL: each of 10,000 tokens sent to both at once is
    /// accepted exactly once (the other answers 401 replayed).
    @Test func twoInstancesAcceptEachTokenOnce() async throws {
        let server = try await PostgresServer.start()
        defer { server.stop() }
        let folder = try TemporaryFolder()
        let keys = try folder.writeKeys([Self.key])
        let upstream = Upstream()
        let tokens = try Self.signedRequests(10_000, base: "https://gateway.test")
        let statuses = Shared([UInt: Int]())
        try await upstream.run { upstreamPort in
            let overrides = ["replay": Self.postgresReplay(server), "origin": ["scheme": "https", "authority": "gateway.test"]] as [String: Any]
            let configuration = GatewayTests.configuration(upstream: upstreamPort, keys: keys, overrides)
            try await withGateway(configuration) { first in
                try await withGateway(configuration) { second in
                    var settings = HTTPClient.Configuration()
                    settings.connectionPool = .init(idleTimeout: .seconds(30), concurrentHTTP1ConnectionsPerHostSoftLimit: 16)
                    let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: settings)
                    defer { _ = http.shutdown() }
                    // 16 tokens in flight at a time, each to both instances at once.
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        for (index, token) in tokens.enumerated() {
                            if index >= 16 { try await group.next() }
                            group.addTask {
                                let codes = try await Self.sendToAll(http, ports: [first, second], path: token.0, whash: token.1, wtoken: token.2)
                                statuses.value.withLock { counts in counts[codes.sorted().reduce(0) { $0 * 1000 + $1 }, default: 0] += 1 }
                            }
                        }
                        try await group.waitForAll()
                    }
                }
            }
        }
        // 200 from one instance, 401 (replayed) from the other, for every token.
        #expect(statuses.value.withLock { $0 } == [200_401: tokens.count], "each token accepted by exactly one instance")
        #expect(upstream.all.count == tokens.count && Set(upstream.all.map(\.path)).count == tokens.count)
    }

    /// `signd --create-schema`: the table and index are created (twice is fine); a memory store has none.
    @Test func schemaByCommand() async throws {
        let server = try await PostgresServer.start()
        defer { server.stop() }
        let folder = try TemporaryFolder()
        let keys = try folder.writeKeys([Self.key])
        let gateway = try Gateway(configuration: GatewayConfiguration.parse(Data(GatewayTests.configuration(
            upstream: 1, keys: keys, ["replay": Self.postgresReplay(server)]).utf8)), logger: quietLogger)
        try await gateway.createSchema()
        let again = try Gateway(configuration: GatewayConfiguration.parse(Data(GatewayTests.configuration(
            upstream: 1, keys: keys, ["replay": Self.postgresReplay(server)]).utf8)), logger: quietLogger)
        try await again.createSchema()
        let names = try await withPostgresClient(server) { client in
            var names: [String] = []
            let rows = try await client.query("SELECT indexname FROM pg_indexes WHERE tablename = 'signcore_nonces' ORDER BY indexname",
                                              logger: quietLogger)
            for try await name in rows.decode(String.self) { names.append(name) }
            return names
        }
        #expect(names == ["signcore_nonces_expires", "signcore_nonces_pkey"])
        let memory = try Gateway(configuration: GatewayConfiguration.parse(Data(GatewayTests.configuration(upstream: 1, keys: keys).utf8)),
                                 logger: quietLogger)
        await #expect(throws: SignCoreError.self) { try await memory.createSchema() }
    }

    /// PostgreSQL stopped during a load: every request is refused 503 and none reaches the
    /// upstream; once it is back, requests are accepted again, signd never restarted.
    @Test func storeDownMeans503ThenRecovery() async throws {
        let server = try await PostgresServer.start()
        defer { server.stop() }
        let folder = try TemporaryFolder()
        let keys = try folder.writeKeys([Self.key])
        let upstream = Upstream()
        try await upstream.run { upstreamPort in
            let configuration = GatewayTests.configuration(upstream: upstreamPort, keys: keys, ["replay": Self.postgresReplay(server)])
            try await withGateway(configuration) { port in
                var settings = HTTPClient.Configuration()
                settings.connectionPool = .init(idleTimeout: .seconds(30), concurrentHTTP1ConnectionsPerHostSoftLimit: 100)
                let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: settings)
                defer { _ = http.shutdown() }
                let signer = try Signer(key: Self.key)
                let base = "http://127.0.0.1:\(port)"
                #expect(try await http.execute(HTTPClientRequest(url: base + "/before"), client: SigningClient(signer: signer, policies: []), timeout: .seconds(10)).status == .ok)
                try await server.kill()
                let during = try await withThrowingTaskGroup(of: (UInt, String?).self) { group in
                    for index in 0..<100 {
                        group.addTask {
                            let response = try await http.execute(HTTPClientRequest(url: base + "/during/\(index)"), client: SigningClient(signer: signer, policies: []),
                                                                  timeout: .seconds(30))
                            return (response.status.code, response.headers.first(name: "retry-after"))
                        }
                    }
                    return try await group.reduce(into: []) { $0.append($1) }
                }
                #expect(during.allSatisfy { $0.0 == 503 && $0.1 != nil }, "\(Set(during.map(\.0)))")
                try await server.startAgain()
                var recovered = false
                for _ in 0..<100 where !recovered {
                    recovered = try await http.execute(HTTPClientRequest(url: base + "/after"), client: SigningClient(signer: signer, policies: []), timeout: .seconds(10)).status == .ok
                    if !recovered { try await Task.sleep(for: .milliseconds(200)) }
                }
                #expect(recovered)
            }
        }
        #expect(!upstream.all.contains { $0.path.hasPrefix("/during") }, "nothing accepted without its nonce stored")
    }

    /// 1 GiB streamed through signd in constant memory; the same body with its last bytes changed
    /// never reaches the upstream whole.
    @Test func aGibibyteStreamsThroughAndATamperedOneNeverArrivesWhole() async throws {
        let folder = try TemporaryFolder()
        let keys = try folder.writeKeys([Self.key])
        let upstream = Upstream()
        let size = 1 << 30
        let chunk = 1 << 20
        var hasher = WHash.BodyHasher()
        let pattern = ByteBuffer(bytes: (0..<chunk).map { UInt8(truncatingIfNeeded: $0 &* 131) })
        for _ in 0..<(size / chunk) { try pattern.withUnsafeReadableBytes { try hasher.append($0) } }
        let whash = hasher.finalize()
        let peak = Shared(0)
        try await upstream.run { upstreamPort in
            let streamed = ["body": ["mode": "streamed", "limit": 1 << 31]]
            try await withGateway(GatewayTests.configuration(upstream: upstreamPort, keys: keys, streamed)) { port in
                let http = HTTPClient(eventLoopGroupProvider: .singleton)
                defer { _ = http.shutdown() }
                let signer = try Signer(key: Self.key)
                let before = residentBytes()
                let sampler = Task {
                    while !Task.isCancelled {
                        let now = residentBytes()
                        peak.value.withLock { $0 = max($0, now) }
                        try? await Task.sleep(for: .milliseconds(50))
                    }
                }
                defer { sampler.cancel() }
                var put = HTTPClientRequest(url: "http://127.0.0.1:\(port)/upload")
                put.method = .PUT
                let good = try await http.execute(put, body: .stream(whash: whash, length: Int64(size)) { Chunks(pattern: pattern, count: size / chunk, tamperLast: false) },
                                                  client: SigningClient(signer: signer, policies: []), timeout: .seconds(600))
                _ = try await good.body.collect(upTo: 1 << 16)
                #expect(good.status == .ok, "\(good.headers.first(name: "signcore-error") ?? "")")
                let growth = peak.value.withLock { $0 } - before
                #expect(growth < 256 << 20, "resident memory grew \(growth >> 20) MiB for a 1 GiB body")
                let bad = try await http.execute(put, body: .stream(whash: whash, length: Int64(size)) { Chunks(pattern: pattern, count: size / chunk, tamperLast: true) },
                                                 client: SigningClient(signer: signer, policies: []), timeout: .seconds(600))
                #expect(bad.status == .unauthorized && bad.headers.first(name: "signcore-error")?.hasPrefix("whashMismatch") == true)
            }
        }
        let records = upstream.all
        #expect(records.first.map { $0.bodyBytes == size && $0.complete } == true)
        #expect(records.count == 1 || records.dropFirst().allSatisfy { !$0.complete && $0.bodyBytes < size },
                "the tampered body never arrived whole: \(records.map { ($0.bodyBytes, $0.complete) })")
    }

    /// A value tasks share.
    final class Shared<Value: Sendable>: Sendable {
        let value: Locked<Value>
        init(_ value: Value) { self.value = Locked(value) }
    }

    /// `count` copies of `pattern`, the last with one byte changed when `tamperLast`.
    struct Chunks: AsyncSequence, Sendable {
        typealias Element = ByteBuffer
        let pattern: ByteBuffer
        let count: Int
        let tamperLast: Bool

        func makeAsyncIterator() -> Iterator { Iterator(chunks: self) }

        struct Iterator: AsyncIteratorProtocol {
            let chunks: Chunks
            var sent = 0
            mutating func next() async throws -> ByteBuffer? {
                guard sent < chunks.count else { return nil }
                sent += 1
                guard sent == chunks.count, chunks.tamperLast else { return chunks.pattern }
                var last = chunks.pattern
                last.setInteger(last.getInteger(at: 100, as: UInt8.self).map { $0 ^ 1 } ?? 0, at: 100)
                return last
            }
        }
    }
}
