import HTTPTypes
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTPTypes

/// `limits.minBodyRate` on an HTTP/2 stream, as `HTTP1Connection` holds it on an HTTP/1.1
/// connection: a request body below the rate over a window of reading gets 408 when nothing of
/// its answer has gone, and the stream is reset either way (the connection and its other streams
/// go on). Without it, a body trickled on a stream held the stream, its request's task and an
/// upstream connection for as long as each DATA frame came within the idle timeout.
///
/// Sits between Hummingbird's HTTP/2 codec and the stream's async channel. signd's reading is
/// seen in the reads the stream's reader asks for: the clock runs while one waits for the
/// client, and stops while the reader is full (signd, not the client, is slow then). A stream
/// that ends before its answer is marked 499, as a connection is. The mark is the request
/// context's `cutShort` (`adopt`), so that the access log and the proxy count the request as its
/// client saw it.
final class StreamBodyRate: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let rate: BodyRate
    private let logger: Logger
    private var cutShort = NIOLockedValueBox<Int?>(nil)
    private var clock = BodyClock()
    /// From the body's first byte to its end.
    private var inBody = false
    /// A read asked for by the stream's reader, not yet answered: signd waits for the client.
    private var readWaiting = false
    private var timer: Scheduled<Void>?
    private var headWritten = false
    private var responseEnded = false

    init(rate: BodyRate, logger: Logger) {
        self.rate = rate
        self.logger = logger
    }

    /// Marks go to `box` from now on (the request's context, made in its task after the stream's
    /// pipeline): with what was marked before it.
    func adopt(_ box: NIOLockedValueBox<Int?>) {
        if let mark = cutShort.withLockedValue({ $0 }) { box.withLockedValue { $0 = $0 ?? mark } }
        cutShort = box
    }

    /// The request's context (made in its task) shares the stream's mark, when its channel is a
    /// stream with this handler.
    static func share(_ box: NIOLockedValueBox<Int?>, on channel: any Channel) {
        channel.pipeline.handler(type: StreamBodyRate.self).whenSuccess { $0.adopt(box) }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .body(let chunk) = unwrapInboundIn(data) {
            if !inBody, !clock.started {
                inBody = true
                scheduleCheck(context: context)
            }
            clock.received(chunk.readableBytes, paused: !readWaiting)
        } else if case .end = unwrapInboundIn(data) {
            bodyEnded()
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

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(let head) where head.status.kind != .informational: headWritten = true
        case .end: responseEnded = true
        case .head, .body: break
        }
        context.write(data, promise: promise)
    }

    func channelInactive(context: ChannelHandlerContext) {
        bodyEnded()
        if !responseEnded { cutShort.withLockedValue { $0 = $0 ?? 499 } }
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) { bodyEnded() }

    private func bodyEnded() {
        inBody = false
        timer?.cancel()
        timer = nil
    }

    private func scheduleCheck(context: ChannelHandlerContext) {
        timer = context.eventLoop.assumeIsolated().scheduleTask(in: .seconds(1)) { [self] in
            timer = nil
            guard inBody else { return }
            guard let slow = clock.check(against: rate, at: .now()) else { return scheduleCheck(context: context) }
            logger.info("request body too slow", metadata: ["signd.bytes": "\(slow.bytes)", "signd.seconds": "\(slow.seconds)"])
            tooSlow(context: context)
        }
    }

    /// The request learns it was cut short (408, or 499 when its answer had begun) before its
    /// body fails; the client gets 408 if nothing of the answer has gone; the stream is reset
    /// (RFC 9113 §8.1: a complete response, then RST_STREAM, stops the client sending).
    private func tooSlow(context: ChannelHandlerContext) {
        inBody = false
        let answered = headWritten
        cutShort.withLockedValue { $0 = $0 ?? (answered ? 499 : 408) }
        if !answered {
            headWritten = true
            responseEnded = true
            let head = HTTPResponse(status: .requestTimeout, headerFields: [.contentLength: "0", .date: HTTPDate.now()])
            context.write(wrapOutboundOut(.head(head)), promise: nil)
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        }
        // RST_STREAM: the body's reader then fails (NIOHTTP2 reports the reset as an error), never
        // taking the body read so far for the whole of it.
        context.close(promise: nil)
    }
}
