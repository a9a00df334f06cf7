import Hummingbird
import SignCore
import SignHTTP

/// A request context that carries the verified signature to the handler, as hummingbird-auth
/// carries its identity: `nil` on a route whose policy is `off`, and on a `monitor` route when the
/// request did not verify.
public protocol SignatureRequestContext: RequestContext {
    var signature: VerifiedRequest? { get set }
    /// What the middleware decided, for handlers (and a proxy) that must tell a `monitor` route's
    /// failure from an `off` route. A context without storage for it reads `.unchecked` or, from
    /// `signature`, `.verified(bodyStreamed: true)`: not knowing, it never claims a body whole.
    var signatureVerdict: SignatureVerdict { get set }
    /// The route policy's decision for this request when a middleware before made it with the
    /// same policy as `SignatureMiddleware` (signd's does), so that it is made once; `nil` (the
    /// default) and the middleware decides.
    var routeDecision: RoutePolicy.Decision? { get }
}

extension SignatureRequestContext {
    public var signatureVerdict: SignatureVerdict {
        get { signature == nil ? .unchecked : .verified(bodyStreamed: true) }
        set {}
    }

    public var routeDecision: RoutePolicy.Decision? { nil }
}

/// The middleware's decision on one request.
public enum SignatureVerdict: Sendable, Equatable {
    /// The route's policy is `off`: nothing was checked.
    case unchecked
    /// The token verified. With `bodyStreamed`, the body reaches the handler while it is still
    /// being hashed: it may yet end in `whashMismatch`, and nothing may be acted on before its end.
    case verified(bodyStreamed: Bool)
    /// A `monitor` route's request that did not verify, with the reason; it goes on unproven.
    case failed(SignCoreError.Code)
}

/// The basic context with a signature, for applications that need nothing else in theirs.
public struct BasicSignatureRequestContext: SignatureRequestContext {
    public var coreContext: CoreRequestContextStorage
    public var signature: VerifiedRequest?
    public var signatureVerdict: SignatureVerdict = .unchecked

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        signature = nil
    }
}
