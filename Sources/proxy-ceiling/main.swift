import NIOCore
import NIOHTTP1
import NIOPosix

// The ceiling of any SwiftNIO gateway on this machine, for the gateway benchmark
// (scripts/gateway-bench, docs/SIGND.md "The gateway benchmark"): a bare HTTP/1.1 proxy with
// nothing a gateway does. One upstream connection per client connection, on the same event loop;
// SwiftNIO's HTTP/1.1 parts passed through as they come (only `Connection` dropped on the way up);
// no task, no HTTP types, no verification, no limits, no header rewriting, no pool, no logs.
// Not a server to deploy: no timeouts, no back-pressure, no checks of any kind.
//
//   proxy-ceiling LISTEN-PORT UPSTREAM-PORT   (both on 127.0.0.1)

/// The upstream's answer, written to the client as it is read.
final class AnswerRelay: ChannelInboundHandler {
    typealias InboundIn = HTTPClientResponsePart
    private let client: any Channel

    init(client: any Channel) { self.client = client }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            client.write(HTTPServerResponsePart.head(HTTPResponseHead(version: head.version, status: head.status, headers: head.headers)),
                         promise: nil)
        case .body(let chunk): client.write(HTTPServerResponsePart.body(.byteBuffer(chunk)), promise: nil)
        case .end(let trailers): client.writeAndFlush(HTTPServerResponsePart.end(trailers), promise: nil)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        client.close(promise: nil)
        context.fireChannelInactive()
    }
}

/// A client connection's requests, written to its own upstream connection as they are read.
final class RequestRelay: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    private let upstreamPort: Int
    private var upstream: EventLoopFuture<any Channel>?

    init(upstreamPort: Int) { self.upstreamPort = upstreamPort }

    func channelActive(context: ChannelHandlerContext) {
        let client = context.channel
        upstream = ClientBootstrap(group: context.eventLoop)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    try channel.pipeline.syncOperations.addHandler(AnswerRelay(client: client))
                }
            }
            .connect(host: "127.0.0.1", port: upstreamPort)
        upstream?.whenFailure { _ in client.close(promise: nil) }
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = unwrapInboundIn(data)
        upstream?.whenSuccess { upstream in
            switch part {
            case .head(var head):
                head.headers.remove(name: "connection")
                upstream.write(HTTPClientRequestPart.head(head), promise: nil)
            case .body(let chunk): upstream.write(HTTPClientRequestPart.body(.byteBuffer(chunk)), promise: nil)
            case .end(let trailers): upstream.writeAndFlush(HTTPClientRequestPart.end(trailers), promise: nil)
            }
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        upstream?.whenSuccess { $0.close(promise: nil) }
        context.fireChannelInactive()
    }
}

let arguments = CommandLine.arguments.dropFirst().compactMap { Int($0) }
guard arguments.count == 2, CommandLine.arguments.count == 3 else {
    print("usage: proxy-ceiling LISTEN-PORT UPSTREAM-PORT")
    exit(2)
}
let (listenPort, upstreamPort) = (arguments[0], arguments[1])
let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
    .serverChannelOption(.backlog, value: 1024)
    .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
    .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
    .childChannelInitializer { channel in
        channel.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
            try channel.pipeline.syncOperations.addHandler(RequestRelay(upstreamPort: upstreamPort))
        }
    }
    .bind(host: "127.0.0.1", port: listenPort).get()
try await server.closeFuture.get()
