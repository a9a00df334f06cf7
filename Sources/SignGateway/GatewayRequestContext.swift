import Hummingbird
import NIOConcurrencyHelpers
import NIOCore
import SignCore
import SignHTTP
import SignHummingbird

/// signd's request context: the signature middleware's verdict and identity, and the client's
/// address (the TCP peer's, or when the peer is a trusted proxy, the one it reports).
public struct GatewayRequestContext: SignatureRequestContext {
    public var coreContext: CoreRequestContextStorage
    public var signature: VerifiedRequest?
    public var signatureVerdict: SignatureVerdict = .unchecked
    /// The connection's remote end.
    public let peer: SocketAddress?
    /// The client's address, then the proxies it came through to signd, the TCP peer last
    /// (`ClientAddressMiddleware`): empty until that middleware ran, or when the peer has no IP
    /// address (a Unix socket).
    public var forwardingChain: [IPAddress] = []
    /// The address of the client that made the request.
    public var clientAddress: IPAddress? { forwardingChain.first }
    /// The policy rule that applies (its written form, `*` for the fallback).
    public internal(set) var route = "*"
    /// Made once, by `RouteMiddleware`, with the policy `SignatureMiddleware` has.
    public internal(set) var routeDecision: RoutePolicy.Decision?
    /// Set when the response is the upstream's: its fields (a `signcore-error` an upstream that
    /// verifies too may send) are not signd's.
    let upstreamAnswered = NIOLockedValueBox(false)

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        peer = source.channel.remoteAddress
    }
}
