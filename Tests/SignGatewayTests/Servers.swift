import AsyncHTTPClient
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import ServiceLifecycle
@_spi(SignCoreTools) import SignCore
import SignGateway

/// Silent, unless SIGNCORE_TEST_LOG is set (then warnings and worse go to standard error).
let quietLogger: Logger = {
    guard ProcessInfo.processInfo.environment["SIGNCORE_TEST_LOG"] != nil else {
        return Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
    }
    var logger = Logger(label: "test", factory: { StreamLogHandler.standardError(label: $0) })
    logger.logLevel = .warning
    return logger
}()

/// Runs `services` in a ServiceGroup while `body` runs with the port `listening` reports, then
/// shuts the group down gracefully.
func withServices<T: Sendable>(_ services: [any Service], ports: AsyncStream<Int>, _ body: @Sendable (Int) async throws -> T) async throws -> T {
    let group = ServiceGroup(configuration: .init(services: services, logger: quietLogger))
    return try await withThrowingTaskGroup(of: T?.self) { tasks in
        tasks.addTask { try await group.run(); return nil }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else { throw CancellationError() }
        do {
            let result = try await body(port)
            await group.triggerGracefulShutdown()
            return result
        } catch {
            await group.triggerGracefulShutdown()
            throw error
        }
    }
}

/// A real upstream on loopback: answers every request with what it received (identity fields,
/// forwarded fields, body size and whether the body arrived whole), and counts.
final class Upstream: Sendable {
    struct Record: Sendable {
        var path: String
        var keyID: String? = nil
        var account: String? = nil
        var bodyBytes: Int
        var complete: Bool
        /// Every `Host` the upstream received, and `x-forwarded-host`.
        var hosts: [String] = []
        var forwardedHost: String?
        /// Every field as received, `name: value`, the name in lower case.
        var fields: [String] = []
    }

    let records = Locked<[Record]>([])
    let flakyLeft = Locked(0)

    var all: [Record] { records.withLock { $0 } }
    func clear() { records.withLock { $0.removeAll() } }

    func application(port: Int = 0, onListening: @escaping @Sendable (Int) async -> Void = { _ in }) -> some Service {
        let router = Router()
        router.add(middleware: Answer(upstream: self))
        return Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: port)),
                           onServerRunning: { await onListening($0.localAddress?.port ?? 0) }, logger: quietLogger)
    }

    func run<T: Sendable>(_ body: @Sendable (Int) async throws -> T) async throws -> T {
        let (ports, port) = AsyncStream.makeStream(of: Int.self)
        return try await withServices([application(onListening: { port.yield($0) })], ports: ports, body)
    }

    struct Answer: RouterMiddleware {
        typealias Context = BasicRequestContext
        let upstream: Upstream

        func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
            // Answers before reading the body, as an upstream does with a 404, a 413 or its own 401.
            if request.uri.path.hasPrefix("/early") {
                upstream.records.withLock { $0.append(Record(path: request.uri.path, bodyBytes: -1, complete: false)) }
                return Response(status: .notFound, headers: [.contentType: "text/plain"], body: ResponseBody(byteBuffer: ByteBuffer(string: "no")))
            }
            // Answers at once, then reads the body as it echoes it (a duplex exchange): recorded when
            // the body has ended, well or not.
            if request.uri.path.hasPrefix("/public/duplex") {
                let upstream = self.upstream
                return Response(status: .ok, headers: [.contentType: "application/octet-stream"], body: ResponseBody { writer in
                    var (bytes, complete) = (0, true)
                    do {
                        for try await chunk in request.body {
                            bytes += chunk.readableBytes
                            try await writer.write(chunk)
                        }
                    } catch {
                        complete = false
                    }
                    upstream.records.withLock { $0.append(Record(path: request.uri.path, bodyBytes: bytes, complete: complete)) }
                    try await writer.finish(nil)
                })
            }
            // An upstream that verifies too, and refuses with its own code.
            if request.uri.path.hasSuffix("/refuses") {
                return Response(status: .unauthorized, headers: [HTTPField.Name("signcore-error")!: "replayed;code=23;advice=newToken"])
            }
            // The application's own 428 (RFC 6585, a missing If-Match): not SignCore's.
            if request.uri.path == "/own428" {
                return Response(status: .preconditionRequired, headers: [.contentType: "text/plain"], body: ResponseBody(byteBuffer: ByteBuffer(string: "If-Match")))
            }
            // 64 MiB answered in 64 KiB chunks; recorded when the answer ends, with the bytes
            // written and whether all were (a client gone stops it only if signd lets go).
            if request.uri.path == "/huge" || request.uri.path == "/public/huge" {
                let upstream = self.upstream
                // 1 GiB, far past what the kernel's socket buffers on both of signd's sides hold
                // (tcp_rmem may grow to 32 MiB): it ends only if something reads it all.
                let chunk = ByteBuffer(repeating: UInt8(ascii: "h"), count: 64 << 10)
                let chunks = 16_384
                return Response(status: .ok, headers: [.contentType: "application/octet-stream"], body: ResponseBody(contentLength: chunks * chunk.readableBytes) { writer in
                    var sent = 0
                    defer { upstream.records.withLock { $0.append(Record(path: request.uri.path, bodyBytes: sent, complete: sent == chunks * chunk.readableBytes)) } }
                    for _ in 0..<chunks {
                        try await writer.write(chunk)
                        sent += chunk.readableBytes
                    }
                    try await writer.finish(nil)
                })
            }
            if request.uri.path == "/slow" || request.uri.path.hasPrefix("/public/wait") {
                try await Task.sleep(for: .seconds(3))
            }
            if request.uri.path == "/flaky", upstream.flakyLeft.withLock({ left in defer { left -= 1 }; return left > 0 }) {
                return Response(status: .serviceUnavailable, headers: [.retryAfter: "0"])
            }
            var bytes = 0
            var complete = true
            do {
                for try await chunk in request.body { bytes += chunk.readableBytes }
            } catch {
                complete = false
            }
            let record = Record(path: request.uri.path, keyID: request.headers[HTTPField.Name("signcore-key-id")!],
                                account: request.headers[HTTPField.Name("signcore-account")!], bodyBytes: bytes, complete: complete,
                                hosts: (request.head.authority.map { [$0] } ?? []) + request.headers[values: HTTPField.Name("host")!],
                                forwardedHost: request.headers[HTTPField.Name("x-forwarded-host")!],
                                fields: request.headers.map { "\($0.name.canonicalName): \($0.value)" })
            upstream.records.withLock { $0.append(record) }
            let answer = ["keyID": record.keyID ?? "", "account": record.account ?? "", "bytes": "\(bytes)",
                          "forwardedHost": request.headers[HTTPField.Name("x-forwarded-host")!] ?? ""]
            let json = try JSONSerialization.data(withJSONObject: answer, options: [.sortedKeys])
            return Response(status: .ok, headers: [.contentType: "application/json"], body: ResponseBody(byteBuffer: ByteBuffer(bytes: json)))
        }
    }
}

/// A temporary folder for key and configuration files.
final class TemporaryFolder: Sendable {
    let path = NSTemporaryDirectory() + "signcore-test-\(UUID().uuidString)"
    init() throws { try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true) }
    deinit { try? FileManager.default.removeItem(atPath: path) }

    /// Writes `keys` as a JWK Set (secrets included: HMAC keys are shared secrets), mode 0600.
    @discardableResult
    func writeKeys(_ keys: [SigningKey], to name: String = "keys.jwks") throws -> String {
        let file = path + "/" + name
        let temporary = file + ".new"
        _ = FileManager.default.createFile(atPath: temporary, contents: Data(try JWK.serialize(keys, includePrivate: true).utf8),
                                       attributes: [.posixPermissions: 0o600])
        guard rename(temporary, file) == 0 else { throw POSIXError(.EIO) }  // atomically, as an operator would
        return file
    }
}

/// Runs signd (in process) with the JSON configuration `json` while `body` runs with its port.
func withGateway<T: Sendable>(_ json: String, _ body: @Sendable (Int) async throws -> T) async throws -> T {
    let configuration = try GatewayConfiguration.parse(Data(json.utf8))
    let (ports, port) = AsyncStream.makeStream(of: Int.self)
    let gateway = try Gateway(configuration: configuration, logger: quietLogger) { port.yield($0) }
    return try await withServices([gateway], ports: ports, body)
}

/// The resident memory of this process, in bytes.
func residentBytes() -> Int {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
          let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
          let kilobytes = Int(line.split(separator: " ").dropFirst().first ?? "") else { return 0 }
    return kilobytes * 1024
}

/// signd (in process) in front of a fresh recording upstream, its key file holding
/// `GatewayTests.key`: `configure` makes the configuration from the upstream's port and the key
/// file's path, and `body` runs with signd's port and an HTTP client. Returns the upstream, for
/// what it received.
@discardableResult
func withSignd(_ configure: @escaping @Sendable (_ upstreamPort: Int, _ keys: String) -> String,
               _ body: @escaping @Sendable (_ port: Int, _ http: HTTPClient) async throws -> Void) async throws -> Upstream {
    let folder = try TemporaryFolder()
    let keys = try folder.writeKeys([GatewayTests.key])
    let upstream = Upstream()
    try await upstream.run { upstreamPort in
        try await withGateway(configure(upstreamPort, keys)) { port in
            let http = HTTPClient(eventLoopGroupProvider: .singleton)
            defer { _ = http.shutdown() }
            try await body(port, http)
        }
    }
    return upstream
}
