import NIOCore
import NIOHTTP1
import NIOHTTPTypesHTTP1
import NIOHTTPTypesHTTP2

/// The HTTP/1 request line as received, before it becomes an `HTTPRequest`: that conversion
/// reads an absolute-form target (`GET http://other/admin HTTP/1.1`) as its path and drops its
/// authority, which RFC 9112 §3.2.2 says wins over `Host`. signd is no forward proxy: such a
/// target (any that does not start with `/`) is replaced by one no route accepts, so
/// `ServerOrigin.validate(target:)` refuses it (400) like every other target that is not an
/// origin-form path.
final class AbsoluteFormGuard: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head(var head) = unwrapInboundIn(data), head.uri.utf8.first != UInt8(ascii: "/") {
            head.uri = "not-origin-form"
            context.fireChannelRead(wrapInboundOut(.head(head)))
            return
        }
        context.fireChannelRead(data)
    }

    /// Hummingbird adds its extra handlers after the conversion: this one puts the guard just
    /// before it, then leaves (on an HTTP/2 stream, it just leaves). Should that fail (a pipeline laid out otherwise), the connection
    /// is closed: without the guard an absolute-form target would lose its authority.
    final class Installer: ChannelInboundHandler, RemovableChannelHandler {
        typealias InboundIn = Never

        func handlerAdded(context: ChannelHandlerContext) {
            let pipeline = context.pipeline.syncOperations
            do {
                if let codec = try? pipeline.handler(type: HTTP1ToHTTPServerCodec.self) {
                    try pipeline.addHandler(AbsoluteFormGuard(), position: .before(codec))
                } else {
                    // An HTTP/2 stream: its `:path` and `:authority` arrive apart, never as one target.
                    _ = try pipeline.handler(type: HTTP2FramePayloadToHTTPServerCodec.self)
                }
                pipeline.removeHandler(context: context, promise: nil)
            } catch {
                context.close(promise: nil)
            }
        }
    }
}
