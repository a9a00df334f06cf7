import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOHPACK
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
                    // An HTTP/2 stream: its `:path` and `:authority` arrive apart, never as one
                    // target; its body's framing is made explicit for the checks that read it.
                    let codec = try pipeline.handler(type: HTTP2FramePayloadToHTTPServerCodec.self)
                    try pipeline.addHandler(HTTP2StreamFraming(), position: .before(codec))
                }
                pipeline.removeHandler(context: context, promise: nil)
            } catch {
                context.close(promise: nil)
            }
        }
    }
}

/// HTTP/1.1's framing on an HTTP/2 stream, both ways. In: an HTTP/2 request has no
/// `Transfer-Encoding` and may have no `Content-Length` (its body is whatever DATA frames follow a
/// HEADERS frame without END_STREAM), while signd's checks read the framing fields (a body on a
/// GET refused unread, a body forwarded with its framing, a streamed body held to its whash): a
/// head announcing a body of no stated length is marked `Transfer-Encoding: chunked`, as HTTP/1.1
/// would carry it. (NIOHTTP2 has already checked the stream's fields, and holds a
/// `Content-Length` to the DATA it counts.) Out: the connection-specific fields of a response
/// (`Connection: close` after a refusal whose body was not read) mean nothing on a stream and are
/// forbidden there (RFC 9113 §8.2.2), so they are removed: the stream ends, the connection stays.
final class HTTP2StreamFraming: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTP2Frame.FramePayload
    typealias InboundOut = HTTP2Frame.FramePayload
    typealias OutboundIn = HTTP2Frame.FramePayload
    typealias OutboundOut = HTTP2Frame.FramePayload
    private var headSeen = false
    private static let connectionSpecific = ["connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade"]

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !headSeen, case .headers(var headers) = unwrapInboundIn(data) else {
            context.fireChannelRead(data)
            return
        }
        headSeen = true
        if !headers.endStream, !headers.headers.contains(name: "content-length") {
            headers.headers.add(name: "transfer-encoding", value: "chunked")
            context.fireChannelRead(wrapInboundOut(.headers(headers)))
            return
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard case .headers(var headers) = unwrapOutboundIn(data),
              Self.connectionSpecific.contains(where: { headers.headers.contains(name: $0) }) else {
            context.write(data, promise: promise)
            return
        }
        for name in Self.connectionSpecific { headers.headers.remove(name: name) }
        context.write(wrapOutboundOut(.headers(headers)), promise: promise)
    }
}
