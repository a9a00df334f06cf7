import Hummingbird
import NIOCore
import SignCore
import SignHTTP

/// A request context that carries SignCore's facts about a request to the handler, as
/// hummingbird-auth carries its identity: one value, `signCore`, that grows with the flows (the
/// identity and the verdict, the route's decision, the client's address, and what later flows
/// add under keys of their own), so a new fact never changes the protocol a context conforms to.
public protocol SignatureRequestContext: RequestContext {
    var signCore: SignCoreContext { get set }
}

extension SignatureRequestContext {
    /// The identity the request proved: `nil` on a route whose policy is `off`, and on a
    /// `monitor` route when the request did not verify.
    public var signature: VerifiedIdentity? { signCore.identity }
}

/// What SignCore's middlewares established about a request.
public struct SignCoreContext: Sendable {
    /// The identity the request proved (`SignatureMiddleware`).
    public var identity: VerifiedIdentity?
    /// What the signature middleware decided: it tells a `monitor` route's failure from an
    /// `off` route, and a streamed body still to be checked from a body checked whole.
    public var verdict: SignatureVerdict = .unchecked
    /// The route policy's decision, when a middleware before `SignatureMiddleware` made it with
    /// the same policy (signd's does), so that it is made once; nil and the middleware decides.
    /// Set only through `recordRouteDecision` (SPI): a decision the middleware trusts is never
    /// one any middleware before it could write.
    public internal(set) var routeDecision: RoutePolicy.Decision?
    /// The address of the client that made the request (the TCP peer's, or the one a trusted
    /// proxy reports), as text; nil until a middleware established it.
    public var clientAddress: String?
    private var values: [ObjectIdentifier: any Sendable] = [:]

    public init() {}

    /// Records the decision `SignatureMiddleware` then takes as its own: for a middleware that
    /// decides with the very policy the signature middleware has (signd's `GatewayRoutes.decide`).
    @_spi(SignCoreTools)
    public mutating func recordRouteDecision(_ decision: RoutePolicy.Decision) { routeDecision = decision }

    /// A fact a flow adds (an attestation, a device), under a key type of its own.
    public subscript<Key: SignCoreContextKey>(_ key: Key.Type) -> Key.Value? {
        get { values[ObjectIdentifier(key)] as? Key.Value }
        set { values[ObjectIdentifier(key)] = newValue }
    }
}

/// A kind of fact a flow keeps in `SignCoreContext`: a type naming it, with its value's type.
public protocol SignCoreContextKey {
    associatedtype Value: Sendable
}

/// The middleware's decision on one request.
public enum SignatureVerdict: Sendable, Equatable {
    /// The route's policy is `off`: nothing was checked.
    case unchecked
    /// The proof verified. With `bodyStreamed`, the body reaches the handler while it is still
    /// being digested: it may yet end in a mismatch, and nothing may be acted on before its end.
    case verified(bodyStreamed: Bool)
    /// A `monitor` route's request that did not verify, with the reason; it goes on unproven.
    case failed(SignCoreError.Code)
}

/// The basic context with SignCore's value, for applications that need nothing else in theirs,
/// and the connection's remote end (which `ClientAddressMiddleware` reads).
public struct BasicSignatureRequestContext: SignatureRequestContext, RemoteAddressRequestContext {
    public var coreContext: CoreRequestContextStorage
    public var signCore = SignCoreContext()
    public let remoteAddress: SocketAddress?

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
    }
}
