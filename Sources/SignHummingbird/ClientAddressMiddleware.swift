import Hummingbird
import NIOCore
import SignHTTP

/// Sets `context.signCore.clientAddress`, which rate limits by address count (docs/ATTEST.md
/// §10.2): the TCP peer's address, or the one the trusted proxies in front report
/// (`TrustedProxies`); fields from anyone else are never read. Add it before `SignatureMiddleware`.
public struct ClientAddressMiddleware<Context: SignatureRequestContext & RemoteAddressRequestContext>: RouterMiddleware {
    public let proxies: TrustedProxies

    public init(proxies: TrustedProxies = TrustedProxies([])) { self.proxies = proxies }

    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var context = context
        let peer = context.remoteAddress?.ipAddress.flatMap { IPAddress($0) }
        context.signCore.clientAddress = proxies.clientAddress(peer: peer, fields: request.headers)?.description
        return try await next(request, context)
    }
}
