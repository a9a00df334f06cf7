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

    /// The fields a kind of proxy describes a request with, and how it returns a refusal.
    struct Style: Sendable {
        let method: HTTPField.Name
        let uri: HTTPField.Name
        /// nginx's `auth_request` passes a 401 or 403 on and turns any other status into a 500:
        /// every refusal is answered 401, its own status and problem in fields (`ForwardAuthAnswer`).
        let refusalsAs401: Bool

        static let nginx = Style(method: HTTPField.Name("x-original-method")!, uri: HTTPField.Name("x-original-uri")!, refusalsAs401: true)
        /// Caddy's `forward_auth` and Traefik's ForwardAuth: a refusal is returned as it is.
        static let forwarded = Style(method: HTTPField.Name("x-forwarded-method")!, uri: HTTPField.Name("x-forwarded-uri")!, refusalsAs401: false)

        /// The other style's description fields: a request carrying them has them from a client.
        var foreign: [HTTPField.Name] { self.uri == Self.nginx.uri ? [Self.forwarded.method, Self.forwarded.uri] : [Self.nginx.method, Self.nginx.uri] }
    }

    static let forwardedHost = HTTPField.Name("x-forwarded-host")!
    static let forwardedProto = HTTPField.Name("x-forwarded-proto")!
    /// What the nginx configuration of docs/SIGND.md sends of the original body's framing, as it
    /// clears the subrequest's own (`proxy_pass_request_body off`).
    static let originalContentLength = HTTPField.Name("x-original-content-length")!
    static let originalTransferEncoding = HTTPField.Name("x-original-transfer-encoding")!

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

    /// The request the proxy describes: its method, target and host from the proxy's fields, its
    /// other fields as the client sent them, and no body.
    func describedRequest(_ request: Request) throws(SignCoreError) -> Request {
        let fields = request.headers
        func single(_ name: HTTPField.Name) throws(SignCoreError) -> String? {
            let values = fields[values: name]
            guard values.count <= 1 else { throw SignCoreError(.invalidHeader, "forward auth: the proxy's \(name.canonicalName) appears more than once") }
            return values.first
        }
        // The fields of another kind of proxy come from the client (the proxy sets its own only).
        if let foreign = style.foreign.first(where: { fields[$0] != nil }) {
            throw SignCoreError(.invalidHeader, "forward auth: the request carries \(foreign.canonicalName), which this proxy does not send")
        }
        guard let methodText = try single(style.method), let uri = try single(style.uri), let host = try single(Self.forwardedHost) else {
            throw SignCoreError(.invalidInput, "forward auth: the proxy sent no \(style.method.canonicalName), \(style.uri.canonicalName) or x-forwarded-host")
        }
        guard let method = HTTPRequest.Method(methodText), let signed = try? RequestMethod(token: methodText) else {
            throw SignCoreError(.unsupportedMethod, "forward auth: the proxy's method is not a method")
        }
        // The scheme signd verifies is its configured one: a proxy that received the request
        // over another has received a request signed for another origin, or a downgrade.
        guard let proto = try single(Self.forwardedProto) else {
            throw SignCoreError(.invalidInput, "forward auth: the proxy sent no x-forwarded-proto")
        }
        guard proto.lowercased() == origin.scheme else {
            throw SignCoreError(.invalidURL, "forward auth: the request came over \(proto == "http" ? "http" : "another scheme"), signd verifies \(origin.scheme) requests")
        }
        if fields.contains(where: { refusedFields.contains(GatewayFields.spelling($0.name)) }) {
            throw SignCoreError(.invalidHeader, "forward auth: the request carries an identity field or a method or URL override, which would reach the upstream")
        }
        let removed: Set<HTTPField.Name> = [style.method, style.uri, Self.forwardedHost, Self.forwardedProto, Self.originalContentLength,
                                            Self.originalTransferEncoding, .contentLength, .transferEncoding, ReceivedRequest.hostField]
        let head = HTTPRequest(method: method, scheme: nil, authority: host, path: uri,
                               headerFields: HTTPFields(fields.filter { !removed.contains($0.name) }))
        let described = Request(head: head, body: RequestBody(buffer: ByteBuffer()))
        let target = described.uri.path
        guard !ownPaths.contains(where: { target == $0 || target.hasPrefix($0 + "/") }) else {
            throw SignCoreError(.invalidURL, "forward auth: signd's own endpoints are answered by signd, not authorized for a proxy")
        }
        // No body reaches forward auth: a request that has one cannot have it checked here, unless
        // its route checks nothing (decided on the path as `RouteMiddleware` will read it).
        // (An empty field is none: a proxy fills it from a field the request may not have.)
        let framing = [Self.originalContentLength, .contentLength, Self.originalTransferEncoding, .transferEncoding].flatMap { fields[values: $0] }
        let hasBody = framing.contains { !["", "0"].contains($0.trimmingCharacters(in: .whitespaces)) }
        if signed.contentClass == .url ? hasBody : routes.policy.decision(method: method, path: target).signature != .off {
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
