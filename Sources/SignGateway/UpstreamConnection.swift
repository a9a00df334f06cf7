import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
@_spi(SignCoreTools) import SignCore

/// One HTTP/1.1 connection to the upstream. A task of its own owns the channel and serves one
/// exchange at a time: it writes the request head, uploads the body in a child task while it
/// reads the response, hands the response head to the caller and its body chunk by chunk.
///
/// The connection is kept for another exchange only when both messages ended cleanly and the
/// upstream keeps it alive. When the response ends while the body is still uploading (an
/// upstream that answered early), the upload stops and the connection closes: the task then
/// ends, and nothing of the exchange is left waiting.
final class UpstreamConnection: Sendable {
    /// Responses are read through the async channel; requests are written to the channel itself,
    /// each write awaited until it has reached the socket: a body is never buffered in memory
    /// ahead of an upstream that does not read it, and "sent" means sent.
    typealias Channel = NIOAsyncChannel<HTTPClientResponsePart, Never>

    let channel: any NIOCore.Channel
    private let exchanges: AsyncStream<Exchange>.Continuation

    private struct Exchange: Sendable {
        let head: HTTPRequestHead
        let body: ChunkHandoff?
        let timeout: TimeAmount
        let reply: CheckedContinuation<UpstreamResponse, any Error>
        let caller: CallerState
    }

    /// Whether the caller still waits for the response head, or gave up first: once the head is
    /// handed over, the caller's cancellation no longer touches the connection (it may already be
    /// back in the pool, carrying another exchange).
    private final class CallerState: Sendable {
        private let state = Locked((answered: false, cancelled: false))
        /// Called before the head is handed over; false when the caller gave up first.
        func answer() -> Bool { state.withLock { state in state.answered = true; return !state.cancelled } }
        /// Called when the caller's task is cancelled; true when the head was not handed over yet.
        func cancel() -> Bool {
            state.withLock { state in
                guard !state.answered else { return false }
                state.cancelled = true
                return true
            }
        }
    }

    var isActive: Bool { channel.isActive }

    private init(channel: any NIOCore.Channel, exchanges: AsyncStream<Exchange>.Continuation) {
        self.channel = channel
        self.exchanges = exchanges
    }

    /// Connects (TLS when the endpoint says so) and starts the connection's task.
    static func open(_ endpoint: UpstreamClient.Endpoint, tls: NIOSSLContext?, group: any EventLoopGroup, timeout: TimeAmount,
                     client: UpstreamClient) async throws -> UpstreamConnection {
        let serverName = endpoint.tls && (try? SocketAddress(ipAddress: endpoint.host, port: 0)) == nil ? endpoint.host : nil
        let asyncChannel = try await ClientBootstrap(group: group)
            .connectTimeout(timeout)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .connect(host: endpoint.host, port: endpoint.port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let tls {
                        try channel.pipeline.syncOperations.addHandler(try NIOSSLClientHandler(context: tls, serverHostname: serverName))
                    }
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    return try Channel(wrappingChannelSynchronously: channel)
                }
            }
        let (stream, continuation) = AsyncStream.makeStream(of: Exchange.self)
        let connection = UpstreamConnection(channel: asyncChannel.channel, exchanges: continuation)
        // Closed by the upstream while idle: the task ends, and the pool lets go of it.
        asyncChannel.channel.closeFuture.whenComplete { _ in connection.retire() }
        Task { await connection.serve(asyncChannel, exchanges: stream, client: client) }
        return connection
    }

    /// Runs one exchange on this connection; returns once the response head has arrived.
    func exchange(_ head: HTTPRequestHead, body: ChunkHandoff?, timeout: TimeAmount) async throws -> UpstreamResponse {
        let caller = CallerState()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { reply in
                if case .terminated = exchanges.yield(Exchange(head: head, body: body, timeout: timeout, reply: reply, caller: caller)) {
                    reply.resume(throwing: UpstreamFailure.failed)
                }
            }
        } onCancel: {
            if caller.cancel() { channel.close(promise: nil) }
        }
    }

    /// The connection takes no more exchanges; its task ends and the channel closes.
    func retire() { exchanges.finish() }

    private func serve(_ asyncChannel: Channel, exchanges stream: AsyncStream<Exchange>, client: UpstreamClient) async {
        var pending = stream.makeAsyncIterator()
        do {
            try await asyncChannel.executeThenClose { inbound in
                var responses = inbound.makeAsyncIterator()
                while let exchange = await pending.next() {
                    guard await run(exchange, responses: &responses, client: client) else { return }
                }
            }
        } catch {
            // Closing a channel that had already failed: nothing more to do.
        }
        retire()
        while let stranded = await pending.next() { stranded.reply.resume(throwing: UpstreamFailure.failed) }
        client.closed(self)
    }

    /// What one exchange has seen, shared with its upload task and its timer.
    private final class Progress: Sendable {
        private struct State { var uploaded = false; var uploadError: (any Error)?; var timedOut = false }
        private let state = Locked(State())
        var uploaded: Bool { state.withLock { $0.uploaded } }
        var uploadError: (any Error)? { state.withLock { $0.uploadError } }
        var timedOut: Bool { state.withLock { $0.timedOut } }
        func setUploaded() { state.withLock { $0.uploaded = true } }
        func setUploadError(_ error: any Error) { state.withLock { $0.uploadError = error } }
        func setTimedOut() { state.withLock { $0.timedOut = true } }
    }

    /// Returns whether the connection went back to the pool for another exchange (if not, it
    /// is closing).
    private func run(_ exchange: Exchange, responses: inout NIOAsyncChannelInboundStream<HTTPClientResponsePart>.AsyncIterator,
                     client: UpstreamClient) async -> Bool {
        let progress = Progress()
        let channel = self.channel
        // Until the response head: past it, the upstream has not answered in time.
        let timer = channel.eventLoop.scheduleTask(in: exchange.timeout) {
            progress.setTimedOut()
            channel.close(promise: nil)
        }
        return await withTaskGroup(of: Void.self) { uploads -> Bool in
            defer { timer.cancel() }
            do {
                if exchange.body == nil {
                    channel.write(HTTPClientRequestPart.head(exchange.head), promise: nil)
                    try await channel.writeAndFlush(HTTPClientRequestPart.end(nil))
                    progress.setUploaded()
                } else {
                    try await channel.writeAndFlush(HTTPClientRequestPart.head(exchange.head))
                }
            } catch {
                exchange.reply.resume(throwing: progress.timedOut ? UpstreamFailure.timedOut : UpstreamFailure.failed)
                channel.close(promise: nil)
                return false
            }
            if let body = exchange.body {
                uploads.addTask {
                    do {
                        // Read with `next()`, not an iterator, so that stopping here leaves the
                        // body's producer to its owner (ProxyMiddleware), which may read the rest.
                        while let chunk = try await body.next() {
                            try await channel.writeAndFlush(HTTPClientRequestPart.body(.byteBuffer(chunk)))
                        }
                        try await channel.writeAndFlush(HTTPClientRequestPart.end(nil))
                        progress.setUploaded()
                    } catch is ChunkHandoff.Discarded {
                        // The upstream answered first and the caller reads the rest itself: the
                        // body stops here, short of its end, and the connection closes after the
                        // response.
                    } catch {
                        // A body that failed (its whash, its limit, its client gone) must never
                        // look complete upstream: the connection closes before its end.
                        progress.setUploadError(error)
                        channel.close(promise: nil)
                    }
                }
            }

            let head: HTTPResponseHead
            do {
                guard case .head(let first)? = try await responses.next() else { throw UpstreamFailure.failed }
                head = first
            } catch {
                timer.cancel()
                channel.close(promise: nil)
                uploads.cancelAll()
                await uploads.waitForAll()
                // The body's own refusal (its whash, its limit) first; else the timeout, whose
                // close also fails a write still under way.
                let failure: any Error = (progress.uploadError as? SignCoreError)
                    ?? (progress.timedOut ? UpstreamFailure.timedOut : UpstreamFailure.failed)
                exchange.reply.resume(throwing: failure)
                return false
            }
            timer.cancel()
            guard exchange.caller.answer() else {  // the caller gave up: the channel is closing
                exchange.reply.resume(throwing: CancellationError())
                uploads.cancelAll()
                await uploads.waitForAll()
                return false
            }
            let chunks = ChunkHandoff()
            exchange.reply.resume(returning: UpstreamResponse(head: head, body: UpstreamResponseBody(chunks)))

            var ended = false
            var failure: (any Error)?
            do {
                reading: while let part = try await responses.next() {
                    switch part {
                    case .body(let chunk): try await chunks.send(chunk)
                    case .end: ended = true; break reading
                    case .head: throw UpstreamFailure.failed
                    }
                }
                if !ended { failure = UpstreamFailure.failed }
            } catch {
                failure = progress.uploadError ?? UpstreamFailure.failed
            }
            if ended && progress.uploaded {
                // Back in the pool before the caller sees the end, so that its next request finds
                // this connection idle rather than open another.
                let released = head.isKeepAlive && client.release(self)
                chunks.end(nil)
                if !released { channel.close(promise: nil) }
                await uploads.waitForAll()
                return released
            }
            chunks.end(failure)
            // The response is over, the body is not. It is given a moment (its last write may
            // just be returning); a body still uploading after that is not wanted any more: its
            // rest was never sent, so the connection closes rather than carry another request.
            if ended {
                uploads.addTask { try? await Task.sleep(for: .milliseconds(50)) }
                _ = await uploads.next()
            }
            let released = ended && progress.uploaded && head.isKeepAlive && client.release(self)
            if !released { channel.close(promise: nil) }
            uploads.cancelAll()
            await uploads.waitForAll()
            return released
        }
    }
}
