import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import NIOHTTPTypesHTTP1
import SignCore

/// signd's HTTP/1.1 connections (plain, or over TLS: `GatewayTLSChannel`), served
/// from a channel handler on the connection's event loop: one task per request runs signd's
/// middleware chain, and its answer is written straight to the channel. Hummingbird's own
/// HTTP/1.1 channel reads and writes through a task per connection and SwiftNIO's async channel;
/// this handler raised every row of the gateway benchmark (docs/SIGND.md, "The gateway benchmark"). The pipeline is the one Hummingbird builds:
/// SwiftNIO's HTTP/1.1 codec with signd's decoder limits, the HTTPTypes conversion, signd's extra
/// handlers and Hummingbird's idle-timeout and graceful-shutdown handler.
struct GatewayHTTP1Channel: ServerChildChannel {
    struct Value: ServerChildChannelValue {
        let channel: any Channel
    }

    let responder: RouterResponder<GatewayRequestContext>
    let configuration: HTTP1Channel.Configuration
    let bodyRate: BodyRate

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            var limits = NIOHTTPDecoderLimitConfiguration()
            limits.maxHeaderFieldSize = configuration.httpDecoder.maxHeaderFieldSize
            limits.maxHeaderListSize = configuration.httpDecoder.maxHeaderListSize
            limits.maxHeaderFieldCount = configuration.httpDecoder.maxHeaderFieldCount
            let pipeline = channel.pipeline.syncOperations
            try pipeline.configureHTTPServerPipeline(withPipeliningAssistance: false, withErrorHandling: false,
                                                     withOutboundHeaderValidation: false, withEncoderConfiguration: .init(),
                                                     withDecoderLimitConfiguration: limits)
            try pipeline.addHandler(HTTP1ToHTTPServerCodec(secure: false))
            try pipeline.addHandlers(configuration.additionalChannelHandlers())
            try pipeline.addHandler(HTTPConnectionStateHandler(idleTimeout: configuration.idleTimeout.map { .init($0) }, logger: logger))
            try pipeline.addHandler(HTTP1Connection(responder: responder, bodyRate: bodyRate,
                                                    sendTimeout: configuration.idleTimeout, logger: logger))
            return Value(channel: channel)
        }
    }

    /// The connection serves itself (`HTTP1Connection`); this waits for it to close. A server
    /// stopped at once (not gracefully) takes no further request on it and closes it once the
    /// response in progress has gone (`HTTP1Connection.stop`).
    func handle(value: Value, logger: Logger) async {
        let channel = value.channel
        await withTaskCancellationHandler {
            try? await channel.closeFuture.get()
        } onCancel: {
            channel.eventLoop.execute {
                guard let connection = try? channel.pipeline.syncOperations.handler(type: HTTP1Connection.self) else {
                    channel.close(promise: nil)
                    return
                }
                connection.stop()
            }
        }
    }
}

/// One HTTP/1.1 connection's requests, one at a time in the order they came (RFC 9112 §9.3.2):
/// a request's task starts once its head and whatever of its body came with it have been read;
/// parts of later requests wait in `backlog` until its response has ended. All state lives on the
/// connection's event loop; the request's task reaches it through `ResponseChannelWriter` and
/// `InboundBody`, and every such call names its exchange, so that nothing late from one request
/// reaches the next.
final class HTTP1Connection: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    /// The request being answered.
    final class Exchange {
        enum Reading {
            /// The head, and the body that arrived with it: the task starts at the request's end,
            /// or at the end of this read with a streamed body.
            case head(HTTPRequest, ByteBuffer?)
            /// The task reads the body as it arrives.
            case streaming(InboundBody.Source)
            /// The rest of the body is read and dropped: its reader is gone.
            case dropping
            /// The whole request has been read.
            case ended
        }

        var reading: Reading
        var headWritten = false
        var responseEnded = false
        /// The connection closes once the response has ended: the client or the response said so,
        /// or the request cannot be read to its end.
        var closeAfterResponse = false
        var task: Task<Void, Never>?
        var bodyClock = BodyClock()
        /// The request context's: set when the connection cuts the request short.
        var cutShort: CutShort?

        var requestRead: Bool {
            if case .ended = reading { true } else { false }
        }

        init(head: HTTPRequest) {
            reading = .head(head, nil)
            // After an upgrade or a CONNECT, SwiftNIO's decoder stops parsing: nothing after it
            // could be read as a request (signd upgrades nothing).
            closeAfterResponse = head.headerFields[.connection]?.lowercased() == "close"
                || head.headerFields[.upgrade] != nil || head.method == .connect
        }
    }

    private let responder: RouterResponder<GatewayRequestContext>
    private let bodyRate: BodyRate
    private let logger: Logger
    private var context: ChannelHandlerContext?
    private var exchange: Exchange?
    /// Parts read past the request being answered (a pipelining client), and their bytes.
    private var backlog = CircularBuffer<HTTPRequestPart>()
    private var backlogBytes = 0
    /// A read the pipeline asked for, held while the body's reader is full or the backlog is long.
    private var heldRead = false
    /// The body's reader is full: reading stops, and so does the body's clock.
    private var bodyPaused = false {
        didSet {
            guard bodyPaused != oldValue, let exchange else { return }
            if bodyPaused { exchange.bodyClock.pause(at: .now()) } else { exchange.bodyClock.resume(at: .now()) }
        }
    }
    private var bodyRateTimer: Scheduled<Void>?
    private var inputClosed = false
    /// The decoder failed on a request after the one being answered: that one is answered, then
    /// those complete before the failure, then a 400, and the connection closes.
    private var parseFailed = false
    /// The connection is closing: its output is shut (or about to be), what the client still
    /// sends is dropped until `lingerTimer` closes it.
    private var closing = false
    /// The closing connection's last answer has gone and its output is shut.
    private var answerGone = false
    private var lingerTimer: Scheduled<Void>?
    private var flushScheduled = false
    private var writableWaiters: [EventLoopPromise<Void>] = []
    /// The most an answer waits for the client to take more of it (`limits.idleTimeout`): the
    /// idle timer does not run while a response is under way, so a client that never reads would
    /// hold its request, and the upstream connection streaming the answer, for ever.
    private let sendTimeout: TimeAmount?
    private var sendTimer: Scheduled<Void>?
    /// How long a closing connection reads what the client still sends (a body nobody took),
    /// so that closing it does not reset the response the client has not read yet (RFC 9112 §9.6).
    private static let lingerTime = TimeAmount.seconds(5)
    /// The most a closing connection is kept, its answer gone or not (a client that sends and
    /// never reads), as nginx's `lingering_time`.
    private static let closingTime = TimeAmount.seconds(30)
    /// The most held for later requests before the connection stops reading: parts, bytes.
    private static let backlogLimit = (parts: 64, bytes: 64 << 10)

    init(responder: RouterResponder<GatewayRequestContext>, bodyRate: BodyRate, sendTimeout: TimeAmount?, logger: Logger) {
        self.sendTimeout = sendTimeout
        self.responder = responder
        self.bodyRate = bodyRate
        self.logger = logger
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        connectionClosed()
        self.context = nil
    }

    // MARK: Reading

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !closing else { return }
        let part = unwrapInboundIn(data)
        if exchange?.requestRead == true || !backlog.isEmpty {
            backlog.append(part)
            backlogBytes += Self.size(of: part)
            return
        }
        receive(part, context: context)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        startStreamingIfWaiting(context: context)
    }

    private func receive(_ part: HTTPRequestPart, context: ChannelHandlerContext) {
        switch (part, exchange?.reading) {
        case (.head(let head), nil):
            exchange = Exchange(head: head)
        case (.body(let chunk), .head(let head, var collected)?):
            exchange?.bodyClock.received(chunk.readableBytes, paused: bodyPaused)
            if collected == nil { collected = chunk } else { collected?.writeImmutableBuffer(chunk) }
            exchange?.reading = .head(head, collected)
        case (.body(let chunk), .streaming(let source)?):
            exchange?.bodyClock.received(chunk.readableBytes, paused: bodyPaused)
            switch source.yield(chunk) {
            case .produceMore: break
            case .stopProducing: bodyPaused = true
            case .dropped:
                exchange?.reading = .dropping
                bodyPaused = false
            }
        case (.body(let chunk), .dropping?):
            exchange?.bodyClock.received(chunk.readableBytes, paused: bodyPaused)
        case (.end, .head(let head, let collected)?):
            exchange?.reading = .ended
            start(head, body: RequestBody(buffer: collected ?? ByteBuffer()), context: context)
        case (.end, .streaming(let source)?):
            exchange?.reading = .ended
            bodyPaused = false  // what follows is the next request's, held in the backlog
            source.finish()
        case (.end, .dropping?):
            exchange?.reading = .ended
            endIfAnswered(context: context)
        default:
            // The HTTP/1.1 decoder sends head, body…, end, for one request at a time.
            context.close(promise: nil)
        }
    }

    /// A request whose body did not all arrive with its head: its task starts now, and reads the
    /// rest as it comes.
    private func startStreamingIfWaiting(context: ChannelHandlerContext) {
        guard let exchange, case .head(let head, let collected) = exchange.reading else { return }
        let body = InboundBody.make(connection: NIOLoopBound(self, eventLoop: context.eventLoop),
                                    exchange: NIOLoopBound(exchange, eventLoop: context.eventLoop))
        exchange.reading = .streaming(body.source)
        scheduleBodyRateCheck(context: context)
        if let collected, body.source.yield(collected) == .stopProducing { bodyPaused = true }
        if inputClosed {
            exchange.closeAfterResponse = true
            body.source.finish(ChannelError.eof)
        }
        start(head, body: RequestBody(asyncSequence: body.sequence), context: context)
    }

    /// The bytes a part held in the backlog stands for (a head's target and fields, a chunk).
    private static func size(of part: HTTPRequestPart) -> Int {
        switch part {
        case .head(let head): head.headerFields.reduce((head.path ?? "").utf8.count) { $0 + $1.name.rawName.utf8.count + $1.value.utf8.count }
        case .body(let chunk): chunk.readableBytes
        case .end: 0
        }
    }

    private var readsHeld: Bool {
        !closing && (bodyPaused || backlog.count >= Self.backlogLimit.parts || backlogBytes >= Self.backlogLimit.bytes)
    }

    func read(context: ChannelHandlerContext) {
        if readsHeld {
            heldRead = true
        } else {
            context.read()
        }
    }

    private func releaseHeldRead(context: ChannelHandlerContext) {
        guard heldRead, !readsHeld else { return }
        heldRead = false
        context.read()
    }

    /// The body's reader wants more (`InboundBody`).
    func bodyDemanded(_ exchange: Exchange) {
        guard exchange === self.exchange, let context else { return }
        bodyPaused = false
        releaseHeldRead(context: context)
    }

    /// The body's reader is gone before its end: the rest is read and dropped, unless the
    /// response closes the connection first.
    func bodyAbandoned(_ exchange: Exchange) {
        guard exchange === self.exchange, case .streaming = exchange.reading, let context else { return }
        exchange.reading = .dropping
        bodyPaused = false
        releaseHeldRead(context: context)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard case ChannelEvent.inputClosed = event else {
            context.fireUserInboundEventTriggered(event)
            return
        }
        inputClosed = true
        if closing {
            if answerGone { context.close(promise: nil) }  // else once it has gone (`closeAfterAnswer`)
            return
        }
        guard let exchange else {
            closeWhenWritten(context: context)
            return
        }
        // A request read whole is answered, and so are those held after it; one cut short ends
        // its body in error and the connection after its answer.
        switch exchange.reading {
        case .ended:
            break
        case .head:
            exchange.closeAfterResponse = true
            startStreamingIfWaiting(context: context)
        case .streaming(let source):
            exchange.closeAfterResponse = true
            source.finish(ChannelError.eof)
        case .dropping:
            exchange.closeAfterResponse = true
            endIfAnswered(context: context)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A closing connection's decoder reports what it drops, and so does a failed one.
        guard !closing, !parseFailed else { return }
        guard error is HTTPParserError else {
            context.close(promise: nil)
            return
        }
        parseFailed = true
        guard let exchange, exchange.task != nil else {
            answerUnreadable(context: context)
            return
        }
        switch exchange.reading {
        case .ended:
            // A later request's: the complete ones before it are answered first; what was read
            // of it is dropped, and it is answered 400 once they have been (`endIfAnswered`).
            while let last = backlog.last, !Self.isEnd(last) {
                backlogBytes -= Self.size(of: last)
                backlog.removeLast()
            }
        case .streaming(let source):
            // This request's body: it ends in that error, and the connection after the answer.
            exchange.closeAfterResponse = true
            source.finish(error)
        case .head, .dropping:
            exchange.closeAfterResponse = true
        }
        endIfAnswered(context: context)
    }

    private static func isEnd(_ part: HTTPRequestPart) -> Bool {
        if case .end = part { true } else { false }
    }

    /// A request that could not be read, and nothing being answered: 400 (as Hummingbird
    /// answered), then the connection closes.
    private func answerUnreadable(context: ChannelHandlerContext) {
        answerAndClose(.badRequest, context: context)
    }

    /// An empty answer of the connection's own, then a lingering close.
    private func answerAndClose(_ status: HTTPResponse.Status, context: ChannelHandlerContext) {
        let head = HTTPResponse(status: status, headerFields: [.connection: "close", .contentLength: "0", .date: HTTPDate.now()])
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        closeAfterAnswer(context: context)
    }

    /// The connection is gone (`handlerRemoved`: Hummingbird's state handler before this one does
    /// not pass `channelInactive` on): a body being read ends in error, the request's task is
    /// cancelled (nobody is left to answer: the upstream exchange stops too), and a write waiting
    /// for the client to read fails.
    private func connectionClosed() {
        lingerTimer?.cancel()
        lingerTimer = nil
        bodyRateTimer?.cancel()
        bodyRateTimer = nil
        sendTimer?.cancel()
        sendTimer = nil
        if let exchange {
            if !exchange.responseEnded { exchange.cutShort?.mark(499) }
            exchange.task?.cancel()
            if case .streaming(let source) = exchange.reading { source.finish(ChannelError.eof) }
        }
        exchange = nil
        backlog.removeAll()
        backlogBytes = 0
        let waiters = writableWaiters
        writableWaiters = []
        for waiter in waiters { waiter.fail(ChannelError.ioOnClosedChannel) }
    }

    func channelInactive(context: ChannelHandlerContext) {
        connectionClosed()
        context.fireChannelInactive()
    }

    /// The server stops at once: no further request is taken; the one in progress is answered.
    func stop() {
        guard let context else { return }
        backlog.removeAll()
        backlogBytes = 0
        guard let exchange else {
            context.close(promise: nil)
            return
        }
        exchange.closeAfterResponse = true
        endIfAnswered(context: context)
    }

    /// Checks the body's rate a second from now, and every second while it is read.
    private func scheduleBodyRateCheck(context: ChannelHandlerContext) {
        guard bodyRate.minimum > 0, bodyRateTimer == nil else { return }
        bodyRateTimer = context.eventLoop.assumeIsolated().scheduleTask(in: .seconds(1)) { [self] in
            bodyRateTimer = nil
            checkBodyRate()
        }
    }

    private func checkBodyRate() {
        // A body the connection has ended itself (its input closed, its framing broken) waits for nothing more.
        guard let context, let exchange, !closing, !inputClosed, !parseFailed else { return }
        switch exchange.reading {
        case .streaming, .dropping: break
        case .head, .ended: return
        }
        guard let slow = exchange.bodyClock.check(against: bodyRate, at: .now()) else {
            scheduleBodyRateCheck(context: context)
            return
        }
        logger.info("request body too slow", metadata: ["signd.bytes": "\(slow.bytes)", "signd.seconds": "\(slow.seconds)"])
        bodyTooSlow(exchange, context: context)
    }

    /// A body slower than `limits.minBodyRate`. Read for the request: its task is cancelled (and
    /// with it the upstream exchange), the client gets 408 if nothing of the answer has gone yet
    /// (else the connection is cut), and the connection closes. Read to be dropped (the request
    /// was answered without it): the answer goes out whole, then the connection closes.
    private func bodyTooSlow(_ exchange: Exchange, context: ChannelHandlerContext) {
        guard case .streaming(let source) = exchange.reading else {
            exchange.closeAfterResponse = true
            endIfAnswered(context: context)
            return
        }
        // The request's task learns it was cut short before its body fails.
        exchange.cutShort?.mark(exchange.headWritten ? 499 : 408)
        exchange.task?.cancel()
        source.finish(SignCoreError(.invalidInput, "the request body came slower than limits.minBodyRate"))
        exchange.reading = .dropping
        guard !exchange.headWritten else {
            context.close(promise: nil)
            return
        }
        exchange.headWritten = true
        exchange.responseEnded = true
        answerAndClose(.requestTimeout, context: context)
    }

    // MARK: Answering

    private func start(_ head: HTTPRequest, body: RequestBody, context: ChannelHandlerContext) {
        guard let exchange else { return }
        let request = Request(head: head, body: body)
        let requestContext = GatewayRequestContext(connection: .init(channel: context.channel, logger: logger))
        exchange.cutShort = requestContext.cutShort
        let writer = ResponseChannelWriter(connection: NIOLoopBound(self, eventLoop: context.eventLoop),
                                           exchange: NIOLoopBound(exchange, eventLoop: context.eventLoop))
        let responder = self.responder
        let logger = self.logger
        // Started from the event loop, the task runs on it in signd (SwiftNIO's event loops are
        // its global executor, and keep a task on the loop that enqueued it).
        exchange.task = Task {
            var response: Response
            do {
                response = try await responder.respond(to: request, context: requestContext)
            } catch {
                // RouterResponder answers what it can (HTTPResponseError); anything else is signd's fault.
                logger.debug("unanswered error", metadata: ["error.type": "\(type(of: error))"])
                response = Response(status: .internalServerError)
            }
            if response.headers[.date] == nil { response.headers[.date] = HTTPDate.now() }
            var bodyWriter = writer
            bodyWriter.head = response.head
            do {
                if response.body.contentLength == nil { try await bodyWriter.writeHead() }
                try await response.body.write(bodyWriter)
            } catch {}
            await writer.closeUnlessEnded()
        }
    }

    /// Writes a part of the exchange's response (the head first, once): nil when the channel
    /// takes more now, else a future that completes when it does.
    func write(_ part: HTTPResponsePart, for exchange: Exchange) throws -> EventLoopFuture<Void>? {
        guard exchange === self.exchange, !exchange.responseEnded, let context, context.channel.isActive else {
            throw ChannelError.ioOnClosedChannel
        }
        switch part {
        case .head(var head):
            guard !exchange.headWritten else { throw ChannelError.inappropriateOperationForState }
            exchange.headWritten = true
            if head.headerFields[.connection]?.lowercased() == "close" { exchange.closeAfterResponse = true }
            // A connection signd closes after this answer says so.
            if exchange.closeAfterResponse, head.status.kind != .informational { head.headerFields[.connection] = "close" }
            context.write(wrapOutboundOut(.head(head)), promise: nil)
            return scheduleFlush(context: context)
        case .body, .end:
            guard exchange.headWritten else { throw ChannelError.inappropriateOperationForState }
        }
        context.write(wrapOutboundOut(part), promise: nil)
        if case .end = part {
            exchange.responseEnded = true
            flushScheduled = false
            context.flush()
            endIfAnswered(context: context)
            return nil
        }
        return scheduleFlush(context: context)
    }

    /// Flushed once this turn of the event loop is over: a body written whole by the same task
    /// step goes out with its head and end in one write. Returns a future when the client must
    /// read before more is written.
    private func scheduleFlush(context: ChannelHandlerContext) -> EventLoopFuture<Void>? {
        if !flushScheduled {
            flushScheduled = true
            context.eventLoop.assumeIsolated().execute { [self] in
                guard flushScheduled else { return }
                flushScheduled = false
                self.context?.flush()
            }
        }
        guard !context.channel.isWritable else { return nil }
        let promise = context.eventLoop.makePromise(of: Void.self)
        writableWaiters.append(promise)
        context.flush()
        startSendTimer(context: context)  // after the flush: what the socket takes from here on is the client's doing
        return promise.futureResult
    }

    /// The response's task is over without its end written (its body failed): the connection
    /// cannot carry another response.
    func closeUnlessEnded(_ exchange: Exchange) {
        guard exchange === self.exchange, !exchange.responseEnded, let context else { return }
        context.close(promise: nil)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            sendTimer?.cancel()
            sendTimer = nil
            let waiters = writableWaiters
            writableWaiters = []
            for waiter in waiters { waiter.succeed() }
        }
        context.fireChannelWritabilityChanged()
    }

    /// The answer now waits for the client to read: past `sendTimeout` without the client taking
    /// a byte of it (nginx's `send_timeout`: the bytes the connection holds have not gone down),
    /// the request is cancelled (its upstream exchange with it) and the connection closed. Nothing
    /// more is written meanwhile (the answer's writer waits for the connection to be writable).
    private func startSendTimer(context: ChannelHandlerContext) {
        guard let sendTimeout, sendTimer == nil, !context.channel.isWritable else { return }
        let held = context.channel.bytesHeld
        sendTimer = context.eventLoop.assumeIsolated().scheduleTask(in: sendTimeout) { [self] in
            sendTimer = nil
            guard let context = self.context, !context.channel.isWritable, let exchange else { return }
            if let held, let now = context.channel.bytesHeld, now < held { return startSendTimer(context: context) }
            logger.info("client not reading its answer", metadata: ["signd.seconds": "\(sendTimeout.nanoseconds / 1_000_000_000)"])
            if !exchange.responseEnded { exchange.cutShort?.mark(499) }
            exchange.task?.cancel()
            context.closeAtOnce()
        }
    }

    /// The response has ended: the next request is handled once this one has been read to its
    /// end (or the connection closes).
    private func endIfAnswered(context: ChannelHandlerContext) {
        guard let exchange, exchange.responseEnded else { return }
        if exchange.closeAfterResponse {
            closeAfterAnswer(context: context)
            return
        }
        switch exchange.reading {
        case .ended:
            self.exchange = nil
            while let part = backlog.popFirst() {
                backlogBytes -= Self.size(of: part)
                receive(part, context: context)
                if self.exchange?.requestRead == true { break }
            }
            startStreamingIfWaiting(context: context)
            if self.exchange == nil && parseFailed {
                answerUnreadable(context: context)
                return
            }
            if self.exchange == nil && inputClosed {
                closeWhenWritten(context: context)
                return
            }
            releaseHeldRead(context: context)
        case .streaming(let source):
            // Answered before the body was read to its end, by a reader that left it: the rest
            // is read and dropped, as Hummingbird does.
            source.finish(CancellationError())
            exchange.reading = .dropping
            bodyPaused = false
            releaseHeldRead(context: context)
        case .dropping:
            bodyPaused = false
            releaseHeldRead(context: context)
        case .head:
            context.close(promise: nil)
        }
    }

    /// Closes the connection once its last response has gone: the output is shut at once (the
    /// client reads the response, then the end), and what the client still sends is read and
    /// dropped until it closes too or `lingerTime` has passed. A socket closed with unread input
    /// is reset, and a reset can destroy the response before the client has read it.
    private func closeAfterAnswer(context: ChannelHandlerContext) {
        if let exchange, case .streaming(let source) = exchange.reading { source.finish(CancellationError()) }
        exchange = nil
        backlog.removeAll()
        backlogBytes = 0
        bodyPaused = false
        guard !inputClosed else {
            closeWhenWritten(context: context)
            return
        }
        guard !closing else { return }
        // The linger starts once the answer has gone (SwiftNIO shuts the output after the
        // writes queued before it); `closingTime` bounds a client that never reads it.
        closing = true
        let channel = context.channel
        lingerTimer = context.eventLoop.scheduleTask(in: Self.closingTime) { channel.close(promise: nil) }
        let shut = context.eventLoop.makePromise(of: Void.self)
        shut.futureResult.assumeIsolated().whenComplete { [self] result in
            // A TLS stream may not half-close; a client that has closed too needs no linger.
            guard case .success = result, !inputClosed else {
                channel.close(promise: nil)
                return
            }
            answerGone = true
            lingerTimer?.cancel()
            lingerTimer = channel.eventLoop.scheduleTask(in: Self.lingerTime) { channel.close(promise: nil) }
        }
        context.close(mode: .output, promise: shut)
        if heldRead {
            heldRead = false
            context.read()
        }
    }

    /// Closes the connection once what was written has gone (a full close would drop it).
    private func closeWhenWritten(context: ChannelHandlerContext) {
        guard !closing else { return }
        closing = true
        let channel = context.channel
        let shut = context.eventLoop.makePromise(of: Void.self)
        shut.futureResult.whenComplete { _ in channel.close(promise: nil) }
        context.close(mode: .output, promise: shut)
    }
}
