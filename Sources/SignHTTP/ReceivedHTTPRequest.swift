import HTTPTypes
import SignCore

/// Where a server is reached: the scheme and, when it is fixed, the authority that tokens must
/// be signed for. A token binds scheme, host and port, so a server never takes its scheme from
/// a header a client controls; the authority comes from the request (`:authority`, which the
/// HTTP/1 adapters of swift-http-types fill from `Host`) only when the server does not fix it.
public struct ServerOrigin: Sendable, Equatable {
    /// `https` or `http`, as the server is reached by its clients (behind a TLS-terminating load
    /// balancer: `https`).
    public var scheme: String
    /// `host` or `host:port` as clients address the server, or nil to take the request's.
    public var authority: String?

    public init(scheme: String = "https", authority: String? = nil) {
        self.scheme = scheme
        self.authority = authority
    }
}

extension ReceivedRequest {
    /// The request as SignCore verifies it (SPEC §5), from what an HTTP server received: the
    /// absolute URL from the server's scheme, the authority (the origin's, else the request's
    /// `:authority` / `Host`) and the path with its query; the whash and wtoken from their fields; every
    /// header field, for the ones a token covers.
    ///
    /// Refuses, as SignCore errors: no authority or an origin-form path missing (`invalidURL`);
    /// the whash or wtoken field sent more than once (`invalidHeader`: two tokens are never
    /// one).
    public init(_ request: HTTPRequest, body: RequestBody = .bytes([]), origin: ServerOrigin,
                names: SignHeaderNames = .standard) throws(SignCoreError) {
        guard let authority = origin.authority ?? request.authority, !authority.isEmpty else {
            throw SignCoreError(.invalidURL, "the request names no authority (:authority or Host)")
        }
        guard let path = request.path, path.utf8.first == UInt8(ascii: "/") else {
            throw SignCoreError(.invalidURL, "the request target is not an absolute path")
        }
        self.init(method: request.method.rawValue, url: origin.scheme + "://" + authority + path, body: body,
                  headers: request.headerFields.map { HeaderField($0.name.rawName, $0.value) },
                  whash: try Self.single(names.whash, in: request.headerFields),
                  wtoken: try Self.single(names.wtoken, in: request.headerFields))
    }

    /// The one value of a field, nil when absent; two or more are refused.
    static func single(_ name: HTTPField.Name, in fields: HTTPFields) throws(SignCoreError) -> String? {
        let values = fields[values: name]
        guard values.count <= 1 else { throw SignCoreError(.invalidHeader, "a signature header field is sent more than once") }
        return values.first
    }
}
