import Foundation
import Hummingbird
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
@_spi(SignCoreTools) import SignCore
@testable import SignGateway
import SignTestSupport
import Testing

/// A TCP server on loopback that hands each connection, as bytes, to `serve`: an upstream that
/// behaves exactly as a test needs (answers before reading, closes, stalls), recording what it got.
final class RawUpstream: Sendable {
    typealias Connection = NIOAsyncChannel<ByteBuffer, ByteBuffer>
    /// Connections accepted.
    let accepted = Locked(0)

    /// Runs `body` with the port while every connection is served by `serve` (its index, its
    /// inbound bytes, its writer); a connection closes when `serve` returns.
    func run<T: Sendable>(tls: NIOSSLContext? = nil,
                          serve: @escaping @Sendable (Int, NIOAsyncChannelInboundStream<ByteBuffer>, NIOAsyncChannelOutboundWriter<ByteBuffer>) async throws -> Void,
                          _ body: @Sendable (Int) async throws -> T) async throws -> T {
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .bind(host: "127.0.0.1", port: 0) { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let tls { try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: tls)) }
                    return try Connection(wrappingChannelSynchronously: channel)
                }
            }
        let port = server.channel.localAddress?.port ?? 0
        return try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask {
                try await server.executeThenClose { connections in
                    try await withThrowingDiscardingTaskGroup { handlers in
                        for try await connection in connections {
                            let index = self.accepted.withLock { count in defer { count += 1 }; return count }
                            handlers.addTask {
                                try? await connection.executeThenClose { inbound, outbound in try await serve(index, inbound, outbound) }
                            }
                        }
                    }
                }
                return nil
            }
            defer { group.cancelAll() }
            return try await body(port)
        }
    }

    /// Hands `handle` each request head (up to its blank line) as it arrives, for requests
    /// without a body; the connection ends when `handle` returns false or the client closes.
    static func eachHead(_ inbound: NIOAsyncChannelInboundStream<ByteBuffer>, _ handle: (String) async throws -> Bool) async throws {
        var text = ""
        for try await chunk in inbound {
            text += String(buffer: chunk)
            while let end = text.range(of: "\r\n\r\n") {
                let head = String(text[..<end.lowerBound])
                text = String(text[end.upperBound...])
                guard try await handle(head) else { return }
            }
        }
    }

    /// Reads until `marker` has arrived; returns every byte read. (Keep the iterator while the
    /// connection lasts: one dropped makes the channel discard what arrives.)
    static func read(_ iterator: inout NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator, until marker: String) async throws -> String {
        var text = ""
        while !text.contains(marker), let chunk = try await iterator.next() { text += String(buffer: chunk) }
        return text
    }
}

/// signd's upstream client against upstreams that misbehave on purpose: what it sends is what
/// was verified, an early answer lets go of everything, failures are told apart, the pool holds.
@Suite(.serialized) struct UpstreamClientTests {
    static func client(_ port: Int, scheme: String = "http", host: String = "127.0.0.1", connections: Int = 4,
                       connectTimeout: TimeAmount = .seconds(2), tls: TLSConfiguration = .makeClientConfiguration()) throws -> UpstreamClient {
        let endpoint = try #require(UpstreamClient.Endpoint("\(scheme)://\(host):\(port)"))
        return try UpstreamClient(endpoint: endpoint, maxConnections: connections, connectTimeout: connectTimeout, tlsConfiguration: tls)
    }

    static func head(_ method: HTTPMethod = .GET, _ target: String, _ fields: [(String, String)] = []) -> HTTPRequestHead {
        HTTPRequestHead(version: .http1_1, method: method, uri: target, headers: HTTPHeaders(fields))
    }

    static func head(_ target: String) -> HTTPRequestHead { head(.GET, target) }

    static func text(_ response: UpstreamResponse) async throws -> String {
        var text = ""
        for try await chunk in response.body { text += String(buffer: chunk) }
        return text
    }

    /// An answer of `body` with its length, kept alive.
    static func answer(_ body: String, status: String = "200 OK") -> ByteBuffer {
        ByteBuffer(string: "HTTP/1.1 \(status)\r\ncontent-length: \(body.utf8.count)\r\n\r\n\(body)")
    }

    @Test func endpointsAreParsedStrictly() {
        let plain = UpstreamClient.Endpoint("http://127.0.0.1:9000")
        #expect(plain?.host == "127.0.0.1" && plain?.port == 9000 && plain?.tls == false && plain?.authority == "127.0.0.1:9000")
        #expect(UpstreamClient.Endpoint("https://api.internal")?.port == 443)
        #expect(UpstreamClient.Endpoint("http://[::1]:81")?.host == "::1")
        #expect(UpstreamClient.Endpoint("http://[::1]:81")?.authority == "[::1]:81")
        #expect(UpstreamClient.Endpoint("http://upstream:080")?.authority == "upstream:80")
        for bad in ["ftp://x", "http://", "http://x/", "http://x:0", "http://x:65536", "http://u@x", "http://x?y", "http://[::1", "http://x:1:2", "http://x y",
                    "http://x:+80", "http://x:-1", "http://x: 80"] {
            #expect(UpstreamClient.Endpoint(bad) == nil, "\(bad)")
        }
    }

    /// The request line and `Host` reach the upstream as given, byte for byte, and one kept-alive
    /// connection carries sequential exchanges.
    @Test func theTargetIsSentAsItIsOnOneConnection() async throws {
        let upstream = RawUpstream()
        let seen = Locked<[String]>([])
        try await upstream.run(serve: { _, inbound, outbound in
            try await RawUpstream.eachHead(inbound) { head in
                seen.withLock { $0.append(head) }
                try await outbound.write(Self.answer("ok"))
                return true
            }
        }) { port in
            let client = try Self.client(port)
            defer { client.shutdown() }
            let targets = ["/a/%2e%2E/b;c?x=%20&y", "/", "/x//y/./z?", "/%7E~"]
            for target in targets {
                let response = try await client.execute(Self.head(.GET, target, [("x-one", "1")]), body: nil, timeout: .seconds(5))
                #expect(try await Self.text(response) == "ok")
            }
            let lines = seen.withLock { $0 }
            #expect(lines.map { $0.split(separator: "\r\n").first.map(String.init) } == targets.map { "GET \($0) HTTP/1.1" })
            #expect(lines.allSatisfy { $0.lowercased().contains("host: 127.0.0.1:\(port)") && $0.contains("x-one: 1") })
        }
        #expect(upstream.accepted.withLock { $0 } == 1)
    }

    /// A HEAD's answer announces a length and has no body; a 204 and a 304 have none either: each
    /// ends at its head and the connection carries the next exchange.
    @Test func answersWithoutABodyEndAtTheirHead() async throws {
        let upstream = RawUpstream()
        try await upstream.run(serve: { _, inbound, outbound in
            try await RawUpstream.eachHead(inbound) { head in
                let line = head.prefix { $0 != "\r" }
                let answer = line.hasPrefix("HEAD ") ? "HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\n"
                    : line.contains("/none ") ? "HTTP/1.1 204 No Content\r\n\r\n"
                    : line.contains("/same ") ? "HTTP/1.1 304 Not Modified\r\ncontent-length: 7\r\n\r\n"
                    : "HTTP/1.1 200 OK\r\ncontent-length: 4\r\n\r\nbody"
                try await outbound.write(ByteBuffer(string: answer))
                return true
            }
        }) { port in
            let client = try Self.client(port)
            defer { client.shutdown() }
            for (method, target, expected) in [(HTTPMethod.HEAD, "/", ""), (.GET, "/none", ""), (.GET, "/same", ""), (.GET, "/", "body"),
                                               (.HEAD, "/x", ""), (.GET, "/", "body")] {
                let response = try await client.execute(Self.head(method, target), body: nil, timeout: .seconds(5))
                #expect(try await Self.text(response) == expected, "\(method) \(target)")
            }
        }
        #expect(upstream.accepted.withLock { $0 } == 1)
    }

    /// The class AsyncHTTPClient 1.37 leaked: the upstream answers a large streaming upload
    /// before reading it. The answer arrives, the upload stops (its producer is never left
    /// waiting), the connection closes and the pool is whole again: 200 in a row on a pool of 2.
    @Test func anEarlyAnswerLetsGoOfTheUpload() async throws {
        let upstream = RawUpstream()
        try await upstream.run(serve: { index, inbound, outbound in
            var iterator = inbound.makeAsyncIterator()
            _ = try await RawUpstream.read(&iterator, until: "\r\n\r\n")
            // One in 20 answers once the sockets' buffers are full, the upload blocked in a write.
            if index % 20 == 0 { try await Task.sleep(for: .milliseconds(300)) }
            try await outbound.write(ByteBuffer(string: "HTTP/1.1 404 Not Found\r\ncontent-length: 4\r\n\r\nnope"))
            try await Task.sleep(for: .seconds(30))  // never reads the body, never closes first
            _ = iterator
        }) { port in
            let client = try Self.client(port, connections: 2, connectTimeout: .seconds(1))
            defer { client.shutdown() }
            let chunk = ByteBuffer(repeating: 0x61, count: 64 * 1024)
            for _ in 0..<200 {
                let body = ChunkHandoff()
                // 16 MiB offered, far more than the sockets' buffers hold.
                let producer = Task {
                    do {
                        for _ in 0..<256 { try await body.send(chunk) }
                        body.end(nil)
                    } catch {
                        body.end(error)
                    }
                }
                let response = try await client.execute(Self.head(.POST, "/upload", [("content-length", String(256 * 64 * 1024))]),
                                                        body: body, timeout: .seconds(5))
                #expect(response.head.status.code == 404)
                #expect(try await Self.text(response) == "nope")
                body.discard()  // what ProxyMiddleware does with a body nobody reads any more
                await producer.value
            }
            // Every connection the early answers used was closed, and a place for each is free.
            let open = try await eventually { client.openConnections == 0 }
            #expect(open, "connections still open: \(client.openConnections)")
        }
        #expect(upstream.accepted.withLock { $0 } == 200)
    }

    /// A body whose producer fails (a whash mismatch, a limit) never looks complete upstream: the
    /// connection closes before the chunked body's last chunk, and the caller gets the error.
    @Test func aFailedBodyNeverEndsUpstream() async throws {
        let upstream = RawUpstream()
        let received = Locked("")
        let closed = Locked(false)
        try await upstream.run(serve: { _, inbound, _ in
            defer { closed.withLock { $0 = true } }
            for try await chunk in inbound { received.withLock { $0 += String(buffer: chunk) } }
        }) { port in
            let client = try Self.client(port)
            defer { client.shutdown() }
            let body = ChunkHandoff()
            let producer = Task {
                try await body.send(ByteBuffer(string: "first part"))
                body.end(SignCoreError(.whashMismatch, "the body does not match its whash"))
            }
            await #expect(throws: SignCoreError.self) {
                _ = try await client.execute(Self.head(.PUT, "/doc", [("transfer-encoding", "chunked")]), body: body, timeout: .seconds(5))
            }
            try await producer.value
            #expect(try await eventually { closed.withLock { $0 } }, "the connection was not closed")
        }
        let text = received.withLock { $0 }
        #expect(text.contains("first part"))
        #expect(!text.hasSuffix("0\r\n\r\n"), "the chunked body was ended: \(text.debugDescription)")
    }

    /// Failures are told apart: nothing listening (after retries within the connect timeout), no
    /// answer within the timeout, a connection dropped; and a full pool refuses after waiting.
    @Test func failuresAreToldApart() async throws {
        let closedPort = try freePort()
        let unreachable = try Self.client(closedPort, connectTimeout: .seconds(1))
        defer { unreachable.shutdown() }
        let started = ContinuousClock.now
        await #expect(throws: UpstreamFailure.unreachable) {
            _ = try await unreachable.execute(Self.head("/"), body: nil, timeout: .seconds(5))
        }
        #expect(ContinuousClock.now - started >= .milliseconds(700), "retried within the connect timeout")

        let upstream = RawUpstream()
        try await upstream.run(serve: { _, inbound, outbound in
            var iterator = inbound.makeAsyncIterator()
            let request = try await RawUpstream.read(&iterator, until: "\r\n\r\n")
            if request.hasPrefix("GET /drop ") { return }
            try await Task.sleep(for: .seconds(30))
            _ = iterator
        }) { port in
            let client = try Self.client(port, connections: 1, connectTimeout: .seconds(1))
            defer { client.shutdown() }
            await #expect(throws: UpstreamFailure.failed) {
                _ = try await client.execute(Self.head("/drop"), body: nil, timeout: .seconds(5))
            }
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    await #expect(throws: UpstreamFailure.timedOut) {
                        _ = try await client.execute(Self.head("/stall"), body: nil, timeout: .seconds(2))
                    }
                }
                try await Task.sleep(for: .milliseconds(300))
                // The one connection is busy for longer than the connect timeout.
                await #expect(throws: UpstreamFailure.busy) {
                    _ = try await client.execute(Self.head("/second"), body: nil, timeout: .seconds(5))
                }
                try await group.waitForAll()
            }
            #expect(try await eventually { client.openConnections == 0 })
        }
    }

    /// A TRACE is written without a length (RFC 9110: it has no content): one with a body is
    /// refused before anything is sent, or the body would reach the upstream as a request.
    @Test func aTraceWithABodyIsNeverSent() async throws {
        let upstream = RawUpstream()
        try await upstream.run(serve: { _, inbound, _ in for try await _ in inbound {} }) { port in
            let client = try Self.client(port)
            defer { client.shutdown() }
            let body = ChunkHandoff()
            body.end(nil)
            await #expect(throws: SignCoreError.self) {
                _ = try await client.execute(Self.head(.TRACE, "/", [("content-length", "0")]), body: body, timeout: .seconds(5))
            }
        }
        #expect(upstream.accepted.withLock { $0 } == 0)
    }

    /// Requests beyond the pool wait for a connection to come back and take it; an upload the
    /// upstream stops reading ends as a timeout (504), not as a failed connection.
    @Test func waitersTakeReleasedConnectionsAndStalledUploadsTimeOut() async throws {
        let upstream = RawUpstream()
        try await upstream.run(serve: { _, inbound, outbound in
            try await RawUpstream.eachHead(inbound) { head in
                if head.hasPrefix("POST /stall ") { try await Task.sleep(for: .seconds(30)) }  // reads no body
                try await Task.sleep(for: .milliseconds(300))
                try await outbound.write(Self.answer("ok"))
                return true
            }
        }) { port in
            let client = try Self.client(port, connections: 1, connectTimeout: .seconds(3))
            defer { client.shutdown() }
            // Four at once on one connection: each waits its turn (about 0.3 s each), none is busy.
            try await withThrowingTaskGroup(of: String.self) { group in
                for _ in 0..<4 { group.addTask { try await Self.text(client.execute(Self.head("/"), body: nil, timeout: .seconds(5))) } }
                for try await text in group { #expect(text == "ok") }
            }
            #expect(upstream.accepted.withLock { $0 } == 1)
            let body = ChunkHandoff()
            let producer = Task {
                do { for _ in 0..<512 { try await body.send(ByteBuffer(repeating: 0x62, count: 64 * 1024)) }; body.end(nil) } catch { body.end(error) }
            }
            await #expect(throws: UpstreamFailure.timedOut) {
                _ = try await client.execute(Self.head(.POST, "/stall", [("content-length", String(512 * 64 * 1024))]), body: body, timeout: .seconds(1))
            }
            body.discard()
            await producer.value
        }
    }

    /// A kept-alive connection the upstream drops when the next request arrives on it (as one
    /// closed at that moment): a GET is sent again on a new connection; a POST is not repeated.
    @Test func aStaleConnectionIsRetriedForSafeRequestsOnly() async throws {
        let upstream = RawUpstream()
        try await upstream.run(serve: { _, inbound, outbound in
            var answered = false
            try await RawUpstream.eachHead(inbound) { _ in
                if answered { return false }  // the second request: dropped unanswered
                answered = true
                try await outbound.write(Self.answer("once"))
                return true
            }
        }) { port in
            let client = try Self.client(port)
            defer { client.shutdown() }
            for _ in 0..<5 {
                let response = try await client.execute(Self.head("/"), body: nil, timeout: .seconds(5))
                #expect(try await Self.text(response) == "once")
            }
            #expect(upstream.accepted.withLock { $0 } == 5)
            await #expect(throws: UpstreamFailure.failed) {
                _ = try await client.execute(Self.head(.POST, "/", [("content-length", "0")]), body: nil, timeout: .seconds(5))
            }
        }
        #expect(upstream.accepted.withLock { $0 } == 5)
    }

    /// An `https://` upstream: the certificate is checked against the trusted roots and the
    /// host name; a name it does not carry fails.
    @Test func tlsUpstreamsAreVerified() async throws {
        let folder = try TemporaryFolder()
        let (certificate, key, authority) = try Self.makeCertificate(in: folder.path, name: "localhost")
        let server = try NIOSSLContext(configuration: .makeServerConfiguration(certificateChain: [.certificate(certificate)], privateKey: .privateKey(key)))
        let trusting = {
            var configuration = TLSConfiguration.makeClientConfiguration()
            configuration.trustRoots = .certificates([authority])
            return configuration
        }()
        let upstream = RawUpstream()
        try await upstream.run(tls: server, serve: { _, inbound, outbound in
            var iterator = inbound.makeAsyncIterator()
            _ = try await RawUpstream.read(&iterator, until: "\r\n\r\n")
            try await outbound.write(Self.answer("secret"))
        }) { port in
            let good = try Self.client(port, scheme: "https", host: "localhost", tls: trusting)
            defer { good.shutdown() }
            #expect(try await Self.text(good.execute(Self.head("/"), body: nil, timeout: .seconds(5))) == "secret")
            // The system's roots only: the test authority is unknown.
            let untrusting = try Self.client(port, scheme: "https", host: "localhost")
            defer { untrusting.shutdown() }
            await #expect(throws: (any Error).self) { _ = try await untrusting.execute(Self.head("/"), body: nil, timeout: .seconds(5)) }
            // Trusted authority, but a name the certificate does not carry.
            let wrongName = try Self.client(port, scheme: "https", host: "127.0.0.1", tls: trusting)
            defer { wrongName.shutdown() }
            await #expect(throws: (any Error).self) { _ = try await wrongName.execute(Self.head("/"), body: nil, timeout: .seconds(5)) }
        }
    }

    /// A test authority and a certificate it signs for `name` (openssl).
    static func makeCertificate(in folder: String, name: String) throws -> (NIOSSLCertificate, NIOSSLPrivateKey, NIOSSLCertificate) {
        func openssl(_ arguments: [String]) throws {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["openssl"] + arguments
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            process.waitUntilExit()
            guard process.terminationStatus == 0 else { throw SignCoreError(.invalidInput, "openssl \(arguments.first ?? "") failed") }
        }
        let at = { (file: String) in folder + "/" + file }
        try openssl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2", "-subj", "/CN=SignCore test CA",
                     "-keyout", at("ca.key"), "-out", at("ca.pem")])
        try openssl(["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=\(name)",
                     "-keyout", at("server.key"), "-out", at("server.csr")])
        try "subjectAltName=DNS:\(name)\n".write(toFile: at("san.ext"), atomically: true, encoding: .utf8)
        try openssl(["x509", "-req", "-in", at("server.csr"), "-CA", at("ca.pem"), "-CAkey", at("ca.key"), "-CAcreateserial", "-days", "2",
                     "-extfile", at("san.ext"), "-out", at("server.pem")])
        let server = try #require(try NIOSSLCertificate.fromPEMFile(at("server.pem")).first)
        let authority = try #require(try NIOSSLCertificate.fromPEMFile(at("ca.pem")).first)
        return (server, try NIOSSLPrivateKey(file: at("server.key"), format: .pem), authority)
    }
}

/// Whether `condition` holds within 5 s, checked every 50 ms.
func eventually(_ condition: @Sendable () async -> Bool) async throws -> Bool {
    for _ in 0..<100 {
        if await condition() { return true }
        try await Task.sleep(for: .milliseconds(50))
    }
    return await condition()
}

/// A body whose stated length must wait for its end (HTTP/2): the chunk that reaches the length is
/// handed on only at the end, and a chunk past it fails the body rather than replace the held one.
@Suite struct UpstreamBodyTests {
    struct Chunks: AsyncSequence, Sendable {
        let parts: [String]
        func makeAsyncIterator() -> AsyncStream<ByteBuffer>.Iterator {
            AsyncStream { continuation in
                parts.forEach { continuation.yield(ByteBuffer(string: $0)) }
                continuation.finish()
            }.makeAsyncIterator()
        }
    }

    static func read(_ parts: [String], length: Int64) async -> (String, (any Error)?) {
        let body = UpstreamBody(RequestBody(asyncSequence: Chunks(parts: parts)), limit: 1 << 20, completedAtEnd: length)
        var read = ""
        do {
            while let chunk = try await body.chunks.next() { read += String(buffer: chunk) }
            return (read, nil)
        } catch {
            return (read, error)
        }
    }

    @Test func theChunkThatCompletesAStatedLengthWaitsAndNothingReplacesIt() async {
        let whole = await Self.read(["ab", "cde", ""], length: 5)
        #expect(whole.0 == "abcde" && whole.1 == nil)
        let longer = await Self.read(["ab", "cde", "f"], length: 5)
        #expect(longer.0 == "ab" && (longer.1 as? SignCoreError)?.code == .invalidInput, "\(longer)")
    }
}
