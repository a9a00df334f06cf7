import HTTPTypes
import Hummingbird
import SignCore
import SignHTTP

/// Refuses, on every route and before anything else, a host or target that could be read two
/// ways, and bodies no route takes:
///
/// - 400 `invalidURL`: no `Host`; an authority that is not `host[:port]`, a second `Host`, a
///   target that is not an origin-form path (`ServerOrigin.validate`; an absolute-form target
///   is made one no route accepts by `AbsoluteFormGuard`), or a malformed percent-escape;
/// - 400 `unexpectedBody`: a GET, HEAD, OPTIONS or DELETE announcing a body (SPEC §3: none is
///   ever signed), or a CONNECT or TRACE announcing one (they have none), unread;
/// - 413 `bodyTooLarge`: a `Content-Length` over the route's limit, unread.
///
/// A refusal of a request whose body was announced closes the connection (`Connection: close`,
/// and the inbound stream ended): the rest of that body is never read; so does any refusal of
/// signd's further on (`closingAfterRefusal`). Run by `EntryMiddleware`.
struct RequestTarget {
    let routes: GatewayRoutes

    static func announcesBody(_ request: Request) -> Bool {
        request.headers[.transferEncoding] != nil || (request.headers[.contentLength].flatMap(Int64.init) ?? 0) > 0
    }

    /// The refusal of a request whose host, target or body no route takes, or nil. (With a body
    /// announced, the caller lets go of it: `stopReading`.)
    func refusal(of request: Request, announcesBody: Bool, context: GatewayRequestContext) -> Response? {
        do throws(SignCoreError) {
            try check(request, announcesBody: announcesBody, limit: routes.body(for: context.signCore.routeDecision).limit)
            return nil
        } catch {
            var response = Response(Refusal(error))
            if announcesBody { response.headers[.connection] = "close" }
            return response
        }
    }

    /// A refusal further on (the signature's, a limit's) of a request whose body was announced:
    /// what is left of that body is not read as the next request.
    static func closingAfterRefusal(_ response: Response, announcesBody: Bool) -> Response {
        guard announcesBody, response.headers[Refusal.errorField] != nil else { return response }
        var response = response
        response.headers[.connection] = "close"
        return response
    }

    /// Lets go of a body nobody will take, as when an upstream answers early
    /// (`UpstreamBody.finish`): a read of it that is cancelled ends it (SwiftNIO's async sequence
    /// producer). The answer's `Connection: close` then makes signd's connection handler close
    /// after it (lingering) instead of reading the rest as requests. Only for a body nothing has
    /// read yet.
    static func stopReading(_ body: RequestBody) async {
        let reader = Task { for try await _ in body {} }
        reader.cancel()
        _ = await reader.result
    }

    private func check(_ request: Request, announcesBody: Bool, limit: Int64) throws(SignCoreError) {
        let head = request.head
        try ReceivedRequest.checkHost(head)
        guard let authority = head.authority else { throw SignCoreError(.invalidURL, "the request has no Host (RFC 9112 §3.2)") }
        try ServerOrigin.validate(authority: authority)
        let target = head.path ?? ""
        try ServerOrigin.validate(target: target)
        try Self.checkEscapes(target)
        if announcesBody, (try? RequestMethod(token: request.method.rawValue))?.contentClass == .url {
            throw SignCoreError(.unexpectedBody, "a GET, HEAD, OPTIONS or DELETE request carries a body, which no signature covers")
        }
        // RFC 9110 §9.3.6, §9.3.8: a CONNECT or TRACE has no content; one announced would reach
        // the upstream unframed (SwiftNIO writes no length for a TRACE), as a request of its own.
        if announcesBody, request.method == .connect || request.method == .trace {
            throw SignCoreError(.unexpectedBody, "a CONNECT or TRACE request carries a body")
        }
        if let length = request.headers[.contentLength].flatMap(Int64.init), length > limit {
            throw SignCoreError(.bodyTooLarge, "the request body is larger than \(limit) bytes")
        }
    }

    /// Every `%` begins an escape of two hex digits (RFC 3986 §2.1): a target an upstream could
    /// read more than one way is not forwarded. (The upstream client writes the target as it is.)
    static func checkEscapes(_ target: String) throws(SignCoreError) {
        let bytes = Array(target.utf8)
        for (index, byte) in bytes.enumerated() where byte == UInt8(ascii: "%") {
            guard index + 2 < bytes.count, bytes[index + 1].isHexDigit, bytes[index + 2].isHexDigit else {
                throw SignCoreError(.invalidURL, "the request target has a % that does not begin an escape")
            }
        }
    }
}

extension UInt8 {
    fileprivate var isHexDigit: Bool { (0x30...0x39).contains(self) || (0x41...0x46).contains(self) || (0x61...0x66).contains(self) }
}
