import HTTPTypes
import Hummingbird
import NIOCore
import SignCore
import SignHTTP

/// Forward auth (docs/SIGND.md "Forward auth"): a proxy that operators already run (nginx
/// `auth_request`, Caddy `forward_auth`, Traefik ForwardAuth) asks signd about each request before
/// it sends it on, describing it in fields of its own. signd verifies the request described, as if
/// it had received it, and answers 2xx with the identity fields, or the refusal.
///
/// First in signd's chain: a request to `path` from a trusted proxy becomes the request it
/// describes (its method, target and host), with the proxy's fields removed; the rest of the
/// chain (route, client address, checks, signature, limits) runs on it, and `ForwardAuthAnswer`
/// answers in place of the upstream. The description is believed from the trusted proxies alone:
/// from anyone else, a request to `path` is an ordinary request, and its fields are ignored.
struct ForwardAuthMiddleware: RouterMiddleware {
    typealias Context = GatewayRequestContext

    typealias Style = ForwardAuthDescription.Style

    let path: String
    let style: Style
    let proxies: [IPNetwork]
    let origin: ServerOrigin
    let routes: GatewayRoutes
    /// Fields a client may not send through forward auth, as `GatewayFields.spelling` gives
    /// them: the identity fields and method or URL overrides (signd's proxy removes them; here the
    /// proxy sends the request on, so it is refused).
    let refusedFields: Set<String>
    /// signd's own endpoints (health, readiness, attestation, devices, this one) and the paths
    /// under them: answered by signd when it receives them, never authorized for a proxy to send on.
    let ownPaths: Set<String>

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard request.uri.path == path, let peer = context.peer?.ipAddress.flatMap({ IPAddress($0) }),
              proxies.contains(where: { $0.contains(peer) }) else {
            return try await next(request, context)
        }
        var context = context
        context.forwardAuth = style
        let described: Request
        do throws(SignCoreError) {
            described = try describedRequest(request)
        } catch {
            return await ForwardAuthAnswer.answer(Response(Refusal(error, serverTime: SystemClock.seconds())), style: style)
        }
        return await ForwardAuthAnswer.answer(try await next(described, context), style: style)
    }

    /// The request the proxy describes (`ForwardAuthDescription`), its body class checked
    /// against its route, and never one of signd's own endpoints.
    func describedRequest(_ request: Request) throws(SignCoreError) -> Request {
        let description = try ForwardAuthDescription.describe(request.headers, style: style, scheme: origin.scheme) {
            refusedFields.contains(GatewayFields.spelling($0))
        }
        let described = Request(head: description.head, body: RequestBody(buffer: ByteBuffer()))
        let target = described.uri.path
        guard !ownPaths.contains(where: { target == $0 || target.hasPrefix($0 + "/") }) else {
            throw SignCoreError(.invalidURL, "forward auth: signd's own endpoints are answered by signd, not authorized for a proxy")
        }
        // No body reaches forward auth: a request that has one cannot have it checked here, unless
        // its route checks nothing (decided on the path as `GatewayRoutes.decide` will read it).
        let checked = description.method.contentClass == .url
            ? description.announcesBody
            : routes.policy.decision(method: description.head.method, path: target).signature != .off
        if checked {
            throw SignCoreError(.unexpectedBody, "forward auth sees no request body: send requests with one through signd's proxy")
        }
        return described
    }
}

/// The last middleware of a forward-auth request: the signature and the limits passed, so the
/// answer is 200 with the identity fields the proxy copies onto the request it sends on (every
/// one of them, empty when it has no value, so that a client's own never survives the copy).
/// Other requests go on to the upstream.
struct ForwardAuthAnswer: RouterMiddleware {
    typealias Context = GatewayRequestContext
    let identity: ProxyMiddleware.IdentityFields

    /// A refusal's own status, when a proxy that passes only 401 and 403 on gets it as a 401.
    static let statusField = HTTPField.Name("signcore-status")!
    /// A refusal's problem document (SPEC §7.1), on one line, for that proxy to answer with.
    static let problemField = HTTPField.Name("signcore-problem")!

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard context.forwardAuth != nil else { return try await next(request, context) }
        if let refusal = GatewayFields.misspeltCoveredField(request.headers, context: context) { return Response(Refusal(refusal)) }
        var headers: HTTPFields = [.cacheControl: "no-store"]
        for (name, value) in identity.values(for: context) { headers[name] = value }
        return Response(status: .ok, headers: headers)
    }

    /// A forward-auth answer as the proxy of `style` can return it: for nginx, a refusal becomes
    /// a 401 carrying its status and problem document in fields (a refusal is signd's own small
    /// document; its first 4 KiB are kept).
    static func answer(_ response: Response, style: ForwardAuthMiddleware.Style) async -> Response {
        guard style.refusalsAs401, !(200..<300).contains(response.status.code) else { return response }
        let collector = Collector()
        try? await response.body.write(collector)
        var answer = Response(status: .unauthorized, headers: response.headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: collector.box.bytes)))
        answer.headers[.contentLength] = nil
        answer.headers[statusField] = String(response.status.code)
        let problem = String(decoding: collector.box.bytes.filter { $0 >= 0x20 && $0 < 0x7F }, as: UTF8.self)
        if !problem.isEmpty { answer.headers[problemField] = problem }
        return answer
    }

    /// Gathers a response body in memory, up to 4 KiB.
    private struct Collector: ResponseBodyWriter {
        final class Box { var bytes: [UInt8] = [] }
        var box = Box()
        mutating func write(_ buffer: ByteBuffer) async throws {
            box.bytes += buffer.readableBytesView.prefix(max(0, 4096 - box.bytes.count))
        }
        consuming func finish(_ trailingHeaders: HTTPFields?) async throws {}
    }
}
