import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
@_spi(SignCoreTools) import SignCore

/// One HTTP/1.1 connection to the upstream, serving one exchange at a time. The exchange runs on
/// the connection's event loop (`ExchangeHandler`): the request head is written there, the
/// response head completes the promise the caller awaits, and the response body waits in a small
/// buffer the caller reads (`ResponseBuffer`). No task of its own and no hop per part of the
/// message: a request whose client connection is on the same loop (UpstreamClient) never changes
/// threads. A body to upload is written by a task of the exchange, each write awaited until it has
/// reached the socket: a body is never buffered in memory ahead of an upstream that does not read
/// it, and "sent" means sent.
///
/// The connection is kept for another exchange only when both messages ended cleanly and the
/// upstream keeps it alive. When the response ends while the body is still uploading (an
/// upstream that answered early), the upload stops and the connection closes.
final class UpstreamConnection: Sendable {
    let channel: any Channel
    private let handler: NIOLoopBound<ExchangeHandler>

    var isActive: Bool { channel.isActive }

    private init(channel: any Channel, handler: NIOLoopBound<ExchangeHandler>) {
        self.channel = channel
        self.handler = handler
    }

    /// Connects (TLS when the endpoint says so) on `group`'s next loop (a loop, for UpstreamClient).
    static func open(_ endpoint: UpstreamClient.Endpoint, tls: NIOSSLContext?, group: any EventLoopGroup, timeout: TimeAmount,
                     client: UpstreamClient) async throws -> UpstreamConnection {
        let serverName = endpoint.tls && (try? SocketAddress(ipAddress: endpoint.host, port: 0)) == nil ? endpoint.host : nil
        let (channel, handler) = try await ClientBootstrap(group: group)
            .connectTimeout(timeout)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .connect(host: endpoint.host, port: endpoint.port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let tls {
                        try channel.pipeline.syncOperations.addHandler(try NIOSSLClientHandler(context: tls, serverHostname: serverName))
                    }
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    let handler = ExchangeHandler(client: client)
                    try channel.pipeline.syncOperations.addHandler(handler)
                    return (channel, NIOLoopBound(handler, eventLoop: channel.eventLoop))
                }
            }
        let connection = UpstreamConnection(channel: channel, handler: handler)
        try await channel.eventLoop.submit { handler.value.connection = connection }.get()
        // Closed by either side, idle or not: the pool lets go of it (once per connection).
        channel.closeFuture.whenComplete { _ in client.closed(connection) }
        return connection
    }

    /// Runs one exchange on this connection; returns once the response head has arrived within
    /// `timeout`. The caller's cancellation closes the connection until then, and no longer
    /// touches it after (it may already be back in the pool, carrying another exchange).
    func exchange(_ head: HTTPRequestHead, body: ChunkHandoff?, timeout: TimeAmount) async throws -> UpstreamResponse {
        let loop = channel.eventLoop
        let reply = loop.makePromise(of: UpstreamResponse.self)
        let handler = self.handler
        let id = ExchangeID()
        let start: @Sendable () -> Void = { handler.value.start(head, body: body, timeout: timeout, reply: reply, id: id) }
        if loop.inEventLoop { start() } else { loop.execute(start) }
        return try await withTaskCancellationHandler {
            try await reply.futureResult.get()
        } onCancel: {
            loop.execute { handler.value.callerGaveUp(id) }
        }
    }

    /// Uploads `body` after the head, for the exchange `id`.
    fileprivate static func upload(_ body: ChunkHandoff, on channel: any Channel, handler: NIOLoopBound<ExchangeHandler>,
                                   id: ExchangeID) -> Task<Void, Never> {
        Task {
            let outcome: ExchangeHandler.Upload
            do {
                // Read with `next()`, not an iterator, so that stopping here leaves the body's
                // producer to its owner (ProxyMiddleware), which may read the rest.
                while let chunk = try await body.next() {
                    try await channel.writeAndFlush(HTTPClientRequestPart.body(.byteBuffer(chunk)))
                }
                try await channel.writeAndFlush(HTTPClientRequestPart.end(nil))
                outcome = .done
            } catch is ChunkHandoff.Discarded {
                // The upstream answered first and the caller reads the rest itself: the body
                // stops here, short of its end, and the connection closes after the response.
                outcome = .stopped
            } catch {
                // A body that failed (its whash, its limit, its client gone) must never look
                // complete upstream: the connection closes before its end.
                outcome = .failed(error)
            }
            channel.eventLoop.execute { handler.value.uploadEnded(outcome, id: id) }
        }
    }

    /// The connection takes no more exchanges: it closes (an idle one, from the pool).
    func retire() { channel.close(promise: nil) }
}

/// One exchange's identity, which callbacks name so that a late one never reaches the next
/// exchange on the connection. It holds nothing (the response it names holds it).
final class ExchangeID: Sendable {}

/// A response body as the connection reads it: a few chunks held for the caller, the connection
/// reading no more while they reach `highWater` bytes. Dropped before its end (the client went
/// away, or signd answers in its place), it closes the connection, which cannot carry another
/// exchange.
final class ResponseBuffer: Sendable {
    static let highWater = 256 * 1024
    static let lowWater = 64 * 1024

    private struct State {
        var chunks = CircularBuffer<ByteBuffer>()
        var bytes = 0
        var end: Result<Void, any Error>?
        var waiting: CheckedContinuation<ByteBuffer?, any Error>?
        var paused = false
        var abandoned = false
    }

    private let state = Locked(State())
    private let channel: any Channel
    private let handler: NIOLoopBound<ExchangeHandler>
    /// The exchange this body belongs to: reading resumes only while it lasts.
    private let exchange: ExchangeID

    fileprivate init(channel: any Channel, handler: NIOLoopBound<ExchangeHandler>, exchange: ExchangeID) {
        self.channel = channel
        self.handler = handler
        self.exchange = exchange
    }

    /// On the loop: a chunk read. Returns true when the connection is to stop reading.
    fileprivate func append(_ chunk: ByteBuffer) -> Bool {
        enum Step { case hand(CheckedContinuation<ByteBuffer?, any Error>), kept(pause: Bool) }
        let step: Step = state.withLock { state in
            if state.abandoned { return .kept(pause: false) }
            if let waiting = state.waiting {
                state.waiting = nil
                return .hand(waiting)
            }
            state.chunks.append(chunk)
            state.bytes += chunk.readableBytes
            if state.bytes >= Self.highWater { state.paused = true }
            return .kept(pause: state.paused)
        }
        switch step {
        case .hand(let waiting):
            waiting.resume(returning: chunk)
            return false
        case .kept(let pause): return pause
        }
    }

    /// On the loop: the body's end, or why it failed. `beforeWaking` runs before a waiting reader is
    /// woken, told whether the reader is still there: one that had gone (`abandon`, decided under
    /// the same lock) wants no end, and its connection closes.
    fileprivate func finish(_ error: (any Error)?, beforeWaking: (_ wanted: Bool) -> Void = { _ in }) {
        let (waiting, wanted) = state.withLock { state in
            if state.end == nil { state.end = error.map { .failure($0) } ?? .success(()) }
            defer { state.waiting = nil }
            return (state.waiting, !state.abandoned)
        }
        beforeWaking(wanted)
        switch error {
        case nil: waiting?.resume(returning: nil)
        case let error?: waiting?.resume(throwing: error)
        }
    }

    /// The next chunk, nil at the end, or why the body failed.
    func next() async throws -> ByteBuffer? {
        // Most responses have arrived whole by the time their head is read: no suspension then.
        switch state.withLock({ Self.take(&$0, waiting: nil) }) {
        case .chunk(let chunk, let resume):
            if resume { resumeReading() }
            return chunk
        case .end(.success): return nil
        case .end(.failure(let error)): throw error
        case .cancelled, .waiting: break
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<ByteBuffer?, any Error>) in
                switch state.withLock({ Self.take(&$0, waiting: continuation) }) {
                case .chunk(let chunk, let resume):
                    if resume { resumeReading() }
                    continuation.resume(returning: chunk)
                case .end(.success): continuation.resume(returning: nil)
                case .end(.failure(let error)): continuation.resume(throwing: error)
                case .cancelled: continuation.resume(throwing: CancellationError())
                case .waiting: break
                }
            }
        } onCancel: {
            let waiting = state.withLock { state in
                defer { state.waiting = nil }
                return state.waiting
            }
            waiting?.resume(throwing: CancellationError())
        }
    }

    private enum Take { case chunk(ByteBuffer, resume: Bool), end(Result<Void, any Error>), cancelled, waiting }

    /// Under the lock: the first chunk held, else the end; else `waiting` waits (when given).
    private static func take(_ state: inout State, waiting: CheckedContinuation<ByteBuffer?, any Error>?) -> Take {
        if let chunk = state.chunks.popFirst() {
            state.bytes -= chunk.readableBytes
            let resume = state.paused && state.bytes <= lowWater
            if resume { state.paused = false }
            return .chunk(chunk, resume: resume)
        }
        if let end = state.end { return .end(end) }
        guard let waiting else { return .waiting }
        if Task.isCancelled { return .cancelled }
        state.waiting = waiting
        return .waiting
    }

    private func resumeReading() {
        let (handler, exchange) = (self.handler, self.exchange)
        channel.eventLoop.execute { handler.value.resumeReading(for: exchange) }
    }

    /// The whole body, when it has already ended well and nothing of it was read: one buffer for
    /// the server to write with the head in one go (most answers are small and arrive whole).
    func whole() -> ByteBuffer? {
        state.withLock { state in
            guard case .success? = state.end, state.chunks.count <= 1 || state.bytes <= Self.lowWater else { return nil }
            var whole = state.chunks.popFirst() ?? ByteBuffer()
            while var chunk = state.chunks.popFirst() { whole.writeBuffer(&chunk) }
            state.bytes = 0
            return whole
        }
    }

    /// The reader is gone: chunks are dropped, and a body not read to its end closes the connection.
    func abandon() {
        let ended = state.withLock { state in
            state.abandoned = true
            state.chunks.removeAll()
            return state.end != nil
        }
        if !ended { channel.close(promise: nil) }
    }
}

/// The exchange's state machine, on the connection's event loop. It is the last handler of the
/// pipeline: the request parts it writes go through the HTTP encoder, and it holds back the
/// channel's reads while the response buffer is full.
final class ExchangeHandler: ChannelDuplexHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundIn = HTTPClientRequestPart
    typealias OutboundOut = HTTPClientRequestPart

    /// How the upload of a request body ended.
    enum Upload: Sendable {
        /// Every byte was written, and the request's end.
        case done
        /// Stopped by the caller: the upstream answered first.
        case stopped
        case failed(any Error)
    }

    private struct Exchange {
        /// What every callback names to reach this exchange and no later one on the connection.
        let id: ExchangeID
        /// Until the response head has been handed over.
        var reply: EventLoopPromise<UpstreamResponse>?
        var response: ResponseBuffer?
        var keepAlive = false
        var ended = false
        /// nil while a body uploads.
        var upload: Upload?
        var uploader: Task<Void, Never>?
        var timer: Scheduled<Void>?
        /// The moment left to an upload still going when the response has ended.
        var grace: Scheduled<Void>?
        var timedOut = false
        var cancelled = false
    }

    private let client: UpstreamClient
    /// Set once, right after the connection is made.
    var connection: UpstreamConnection?
    private var context: ChannelHandlerContext?
    private var exchange: Exchange?
    private var readPaused = false
    private var readWanted = false

    init(client: UpstreamClient) { self.client = client }

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }

    func handlerRemoved(context: ChannelHandlerContext) { self.context = nil }  // the context holds this handler

    // MARK: The caller's side (UpstreamConnection)

    func start(_ head: HTTPRequestHead, body: ChunkHandoff?, timeout: TimeAmount, reply: EventLoopPromise<UpstreamResponse>, id: ExchangeID) {
        guard let context, context.channel.isActive, exchange == nil else {
            reply.fail(UpstreamFailure.failed)  // before any byte of the body was taken
            return
        }
        var exchange = Exchange(id: id, reply: reply)
        exchange.upload = body == nil ? .done : nil
        // Until the response head: past it, the upstream has not answered in time.
        exchange.timer = context.eventLoop.assumeIsolated().scheduleTask(in: timeout) { self.timeOut() }
        self.exchange = exchange
        if let body {
            context.writeAndFlush(wrapOutboundOut(.head(head)), promise: nil)
            self.exchange?.uploader = UpstreamConnection.upload(body, on: context.channel, handler: NIOLoopBound(self, eventLoop: context.eventLoop),
                                                                id: id)
        } else {
            context.write(wrapOutboundOut(.head(head)), promise: nil)
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        }
        // A write that fails closes the channel: channelInactive answers the caller.
    }

    func uploadEnded(_ outcome: Upload, id: ExchangeID) {
        guard var exchange, exchange.id === id, exchange.upload == nil else { return }
        exchange.upload = outcome
        exchange.uploader = nil
        self.exchange = exchange
        switch outcome {
        case .failed: context?.close(promise: nil)
        case .done, .stopped: if exchange.ended { complete() }
        }
    }

    func callerGaveUp(_ id: ExchangeID) {
        guard exchange?.id === id, exchange?.reply != nil else { return }
        exchange?.cancelled = true
        context?.close(promise: nil)
    }

    func resumeReading(for id: ExchangeID) {
        if exchange?.id === id { resumeReading() }
    }

    /// Reads again: the buffer has room, or the exchange is over (the next one starts unpaused).
    private func resumeReading() {
        readPaused = false
        if readWanted, let context {
            readWanted = false
            context.read()
        }
    }

    private func timeOut() {
        guard exchange?.reply != nil else { return }
        exchange?.timedOut = true
        context?.close(promise: nil)
    }

    // MARK: The channel's side

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            guard let reply = exchange?.reply, let id = exchange?.id else { return fail(context) }
            exchange?.timer?.cancel()
            let response = ResponseBuffer(channel: context.channel, handler: NIOLoopBound(self, eventLoop: context.eventLoop),
                                          exchange: id)
            exchange?.reply = nil
            exchange?.response = response
            exchange?.keepAlive = head.isKeepAlive
            reply.succeed(UpstreamResponse(head: head, body: UpstreamResponseBody(response)))
        case .body(let chunk):
            guard let response = exchange?.response, exchange?.ended == false else { return fail(context) }
            if response.append(chunk) { readPaused = true }
        case .end:
            guard exchange?.response != nil, exchange?.ended == false else { return fail(context) }
            exchange?.ended = true
            resumeReading()  // the whole response is in: nothing left to hold back
            complete()
        }
    }

    /// The response has ended: the connection goes back to the pool when the request went whole
    /// and the upstream keeps it alive, before the caller sees the end (its next request then
    /// finds this connection idle rather than open another). A body still uploading is given a
    /// moment (its last write may just be returning); after that it is not wanted any more: its
    /// rest was never sent, so the connection closes rather than carry another request.
    private func complete() {
        guard let exchange, let context else { return }
        switch exchange.upload {
        case .done?:
            self.exchange = nil
            exchange.grace?.cancel()
            // Back in the pool before the reader is woken: its next request finds this connection
            // idle. A reader that dropped the body meanwhile (decided under the buffer's lock, so
            // never after a release) wants no end: the connection closes.
            var released = false
            exchange.response?.finish(nil) { wanted in
                released = wanted && exchange.keepAlive && self.connection.map(self.client.release) == true
            }
            if !released { context.close(promise: nil) }
        case .stopped?, .failed?:
            self.exchange = nil
            exchange.response?.finish(nil)
            context.close(promise: nil)
        case nil:
            exchange.response?.finish(nil)
            let id = exchange.id
            self.exchange?.grace = context.eventLoop.assumeIsolated().scheduleTask(in: .milliseconds(50)) {
                guard self.exchange?.id === id, self.exchange?.upload == nil else { return }
                self.exchange?.uploader?.cancel()
                self.context?.close(promise: nil)
            }
        }
    }

    private func fail(_ context: ChannelHandlerContext) {
        context.close(promise: nil)  // an answer out of turn, or not HTTP/1.1
    }

    func read(context: ChannelHandlerContext) {
        if readPaused { readWanted = true } else { context.read() }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        if let exchange {
            self.exchange = nil
            exchange.timer?.cancel()
            exchange.grace?.cancel()
            exchange.uploader?.cancel()
            let uploadError: (any Error)? = if case .failed(let error)? = exchange.upload { error } else { nil }
            if let reply = exchange.reply {
                // The body's own refusal (its whash, its limit) first; else the timeout, whose
                // close also fails a write still under way.
                let failure: any Error = (uploadError as? SignCoreError)
                    ?? (exchange.cancelled ? CancellationError() : exchange.timedOut ? UpstreamFailure.timedOut : UpstreamFailure.failed)
                reply.fail(failure)
            }
            if !exchange.ended { exchange.response?.finish(uploadError ?? UpstreamFailure.failed) }
        }
        connection = nil  // it holds this handler
        context.fireChannelInactive()
    }
}
