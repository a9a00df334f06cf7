import Hummingbird
import NIOCore
import SignCore
import SignHTTP


extension TrustedProxies {
    /// Sets the context's client address first thing (`EntryMiddleware`): the TCP peer's, unless
    /// the peer is a trusted proxy; then the rightmost address that is not itself a trusted proxy
    /// in the one field the proxies write (`X-Forwarded-For`, or RFC 7239 `Forwarded` when
    /// configured so: proxies that write one pass a client's other one through untouched). A list
    /// that cannot be read (a name that is not an address, `unknown`, an obfuscated identifier, a
    /// malformed element) ends the walk at the last trusted hop, and so does the 32nd hop. Fields
    /// from anyone else are never read (and are removed upstream).
    func placeClient(of request: Request, into context: inout GatewayRequestContext) {
        context.forwardingChain = chain(peer: context.peer?.ipAddress.flatMap { IPAddress($0) }, fields: request.headers)
        context.signCore.clientAddress = context.clientAddress?.description
    }
}
