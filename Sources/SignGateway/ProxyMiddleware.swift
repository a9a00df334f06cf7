import AsyncHTTPClient
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypesHTTP1
import SignCore
import SignHTTP
import SignHummingbird

/// Forwards every request that got this far to the upstream, with its path and query, and
/// streams the response back. Never calls `next`: it is the last middleware.
///
/// Forwarded fields: the client's, less hop-by-hop fields, the whash and wtoken (spent), and the
/// identity fields, which are always removed first and then set from the verified signature
/// only: a client can never name an identity itself. `x-forwarded-host` and `x-forwarded-proto`
/// are set the same way. A streamed body that fails its whash aborts the upstream request before
/// its end (the connection is closed) and the client gets the refusal.
struct ProxyMiddleware<Context: SignatureRequestContext>: RouterMiddleware {
    let client: HTTPClient
    let upstream: String
    let origin: ServerOrigin
    let names: SignHeaderNames
    let identity: IdentityFields
    let timeout: TimeAmount

    struct IdentityFields: Sendable {
        let keyID: HTTPField.Name
        let account: HTTPField.Name
        let algorithm: HTTPField.Name
    }

    static var forwardedHost: HTTPField.Name { HTTPField.Name("x-forwarded-host")! }
    static var forwardedProto: HTTPField.Name { HTTPField.Name("x-forwarded-proto")! }

    /// RFC 9110 §7.6.1: connection-specific fields are not forwarded.
    static var hopByHop: [HTTPField.Name] {
        [.connection, .transferEncoding, .te, .trailer, .upgrade, .proxyAuthorization, .proxyAuthenticate, .contentLength,
         HTTPField.Name("keep-alive")!, HTTPField.Name("proxy-connection")!]
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var fields = request.headers
        // Fields the Connection field names are hop-by-hop too.
        let listed = fields[values: .connection].flatMap { $0.split(separator: ",") }.compactMap {
            HTTPField.Name(String($0.trimmingCharacters(in: .whitespaces)))
        }
        // `Host` is the upstream's own, set by the HTTP client from the upstream URL: no host a
        // client names reaches an upstream that routes virtual hosts by it (the verified one is
        // in `x-forwarded-host`).
        for name in Self.hopByHop + listed + [ReceivedRequest.hostField, names.whash, names.wtoken, identity.keyID, identity.account, identity.algorithm,
                                              Self.forwardedHost, Self.forwardedProto] {
            fields[name] = nil
        }
        if let signature = context.signature {
            fields[identity.keyID] = signature.keyID
            fields[identity.algorithm] = signature.algorithm.rawValue
            if !signature.account.isEmpty { fields[identity.account] = signature.account }
        }
        if let authority = origin.authority ?? request.head.authority { fields[Self.forwardedHost] = authority }
        fields[Self.forwardedProto] = origin.scheme

        var outgoing = HTTPClientRequest(url: upstream + (request.head.path ?? "/"))
        outgoing.method = HTTPMethod(request.method)
        outgoing.headers = HTTPHeaders(fields)
        let length = request.headers[.contentLength].flatMap(Int64.init)
        let upload = length != nil || request.headers[.transferEncoding] != nil ? UpstreamBody(request.body) : nil
        if let upload { outgoing.body = .stream(upload.chunks, length: length.map { .known($0) } ?? .unknown) }
        do {
            let response = try await client.execute(outgoing, timeout: timeout)
            var headers = HTTPFields(response.headers, splitCookie: false)
            for name in Self.hopByHop where name != .contentLength { headers[name] = nil }
            // An upstream that answers before the whole body has arrived may not want the rest:
            // what is left of the request is then never read, and the connection cannot serve another.
            if let upload, !upload.isComplete { headers[.connection] = "close" }
            let status = HTTPResponse.Status(code: Int(response.status.code), reasonPhrase: response.status.reasonPhrase)
            return Response(status: status, headers: headers, body: ResponseBody { writer in
                do {
                    try await writer.write(response.body)
                } catch {
                    await upload?.finish()
                    throw error
                }
                await upload?.finish()  // before the server reads on: the upload is the body's only reader until then
                try await writer.finish(nil)
            })
        } catch let error as SignCoreError {
            await upload?.finish()
            return Response(Refusal(error))
        } catch {
            await upload?.finish()
            // The request's body failed to arrive, or the upstream failed: nothing of either in the log.
            context.logger.warning("upstream request failed", metadata: ["signd.error": .string(String(describing: type(of: error)))])
            return Response(status: .badGateway, headers: [.contentType: "application/problem+json", .cacheControl: "no-store"],
                            body: ResponseBody(byteBuffer: ByteBuffer(string: #"{"status":502,"title":"Bad Gateway","type":"about:blank"}"#)))
        }
    }
}

/// Refuses (400) a request whose host or target a server could read two ways, on every route,
/// before anything else: an authority that is not `host[:port]`, a second `Host`, a target that
/// is not an origin-form path (`ServerOrigin.validate`). What passes is forwarded as verified.
struct RequestTargetMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do throws(SignCoreError) {
            try ReceivedRequest.checkHost(request.head)
            if let authority = request.head.authority { try ServerOrigin.validate(authority: authority) }
            try ServerOrigin.validate(target: request.head.path ?? "")
        } catch {
            return Response(Refusal(error))
        }
        return try await next(request, context)
    }
}

/// Answers the health path itself (before any verification): 200 and the number of keys.
struct HealthMiddleware<Context: RequestContext>: RouterMiddleware {
    let path: String
    let verifier: Verifier

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard request.uri.path == path, request.method == .get || request.method == .head else { return try await next(request, context) }
        return Response(status: .ok, headers: [.contentType: "application/json", .cacheControl: "no-store"],
                        body: ResponseBody(byteBuffer: ByteBuffer(string: #"{"status":"ok","keys":\#(verifier.keys.count)}"#)))
    }
}
