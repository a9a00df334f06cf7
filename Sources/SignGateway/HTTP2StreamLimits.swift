import HTTPTypes
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP2
import NIOHTTPTypes
import NIOHTTPTypesHTTP2

/// The limits `HTTP1Connection` holds an HTTP/1.1 connection to, on an HTTP/2 stream; and the
/// stream's end before its answer, marked 499. Sits between Hummingbird's HTTP/2 codec and the
/// stream's reader (its async channel), in every stream.
///
/// - `limits.minBodyRate`: a request body below the rate over a window of reading gets 408 when
///   nothing of its answer has gone, then RST_STREAM(NO_ERROR) once the answer has been sent (RFC
///   9113 §8.1: the client stops sending and keeps the answer); an answer under way is cut
///   (RST_STREAM(CANCEL)). The connection and its other streams go on. signd's reading is seen in
///   the reads the stream's reader asks for: the clock runs while one waits for the client, and
///   stops while the reader's buffer is full (signd, not the client, is slow then).
/// - The send timeout (`limits.idleTimeout`): an answer that waits that long for the client to
///   take more of it (the stream not writable: its flow-control window, or the connection, full)
///   is cut, as the idle timer does not run while a response is under way.
/// - The mark is the request context's `cutShort` (`share`), so that the access log and the proxy
///   count the request as its client saw it.
final class HTTP2StreamLimits: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let rate: BodyRate
    private let sendTimeout: TimeAmount?
    private let logger: Logger
    private var cutShort = CutShort()
    private var clock = BodyClock()
    /// From the body's first byte to its end.
    private var inBody = false
    /// The request's end has been read: a stream closed before it cut its body short.
    private var requestEnded = false
    /// A read asked for by the stream's reader, not yet answered: signd waits for the client.
    private var readWaiting = false
    private var rateTimer: Scheduled<Void>?
    private var sendTimer: Scheduled<Void>?
    private var headWritten = false
    /// The answer's end, written by its task; completed once it has gone to the connection.
    private var answerSent: EventLoopFuture<Void>?
    /// Answered 408 for a slow body: what more of the body comes is dropped, never handed to the
    /// request's reader (which would forward it whole), until the reset fails that reader.
    private var bodyCut = false
    /// When a part of the answer last went to the connection: the send timer starts again from it.
    private var lastSent = NIODeadline.now()

    init(rate: BodyRate, sendTimeout: TimeAmount?, logger: Logger) {
        self.rate = rate
        self.sendTimeout = sendTimeout
        self.logger = logger
    }

    /// The request's context, made in its task once the stream's head has been read, shares the
    /// stream's mark; a stream already gone (its handlers removed) marks it 499 itself.
    static func share(_ mark: CutShort, on channel: any Channel) {
        channel.pipeline.handler(type: HTTP2StreamLimits.self).whenComplete { found in
            switch found {
            case .success(let limits): limits.adopt(mark)
            case .failure: if !channel.isActive { mark.mark(499) }
            }
        }
    }

    private func adopt(_ mark: CutShort) {
        if let status = cutShort.status { mark.mark(status) }
        cutShort = mark
    }

    private func mark(_ status: Int) {
        cutShort.mark(status)
    }

    // MARK: The request

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if bodyCut { return }
        switch unwrapInboundIn(data) {
        case .body(let chunk):
            if rate.minimum > 0, !inBody, !clock.started {
                inBody = true
                scheduleRateCheck(context: context)
            }
            clock.received(chunk.readableBytes, paused: !readWaiting)
        case .end:
            requestEnded = true
            bodyEnded()
        case .head:
            break
        }
        context.fireChannelRead(data)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        readWaiting = false
        clock.pause(at: .now())
        context.fireChannelReadComplete()
    }

    func read(context: ChannelHandlerContext) {
        readWaiting = true
        clock.resume(at: .now())
        context.read()
    }

    /// The stream failed (the client reset it): marked before the error reaches the request's
    /// body, which the request's task may be reading.
    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if answerSent == nil { mark(499) }
        requestEnded = true  // the reader has its error: no second one at the stream's close
        context.fireErrorCaught(error)
    }

    /// A stream closed with its connection ends with no error of its own (NIOHTTP2 closes it
    /// cleanly, and its reader would take the body read so far for whole): a request not read to
    /// its end fails it first, so that an upload is never forwarded as complete.
    func channelInactive(context: ChannelHandlerContext) {
        stopTimers()
        if answerSent == nil { mark(499) }
        if !requestEnded {
            requestEnded = true
            context.fireErrorCaught(ChannelError.eof)
        }
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) { stopTimers() }

    private func bodyEnded() {
        inBody = false
        rateTimer?.cancel()
        rateTimer = nil
    }

    private func stopTimers() {
        bodyEnded()
        sendTimer?.cancel()
        sendTimer = nil
    }

    private func scheduleRateCheck(context: ChannelHandlerContext) {
        rateTimer = context.eventLoop.assumeIsolated().scheduleTask(in: .seconds(1)) { [self] in
            rateTimer = nil
            guard inBody else { return }
            guard let slow = clock.check(against: rate, at: .now()) else { return scheduleRateCheck(context: context) }
            logger.info("request body too slow", metadata: ["signd.bytes": "\(slow.bytes)", "signd.seconds": "\(slow.seconds)"])
            bodyTooSlow(context: context)
        }
    }

    /// The request learns it was cut short (408, or 499 when its answer had begun) before its
    /// body fails (a reset stream fails its reader: never a body read so far taken for whole).
    private func bodyTooSlow(context: ChannelHandlerContext) {
        inBody = false
        bodyCut = true
        if !headWritten {
            mark(408)
            headWritten = true
            let head = HTTPResponse(status: .requestTimeout, headerFields: [.contentLength: "0", .date: HTTPDate.now()])
            context.write(wrapOutboundOut(.head(head)), promise: nil)
            let sent = context.eventLoop.makePromise(of: Void.self)
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: sent)
            answerSent = sent.futureResult
        }
        guard let answerSent else {
            mark(499)
            context.close(promise: nil)  // RST_STREAM(CANCEL): the answer under way is cut
            return
        }
        // The whole answer first (a reset drops what flow control still holds of it), then NO_ERROR.
        // The send timeout bounds the wait for a client that never opens its window.
        answerSent.hop(to: context.eventLoop).assumeIsolated().whenSuccess { [self] in
            context.triggerUserOutboundEvent(NIOHTTP2FramePayloadToHTTPEvent.reset(code: .noError), promise: nil)
        }
        startSendTimer(context: context)
    }

    // MARK: The answer

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(let head) where head.status.kind != .informational:
            headWritten = true
        case .end:
            let sent = promise ?? context.eventLoop.makePromise(of: Void.self)
            answerSent = sent.futureResult
            context.write(data, promise: sent)
            return
        case .body(var chunk):
            // Progress for the send timer (a stream's window opens a little at a time). NIOHTTP2
            // completes a part's promise once all of it has gone: parts of a frame's size at most,
            // so that a client reading slowly but steadily is seen to take them.
            while chunk.readableBytes > Self.progressStep, let piece = chunk.readSlice(length: Self.progressStep) {
                writeBody(piece, promise: nil, context: context)
            }
            writeBody(chunk, promise: promise, context: context)
            return
        case .head:
            break
        }
        context.write(data, promise: promise)
    }

    /// The most of the answer's body written as one part: HTTP/2's smallest maximum frame size.
    private static let progressStep = 16_384

    private func writeBody(_ piece: ByteBuffer, promise: EventLoopPromise<Void>?, context: ChannelHandlerContext) {
        let sent = promise ?? context.eventLoop.makePromise(of: Void.self)
        sent.futureResult.hop(to: context.eventLoop).assumeIsolated().whenSuccess { [self] in lastSent = .now() }
        context.write(wrapOutboundOut(.body(piece)), promise: sent)
    }

    func channelActive(context: ChannelHandlerContext) {
        if !context.channel.isWritable { startSendTimer(context: context) }
        context.fireChannelActive()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        // After a 408 the timer bounds the wait for its end to go, writable or not (`bodyTooSlow`).
        if context.channel.isWritable, !bodyCut {
            sendTimer?.cancel()
            sendTimer = nil
        } else {
            startSendTimer(context: context)
        }
        context.fireChannelWritabilityChanged()
    }

    /// Past `sendTimeout` not writable (or waiting to send the answer's end) with no part of the
    /// answer sent meanwhile (nginx's `send_timeout`), the stream is cut: a client that takes
    /// nothing would otherwise hold the stream, its request and the upstream connection streaming
    /// the answer, for ever.
    private func startSendTimer(context: ChannelHandlerContext, from start: NIODeadline = .now()) {
        guard let sendTimeout, sendTimer == nil else { return }
        sendTimer = context.eventLoop.assumeIsolated().scheduleTask(deadline: start + sendTimeout) { [self] in
            sendTimer = nil
            if lastSent > start { return startSendTimer(context: context, from: lastSent) }
            logger.info("client not reading its answer", metadata: ["signd.seconds": "\(sendTimeout.nanoseconds / 1_000_000_000)"])
            if answerSent == nil { mark(499) }
            context.close(promise: nil)
        }
    }
}
