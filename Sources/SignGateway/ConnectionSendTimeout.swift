import Logging
import NIOCore
import NIOSSL

/// The send timeout of an HTTP/2 connection as a whole (`limits.idleTimeout`, as nginx's
/// `send_timeout`): a client that takes none of what signd writes on the connection for that
/// long (the socket not writable, the bytes the connection holds not going down) is cut, every
/// stream with it. A stream's own timer (`HTTP2StreamLimits`) can only queue a reset, which a
/// connection nobody reads never sends: its answers' writers would wait, and hold their upstream
/// exchanges, for as long as the client keeps the socket open.
final class ConnectionSendTimeout: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny

    private let timeout: TimeAmount
    private let logger: Logger
    private var timer: Scheduled<Void>?

    init(timeout: TimeAmount, logger: Logger) {
        self.timeout = timeout
        self.logger = logger
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            timer?.cancel()
            timer = nil
        } else {
            start(context: context)
        }
        context.fireChannelWritabilityChanged()
    }

    func handlerRemoved(context: ChannelHandlerContext) { timer?.cancel() }

    func channelInactive(context: ChannelHandlerContext) {
        timer?.cancel()
        context.fireChannelInactive()
    }

    /// Starts again whenever the socket took some of what the connection holds.
    private func start(context: ChannelHandlerContext) {
        guard timer == nil, !context.channel.isWritable else { return }
        let held = context.channel.bytesHeld
        timer = context.eventLoop.assumeIsolated().scheduleTask(in: timeout) { [self] in
            timer = nil
            guard context.channel.isActive, !context.channel.isWritable else { return }
            if let held, let now = context.channel.bytesHeld, now < held { return start(context: context) }
            logger.info("client not reading its connection", metadata: ["signd.seconds": "\(timeout.nanoseconds / 1_000_000_000)"])
            context.closeAtOnce()
        }
    }
}

extension ChannelHandlerContext {
    /// Closes the connection now. Under TLS, without the close_notify that NIOSSL would wait its
    /// shutdown timeout (5 s) to send: a client that reads nothing never takes it. (A close from
    /// the TLS handler's own context passes it by.)
    func closeAtOnce() {
        if let tls = try? pipeline.syncOperations.context(handlerType: NIOSSLServerHandler.self) {
            tls.close(promise: nil)
        } else {
            close(promise: nil)
        }
    }
}

extension Channel {
    /// The bytes the connection holds, not yet taken by the socket.
    var bytesHeld: Int? {
        try? syncOptions?.getOption(.bufferedWritableBytes)
    }
}
