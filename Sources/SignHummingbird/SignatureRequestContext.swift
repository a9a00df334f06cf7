import Hummingbird
import SignCore

/// A request context that carries the verified signature to the handler, as hummingbird-auth
/// carries its identity: `nil` on a route whose policy is `off`, and on a `monitor` route when the
/// request did not verify.
public protocol SignatureRequestContext: RequestContext {
    var signature: VerifiedRequest? { get set }
}

/// The basic context with a signature, for applications that need nothing else in theirs.
public struct BasicSignatureRequestContext: SignatureRequestContext {
    public var coreContext: CoreRequestContextStorage
    public var signature: VerifiedRequest?

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        signature = nil
    }
}
