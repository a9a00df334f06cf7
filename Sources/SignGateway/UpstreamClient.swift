import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
@_spi(SignCoreTools) import SignCore

/// Why an exchange with the upstream failed; ProxyMiddleware answers 503 `overloaded`, 502
/// `upstreamFailed` or 504 `upstreamTimeout`.
enum UpstreamFailure: Error, Equatable {
    /// Every connection stayed busy for the connect timeout: the request was never sent.
    case busy
    /// No connection could be opened within the connect timeout.
    case unreachable
    /// The response did not begin within the upstream timeout.
    case timedOut
    /// The connection failed, or the upstream's answer was not HTTP/1.1.
    case failed
}

/// The upstream's answer: its head, and its body as it arrives.
struct UpstreamResponse: Sendable {
    let head: HTTPResponseHead
    let body: UpstreamResponseBody
}

/// A response body as the upstream connection reads it (ResponseBuffer). Dropped before its end
/// (the client went away, or signd answers in its place), it closes the connection, which cannot
/// carry another exchange.
final class UpstreamResponseBody: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    let buffer: ResponseBuffer
    init(_ buffer: ResponseBuffer) { self.buffer = buffer }
    deinit { buffer.abandon() }

    struct AsyncIterator: AsyncIteratorProtocol {
        let body: UpstreamResponseBody  // keeps the body alive while it is read
        func next() async throws -> ByteBuffer? { try await body.buffer.next() }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(body: self) }
}

/// signd's HTTP/1.1 client for its one upstream: a pool of at most `maxConnections` keep-alive
/// connections, each serving one exchange at a time (UpstreamConnection).
///
/// Written for the gateway rather than taken from a general client: the request line is the
/// verified target byte for byte, `Host` is the upstream's own, and an exchange the upstream ends
/// early (a 404 or a 413 before the body was read) lets go of everything it held at once:
/// the upload stops, the connection closes, nothing waits on a body that will never be sent.
final class UpstreamClient: Sendable {
    /// Where the upstream is, from signd's `upstream` URL (`http://` or `https://`, a host and
    /// an optional port, nothing after).
    struct Endpoint: Sendable, Equatable {
        /// The host as a socket address takes it (an IPv6 literal without its brackets).
        let host: String
        let port: Int
        let tls: Bool
        /// The authority as written in the URL: the value of the `Host` field sent upstream.
        let authority: String

        init?(_ upstream: String) {
            let tls: Bool
            let rest: Substring
            if upstream.hasPrefix("https://") { (tls, rest) = (true, upstream.dropFirst(8)) }
            else if upstream.hasPrefix("http://") { (tls, rest) = (false, upstream.dropFirst(7)) }
            else { return nil }
            guard !rest.isEmpty, !rest.contains(where: { "/?#@ ".contains($0) }) else { return nil }
            let host: Substring
            let portText: Substring?
            if rest.hasPrefix("[") {
                guard let close = rest.firstIndex(of: "]") else { return nil }
                host = rest[rest.index(after: rest.startIndex)..<close]
                let after = rest[rest.index(after: close)...]
                guard after.isEmpty || after.hasPrefix(":") else { return nil }
                portText = after.isEmpty ? nil : after.dropFirst()
            } else {
                let parts = rest.split(separator: ":", omittingEmptySubsequences: false)
                guard parts.count <= 2 else { return nil }
                host = parts[0]
                portText = parts.count == 2 ? parts[1] : nil
            }
            guard !host.isEmpty else { return nil }
            if let portText {
                guard portText.utf8.allSatisfy({ (0x30...0x39).contains($0) }), let port = Int(portText), (1...65535).contains(port) else {
                    return nil
                }
                self.port = port
            } else {
                port = tls ? 443 : 80
            }
            self.host = String(host)
            self.tls = tls
            // The `Host` sent: the host as written, and the port as a number (`080` is `80`).
            let hostPart = rest.hasPrefix("[") ? "[\(host)]" : String(host)
            authority = portText == nil ? hostPart : "\(hostPart):\(port)"
        }
    }

    let endpoint: Endpoint
    let maxConnections: Int
    let connectTimeout: TimeAmount
    let idleTimeout: TimeAmount
    private let group: any EventLoopGroup
    private let tlsContext: NIOSSLContext?
    private let pool = Locked(Pool())

    private struct Pool {
        /// Connections waiting for an exchange, the most recently used last.
        var idle: [(connection: UpstreamConnection, since: NIODeadline)] = []
        /// Connections open or being opened.
        var open = 0
        /// Requests waiting for a connection, oldest first.
        var waiters: [(id: Int, continuation: CheckedContinuation<Lease, any Error>)] = []
        var nextWaiter = 0
        var shutDown = false
        /// Closes the connections idle longer than `idleTimeout`, every few seconds.
        var pruning: RepeatedTask?
    }

    /// What a request gets from the pool: an idle connection, or leave to open one.
    private enum Lease { case connection(UpstreamConnection), slot }

    init(endpoint: Endpoint, maxConnections: Int, connectTimeout: TimeAmount, idleTimeout: TimeAmount = .seconds(60),
         tlsConfiguration: TLSConfiguration = .makeClientConfiguration(),
         group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton) throws {
        self.endpoint = endpoint
        self.maxConnections = maxConnections
        self.connectTimeout = connectTimeout
        self.idleTimeout = idleTimeout
        self.group = group
        tlsContext = endpoint.tls ? try NIOSSLContext(configuration: tlsConfiguration) : nil
        // One task for every idle connection: a timer each would crowd the event loop's queue.
        let every = TimeAmount.nanoseconds(max(idleTimeout.nanoseconds / 4, TimeAmount.milliseconds(100).nanoseconds))
        let pruning = group.any().scheduleRepeatedTask(initialDelay: every, delay: every) { [weak self] _ in self?.closeExpired() }
        pool.withLock { $0.pruning = pruning }
    }

    /// Sends `head` (its target as it is, `Host` set here) and `body`, and returns the response
    /// once its head has arrived within `timeout`. `body`'s producer is never cancelled from
    /// here: a body the upstream did not read to its end is left to the caller.
    ///
    /// - Parameter loop: the event loop of the client's connection. A connection of that loop is
    ///   taken, or opened on it while the pool has room: the exchange then never leaves the
    ///   client's thread. Another loop's idle connection serves only when the pool is full.
    func execute(_ head: HTTPRequestHead, body: ChunkHandoff?, timeout: TimeAmount, on loop: (any EventLoop)? = nil) async throws -> UpstreamResponse {
        // SwiftNIO writes a TRACE without any length field: a body after it would be read
        // upstream as a request of its own (RFC 9110 §9.3.8: a TRACE has no content).
        guard body == nil || head.method != .TRACE else {
            throw SignCoreError(.unexpectedBody, "a TRACE request carries a body")
        }
        try Task.checkCancellation()
        var head = head
        head.headers.replaceOrAdd(name: "host", value: endpoint.authority)
        let deadline = NIODeadline.now() + connectTimeout
        var attempts = 0
        while true {
            attempts += 1
            let connection: UpstreamConnection
            let reused: Bool
            switch try await lease(until: deadline, idle: attempts == 1, loop: loop) {
            case .connection(let idle):
                (connection, reused) = (idle, true)
            case .slot:
                do {
                    (connection, reused) = (try await open(until: deadline, on: loop ?? group.next()), false)
                } catch {
                    closed(nil)
                    // An upstream taking no more connections: a kept-alive one of another loop
                    // that came free meanwhile still serves.
                    guard !(error is CancellationError), let idle = takeIdle() else {
                        throw error is CancellationError ? error : UpstreamFailure.unreachable
                    }
                    (connection, reused) = (idle, true)
                }
            }
            // A request cancelled meanwhile (its client gone) is never sent: its connection is another's.
            if Task.isCancelled {
                if !release(connection) { connection.retire() }
                throw CancellationError()
            }
            do {
                return try await connection.exchange(head, body: body, timeout: timeout)
            } catch UpstreamFailure.failed where reused && attempts == 1 && body == nil && [.GET, .HEAD, .OPTIONS].contains(head.method) {
                // A kept-alive connection the upstream closed as it was taken: a safe request
                // (RFC 9110 §9.2.1, no body here) is sent once more, on a new connection.
                try Task.checkCancellation()
                continue
            }
        }
    }

    /// Connections open or being opened (idle ones included).
    var openConnections: Int { pool.withLock { $0.open } }

    /// Closes the idle connections and refuses new requests; exchanges in progress finish.
    func shutdown() {
        let (idle, waiters) = pool.withLock { pool in
            pool.shutDown = true
            pool.pruning?.cancel()
            defer { pool.idle = []; pool.waiters = [] }
            return (pool.idle.map(\.connection), pool.waiters.map(\.continuation))
        }
        idle.forEach { $0.retire() }
        waiters.forEach { $0.resume(throwing: UpstreamFailure.unreachable) }
    }

    // MARK: The pool

    /// - Parameter idle: whether an idle connection may be taken (not for a request sent again
    ///   after a kept-alive connection failed: another idle one may be as stale).
    private func lease(until deadline: NIODeadline, idle: Bool, loop: (any EventLoop)?) async throws -> Lease {
        if let lease = try takeNow(idle: idle, loop: loop) { return lease }
        let id = pool.withLock { pool in defer { pool.nextWaiter += 1 }; return pool.nextWaiter }
        let timer = group.any().scheduleTask(deadline: deadline) { self.stopWaiting(id, UpstreamFailure.busy) }
        defer { timer.cancel() }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                // Looked at again under the lock that queues the waiter: a connection released or
                // closed since `takeNow` is taken now, never missed until the deadline.
                enum Step { case take(Lease), fail(any Error), queued }
                var stale: [UpstreamConnection] = []
                let step: Step = pool.withLock { pool in
                    if pool.shutDown { return .fail(UpstreamFailure.unreachable) }
                    if Task.isCancelled { return .fail(CancellationError()) }
                    if let lease = Self.take(&pool, idle: idle, limit: maxConnections, loop: loop, stale: &stale) { return .take(lease) }
                    guard deadline > .now() else { return .fail(UpstreamFailure.busy) }
                    pool.waiters.append((id, continuation))
                    return .queued
                }
                stale.forEach { $0.retire() }
                switch step {
                case .take(let lease): continuation.resume(returning: lease)
                case .fail(let error): continuation.resume(throwing: error)
                case .queued: break
                }
            }
        } onCancel: {
            self.stopWaiting(id, CancellationError())
        }
    }

    /// An idle connection or a free place, without waiting; nil when neither is there.
    private func takeNow(idle: Bool, loop: (any EventLoop)?) throws -> Lease? {
        var stale: [UpstreamConnection] = []
        defer { stale.forEach { $0.retire() } }
        return try pool.withLock { (pool) throws -> Lease? in
            if pool.shutDown { throw UpstreamFailure.unreachable }
            return Self.take(&pool, idle: idle, limit: maxConnections, loop: loop, stale: &stale)
        }
    }

    /// Any idle connection still open, of whichever loop.
    private func takeIdle() -> UpstreamConnection? {
        var stale: [UpstreamConnection] = []
        defer { stale.forEach { $0.retire() } }
        return pool.withLock { pool in
            while let (connection, _) = pool.idle.popLast() {
                if connection.isActive { return connection }
                stale.append(connection)
            }
            return nil
        }
    }

    /// Under the lock: the most recently used idle connection of `loop` still open, else a free
    /// place, else another loop's idle connection. A connection the upstream closed while idle
    /// is dropped, and left in `stale` to retire.
    private static func take(_ pool: inout Pool, idle: Bool, limit: Int, loop: (any EventLoop)?, stale: inout [UpstreamConnection]) -> Lease? {
        if idle {
            pool.idle.removeAll { entry in
                guard !entry.connection.isActive else { return false }
                stale.append(entry.connection)
                return true
            }
            if let index = pool.idle.lastIndex(where: { loop == nil || $0.connection.channel.eventLoop === loop }) {
                return .connection(pool.idle.remove(at: index).connection)
            }
        }
        if pool.open < limit {
            pool.open += 1
            return .slot
        }
        return idle ? pool.idle.popLast().map { .connection($0.connection) } : nil
    }

    private func stopWaiting(_ id: Int, _ error: any Error) {
        let waiter = pool.withLock { pool in
            pool.waiters.firstIndex { $0.id == id }.map { pool.waiters.remove(at: $0).continuation }
        }
        waiter?.resume(throwing: error)
    }

    /// Opens a connection, retrying refused or failed attempts with a growing pause until
    /// `deadline` (an upstream restarting is common and brief).
    private func open(until deadline: NIODeadline, on loop: any EventLoop) async throws -> UpstreamConnection {
        var pause = TimeAmount.milliseconds(50)
        while true {
            let remaining = deadline - .now()
            do {
                return try await UpstreamConnection.open(endpoint, tls: tlsContext, group: loop, timeout: max(remaining, .milliseconds(1)),
                                                         client: self)
            } catch {
                try Task.checkCancellation()
                guard deadline - .now() > pause else { throw error }
                try await Task.sleep(nanoseconds: UInt64(pause.nanoseconds))
                pause = min(pause * 2, .seconds(1))
            }
        }
    }

    /// Called by a connection whose exchange ended cleanly: it goes to a request waiting for one,
    /// or joins the idle connections. Returns false when the connection is to close instead.
    func release(_ connection: UpstreamConnection) -> Bool {
        enum Step { case hand(CheckedContinuation<Lease, any Error>), keep, close }
        let now = NIODeadline.now()
        let step: Step = pool.withLock { pool in
            if pool.shutDown || !connection.isActive { return .close }
            if !pool.waiters.isEmpty { return .hand(pool.waiters.removeFirst().continuation) }
            pool.idle.append((connection, now))
            return .keep
        }
        switch step {
        case .hand(let waiter): waiter.resume(returning: .connection(connection))
        case .keep: break
        case .close: return false
        }
        return true
    }

    /// Closes the connections idle for `idleTimeout` or longer (the oldest are first in line).
    private func closeExpired() {
        let limit = NIODeadline.now() - idleTimeout
        let expired = pool.withLock { pool in
            let count = pool.idle.prefix { $0.since <= limit }.count
            defer { pool.idle.removeFirst(count) }
            return pool.idle.prefix(count).map(\.connection)
        }
        expired.forEach { $0.retire() }
    }

    /// Called once for each connection opened (when it has closed) and for each failed opening
    /// (nil): its place goes to a request waiting, which then opens a connection of its own.
    func closed(_ connection: UpstreamConnection?) {
        let waiter: CheckedContinuation<Lease, any Error>? = pool.withLock { pool in
            if let connection { pool.idle.removeAll { $0.connection === connection } }
            guard !pool.shutDown, !pool.waiters.isEmpty else {
                pool.open -= 1
                return nil
            }
            return pool.waiters.removeFirst().continuation  // the place passes on: `open` is unchanged
        }
        waiter?.resume(returning: .slot)
    }
}
