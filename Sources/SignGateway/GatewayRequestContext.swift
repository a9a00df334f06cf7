import Hummingbird
import NIOConcurrencyHelpers
import NIOCore
import SignCore
import SignHTTP
import SignHummingbird

/// signd's request context: SignCore's value (identity, verdict, route decision, client
/// address), and what only the gateway keeps: the chain of addresses the request came through.
public struct GatewayRequestContext: SignatureRequestContext {
    public var coreContext: CoreRequestContextStorage
    public var signCore = SignCoreContext()
    /// The connection's remote end.
    public let peer: SocketAddress?
    /// The event loop of the client's connection: the upstream exchange runs on a connection of
    /// the same loop (UpstreamClient), so a request never changes threads on its way through.
    let eventLoop: any EventLoop
    /// The client's address, then the proxies it came through to signd, the TCP peer last
    /// (`TrustedProxies.placeClient`): empty until that stage ran, or when the peer has no IP
    /// address (a Unix socket).
    public var forwardingChain: [IPAddress] = []
    /// The address of the client that made the request.
    public var clientAddress: IPAddress? { forwardingChain.first }
    /// The policy rule that applies (its written form, `*` for the fallback).
    public internal(set) var route = "*"
    /// Set for a forward-auth request (`ForwardAuthMiddleware`): the proxy that asks.
    var forwardAuth: ForwardAuthMiddleware.Style?
    /// Set when the response is the upstream's: its fields (a `signcore-error` an upstream that
    /// verifies too may send) are not signd's.
    let upstreamAnswered = NIOLockedValueBox(false)
    /// Set when signd's HTTP/1.1 connection (`HTTP1Connection`) or HTTP/2 stream (`HTTP2StreamLimits`)
    /// cut the request short before its answer ended (`CutShort`).
    let cutShort = CutShort()
    /// The request came on an HTTP/2 stream, whose task a reset does not cancel (it is
    /// Hummingbird's): what waits long in it is cancelled through `cutShort` instead.
    private(set) var onHTTP2Stream = false

    /// Hummingbird's, for an HTTP/2 stream: the stream's mark is shared.
    public init(source: ApplicationRequestContextSource) {
        self.init(connection: source)
        onHTTP2Stream = true
        HTTP2StreamLimits.share(cutShort, on: source.channel)
    }

    /// signd's HTTP/1.1 connection, which marks `cutShort` itself.
    init(connection source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        peer = source.channel.remoteAddress
        eventLoop = source.channel.eventLoop
    }
}

/// A request cut short by its connection or stream before its answer ended: 408 when signd
/// answered a body slower than `limits.minBodyRate` itself, 499 when the client went away. The
/// access log reports that status, the proxy an upstream exchange `cancelled`; the first mark
/// runs what waits on it (`whenCut`).
final class CutShort: Sendable {
    private struct State {
        var status: Int?
        var onCut: (@Sendable () -> Void)?
    }

    private let state = NIOLockedValueBox(State())

    var status: Int? { state.withLockedValue { $0.status } }

    /// Marks the request `status`, unless it was marked before.
    func mark(_ status: Int) {
        let onCut = state.withLockedValue { state -> (@Sendable () -> Void)? in
            guard state.status == nil else { return nil }
            state.status = status
            defer { state.onCut = nil }
            return state.onCut
        }
        onCut?()
    }

    /// `action` runs once the request is marked (at once when it was already); one action at most,
    /// nil for none any more.
    func whenCut(_ action: (@Sendable () -> Void)?) {
        let cut = state.withLockedValue { state in
            if state.status == nil { state.onCut = action }
            return state.status != nil
        }
        if cut { action?() }
    }
}
